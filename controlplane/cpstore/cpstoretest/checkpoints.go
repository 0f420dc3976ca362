package cpstoretest

import (
	"encoding/json"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

// checkpoint is a full checkpoint of session s on issue n of gitea o/r
// (n 0: the session's own).
func checkpoint(s string, n int64) controlplane.Checkpoint {
	c := controlplane.Checkpoint{SchemaVersion: controlplane.CheckpointSchemaVersion,
		SessionID: s, ProviderIdentity: "claude@ci", Role: controlplane.RoleAuthor, Forge: "gitea", Repo: "o/r",
		WorktreePath: "/w/" + s, Branch: "fix", HeadSHA: "0123456789abcdef0123456789abcdef01234567",
		Capabilities: json.RawMessage(`{"langs": ["go"]}`), LeaseID: "l1", AssignmentID: "a1",
		WorkflowStage: "testing", LastCompletedAction: "commit", CurrentOperation: "push",
		PendingMutation: json.RawMessage(`{"push": {"branch": "fix"}}`), Evidence: json.RawMessage(`[1, "two", null]`),
		Blocker: "", NextValidAction: "open_pr", RecoveryInstructions: "re-run the tests, then push", Status: "active"}
	if n > 0 {
		c.WorkKind, c.WorkNumber = controlplane.KindIssue, n
	}
	return c
}

func checkpoints(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Sessions(controlplane.RoleAuthor, "s1", "s2")
	put := func(c controlplane.Checkpoint, now time.Time) *controlplane.Checkpoint {
		t.Helper()
		got, err := f.S.PutCheckpoint(f.Ctx, c, now)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := checkpoint("s1", 7)
	stored := put(first, T0)
	t.Run("a checkpoint reads back as written, created and updated now", func(t *testing.T) {
		want := first
		want.CreatedAt, want.UpdatedAt = T0, T0
		wantDiff(t, "returned", &want, stored)
		got, err := f.S.GetCheckpoint(f.Ctx, first.Key())
		if err != nil {
			t.Fatal(err)
		}
		wantDiff(t, "read", &want, got)
	})
	t.Run("a second write replaces the row and keeps created_at", func(t *testing.T) {
		next := checkpoint("s1", 7)
		next.WorkflowStage, next.PendingMutation, next.Capabilities = "review", nil, nil
		got := put(next, T0.Add(time.Minute))
		next.CreatedAt, next.UpdatedAt = T0, T0.Add(time.Minute)
		wantDiff(t, "replaced", &next, got)
		all, err := f.S.ListCheckpoints(f.Ctx, controlplane.CheckpointFilter{SessionID: "s1"})
		if err != nil || len(all) != 1 {
			t.Fatalf("one row per key: %d rows, %v", len(all), err)
		}
	})
	t.Run("a session's own row and its work units' rows are apart", func(t *testing.T) {
		put(checkpoint("s1", 0), T0.Add(2*time.Minute))
		put(checkpoint("s1", 8), T0.Add(3*time.Minute))
		put(checkpoint("s2", 7), T0.Add(4*time.Minute))
		_, err := f.S.GetCheckpoint(f.Ctx, controlplane.CheckpointKey{Forge: "gitea", Repo: "o/r", SessionID: "s2", WorkKind: controlplane.KindPR, WorkNumber: 7})
		WantCode(t, err, wq.ENOTFOUND)
	})
	t.Run("checkpoints list newest first, by session, work unit or identity", func(t *testing.T) {
		type key struct {
			S string
			N int64
		}
		for _, tc := range []struct {
			name string
			f    controlplane.CheckpointFilter
			want []key
		}{
			{"by session", controlplane.CheckpointFilter{SessionID: "s1"}, []key{{"s1", 8}, {"s1", 0}, {"s1", 7}}},
			{"by work unit", controlplane.CheckpointFilter{Forge: "gitea", Repo: "o/r", WorkKind: controlplane.KindIssue, WorkNumber: 7, HasNumber: true}, []key{{"s2", 7}, {"s1", 7}}},
			{"session rows by number 0", controlplane.CheckpointFilter{WorkNumber: 0, HasNumber: true}, []key{{"s1", 0}}},
			{"by identity", controlplane.CheckpointFilter{Identity: "agent-s2"}, []key{{"s2", 7}}},
			{"by another repo", controlplane.CheckpointFilter{Repo: "o/other"}, nil},
			{"up to a limit", controlplane.CheckpointFilter{Limit: 2}, []key{{"s2", 7}, {"s1", 8}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := f.S.ListCheckpoints(f.Ctx, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				var keys []key
				for _, c := range got {
					keys = append(keys, key{c.SessionID, c.WorkNumber})
				}
				wantDiff(t, "checkpoints", tc.want, keys)
			})
		}
	})
	t.Run("a checkpoint of a session that does not exist is refused", func(t *testing.T) {
		_, err := f.S.PutCheckpoint(f.Ctx, checkpoint("ghost", 1), T0)
		WantCode(t, err, wq.ENOTFOUND)
	})
}
