package mrstore_test

import (
	"context"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// TestAnItemDeletedByHandTakesItsDetailsWithIt: the service deletes no
// item, but an operator may, and its merge request's details go with it
// on both drivers (on PostgreSQL by a trigger since mr migration 5, which
// dropped the foreign key), and another item's stay.
func TestAnItemDeletedByHandTakesItsDetailsWithIt(t *testing.T) {
	ctx := context.Background()
	testdb.EachKind(t, func(t *testing.T, kind string) {
		s := testdb.Open(t, kind)
		d := s.Queue.(seam.Driver)
		content := "x"
		mk := func(branch string) *wq.Item {
			it, err := s.CreateMR(ctx, wq.NewItem{ItemType: mr.ItemType, IdempotencyKey: mr.IdempotencyKey("gitea", "o/r", branch), ContentHash: "h"},
				mr.Detail{Forge: "gitea", Project: "o/r", SourceBranch: branch, TargetBranch: "main", Title: "T", CommitMessage: "C",
					FileActions: []mr.FileAction{{Action: mr.ActionCreate, FilePath: "a", Content: &content}}}, T0)
			if err != nil {
				t.Fatal(err)
			}
			return it
		}
		gone, kept := mk("wq/gone"), mk("wq/kept")
		if err := d.Write(ctx, func(tx seam.Tx) error {
			q, args := d.Dialect().Bind(`DELETE FROM work_items WHERE id = ?`, []any{gone.ID})
			_, err := tx.Exec(ctx, q, args...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		count := func(id wq.ItemID) int {
			q, args := d.Dialect().Bind(`SELECT count(*) FROM mr_details WHERE work_item_id = ?`, []any{id})
			var n int
			if err := d.Reader().QueryRow(ctx, q, args...).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if left, others := count(gone.ID), count(kept.ID); left != 0 || others != 1 {
			t.Errorf("after deleting an item: %d of its detail rows left, %d of another item's; want 0 and 1", left, others)
		}
	})
}
