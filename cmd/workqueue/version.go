package main

import (
	"fmt"
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

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version, VCS revision and Go version of this binary",
		Long: `Print the version of this binary from its build information: the module
version ((devel) for a build from a work tree), the VCS revision with
"(modified)" when it was built from uncommitted changes, the commit time,
and the Go version. workqueue --version prints the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.OutOrStdout(), buildVersion())
			return nil
		},
	}
}
