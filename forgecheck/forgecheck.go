// Package forgecheck holds the service to the forges as they really are
// (issue 50): each forge's version against its kind's minimum, the
// project settings the service's safety relies on, and the projects'
// webhooks, checked at start and every hooks.check_interval, and repaired
// when hooks.repair is on. It reads and writes through the guarded forges
// serve builds (policy.Open), through the optional capabilities of the
// root package (wq.VersionReader, wq.SettingsReader, wq.WebhookInspector);
// cmd/workqueue runs it at start, in serve and in config check --online.
// docs/forge-checks.md says what each check means and what an operator
// does about it.
package forgecheck

import (
	"context"
	"errors"
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Report is what the checks found of one configured forge.
type Report struct {
	Forge string `json:"forge"` // the configured name
	Kind  string `json:"kind"`
	// Version is the version string the forge reported ("" when it was not
	// read); Verdict and VersionMessage hold it to the kind's minimum.
	Version        string               `json:"version"`
	Verdict        forge.VersionVerdict `json:"-"`
	VersionStatus  string               `json:"version_status"` // supported, too_old, unknown, unread
	VersionMessage string               `json:"version_message"`
	// Projects are the configured projects' settings.
	Projects []ProjectReport `json:"projects"`
}

// ProjectReport is one project's settings.
type ProjectReport struct {
	Project  string              `json:"project"`
	Settings []wq.ProjectSetting `json:"settings,omitempty"`
	// Error is why they could not be read, "" when they were.
	Error string `json:"error,omitempty"`
}

// TooOld reports whether the forge is below its kind's minimum: serve
// refuses to start.
func (r Report) TooOld() bool { return r.Verdict == forge.VersionTooOld }

// Warnings are the report's lines an operator should act on: an
// unreadable version, and every setting that is not safe or not known.
func (r Report) Warnings() []string {
	var out []string
	if r.VersionStatus == "unknown" || r.VersionStatus == "unread" {
		out = append(out, fmt.Sprintf("forges[%s]: %s", r.Forge, r.VersionMessage))
	}
	for _, p := range r.Projects {
		if p.Error != "" {
			out = append(out, fmt.Sprintf("forges[%s] %s: settings not read: %s", r.Forge, p.Project, p.Error))
		}
		for _, s := range p.Settings {
			if !s.Known || !s.Safe {
				out = append(out, fmt.Sprintf("forges[%s] %s: %s", r.Forge, p.Project, SettingLine(s)))
			}
		}
	}
	return out
}

// SettingLine says one setting in a line: its name, value and meaning.
func SettingLine(s wq.ProjectSetting) string {
	if !s.Known {
		return fmt.Sprintf("%s: %s", s.Name, s.Meaning)
	}
	return fmt.Sprintf("%s = %s: %s", s.Name, s.Value, s.Meaning)
}

// Inspect reads the forge's version and each project's settings. A forge
// that cannot say (an adapter without the capability) is reported "not
// checked"; a failed call is reported in the report, never returned: the
// checks are read by people, and one forge down must not hide another's.
func Inspect(ctx context.Context, name, kind string, f wq.Forge, projects []string) Report {
	r := Report{Forge: name, Kind: kind}
	r.Version, r.Verdict, r.VersionStatus, r.VersionMessage = readVersion(ctx, kind, f)
	sr, ok := f.(wq.SettingsReader)
	if !ok {
		return r
	}
	for _, p := range projects {
		settings, err := sr.ProjectSettings(ctx, p)
		pr := ProjectReport{Project: p, Settings: settings}
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			pr.Error = "not checked: the " + kind + " adapter cannot read project settings"
		case err != nil:
			pr.Error = err.Error()
		}
		r.Projects = append(r.Projects, pr)
	}
	return r
}

// readVersion reads and judges the forge's version.
func readVersion(ctx context.Context, kind string, f wq.Forge) (raw string, verdict forge.VersionVerdict, status, message string) {
	vr, ok := f.(wq.VersionReader)
	if !ok {
		return "", forge.VersionUnknown, "unread", "version not checked: the " + kind + " adapter cannot read it"
	}
	raw, err := vr.ServerVersion(ctx)
	if err != nil {
		return "", forge.VersionUnknown, "unread", "version not read: " + err.Error()
	}
	verdict, message = forge.CheckVersion(kind, vr.MinServerVersion(), raw)
	status = map[forge.VersionVerdict]string{forge.VersionSupported: "supported", forge.VersionTooOld: "too_old", forge.VersionUnknown: "unknown"}[verdict]
	return raw, verdict, status, message
}
