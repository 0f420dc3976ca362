package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	wq "github.com/workqueue-dev/workqueue"
)

// wakeupChannel carries "item_type:id" for every item work was enqueued
// for, so that every instance handling the type wakes at once.
const wakeupChannel = "workqueue_wakeup"

// wakeupPayload is an item's wake-up as listeners read it.
func wakeupPayload(itemType string, id wq.ItemID) string { return itemType + ":" + id.String() }

// notifySQL sends the wake-ups $1 (payloads, text[]) on commit.
const notifySQL = `SELECT pg_notify('` + wakeupChannel + `', p) FROM unnest($1::text[]) AS p`

// waking runs write, a transaction whose statements append the
// wake-ups they owe to wakes, and sends those once it committed.
func (s *Store) waking(write func(wakes *[]string) error) error {
	var wakes []string
	if err := write(&wakes); err != nil {
		return err
	}
	s.wakes.wake(wakes...)
	return nil
}

// waker sends the wake-ups of committed writes, as many as have queued
// in one statement, one small transaction. Inserts are the exception:
// their batches run one at a time, so they send their wake-ups in their
// own transaction (insertBatch), which saves that small one, and come
// here only when that fails. A transaction that notifies takes
// PostgreSQL's one notify-queue lock from its commit's start to its
// end, so notifying commits run one at a time, each with its own WAL
// flush: with the wake-up inside each submission's transaction, 8
// clients inserting items committed 2,300 a second where they commit
// 4,100 without (pgbench, this project's insert, fsync on). Sent after
// the commit, the writes commit side by side (group commit), the
// listeners never hear of a write they cannot see yet, and none hears of
// a rolled-back one. A wake-up is a hint: one lost to a crash after the
// commit, or to a failed send, is found by the next sweep.
type waker struct {
	pool *pgxpool.Pool

	// sent counts the wake-ups sent, for tests: the inserts' own travel
	// in their batch's transaction, not here.
	sent atomic.Int64

	mu      sync.Mutex
	queued  []string
	sending bool
	closed  bool
	done    sync.WaitGroup
}

// maxWakeupsPerSend bounds one statement's wake-ups.
const maxWakeupsPerSend = 1000

// wake queues payloads and starts a sender if none runs.
func (w *waker) wake(payloads ...string) {
	if len(payloads) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.queued = append(w.queued, payloads...)
	if w.sending {
		return
	}
	w.sending = true
	w.done.Add(1)
	go w.send()
}

// send sends what is queued until nothing is.
func (w *waker) send() {
	defer w.done.Done()
	for {
		w.mu.Lock()
		batch := w.queued[:min(len(w.queued), maxWakeupsPerSend)]
		w.queued = w.queued[len(batch):]
		if len(batch) == 0 {
			w.sending = false
			w.queued = nil
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = w.pool.Exec(ctx, notifySQL, batch)
		w.sent.Add(int64(len(batch)))
		cancel()
	}
}

// close drops what is queued, sends nothing more, and waits for the send
// in flight (at most its timeout): the other instances' sweeps find what
// it did not send.
func (w *waker) close() {
	w.mu.Lock()
	w.closed, w.queued = true, nil
	w.mu.Unlock()
	w.done.Wait()
}

// ListenWakeups listens on a dedicated connection until ctx ends or the
// connection fails (the caller reconnects).
func (s *Store) ListenWakeups(ctx context.Context, ready func(), wake func(itemType string, id wq.ItemID)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("listen: %w", translate(err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+wakeupChannel); err != nil {
		return fmt.Errorf("listen: %w", translate(err))
	}
	defer conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+wakeupChannel)
	ready()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listen: %w", translate(err))
		}
		typ, idText, ok := strings.Cut(n.Payload, ":")
		if id, err := uuid.Parse(idText); ok && err == nil {
			wake(typ, id)
		}
	}
}
