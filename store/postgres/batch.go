package postgres

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Coalescing. The engine's workers each run an item's loop and call the
// store once per step; under load, many of them make the same call at the
// same moment (load an item, write an executor's dimensions, take the exit
// decision). Each such call was a round trip and a transaction of its own,
// and the server's CPU went on per-statement overhead, not on the rows. A
// batcher takes every call of one kind queued while its last batch ran and
// makes them one statement over arrays (unnest), with a result per call:
// nothing waits to fill a batch, so a lone call costs one round trip as
// before.
//
// A batch that fails as a whole (a bad value in one call, a lost
// connection) is retried call by call, so that one call's error is only
// its own.

// maxCoalesced bounds one batch.
const maxCoalesced = 256

// batchTimeout bounds one batch. A batch runs without its callers'
// cancellation (one caller leaving must not fail the others), so without
// a bound a batch stuck behind a lock would hold its runner for ever.
const batchTimeout = time.Minute

// batchRunners is how many batches of one kind may be in flight at once:
// two, so that one batch waiting for a lock (an exit for an item whose
// delivery is being stored) does not hold up every call of its kind. More
// runners make smaller batches: four made half the engine's throughput
// of one or two.
const batchRunners = 2

// batcher coalesces calls of one kind. run gets the requests of a batch
// and returns one result per request (a per-call error goes in Res), or
// an error for the batch as a whole.
type batcher[Req, Res any] struct {
	run func(ctx context.Context, reqs []Req) ([]Res, error)
	// runners is how many batches may be in flight at once: batchRunners
	// when zero.
	runners int
	// loneCancels runs a batch of one call under its caller's context, so
	// that the caller's leaving cancels its statement as an uncoalesced
	// call would (the reads: a slow one would hold a runner otherwise).
	loneCancels bool
	queue       chan *pendingCall[Req, Res]
	stop        chan struct{}
	// mu is held to read while a call is queued and to write while close
	// marks the batcher closed: no call enters the queue after close
	// drained it, so a caller waits for its answer alone, without a
	// channel of the store's in its select (a thousand workers selecting
	// on one shared channel queued on its lock).
	mu     sync.RWMutex
	closed bool
	// calls recycles the calls that were answered: a call whose caller
	// gave up may still be answered later, and is left to the collector.
	calls    sync.Pool
	finished chan struct{} // closed once close is done
	wg       sync.WaitGroup
	once     sync.Once
}

type pendingCall[Req, Res any] struct {
	ctx  context.Context
	req  Req
	done chan callResult[Res]
}

type callResult[Res any] struct {
	res Res
	err error
}

var errStoreClosed = errors.New("postgres: store closed")

func newBatcher[Req, Res any](run func(ctx context.Context, reqs []Req) ([]Res, error)) *batcher[Req, Res] {
	return startBatcher(&batcher[Req, Res]{run: run})
}

// startBatcher starts b, whose run (and loneCancels, runners) is set.
func startBatcher[Req, Res any](b *batcher[Req, Res]) *batcher[Req, Res] {
	b.queue, b.stop, b.finished = make(chan *pendingCall[Req, Res], maxCoalesced), make(chan struct{}), make(chan struct{})
	if b.runners == 0 {
		b.runners = batchRunners
	}
	for range b.runners {
		b.wg.Add(1)
		go b.loop()
	}
	return b
}

// do queues req and waits for its result. A caller whose context ends
// stops waiting; the call may still run (as a statement already sent
// may still commit).
func (b *batcher[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	var zero Res
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c, _ := b.calls.Get().(*pendingCall[Req, Res])
	if c == nil {
		c = &pendingCall[Req, Res]{done: make(chan callResult[Res], 1)}
	}
	c.ctx, c.req = ctx, req
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return zero, errStoreClosed
	}
	select {
	case b.queue <- c:
	case <-ctx.Done():
		b.mu.RUnlock()
		return zero, ctx.Err()
	}
	b.mu.RUnlock()
	select {
	case r := <-c.done:
		*c = pendingCall[Req, Res]{done: c.done}
		b.calls.Put(c)
		return r.res, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// close stops the runners once their batches are done and answers the
// calls still queued.
func (b *batcher[Req, Res]) close() {
	b.once.Do(func() {
		b.mu.Lock() // waits for callers queueing now: the runners still take calls
		b.closed = true
		b.mu.Unlock()
		close(b.stop)
		b.wg.Wait()
		for drained := false; !drained; {
			select {
			case c := <-b.queue:
				c.done <- callResult[Res]{err: errStoreClosed}
			default:
				drained = true
			}
		}
		close(b.finished)
	})
	<-b.finished
}

func (b *batcher[Req, Res]) loop() {
	defer b.wg.Done()
	calls := make([]*pendingCall[Req, Res], 0, maxCoalesced)
	for {
		select {
		case c := <-b.queue:
			calls = append(calls[:0], c)
		case <-b.stop:
			return
		}
	fill:
		for len(calls) < maxCoalesced {
			select {
			case c := <-b.queue:
				calls = append(calls, c)
			default:
				break fill
			}
		}
		b.runBatch(calls)
		clear(calls)
	}
}

// runBatch runs the calls whose callers still wait, and answers each.
func (b *batcher[Req, Res]) runBatch(calls []*pendingCall[Req, Res]) {
	live := calls[:0:0]
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.done <- callResult[Res]{err: err}
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	reqs := make([]Req, len(live))
	for i, c := range live {
		reqs[i] = c.req
	}
	// The batch runs for callers that may give up: without their
	// cancellation, so that one caller leaving cannot fail the others.
	base := context.WithoutCancel(live[0].ctx)
	if b.loneCancels && len(live) == 1 {
		base = live[0].ctx
	}
	ctx, cancel := context.WithTimeout(base, batchTimeout)
	defer cancel()
	res, err := b.run(ctx, reqs)
	if err != nil && len(live) > 1 {
		for _, c := range live {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), batchTimeout)
			one, err := b.run(ctx, []Req{c.req})
			cancel()
			if err != nil {
				c.done <- callResult[Res]{err: err}
				continue
			}
			c.done <- callResult[Res]{res: one[0]}
		}
		return
	}
	for i, c := range live {
		if err != nil {
			c.done <- callResult[Res]{err: err}
			continue
		}
		c.done <- callResult[Res]{res: res[i]}
	}
}
