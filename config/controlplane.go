package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// ControlPlane configures the control plane (DESIGN section 9): which
// repositories' open issues and pull requests make its work inventory, how
// often the inventory is synced with the forges (webhooks keep it current
// in between), and how long leases and sessions live without a heartbeat.
type ControlPlane struct {
	// Repos are the repositories whose work is inventoried: every project
	// the forge's token reaches whose path a match glob covers.
	Repos []ControlPlaneRepo `yaml:"repos"`
	// SyncInterval is how often every repository is listed again; a
	// webhook lost in between is caught up by the next sync.
	SyncInterval Duration `yaml:"sync_interval"`
	// LeaseTTL is how long a lease holds its work without a heartbeat.
	LeaseTTL Duration `yaml:"lease_ttl"`
	// SessionTTL is how long a session stays active without a heartbeat.
	SessionTTL Duration `yaml:"session_ttl"`
	// BlockedLabels are never handed out by the allocator.
	BlockedLabels []string `yaml:"blocked_labels"`
	// PriorityLabels order the work of one route: work carrying an
	// earlier label is handed out first; then the oldest.
	PriorityLabels []string `yaml:"priority_labels"`
	// RequireAssignment makes a caller whose only way to submit is its
	// permission agent name an assignment in every change it submits, so
	// that no agent writes to a repository outside the work it was given
	// (default true; false lets agent-only tokens submit any change).
	RequireAssignment bool `yaml:"require_assignment"`
	// MaxCheckpointsPerSession bounds how many checkpoints (one per work
	// unit) one session keeps: resume state, not a history (default 50).
	MaxCheckpointsPerSession int `yaml:"max_checkpoints_per_session"`
	// HolderNotes keeps a note of the service's on each issue and pull
	// request whose leases change, naming who holds it (identity, role,
	// session, until when) and its lease history, so that people on the
	// forge see who works on what and a reviewer-to-merger handoff reads
	// on the thread (default true; docs/agents.md).
	HolderNotes bool `yaml:"holder_notes"`
}

// ControlPlaneRepo names repositories of one forge by a glob over their
// paths (** crosses groups).
type ControlPlaneRepo struct {
	Forge string `yaml:"forge"`
	Match string `yaml:"match"`
}

// minSyncInterval bounds sync_interval from below: a sync lists every
// repository, and webhooks already carry changes within seconds.
const minSyncInterval = time.Minute

// minTTL bounds the lease and session TTLs from below: an agent must be
// able to heartbeat in time.
const minTTL = time.Minute

func defaultControlPlane() ControlPlane {
	return ControlPlane{SyncInterval: Duration(10 * time.Minute), LeaseTTL: Duration(30 * time.Minute),
		SessionTTL: Duration(15 * time.Minute), RequireAssignment: true,
		BlockedLabels: []string{"do-not-automate"}, PriorityLabels: []string{"priority/high", "priority/medium"},
		MaxCheckpointsPerSession: 50, HolderNotes: true}
}

func (c Config) validateControlPlane(bad func(field, format string, args ...any)) {
	cp := c.ControlPlane
	for i, r := range cp.Repos {
		field := fmt.Sprintf("control_plane.repos[%d]", i)
		if _, ok := c.ForgeNamed(r.Forge); !ok {
			bad(field+".forge", "%q is not a configured forge", r.Forge)
		}
		if r.Match == "" || !doublestar.ValidatePattern(r.Match) {
			bad(field+".match", "want a glob such as org/* or group/**, got %q", r.Match)
		}
	}
	if cp.MaxCheckpointsPerSession < 1 || cp.MaxCheckpointsPerSession > 500 {
		bad("control_plane.max_checkpoints_per_session", "want 1 to 500, got %d", cp.MaxCheckpointsPerSession)
	}
	if cp.SyncInterval < Duration(minSyncInterval) {
		bad("control_plane.sync_interval", "must be at least %s, got %s", minSyncInterval, time.Duration(cp.SyncInterval))
	}
	if cp.LeaseTTL < Duration(minTTL) {
		bad("control_plane.lease_ttl", "must be at least %s, got %s", minTTL, time.Duration(cp.LeaseTTL))
	}
	if cp.SessionTTL < Duration(minTTL) {
		bad("control_plane.session_ttl", "must be at least %s, got %s", minTTL, time.Duration(cp.SessionTTL))
	}
	for i, l := range cp.BlockedLabels {
		if strings.TrimSpace(l) == "" {
			bad(fmt.Sprintf("control_plane.blocked_labels[%d]", i), "want a label name, got %q", l)
		}
	}
}
