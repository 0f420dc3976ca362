package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
)

func TestRecentKeepsTheLatestEntriesOfTheLatestItems(t *testing.T) {
	ctx := context.Background()
	r := audit.NewRecent(2, 3)
	write := func(item string, n int) {
		r.WriteAudit(ctx, wq.AuditEntry{ItemID: item, EventType: fmt.Sprintf("e%d", n)})
	}
	types := func(item string) []string {
		var out []string
		for _, e := range r.ItemAudit(ctx, item) {
			out = append(out, e.EventType)
		}
		return out
	}
	r.WriteAudit(ctx, wq.AuditEntry{EventType: wq.AuditAuthAllowed}) // names no item: not kept
	for i := 1; i <= 5; i++ {
		write("a", i)
	}
	if diff := cmp.Diff([]string{"e3", "e4", "e5"}, types("a")); diff != "" {
		t.Errorf("an item's entries (-want +got):\n%s", diff)
	}
	write("b", 1)
	write("a", 6) // a is now heard of more recently than b
	write("c", 1) // so b is the one dropped
	if got := types("b"); got != nil {
		t.Errorf("b was kept beyond the bound of two items: %v", got)
	}
	if diff := cmp.Diff([]string{"e4", "e5", "e6"}, types("a")); diff != "" {
		t.Errorf("a after c arrived (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"e1"}, types("c")); diff != "" {
		t.Errorf("c (-want +got):\n%s", diff)
	}
}
