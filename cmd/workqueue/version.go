package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionText describes the binary from its build information: the
// module version, the VCS revision it was built from (with "modified"
// when the work tree had uncommitted changes), the commit time and the
// Go version.
func versionText(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "workqueue (no build information)\n"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workqueue %s\n", version)
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += " (modified)"
		}
		fmt.Fprintf(&b, "revision:  %s\n", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "committed: %s\n", t)
		}
	} else {
		fmt.Fprintf(&b, "revision:  unknown (built without VCS information)\n")
	}
	fmt.Fprintf(&b, "go:        %s\n", info.GoVersion)
	return b.String()
}

func buildVersion() string { return versionText(debug.ReadBuildInfo()) }

// versionInfo is version -o json|yaml: the same facts as the text.
type versionInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	Committed string `json:"committed,omitempty"`
	Go        string `json:"go,omitempty"`
}

func buildVersionInfo() versionInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok || info == nil {
		return versionInfo{Version: "(no build information)"}
	}
	v := versionInfo{Version: info.Main.Version, Go: info.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.Committed = s.Value
		}
	}
	return v
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the module version, VCS revision and Go version of this binary",
		Long: `Print the version of this binary from its build information: the module
version ((devel) for a build from a work tree), the VCS revision with
"(modified)" when it was built from uncommitted changes, the commit time,
and the Go version. workqueue --version prints the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(&output); err != nil {
				return err
			}
			return printOutput(cmd.OutOrStdout(), output, buildVersionInfo(), func(w io.Writer) { fmt.Fprint(w, buildVersion()) })
		},
	}
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}
