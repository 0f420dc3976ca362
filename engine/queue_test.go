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
