package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/workqueue-dev/workqueue/config"
)

func TestControlPlaneDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	want := config.ControlPlane{SyncInterval: config.Duration(10 * time.Minute), LeaseTTL: config.Duration(30 * time.Minute),
		SessionTTL: config.Duration(15 * time.Minute)}
	if diff := cmp.Diff(want, cfg.ControlPlane); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTheExamplesControlPlaneSectionLoadsUncommented(t *testing.T) {
	// The section is commented out in the example (the inventory is off
	// until repos are configured); uncommented, it must say what it shows.
	b, err := os.ReadFile("../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var section []string
	for i, l := range lines {
		if l == "# control_plane:" {
			for _, l := range lines[i:] {
				if !strings.HasPrefix(l, "# ") {
					break
				}
				section = append(section, strings.TrimPrefix(l, "# "))
			}
		}
	}
	if len(section) == 0 {
		t.Fatal("no commented control_plane section in the example")
	}
	doc := "forges: [{name: gitea, kind: gitea, url: 'http://127.0.0.1:3000', token_env: T}]\n" + strings.Join(section, "\n")
	cfg, err := config.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	want := config.ControlPlane{Repos: []config.ControlPlaneRepo{{Forge: "gitea", Match: "demo/**"}},
		SyncInterval: config.Duration(10 * time.Minute), LeaseTTL: config.Duration(30 * time.Minute),
		SessionTTL: config.Duration(15 * time.Minute), BlockedLabels: []string{"do-not-automate"},
		PriorityLabels: []string{"priority/high", "priority/medium"}}
	if diff := cmp.Diff(want, cfg.ControlPlane); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestControlPlaneErrorsNameTheirField(t *testing.T) {
	const forges = "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown forge", "control_plane: {repos: [{forge: nope, match: 'org/*'}]}", `control_plane.repos[0].forge: "nope" is not a configured forge`},
		{"empty match", forges + "control_plane: {repos: [{forge: g, match: 'org/*'}, {forge: g}]}", `control_plane.repos[1].match: want a glob`},
		{"bad glob", forges + "control_plane: {repos: [{forge: g, match: 'org/['}]}", `control_plane.repos[0].match`},
		{"sync too often", "control_plane: {sync_interval: 30s}", "control_plane.sync_interval: must be at least 1m0s, got 30s"},
		{"lease ttl", "control_plane: {lease_ttl: 0s}", "control_plane.lease_ttl: must be at least 1m0s"},
		{"session ttl", "control_plane: {session_ttl: 10s}", "control_plane.session_ttl: must be at least 1m0s"},
		{"a duration without a unit", "control_plane: {lease_ttl: 30}", "want a duration"},
		{"empty label", "control_plane: {blocked_labels: [wip, ' ']}", "control_plane.blocked_labels[1]: want a label name"},
		{"unknown key", "control_plane: {repo: []}", "field repo not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := config.Parse(strings.NewReader(forges + "control_plane: {repos: [{forge: g, match: 'org/**'}], sync_interval: 1m}")); err != nil {
		t.Errorf("a valid section: %v", err)
	}
}
