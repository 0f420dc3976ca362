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
