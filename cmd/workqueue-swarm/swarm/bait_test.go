package swarm

import (
	"context"
	"testing"
	"time"
)

// newBaitRun is a run with baits hostile baits, started at start.
func newBaitRun(baits int, start time.Time) *run {
	r := &run{start: start, baited: make(chan struct{})}
	r.baitsLeft.Store(int32(baits))
	return r
}

func TestHonestReviewersWaitUntilEveryBaitHoldsItsLease(t *testing.T) {
	t.Parallel()
	r := newBaitRun(2, time.Now())
	waited := make(chan struct{})
	go func() { r.awaitBait(context.Background()); close(waited) }()
	r.baitSettled()
	select {
	case <-waited:
		t.Fatal("a reviewer went on with one of two baits still trying")
	case <-time.After(20 * time.Millisecond):
	}
	r.baitSettled()
	<-waited // the last bait settled: every reviewer goes on
	r.awaitBait(context.Background())
}

func TestHonestReviewersWaitNoLongerThanTheBaitsHeadStart(t *testing.T) {
	t.Parallel()
	r := newBaitRun(1, time.Now().Add(-baitHead)) // the head start is over
	r.awaitBait(context.Background())             // returns: the bait never settled
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	newBaitRun(1, time.Now()).awaitBait(ctx) // nor past the run's end
}
