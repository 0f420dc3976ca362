package controlplane_test

import (
	"context"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/budget"
)

// priorityListing records the budget priority of each listing.
type priorityListing struct {
	*invForge
	got chan budget.Priority
}

func (p priorityListing) ListOpenWork(ctx context.Context, project string) ([]wq.WorkInfo, error) {
	p.got <- budget.PriorityOf(ctx)
	return p.invForge.ListOpenWork(ctx, project)
}

// The inventory's periodic sync reads in the background, behind every
// caller that waits under the forge's budget; a sync an admin asks for
// does not.
func TestThePeriodicSyncReadsInTheBackground(t *testing.T) {
	inv, _, forge, _ := newInventory(t)
	forge.set("org/a", anIssue(1, "A"))
	p := priorityListing{invForge: forge, got: make(chan budget.Priority, 1)}
	inv.Forges = map[string]wq.Forge{"g": p}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inv.Run(ctx) }()
	if got := <-p.got; got != budget.Background {
		t.Errorf("Run's sync: %v, want background", got)
	}
	cancel()
	<-done
	if _, err := inv.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := <-p.got; got != budget.Foreground {
		t.Errorf("a sync asked for: %v, want foreground", got)
	}
}
