package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit. SQLite has one writer, and with synchronous=FULL every
// commit waits for an fsync of the WAL: a commit costs far more than the
// few statements of a typical write. So writes are not given a
// transaction each. Every write (Write, and through it every method that
// writes) is queued to one committer goroutine, which takes all the
// writes queued while its last commit ran and runs them in one IMMEDIATE
// transaction, each inside a savepoint of its own:
//
//   - a write whose function fails is rolled back to its savepoint, alone:
//     the others of the batch commit (a lost lease fails only its item);
//   - writes run one after another in the order they were queued, each
//     seeing the ones before it, as they would in transactions of their
//     own on the one connection;
//   - a caller learns its result only after the commit is durable; if the
//     commit fails, every write of the batch fails with its error.
//
// Nothing waits to fill a batch: a lone write commits at once, and under
// load the batch is whatever arrived during the previous fsync and while
// the batch's own statements ran.
//
// A statement interrupted by its context's cancellation makes SQLite roll
// back the whole transaction (sqlite3_interrupt), which would undo the
// other writes of the batch. The writer connection therefore runs its
// statements without the caller's cancellation (conn.go): a write
// cancelled before it starts is not run; one that started runs to its end
// (its statements are short and local).

// maxBatch bounds the writes of one transaction, so that one batch cannot
// hold the write lock for long.
const maxBatch = 256

// writeReq is one queued write.
type writeReq struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	done chan writeResult
	// state: 0 queued, 1 taken by the committer, 2 abandoned by its caller.
	state atomic.Int32
}

type writeResult struct {
	err   error
	panic any // fn panicked: the caller panics with it
}

// committer owns the writer connection.
type committer struct {
	db    *sql.DB
	queue chan *writeReq
	// mu orders close after every send to queue: writers hold it shared
	// while sending, close takes it to set closed.
	mu       sync.RWMutex
	closed   bool
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	// transactions counts the transactions begun, for tests.
	transactions atomic.Int64
}

func newCommitter(db *sql.DB) *committer {
	c := &committer{db: db, queue: make(chan *writeReq, maxBatch), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

var errClosed = errors.New("sqlite: store closed")

// write queues fn and waits for its commit. A caller whose context ends
// while fn is still queued returns at once and fn never runs; once fn has
// started, the caller waits for the commit, so that an error always means
// nothing was written.
func (c *committer) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan writeResult, 1)}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return errClosed
	}
	select {
	case c.queue <- r:
		c.mu.RUnlock()
	case <-ctx.Done():
		c.mu.RUnlock()
		return ctx.Err()
	}
	var res writeResult
	select {
	case res = <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(0, 2) {
			return ctx.Err()
		}
		res = <-r.done
	}
	if res.panic != nil {
		panic(res.panic)
	}
	return res.err
}

// close stops the committer after the writes already queued; later
// writes fail.
func (c *committer) close() {
	c.stopOnce.Do(func() {
		c.mu.Lock() // waits for writers still sending; the committer drains them
		c.closed = true
		c.mu.Unlock()
		close(c.stop)
	})
	<-c.done
}

func (c *committer) run() {
	defer close(c.done)
	batch := make([]*writeReq, 0, maxBatch)
	for {
		select {
		case r := <-c.queue:
			batch = append(batch[:0], r)
		case <-c.stop:
			// Nothing can be queued any more: run what was, then stop.
			for {
				if batch = c.fill(batch[:0]); len(batch) == 0 {
					return
				}
				c.commit(batch)
			}
		}
		batch = c.fill(batch)
		c.commit(batch)
		clear(batch)
	}
}

// fill adds the writes waiting in the queue to batch, up to maxBatch.
func (c *committer) fill(batch []*writeReq) []*writeReq {
	for len(batch) < maxBatch {
		select {
		case r := <-c.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commit runs the batch's writes in one transaction, with those queued
// while they ran, and tells each its result. Writes abandoned by their
// callers before they started are skipped.
func (c *committer) commit(batch []*writeReq) {
	taken := make([]*writeReq, 0, len(batch))
	for _, r := range batch {
		if r.state.CompareAndSwap(0, 1) {
			taken = append(taken, r)
		}
	}
	if len(taken) == 0 {
		return
	}
	taken, results, err := c.runTx(taken)
	for j, r := range taken {
		res := results[j]
		if err != nil && res.panic == nil {
			res.err = err
		}
		r.done <- res
	}
}

// runTx runs the writes in one transaction, then the writes queued
// meanwhile, up to maxBatch in all: under load, writers answered by the
// last commit queue their next writes while this one's statements run,
// and each would otherwise wait for this commit's fsync and then its own
// (bench submit: 16 clients fell into two alternating batches of about
// eight). It returns every write it ran with its result, and an error
// when the transaction as a whole did not commit. A lone write runs
// without a savepoint.
func (c *committer) runTx(batch []*writeReq) ([]*writeReq, []writeResult, error) {
	results := make([]writeResult, len(batch), max(len(batch), 8))
	tx, err := c.db.BeginTx(context.Background(), nil)
	if err != nil {
		return batch, results, translate(err)
	}
	c.transactions.Add(1)
	defer tx.Rollback()
	savepoints := len(batch) > 1
	for j, r := range batch {
		if results[j], err = runWrite(tx, r, savepoints); err != nil {
			return batch, results, err
		}
		if !savepoints && failed(results[j]) {
			return batch, results, nil // its own result says why; nothing else to commit
		}
	}
	for len(batch) < maxBatch {
		r := c.takeQueued()
		if r == nil {
			break
		}
		batch, results = append(batch, r), append(results, writeResult{})
		if results[len(results)-1], err = runWrite(tx, r, true); err != nil {
			return batch, results, err
		}
	}
	return batch, results, translate(tx.Commit())
}

// takeQueued takes a write waiting in the queue, or returns nil if none
// is.
func (c *committer) takeQueued() *writeReq {
	for {
		select {
		case r := <-c.queue:
			if r.state.CompareAndSwap(0, 1) {
				return r
			}
		default:
			return nil
		}
	}
}

// runWrite runs one write in tx, inside a savepoint of its own when
// savepoint is set (a failed write is then rolled back alone). The error
// is the transaction's: it is gone, and nothing of it can commit.
func runWrite(tx *sql.Tx, r *writeReq, savepoint bool) (writeResult, error) {
	if err := r.ctx.Err(); err != nil {
		return writeResult{err: err}, nil
	}
	if savepoint {
		if _, err := tx.Exec(`SAVEPOINT w`); err != nil {
			return writeResult{}, fmt.Errorf("group commit: %w", translate(err))
		}
	}
	res := call(r, tx)
	if !savepoint {
		return res, nil
	}
	ends := []string{`RELEASE w`}
	if failed(res) {
		ends = []string{`ROLLBACK TO w`, `RELEASE w`}
	}
	for _, end := range ends {
		// Fails when the transaction is gone (an I/O error rolled it
		// back): then nothing of the batch is written.
		if _, err := tx.Exec(end); err != nil {
			return res, fmt.Errorf("group commit: %w", translate(err))
		}
	}
	return res, nil
}

func failed(res writeResult) bool { return res.err != nil || res.panic != nil }

// call runs one write's function, catching a panic for its caller.
func call(r *writeReq, tx *sql.Tx) (res writeResult) {
	defer func() {
		if p := recover(); p != nil {
			res = writeResult{panic: p}
		}
	}()
	return writeResult{err: r.fn(tx)}
}
