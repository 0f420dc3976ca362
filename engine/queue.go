package engine

import (
	"context"
	"slices"
	"sync"

	wq "github.com/workqueue-dev/workqueue"
)

// queue hands item ids to workers with the client-go workqueue rule: an id
// is never processed by two workers at once, and an id added while it is
// being processed is marked dirty and handed out once more after Done.
type queue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	items      []wq.ItemID
	dirty      map[wq.ItemID]bool // queued or to be re-queued
	processing map[wq.ItemID]bool
	closed     bool

	// The sweep's view of an id is as old as its query: ids done since a
	// sweep began are remembered (with the count of Done calls at the
	// time) while any sweep runs, so that its stale finds are dropped.
	dones     uint64
	sweeps    int
	doneSince map[wq.ItemID]uint64

	// backlog says the store may hold more due items than are queued (a
	// sweep came back full) and can claim them itself (wq.DueClaimer):
	// a claimer with nothing queued claims due items from the store
	// (Next says so) until a claim comes back short. claimingDue counts
	// those claims in flight; the queue is not idle while any runs.
	backlog     bool
	claimingDue int
	backlogDone chan struct{} // closed when the backlog ends
}

func newQueue() *queue {
	q := &queue{dirty: map[wq.ItemID]bool{}, processing: map[wq.ItemID]bool{}, doneSince: map[wq.ItemID]uint64{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues id unless it is queued already; an id being processed is
// re-queued when it is done.
func (q *queue) Add(id wq.ItemID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.dirty[id] {
		return
	}
	q.dirty[id] = true
	if q.processing[id] {
		return
	}
	q.items = append(q.items, id)
	q.cond.Broadcast()
}

// sweepMark is the moment a sweep's query begins, for AddSwept.
type sweepMark uint64

// BeginSweep marks the start of a sweep's query; every BeginSweep must be
// followed by one AddSwept with its mark.
func (q *queue) BeginSweep() sweepMark {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweeps++
	return sweepMark(q.dones)
}

// AddSwept queues what a sweep that began at mark found, except ids it
// cannot know better than their worker: an id being processed (its exit
// decision comes after the sweep's query; marking it dirty would run it
// once more for nothing) and an id done since the sweep began (its exit
// may have been written after the query read it). Either way the item
// left its worker no older than the sweep's view of it, and an item still
// due then is found by the next sweep; notifications (Add) still re-run
// ids being processed.
func (q *queue) AddSwept(ids []wq.ItemID, mark sweepMark) (added int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.sweeps--; q.sweeps == 0 {
		defer clear(q.doneSince)
	}
	for _, id := range ids {
		if q.closed || q.dirty[id] || q.processing[id] {
			continue
		}
		if at, ok := q.doneSince[id]; ok && at > uint64(mark) {
			continue
		}
		q.dirty[id] = true
		q.items = append(q.items, id)
		added++
	}
	if added > 0 {
		q.cond.Broadcast()
	}
	return added
}

// Get blocks until an id is available or the queue is closed (ok false).
func (q *queue) Get() (wq.ItemID, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return wq.ItemID{}, false
	}
	id := q.items[0]
	q.items[0] = wq.ItemID{}
	q.items = q.items[1:]
	q.processing[id] = true
	delete(q.dirty, id)
	q.cond.Broadcast()
	return id, true
}

// GetBatch is Get for up to n ids: it blocks until one is available or the
// queue is closed (ok false), then takes as many as are queued, up to n.
func (q *queue) GetBatch(n int) ([]wq.ItemID, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	return q.takeLocked(n)
}

// Next is GetBatch for a claimer that can also claim due items from the
// store: it blocks until an id is queued, or the queue holds a backlog,
// or it is closed (ok false). Queued ids come first, as GetBatch takes
// them; with none queued and a backlog, it returns claimDue true, and
// the caller claims up to n due items from the store, then calls
// ClaimedDue with them, whatever the claim's outcome. One such claim
// runs at a time: each goes on where the one before stopped, and two at
// once would read the same items, one passing over the other's locks.
func (q *queue) Next(n int) (ids []wq.ItemID, claimDue, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !(q.backlog && q.claimingDue == 0) && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 && !q.closed {
		q.claimingDue++
		return nil, true, true
	}
	ids, ok = q.takeLocked(n)
	return ids, false, ok
}

// SetBacklog says the store may hold more due items than are queued; the
// channel it returns is closed when the backlog ends (a claim came back
// short, or the queue closed).
func (q *queue) SetBacklog() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		done := make(chan struct{})
		close(done)
		return done
	}
	if !q.backlog {
		q.backlog = true
		q.backlogDone = make(chan struct{})
		q.cond.Broadcast()
	}
	return q.backlogDone
}

// endBacklog ends the backlog; q.mu is held.
func (q *queue) endBacklog() {
	if q.backlog {
		q.backlog = false
		close(q.backlogDone)
	}
}

// ClaimedDue ends a claim of due items (Next) that leased ids, and
// reports whether it was full (as many as asked for): a short one ends
// the backlog. The ids are being processed from now on, as if taken from
// the queue, and leave it if queued; taken is false for an id that is
// being processed already (its worker's lease ran out: the id is marked
// dirty, to run once more after, and the caller gives back the new
// lease), so that no two workers ever hold one id.
func (q *queue) ClaimedDue(ids []wq.ItemID, full bool) (taken []bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claimingDue--
	if !full {
		q.endBacklog()
	}
	taken = make([]bool, len(ids))
	var unqueue map[wq.ItemID]bool
	for i, id := range ids {
		if q.processing[id] {
			q.dirty[id] = true
			continue
		}
		taken[i] = true
		q.processing[id] = true
		if q.dirty[id] {
			delete(q.dirty, id)
			if unqueue == nil {
				unqueue = map[wq.ItemID]bool{}
			}
			unqueue[id] = true
		}
	}
	if unqueue != nil {
		q.items = slices.DeleteFunc(q.items, func(id wq.ItemID) bool { return unqueue[id] })
	}
	q.cond.Broadcast()
	return taken
}

// takeLocked takes up to n queued ids; q.mu is held.
func (q *queue) takeLocked(n int) ([]wq.ItemID, bool) {
	if len(q.items) == 0 {
		return nil, false
	}
	n = min(n, len(q.items))
	ids := slices.Clone(q.items[:n])
	clear(q.items[:n])
	q.items = q.items[n:]
	for _, id := range ids {
		q.processing[id] = true
		delete(q.dirty, id)
	}
	q.cond.Broadcast()
	return ids, true
}

// Done ends the processing of id and re-queues it if it was added since.
func (q *queue) Done(id wq.ItemID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, id)
	q.dones++
	if q.sweeps > 0 {
		q.doneSince[id] = q.dones
	}
	if q.dirty[id] && !q.closed {
		q.items = append(q.items, id)
	}
	q.cond.Broadcast()
}

// Len is the number of ids waiting for a worker.
func (q *queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Close wakes every waiter; Get returns false once the queue is empty and
// queued ids are dropped (the sweep finds them again after a restart).
func (q *queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.items = nil
	q.endBacklog()
	q.cond.Broadcast()
}

// waitUntil blocks until cond holds (checked under the lock after every
// change) or ctx ends.
func (q *queue) waitUntil(ctx context.Context, cond func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.cond.Broadcast()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for !cond() {
		if err := ctx.Err(); err != nil {
			return err
		}
		q.cond.Wait()
	}
	return nil
}

// WaitBelow blocks until fewer than n ids wait, or the queue closed.
func (q *queue) WaitBelow(ctx context.Context, n int) error {
	return q.waitUntil(ctx, func() bool { return len(q.items) < n || q.closed })
}

// WaitIdle blocks until nothing is queued or being processed, and no
// backlog waits in the store.
func (q *queue) WaitIdle(ctx context.Context) error {
	return q.waitUntil(ctx, func() bool {
		return len(q.items) == 0 && len(q.processing) == 0 && (q.closed || !q.backlog && q.claimingDue == 0)
	})
}
