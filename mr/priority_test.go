package mr_test

import (
	"context"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/budget"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/mr"
)

// priorityForge records the budget priority of each merge request read.
type priorityForge struct {
	*fakeForge
	mu    sync.Mutex
	reads []budget.Priority
}

func (p *priorityForge) GetMergeRequest(ctx context.Context, project string, number int64) (*wq.MergeRequest, error) {
	p.mu.Lock()
	p.reads = append(p.reads, budget.PriorityOf(ctx))
	p.mu.Unlock()
	return p.fakeForge.GetMergeRequest(ctx, project, number)
}

func (p *priorityForge) take() []budget.Priority {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.reads
	p.reads = nil
	return out
}

// The reconciles an item schedules for itself read in the background,
// behind every other request under the forge's budget; the one a webhook
// asks for, and the first after the merge request is opened, read in the
// foreground.
func TestScheduledReconcilesReadInTheBackgroundAndAskedForOnesDoNot(t *testing.T) {
	ff := newFakeForge()
	pf := &priorityForge{fakeForge: ff}
	h := newHarness(t, mr.Options{Forges: map[string]wq.Forge{"fake": pf}})
	h.forge = ff
	h.forge.setBlocker(wq.MergePeople)
	it, _ := h.openMR(fakeSubmission("v1\n"))
	if got := pf.take(); len(got) == 0 || got[len(got)-1] != budget.Foreground {
		t.Errorf("the look right after opening: %v, want foreground", got)
	}
	h.advance(time.Hour, time.Minute)
	got := pf.take()
	for _, p := range got {
		if p != budget.Background {
			t.Errorf("the scheduled looks of an hour: %v, want every one background", got)
			break
		}
	}
	if len(got) == 0 {
		t.Error("no scheduled look in an hour")
	}
	h.event(it.ID, gitea.EventReview, `{"action":"reviewed","review":{"type":"pull_request_review_approved"}}`, "approval")
	if got := pf.take(); len(got) != 1 || got[0] != budget.Foreground {
		t.Errorf("the look a webhook asked for: %v, want one foreground", got)
	}
}
