package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/secrets"
)

// CheckpointSchemaVersion is the field set a checkpoint is written under,
// stored with each row so that a reader knows which it holds.
const CheckpointSchemaVersion = 1

// MaxCheckpointText bounds every free-text field of a checkpoint, and
// MaxCheckpointJSON every JSON one: a checkpoint holds resume state, never
// a transcript (hard rule 5 of #660).
const (
	MaxCheckpointText = 4 << 10
	MaxCheckpointJSON = 16 << 10
)

// LiveState is what the caller knows now of a checkpoint's work: nil
// pointers were not checked.
type LiveState struct {
	HeadSHA *string // the worktree's or the forge's head
	// Lease is the checkpoint's lease as the store has it now; LeaseGone
	// says it was looked up and does not exist.
	Lease     *Lease
	LeaseGone bool
	Now       time.Time
}

// Reconcile actions.
const (
	ReconcileResume   = "resume"        // the checkpoint matches what was checked: continue from next_valid_action
	ReconcileReadHead = "reinspect"     // the head moved: inspect the work again before any mutation
	ReconcileReclaim  = "reacquire"     // the lease is gone, ended or another's: allocate or adopt first
	ReconcileNothing  = "nothing_to_do" // no lease was held and nothing checked disagrees
)

// Reconcile diagnoses checkpoint c against live (hard rules 2 and 3 of
// #660): a head that differs, or a lease that is gone, ended, expired or
// held by another session, makes it stale; an input not checked never
// does.
func Reconcile(c *Checkpoint, live LiveState) Diagnosis {
	var d Diagnosis
	if live.HeadSHA != nil && c.HeadSHA != "" {
		d.HeadChecked = true
		d.HeadMismatch = *live.HeadSHA != c.HeadSHA
	}
	if c.LeaseID != "" && (live.Lease != nil || live.LeaseGone) {
		d.LeaseChecked = true
		switch l := live.Lease; {
		case live.LeaseGone || l == nil:
			d.LeaseMismatch, d.Reason = true, "the lease no longer exists"
		case l.SessionID != c.SessionID:
			d.LeaseMismatch, d.Reason = true, "the lease is held by session "+l.SessionID
		case !l.Live(live.Now):
			d.LeaseMismatch, d.Reason = true, "the lease is "+string(l.State)+" or past its expiry"
		}
	}
	d.Stale = d.HeadMismatch || d.LeaseMismatch
	switch {
	case d.LeaseMismatch:
		d.ReconcileAction = ReconcileReclaim
	case d.HeadMismatch:
		d.ReconcileAction, d.Reason = ReconcileReadHead, "the head moved from "+c.HeadSHA+" to "+*live.HeadSHA
	case c.LeaseID == "" && !d.HeadChecked:
		d.ReconcileAction = ReconcileNothing
	default:
		d.ReconcileAction = ReconcileResume
	}
	return d
}

// Bounds of a checkpoint's short fields.
const (
	maxCheckpointName = 512 // forge, repo, ids, branch, stage, action names
	maxCheckpointPath = 4096
)

// validateCheckpoint refuses a checkpoint the store must not hold, naming the
// field: a key that is not canonical, a field over its bound (no
// transcripts), text PostgreSQL cannot store, JSON that is not.
func validateCheckpoint(c *Checkpoint) error {
	if c.SchemaVersion != 0 && c.SchemaVersion != CheckpointSchemaVersion {
		return wq.Errorf(wq.EINVALID, "checkpoint_schema_version: this server writes version %d, got %d", CheckpointSchemaVersion, c.SchemaVersion)
	}
	switch {
	case c.WorkKind == "" && c.WorkNumber != 0:
		return wq.Errorf(wq.EINVALID, "work_number: a session-level checkpoint (empty work_kind) has work_number 0, got %d", c.WorkNumber)
	case c.WorkKind != "" && !c.WorkKind.Valid():
		return wq.Errorf(wq.EINVALID, "work_kind: want issue, pr or empty, got %q", c.WorkKind)
	case c.WorkKind != "" && c.WorkNumber <= 0:
		return wq.Errorf(wq.EINVALID, "work_number: want a positive number for work_kind %s, got %d", c.WorkKind, c.WorkNumber)
	case c.Role != "" && !c.Role.Valid():
		return wq.Errorf(wq.EINVALID, "role: want author, reviewer or merger, got %q", c.Role)
	case c.HeadSHA != "" && !isCommitSHA(c.HeadSHA):
		return wq.Errorf(wq.EINVALID, "head_sha: want a commit SHA (7 to 64 hex digits), got %q", c.HeadSHA)
	}
	for _, f := range []struct {
		name  string
		check error
	}{
		{"session_id", ValidateID("session_id", c.SessionID, true)}, {"lease_id", ValidateID("lease_id", c.LeaseID, false)},
		{"assignment_id", ValidateID("assignment_id", c.AssignmentID, false)}, {"forge", ValidateName("forge", c.Forge)},
		{"repo", ValidateRepo("repo", c.Repo)}, {"branch", validateBranch("branch", c.Branch)},
	} {
		if f.check != nil {
			return f.check
		}
	}
	for _, f := range []struct {
		name, value string
		max         int
		required    bool
	}{
		{"session_id", c.SessionID, maxCheckpointName, true}, {"forge", c.Forge, maxCheckpointName, true},
		{"repo", c.Repo, maxCheckpointName, true}, {"provider_identity", c.ProviderIdentity, maxCheckpointName, false},
		{"worktree_path", c.WorktreePath, maxCheckpointPath, false}, {"branch", c.Branch, maxCheckpointName, false},
		{"lease_id", c.LeaseID, maxCheckpointName, false}, {"assignment_id", c.AssignmentID, maxCheckpointName, false},
		{"workflow_stage", c.WorkflowStage, maxCheckpointName, false}, {"status", c.Status, maxCheckpointName, false},
		{"last_completed_action", c.LastCompletedAction, MaxCheckpointText, false},
		{"current_operation", c.CurrentOperation, MaxCheckpointText, false}, {"blocker", c.Blocker, MaxCheckpointText, false},
		{"next_valid_action", c.NextValidAction, MaxCheckpointText, false},
		{"recovery_instructions", c.RecoveryInstructions, MaxCheckpointText, false},
	} {
		switch {
		case f.required && strings.TrimSpace(f.value) == "":
			return wq.Errorf(wq.EINVALID, "%s: required", f.name)
		case len(f.value) > f.max:
			return wq.Errorf(wq.EINVALID, "%s: at most %d bytes (a checkpoint holds resume state, not a transcript), got %d", f.name, f.max, len(f.value))
		case !utf8.ValidString(f.value) || strings.IndexByte(f.value, 0) >= 0:
			return wq.Errorf(wq.EINVALID, "%s: want UTF-8 text without NUL characters", f.name)
		}
		if err := refuseTranscriptText(f.name, f.value); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		doc  json.RawMessage
	}{{"capabilities", c.Capabilities}, {"pending_mutation", c.PendingMutation}, {"evidence", c.Evidence}} {
		switch {
		case len(f.doc) > MaxCheckpointJSON:
			return wq.Errorf(wq.EINVALID, "%s: at most %d bytes of JSON (a checkpoint holds resume state, not a transcript), got %d", f.name, MaxCheckpointJSON, len(f.doc))
		case len(f.doc) > 0 && !json.Valid(f.doc):
			return wq.Errorf(wq.EINVALID, "%s: not valid JSON", f.name)
		case bytes.Contains(f.doc, []byte(`\u0000`)):
			return wq.Errorf(wq.EINVALID, "%s: JSON strings may not hold NUL characters", f.name)
		}
		if err := refuseTranscript(f.name, f.doc); err != nil {
			return err
		}
	}
	return nil
}

// validateBranch refuses, naming field, a value that is not a branch
// name git would take (check-ref-format's rules, in short): printable,
// no blanks, no "..", none of ~^:?*[\, at most 255 bytes. "" passes.
func validateBranch(field, v string) error {
	if v == "" {
		return nil
	}
	if len(v) > 255 || strings.Contains(v, "..") || strings.ContainsAny(v, "~^:?*[\\ \t") || strings.HasPrefix(v, "-") ||
		strings.HasSuffix(v, "/") || strings.HasSuffix(v, ".lock") || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return wq.Errorf(wq.EINVALID, "%s: want a branch name, got %q", field, clip(v))
	}
	return nil
}

// isCommitSHA reports whether s is an abbreviated or full SHA-1 or
// SHA-256 commit id.
func isCommitSHA(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return true
}

// redactCheckpoint is c with every free-text field and JSON document filtered
// through package redact (hard rule 1 of #660): what a session pasted
// into its checkpoint never lands with a secret in it.
func redactCheckpoint(c Checkpoint) (Checkpoint, error) {
	for _, f := range []*string{&c.ProviderIdentity, &c.WorktreePath, &c.Branch, &c.WorkflowStage,
		&c.LastCompletedAction, &c.CurrentOperation, &c.Blocker, &c.NextValidAction, &c.RecoveryInstructions, &c.Status} {
		*f = secrets.Text(*f)
	}
	for _, f := range []struct {
		name string
		doc  *json.RawMessage
	}{{"capabilities", &c.Capabilities}, {"pending_mutation", &c.PendingMutation}, {"evidence", &c.Evidence}} {
		if len(*f.doc) == 0 {
			continue
		}
		doc, err := secrets.JSON(*f.doc)
		if err != nil {
			return c, wq.Errorf(wq.EINVALID, "%s: %v", f.name, err)
		}
		*f.doc = doc
	}
	return c, nil
}

// ReasonIncomplete is the refusal of a require_complete write that lacks
// a field a resumed session needs.
const ReasonIncomplete = "incomplete_checkpoint"

// WriteCheckpoint upserts c, a checkpoint of one of the caller's
// sessions, redacted; with requireComplete it refuses a checkpoint that
// could not resume the work (hard rule 4), naming every missing field.
// The role defaults to the session's; the schema version and times are
// the server's.
func (s *Service) WriteCheckpoint(ctx context.Context, caller Caller, c Checkpoint, requireComplete bool) (*Checkpoint, error) {
	if err := validateCheckpoint(&c); err != nil {
		return nil, err
	}
	sess, err := s.session(ctx, caller, c.SessionID)
	if err != nil {
		return nil, err
	}
	if c.Repo != "" && !caller.Covers(c.Forge, c.Repo) {
		// Decided on the caller's own words alone: nothing is read, so
		// the answer says nothing of what the repository holds.
		return nil, wq.Errorf(wq.EFORBIDDEN, "%s may not write checkpoints for %s %s: no rule that matched grants agent on that project",
			caller.Identity, c.Forge, c.Repo)
	}
	if c.Role == "" {
		c.Role = sess.Role
	}
	if c, err = redactCheckpoint(c); err != nil {
		return nil, err
	}
	if err := s.checkpointRoom(ctx, c.Key()); err != nil {
		return nil, err
	}
	if missing := c.Missing(); requireComplete && len(missing) > 0 {
		return nil, &wq.Error{Code: wq.EINVALID, Reason: ReasonIncomplete,
			Message: "require_complete: a drain checkpoint must say how to resume; missing or blank: " + strings.Join(missing, ", ")}
	}
	c.SchemaVersion = CheckpointSchemaVersion
	return s.Store.PutCheckpoint(ctx, c, s.now())
}

// DefaultMaxCheckpoints is how many checkpoints one session keeps
// unless configured (control_plane.max_checkpoints_per_session).
const DefaultMaxCheckpoints = 50

// ReasonTooManyCheckpoints refuses a session's checkpoint past the bound.
const ReasonTooManyCheckpoints = "too_many_checkpoints"

// checkpointRoom refuses a new checkpoint (a key the session has none
// for) once the session holds the bound: one per work unit is resume
// state; hundreds are a history. Replacing one is always allowed.
func (s *Service) checkpointRoom(ctx context.Context, k CheckpointKey) error {
	limit := s.MaxCheckpoints
	if limit <= 0 {
		limit = DefaultMaxCheckpoints
	}
	if _, err := s.Store.GetCheckpoint(ctx, k); err == nil || wq.ErrorCode(err) != wq.ENOTFOUND {
		return err
	}
	held, err := s.Store.ListCheckpoints(ctx, CheckpointFilter{SessionID: k.SessionID, Limit: limit})
	if err != nil {
		return err
	}
	if len(held) >= limit {
		return &wq.Error{Code: wq.EINVALID, Reason: ReasonTooManyCheckpoints, Message: fmt.Sprintf(
			"%s: session %s holds %d checkpoints, the most it may (control_plane.max_checkpoints_per_session): "+
				"replace one of its work units' checkpoints instead of writing a new one", ReasonTooManyCheckpoints, k.SessionID, len(held))}
	}
	return nil
}

// GetCheckpoint returns one checkpoint of the caller's sessions.
func (s *Service) GetCheckpoint(ctx context.Context, caller Caller, k CheckpointKey) (*Checkpoint, error) {
	if _, err := s.session(ctx, caller, k.SessionID); err != nil {
		return nil, err
	}
	if k.Repo != "" && !caller.Covers(k.Forge, k.Repo) {
		return nil, checkpointNotFound()
	}
	c, err := s.Store.GetCheckpoint(ctx, k)
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return nil, checkpointNotFound()
	}
	return c, err
}

// ListCheckpoints lists checkpoints newest first: a caller's own
// sessions' only, unless it is an admin.
func (s *Service) ListCheckpoints(ctx context.Context, caller Caller, f CheckpointFilter) ([]Checkpoint, error) {
	if f.WorkKind != "" && !f.WorkKind.Valid() {
		return nil, wq.Errorf(wq.EINVALID, "work_kind: want issue or pr, got %q", f.WorkKind)
	}
	if !caller.Admin {
		f.Identity = caller.Identity
	}
	if caller.Projects == nil {
		out, err := s.Store.ListCheckpoints(ctx, f)
		if out == nil {
			out = []Checkpoint{}
		}
		return out, err
	}
	out := []Checkpoint{}
	if f.Repo != "" && !caller.Covers(f.Forge, f.Repo) {
		return out, nil
	}
	// A narrowed caller's list is read whole and filtered, so that it
	// holds as many of the caller's projects' checkpoints as the limit
	// allows.
	want := f.Limit
	if want <= 0 || want > wq.MaxListLimit {
		want = wq.MaxListLimit
	}
	f.Limit = wq.MaxListLimit
	list, err := s.Store.ListCheckpoints(ctx, f)
	if err != nil {
		return out, err
	}
	for _, c := range list {
		if (c.Repo == "" || caller.Covers(c.Forge, c.Repo)) && len(out) < want {
			out = append(out, c)
		}
	}
	return out, nil
}

// ReconcileCheckpoint diagnoses a stored checkpoint of the caller's
// against what is live (hard rules 2 and 3 of #660): the lease it names
// as the store has it now, and the head: headSHA when the caller gives
// one, else a pull request's head from the inventory. Nothing is
// restored or changed.
func (s *Service) ReconcileCheckpoint(ctx context.Context, caller Caller, k CheckpointKey, headSHA *string) (*CheckpointReconcile, error) {
	if headSHA != nil && !isCommitSHA(*headSHA) {
		return nil, wq.Errorf(wq.EINVALID, "head_sha: want a commit SHA (7 to 64 hex digits), got %q", *headSHA)
	}
	c, err := s.GetCheckpoint(ctx, caller, k)
	if err != nil {
		return nil, err
	}
	out := &CheckpointReconcile{Checkpoint: c}
	live := LiveState{HeadSHA: headSHA, Now: s.now()}
	if headSHA != nil {
		out.HeadSource = "caller"
	} else if c.WorkKind == KindPR {
		w, err := s.Store.FindWork(ctx, WorkKey{Forge: c.Forge, Repo: c.Repo, Kind: c.WorkKind, Number: c.WorkNumber})
		switch {
		case err == nil && w.HeadSHA != "":
			live.HeadSHA, out.HeadSource = &w.HeadSHA, "inventory"
		case err != nil && wq.ErrorCode(err) != wq.ENOTFOUND:
			return nil, err
		}
	}
	if c.LeaseID != "" {
		l, err := s.lease(ctx, caller, c.LeaseID) // another project's lease is gone, as a missing one
		switch {
		case err == nil:
			live.Lease = l
		case wq.ErrorCode(err) == wq.ENOTFOUND:
			live.LeaseGone = true
		default:
			return nil, err
		}
	}
	out.Diagnosis = Reconcile(c, live)
	if !out.HeadChecked {
		out.HeadSource = ""
	}
	return out, nil
}
