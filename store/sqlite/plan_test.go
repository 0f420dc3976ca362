package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSweepNeverWalksAllItems pins the sweep's cost to the due items: every
// access to work_items must be a lookup by id or go through the partial
// index of actionable items. A plan that walks work_items by type and phase
// costs as much as there are active items (seen: 310 ms at 100,000 idle).
func TestSweepNeverWalksAllItems(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	q, args := dueItemsQuery([]string{"mr", "example"}, time.Now(), 1000)
	rows, err := s.read.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	for _, step := range plan {
		if !strings.Contains(step, "work_items") || strings.Contains(step, "work_item_statuses") {
			continue
		}
		byID := strings.Contains(step, "id=?")
		actionable := strings.Contains(step, "work_items_sweep_actionable")
		if !byID && !actionable {
			t.Errorf("the sweep walks work_items: %q\nplan:\n%s", step, strings.Join(plan, "\n"))
		}
	}
}
