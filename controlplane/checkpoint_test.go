package controlplane_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

func TestMissingNamesEveryFieldADrainNeeds(t *testing.T) {
	c := &cp.Checkpoint{SessionID: "s", Role: cp.RoleAuthor, WorkflowStage: "review", NextValidAction: "push", RecoveryInstructions: "rebase"}
	if m := c.Missing(); len(m) != 0 {
		t.Fatalf("a complete checkpoint misses %v", m)
	}
	blank := &cp.Checkpoint{SessionID: " ", Role: cp.RoleAuthor}
	want := []string{"session_id", "workflow_stage", "next_valid_action", "recovery_instructions"}
	if m := blank.Missing(); !slices.Equal(m, want) {
		t.Errorf("missing %v, want %v", m, want)
	}
}

func TestReconcileDiagnosesAndNeverGuessesWhatWasNotChecked(t *testing.T) {
	str := func(s string) *string { return &s }
	stored := func() *cp.Checkpoint { return &cp.Checkpoint{SessionID: "s", HeadSHA: "h1", LeaseID: "l"} }
	lease := func(edit func(*cp.Lease)) *cp.Lease {
		l := &cp.Lease{ID: "l", SessionID: "s", State: cp.LeaseActive, ExpiresAt: now.Add(time.Hour)}
		if edit != nil {
			edit(l)
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		c      *cp.Checkpoint
		live   cp.LiveState
		stale  bool
		action string
	}{
		{"nothing checked is not stale", stored(), cp.LiveState{Now: now}, false, cp.ReconcileResume},
		{"the same head and a live lease resume", stored(), cp.LiveState{HeadSHA: str("h1"), Lease: lease(nil), Now: now}, false, cp.ReconcileResume},
		{"a moved head", stored(), cp.LiveState{HeadSHA: str("h2"), Now: now}, true, cp.ReconcileReadHead},
		{"a lease gone", stored(), cp.LiveState{LeaseGone: true, Now: now}, true, cp.ReconcileReclaim},
		{"a lease reassigned", stored(), cp.LiveState{Lease: lease(func(l *cp.Lease) { l.SessionID = "t" }), Now: now}, true, cp.ReconcileReclaim},
		{"a lease expired", stored(), cp.LiveState{Lease: lease(func(l *cp.Lease) { l.ExpiresAt = now }), Now: now}, true, cp.ReconcileReclaim},
		{"a lease released", stored(), cp.LiveState{Lease: lease(func(l *cp.Lease) { l.State = cp.LeaseReleased }), Now: now}, true, cp.ReconcileReclaim},
		{"a session-level checkpoint holds nothing", &cp.Checkpoint{SessionID: "s"}, cp.LiveState{HeadSHA: str("h9"), Now: now}, false, cp.ReconcileNothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := cp.Reconcile(tc.c, tc.live)
			if d.Stale != tc.stale || d.ReconcileAction != tc.action {
				t.Errorf("diagnosis %+v, want stale %v, action %s", d, tc.stale, tc.action)
			}
			if tc.live.HeadSHA == nil && (d.HeadChecked || d.HeadMismatch) {
				t.Errorf("a head not given was checked: %+v", d)
			}
			if tc.live.Lease == nil && !tc.live.LeaseGone && (d.LeaseChecked || d.LeaseMismatch) {
				t.Errorf("a lease not looked up was checked: %+v", d)
			}
		})
	}
}

// Secrets of the acceptance shapes, planted in a checkpoint's free text
// and nested JSON.
var plantedSecrets = []string{
	"glpat-AbCdEfGhIjKlMnOpQrSt",
	"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
	"s3cr3t-pa55",
}

func plantedCheckpoint(session string) cp.Checkpoint {
	return cp.Checkpoint{SessionID: session, Forge: "f", Repo: "o/r", WorkKind: cp.KindIssue, WorkNumber: 3,
		WorkflowStage: "push", NextValidAction: "open_pr",
		RecoveryInstructions: "push with glpat-AbCdEfGhIjKlMnOpQrSt to https://agent:s3cr3t-pa55@git.example/o/r.git",
		Blocker:              "401 with Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
		Evidence: json.RawMessage(`{"log": [{"cmd": "git push https://agent:s3cr3t-pa55@git.example/o/r.git",
			"env": {"GITLAB_TOKEN": "glpat-AbCdEfGhIjKlMnOpQrSt"}}], "headers": ["Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"]}`),
		PendingMutation: json.RawMessage(`{"remote": "https://agent:s3cr3t-pa55@git.example/o/r.git"}`)}
}

func TestACheckpointWithPlantedSecretsReadsBackWithNoneOfThem(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		alice, s := w.session("alice", cp.RoleAuthor)
		if _, err := w.svc.WriteCheckpoint(w.ctx, alice, plantedCheckpoint(s), true); err != nil {
			t.Fatal(err)
		}
		got, err := w.svc.GetCheckpoint(w.ctx, alice, plantedCheckpoint(s).Key())
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(got)
		for _, secret := range plantedSecrets {
			if strings.Contains(string(raw), secret) || strings.Contains(string(raw), strings.TrimPrefix(secret, "Bearer ")) {
				t.Errorf("%q survived: %s", secret, raw)
			}
		}
		if !strings.Contains(got.RecoveryInstructions, "git.example/o/r.git") || got.Role != cp.RoleAuthor || got.SchemaVersion != cp.CheckpointSchemaVersion {
			t.Errorf("redaction took more than the secrets, or defaults are missing: %+v", got)
		}
	})
}

func TestRequireCompleteNamesEveryMissingField(t *testing.T) {
	w := newWorld(t, "sqlite")
	alice, s := w.session("alice", cp.RoleAuthor)
	c := cp.Checkpoint{SessionID: s, Forge: "f", Repo: "o/r", WorkflowStage: " "}
	_, err := w.svc.WriteCheckpoint(w.ctx, alice, c, true)
	var e *wq.Error
	if !errors.As(err, &e) || e.Reason != cp.ReasonIncomplete || !strings.Contains(e.Message, "workflow_stage, next_valid_action, recovery_instructions") {
		t.Fatalf("want incomplete_checkpoint naming the three missing fields, got %v", err)
	}
	if strings.Contains(e.Message, "role") {
		t.Errorf("role defaults to the session's and is not missing: %v", err)
	}
	if _, err := w.svc.GetCheckpoint(w.ctx, alice, c.Key()); wq.ErrorCode(err) != wq.ENOTFOUND {
		t.Errorf("a refused drain write stored a row: %v", err)
	}
	if _, err := w.svc.WriteCheckpoint(w.ctx, alice, c, false); err != nil {
		t.Errorf("without require_complete an incomplete checkpoint is progress, and kept: %v", err)
	}
}

func TestCheckpointInputIsRefusedByName(t *testing.T) {
	w := newWorld(t, "sqlite")
	alice, s := w.session("alice", cp.RoleAuthor)
	for _, tc := range []struct {
		field string
		edit  func(*cp.Checkpoint)
	}{
		{"session_id", func(c *cp.Checkpoint) { c.SessionID = "" }},
		{"repo", func(c *cp.Checkpoint) { c.Repo = "" }},
		{"work_number", func(c *cp.Checkpoint) { c.WorkKind, c.WorkNumber = "", 4 }},
		{"work_number", func(c *cp.Checkpoint) { c.WorkNumber = -1 }},
		{"work_kind", func(c *cp.Checkpoint) { c.WorkKind = "incident" }},
		{"role", func(c *cp.Checkpoint) { c.Role = "boss" }},
		{"head_sha", func(c *cp.Checkpoint) { c.HeadSHA = "main" }},
		{"checkpoint_schema_version", func(c *cp.Checkpoint) { c.SchemaVersion = 99 }},
		{"recovery_instructions", func(c *cp.Checkpoint) { c.RecoveryInstructions = strings.Repeat("x", cp.MaxCheckpointText+1) }},
		{"evidence", func(c *cp.Checkpoint) {
			c.Evidence = json.RawMessage(`["` + strings.Repeat("x", cp.MaxCheckpointJSON) + `"]`)
		}},
		{"evidence", func(c *cp.Checkpoint) { c.Evidence = json.RawMessage(`{"a": "\u0000"}`) }},
		{"pending_mutation", func(c *cp.Checkpoint) { c.PendingMutation = json.RawMessage(`{`) }},
		{"blocker", func(c *cp.Checkpoint) { c.Blocker = "nul\x00byte" }},
		{"lease_id", func(c *cp.Checkpoint) { c.LeaseID = "lease; DROP TABLE cp_leases" }},
		{"assignment_id", func(c *cp.Checkpoint) { c.AssignmentID = strings.Repeat("a", 65) }},
		{"forge", func(c *cp.Checkpoint) { c.Forge = "Gitea Prod" }},
		{"repo", func(c *cp.Checkpoint) { c.Repo = "../../etc/passwd" }},
		{"repo", func(c *cp.Checkpoint) { c.Repo = "o/r x" }},
		{"branch", func(c *cp.Checkpoint) { c.Branch = "feature/..weird" }},
		{"session_id", func(c *cp.Checkpoint) { c.SessionID = "s p a c e" }},
	} {
		c := plantedCheckpoint(s)
		tc.edit(&c)
		_, err := w.svc.WriteCheckpoint(w.ctx, alice, c, false)
		if wq.ErrorCode(err) != wq.EINVALID || !strings.HasPrefix(wq.ErrorMessage(err), tc.field+":") {
			t.Errorf("%s: want EINVALID naming it, got %v", tc.field, err)
		}
	}
}

func TestCheckpointsAreTheirSessionOwnersOnly(t *testing.T) {
	w := newWorld(t, "sqlite")
	alice, s := w.session("alice", cp.RoleAuthor)
	bob, _ := w.session("bob", cp.RoleAuthor)
	if _, err := w.svc.WriteCheckpoint(w.ctx, alice, plantedCheckpoint(s), false); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.WriteCheckpoint(w.ctx, bob, plantedCheckpoint(s), false); wq.ErrorCode(err) != wq.ENOTFOUND {
		t.Errorf("bob wrote alice's checkpoint: %v", err)
	}
	if _, err := w.svc.GetCheckpoint(w.ctx, bob, plantedCheckpoint(s).Key()); wq.ErrorCode(err) != wq.ENOTFOUND {
		t.Errorf("bob read alice's checkpoint: %v", err)
	}
	byWork := cp.CheckpointFilter{Forge: "f", Repo: "o/r", WorkKind: cp.KindIssue, WorkNumber: 3, HasNumber: true}
	for _, tc := range []struct {
		who  cp.Caller
		want int
	}{{bob, 0}, {alice, 1}, {cp.Caller{Identity: "root", Admin: true}, 1}} {
		got, err := w.svc.ListCheckpoints(w.ctx, tc.who, byWork)
		if err != nil || len(got) != tc.want {
			t.Errorf("%s lists %d checkpoints of the work unit (%v), want %d", tc.who.Identity, len(got), err, tc.want)
		}
	}
}

func TestReconcileCheckpointChecksTheLeaseAndTheHeadItCan(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		pr := openPR(5, "1111111")
		pr.ReviewState = cp.ReviewNone
		w.work(pr)
		alice, s := w.session("alice", cp.RoleReviewer)
		a := w.assign(alice, s)
		c := cp.Checkpoint{SessionID: s, Forge: "f", Repo: "o/r", WorkKind: cp.KindPR, WorkNumber: 5,
			HeadSHA: "1111111", LeaseID: a.Lease.ID, WorkflowStage: "fix"}
		if _, err := w.svc.WriteCheckpoint(w.ctx, alice, c, false); err != nil {
			t.Fatal(err)
		}
		reconcile := func(head *string) *cp.CheckpointReconcile {
			t.Helper()
			r, err := w.svc.ReconcileCheckpoint(w.ctx, alice, c.Key(), head)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		if r := reconcile(nil); r.Stale || r.ReconcileAction != cp.ReconcileResume || r.HeadSource != "inventory" || !r.LeaseChecked {
			t.Errorf("live lease, inventory head as stored: want resume, got %+v", r.Diagnosis)
		}
		moved := "2222222"
		if r := reconcile(&moved); !r.HeadMismatch || r.ReconcileAction != cp.ReconcileReadHead || r.HeadSource != "caller" {
			t.Errorf("the worktree's head moved: want reinspect, got %+v", r.Diagnosis)
		}
		if _, err := w.svc.ReleaseLease(w.ctx, alice, a.Lease.ID, s); err != nil {
			t.Fatal(err)
		}
		if r := reconcile(nil); !r.LeaseMismatch || r.ReconcileAction != cp.ReconcileReclaim {
			t.Errorf("released lease: want reacquire, got %+v", r.Diagnosis)
		}
		if _, err := w.svc.ReconcileCheckpoint(w.ctx, alice, c.Key(), &[]string{"HEAD"}[0]); wq.ErrorCode(err) != wq.EINVALID {
			t.Errorf("a head that is not a SHA: %v", err)
		}
	})
}

// Checkpoints hold resume state, never a conversation (hard rule 5 of
// #660): chat turns in any text field, or role/content messages at any
// depth of a JSON field, are refused naming the field; one session keeps
// a bounded number of checkpoints, replacing one is always allowed.
func TestTranscriptsAndHistoriesAreRefused(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.svc.MaxCheckpoints = 3
		alice, s := w.session("alice", cp.RoleAuthor)
		for _, tc := range []struct {
			field string
			edit  func(*cp.Checkpoint)
		}{
			{"recovery_instructions", func(c *cp.Checkpoint) {
				c.RecoveryInstructions = "Human: fix the build\n\nAssistant: I ran go test and it passed.\nHuman: now open the PR"
			}},
			{"current_operation", func(c *cp.Checkpoint) {
				c.CurrentOperation = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello"
			}},
			{"evidence", func(c *cp.Checkpoint) {
				c.Evidence = json.RawMessage(`{"log": [{"role": "user", "content": "fix it"}, {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]}`)
			}},
			{"pending_mutation", func(c *cp.Checkpoint) {
				c.PendingMutation = json.RawMessage(`{"messages": [{"author": "human", "text": "a"}, {"author": "model", "text": "b"}]}`)
			}},
			{"evidence", func(c *cp.Checkpoint) { c.Evidence = json.RawMessage(`{"note": "User: why?\nAssistant: because"}`) }},
		} {
			c := plantedCheckpoint(s)
			tc.edit(&c)
			_, err := w.svc.WriteCheckpoint(w.ctx, alice, c, false)
			if wq.ErrorReason(err) != cp.ReasonTranscript || !strings.Contains(wq.ErrorMessage(err), tc.field+":") {
				t.Errorf("%s: want %s naming it, got %v", tc.field, cp.ReasonTranscript, err)
			}
		}
		if _, err := w.svc.RegisterSession(w.ctx, alice, cp.RoleAuthor, "x",
			json.RawMessage(`{"history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}`)); wq.ErrorReason(err) != cp.ReasonTranscript {
			t.Errorf("a session's capabilities holding a conversation: %v", err)
		}
		// Not transcripts: one role/content pair, prose naming a user.
		ok := plantedCheckpoint(s)
		ok.Evidence = json.RawMessage(`{"request": {"role": "reviewer", "content": "the diff"}, "note": "the user asked for a retry"}`)
		if _, err := w.svc.WriteCheckpoint(w.ctx, alice, ok, false); err != nil {
			t.Fatalf("resume state refused: %v", err)
		}
		for n := int64(5); n <= 6; n++ {
			c := plantedCheckpoint(s)
			c.WorkKind, c.WorkNumber = cp.KindIssue, n
			if _, err := w.svc.WriteCheckpoint(w.ctx, alice, c, false); err != nil {
				t.Fatal(err)
			}
		}
		over := plantedCheckpoint(s)
		over.WorkKind, over.WorkNumber = cp.KindIssue, 7
		if _, err := w.svc.WriteCheckpoint(w.ctx, alice, over, false); wq.ErrorReason(err) != cp.ReasonTooManyCheckpoints {
			t.Errorf("a fourth checkpoint past the bound of 3: %v", err)
		}
		if _, err := w.svc.WriteCheckpoint(w.ctx, alice, ok, false); err != nil {
			t.Errorf("replacing a checkpoint at the bound: %v", err)
		}
	})
}
