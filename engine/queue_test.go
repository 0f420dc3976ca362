package engine

import (
	"context"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

func TestQueueNeverHandsOutAnIDTwiceAndRerunsDirtyOnes(t *testing.T) {
	q := newQueue()
	a, b := wq.NewItemID(), wq.NewItemID()
	q.Add(a)
	q.Add(a) // deduplicated while queued
	q.Add(b)
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2", q.Len())
	}
	got, _ := q.Get()
	if got != a {
		t.Fatalf("Get = %v, want a first", got)
	}
	q.Add(a) // notified while being processed: dirty, not handed out
	if got, _ := q.Get(); got != b {
		t.Fatalf("Get = %v, want b (a is still processing)", got)
	}
	if q.Len() != 0 {
		t.Fatalf("a was queued while processing")
	}
	q.Done(a)
	if got, _ := q.Get(); got != a {
		t.Fatalf("dirty a was not re-queued after Done")
	}
	q.Done(a)
	q.Done(b)
	if err := q.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	q.Close()
	if _, ok := q.Get(); ok {
		t.Error("Get after Close returned an id")
	}
}

func TestASweepDoesNotRequeueWhatItsWorkerKnowsBetter(t *testing.T) {
	q := newQueue()
	running, finished, fresh := wq.NewItemID(), wq.NewItemID(), wq.NewItemID()
	q.Add(running)
	q.Add(finished)
	for range 2 {
		if _, ok := q.Get(); !ok {
			t.Fatal("Get found nothing")
		}
	}
	mark := q.BeginSweep() // the sweep's query reads all three as due
	q.Done(finished)       // its exit was written after the query read it
	if added := q.AddSwept([]wq.ItemID{running, finished, fresh}, mark); added != 1 {
		t.Fatalf("AddSwept queued %d ids, want only the one no worker had", added)
	}
	if got, _ := q.Get(); got != fresh {
		t.Fatalf("Get = %v, want the fresh id", got)
	}
	q.Done(running)
	if q.Len() != 0 {
		t.Fatal("the id being processed when the sweep found it was re-run after Done")
	}
	q.Done(fresh)

	// A later sweep knows better than the workers it follows: what it
	// finds is queued again.
	mark = q.BeginSweep()
	if added := q.AddSwept([]wq.ItemID{running, finished}, mark); added != 2 {
		t.Fatalf("a sweep begun after the ids were done queued %d of them, want 2", added)
	}
	if len(q.doneSince) != 0 {
		t.Fatalf("%d done ids remembered with no sweep running", len(q.doneSince))
	}

	// A notification still re-runs an id being processed.
	id, _ := q.Get()
	q.Add(id)
	q.Done(id)
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want the notified id back in the queue beside the other", q.Len())
	}
}

// With a backlog in the store, a claimer with nothing queued is told to
// claim due items from the store, one such claim at a time; queued ids
// still come first; a claim that comes back short ends the backlog; and
// the queue is not idle while a backlog or its claim is outstanding.
func TestABacklogSendsOneClaimerAtATimeToTheStoreUntilAClaimComesBackShort(t *testing.T) {
	q := newQueue()
	ctx := context.Background()
	ended := q.SetBacklog()
	idle := make(chan error, 1)
	go func() { idle <- q.WaitIdle(ctx) }()

	queued := wq.NewItemID()
	q.Add(queued)
	if ids, claimDue, ok := q.Next(10); !ok || claimDue || len(ids) != 1 || ids[0] != queued {
		t.Fatalf("Next = %v, %v, %v; want the queued id first", ids, claimDue, ok)
	}
	if _, claimDue, ok := q.Next(10); !ok || !claimDue {
		t.Fatalf("Next with nothing queued and a backlog: claimDue %v, ok %v; want a claim of due items", claimDue, ok)
	}
	second := make(chan bool, 1)
	go func() {
		_, claimDue, _ := q.Next(10)
		second <- claimDue
	}()
	select {
	case <-second:
		t.Fatal("a second claimer was sent to the store while the first claim ran")
	default:
	}

	// The first claim comes back full: its ids are being processed, and
	// the second claimer goes next.
	a, b := wq.NewItemID(), wq.NewItemID()
	if taken := q.ClaimedDue([]wq.ItemID{a, b}, true); !taken[0] || !taken[1] {
		t.Fatalf("ClaimedDue took %v; want both", taken)
	}
	if !<-second {
		t.Fatal("the second claimer was not sent to the store after a full claim")
	}
	q.Add(a) // notified while processed: dirty, as for any id taken
	if q.Len() != 0 {
		t.Fatal("an id taken by a claim of due items was queued while processed")
	}
	// The second comes back short: the backlog ends.
	if taken := q.ClaimedDue(nil, false); len(taken) != 0 {
		t.Fatalf("ClaimedDue(nil) = %v", taken)
	}
	select {
	case <-ended:
	default:
		t.Fatal("a short claim did not end the backlog")
	}
	select {
	case err := <-idle:
		t.Fatalf("the queue went idle (%v) with ids being processed", err)
	default:
	}
	q.Done(queued)
	q.Done(b)
	q.Done(a)
	if got, _ := q.Get(); got != a {
		t.Fatalf("the dirty id was not re-queued after Done")
	}
	q.Done(a)
	if err := <-idle; err != nil {
		t.Fatal(err)
	}
}

// A claim of due items may lease an id that is queued here (it leaves
// the queue: one worker for it) or one that a worker here still
// processes after its lease ran out: that one is not taken (the caller
// gives the new lease back) and runs once more after its worker is done.
func TestAClaimOfDueItemsNeverHandsAWorkerAnIDAnotherWorkerHolds(t *testing.T) {
	q := newQueue()
	held, queued, fresh := wq.NewItemID(), wq.NewItemID(), wq.NewItemID()
	q.Add(held)
	if got, _ := q.Get(); got != held {
		t.Fatal("Get did not hand out the held id")
	}
	q.SetBacklog()
	if _, claimDue, _ := q.Next(10); !claimDue {
		t.Fatal("Next with nothing queued and a backlog did not send the claimer to the store")
	}
	q.Add(queued) // notified while the claim runs
	taken := q.ClaimedDue([]wq.ItemID{held, queued, fresh}, true)
	if taken[0] || !taken[1] || !taken[2] {
		t.Fatalf("ClaimedDue took %v; want all but the id a worker holds", taken)
	}
	if q.Len() != 0 {
		t.Fatalf("%d ids still queued; the claimed one must leave the queue", q.Len())
	}
	q.Done(held)
	if got, _ := q.Get(); got != held {
		t.Fatal("the held id was not run once more after its worker was done")
	}
}
