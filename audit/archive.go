package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
)

// ObjectStore is where an Archive puts its batches: an S3 bucket
// (S3Store) or a directory (DirStore). Put writes body under key whole or
// not at all; writing the same key again replaces it, so that a batch
// retried after a lost answer is not archived twice.
type ObjectStore interface {
	Put(ctx context.Context, key string, body []byte) error
}

// Metrics receives an archive's counts, labelled with the sink's name.
// The metrics package's *Metrics implements it; a nil Metrics counts
// nothing.
type Metrics interface {
	// AuditWritten counts one entry written to the sink.
	AuditWritten(sink string)
	// AuditFailed counts one failed attempt to write a batch.
	AuditFailed(sink string)
	// AuditDropped counts entries lost: the buffer was full, an entry
	// could not be encoded, or the archive closed before writing them.
	AuditDropped(sink string, entries int)
}

// ArchiveOptions configure an Archive. Zero values take the defaults of
// the same name.
type ArchiveOptions struct {
	// Name labels the archive in logs and metrics ("s3", "dir").
	Name string
	// Prefix is the key prefix, without a trailing slash ("" for none).
	Prefix string
	// Instance names this process in object keys; the archive adds a
	// random run id so that a restarted process never replaces the
	// objects of the one before it.
	Instance string
	// BatchBytes seals a batch once its uncompressed JSON lines reach it.
	BatchBytes int
	// BatchInterval seals a non-empty batch at least this often, and is
	// how often a failed write is retried.
	BatchInterval time.Duration
	// BufferEntries and BufferBytes bound what is held while the store
	// is unreachable: an entry that would exceed either is dropped.
	BufferEntries int
	BufferBytes   int
	// PutTimeout bounds one write of one batch.
	PutTimeout time.Duration
	Clock      clockwork.Clock
	Log        *slog.Logger
	Metrics    Metrics
}

// Defaults of ArchiveOptions.
const (
	DefaultBatchBytes    = 4 << 20
	DefaultBatchInterval = time.Minute
	DefaultBufferEntries = 100_000
	DefaultBufferBytes   = 64 << 20
	DefaultPutTimeout    = 30 * time.Second
)

// ArchiveStats are an archive's counts since it started.
type ArchiveStats struct {
	Written       int // entries in objects the store accepted
	Objects       int // objects the store accepted
	Failures      int // failed writes of a batch (each retried later)
	Dropped       int // entries lost (buffer full, unencodable, unwritten at Close)
	Buffered      int // entries waiting, in sealed batches and the open one
	BufferedBytes int
}

// ErrBufferFull is returned (wrapped) by WriteAudit for an entry dropped
// because the buffer is at its bound.
var ErrBufferFull = errors.New("audit archive buffer full")

// Archive is an AuditSink that writes entries in batches of gzipped JSON
// lines to an ObjectStore, under keys
// prefix/YYYY/MM/DD/HH/MM/<instance>-<seq>.json.gz, the time being when
// the batch's first entry arrived, in UTC (DDR-28: minute partitions for
// Athena). WriteAudit never waits for the store: entries are buffered,
// a batch is sealed by size or by time, and a background loop (Start)
// writes sealed batches in order. While the store fails, batches stay
// buffered and are retried every BatchInterval, up to BufferEntries and
// BufferBytes; past that, new entries are dropped, counted and logged.
// Close writes what is left.
type Archive struct {
	store ObjectStore
	opt   ArchiveOptions
	run   string // random per process, part of every key's instance

	mu        sync.Mutex
	open      batch   // the batch being filled
	sealed    []batch // oldest first; sealed[0] is the next to write
	seq       int
	stats     ArchiveStats
	failing   bool // the last write failed: wait for the timer, not for every sealed batch
	lossSince int  // entries dropped since the loss was last logged

	flushMu sync.Mutex // one writer of sealed batches at a time
	kick    chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
}

type batch struct {
	key     string
	started time.Time
	lines   []byte // JSON lines, each ending in a newline
	entries int
}

// NewArchive returns an archive writing to store; Start starts its
// background writer.
func NewArchive(store ObjectStore, opt ArchiveOptions) *Archive {
	if opt.BatchBytes <= 0 {
		opt.BatchBytes = DefaultBatchBytes
	}
	if opt.BatchInterval <= 0 {
		opt.BatchInterval = DefaultBatchInterval
	}
	if opt.BufferEntries <= 0 {
		opt.BufferEntries = DefaultBufferEntries
	}
	if opt.BufferBytes <= 0 {
		opt.BufferBytes = DefaultBufferBytes
	}
	if opt.PutTimeout <= 0 {
		opt.PutTimeout = DefaultPutTimeout
	}
	if opt.Clock == nil {
		opt.Clock = clockwork.NewRealClock()
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Instance == "" {
		opt.Instance = "workqueue"
	}
	opt.Log = opt.Log.With("component", "audit", "sink", opt.Name)
	return &Archive{store: store, opt: opt, run: randomID(), kick: make(chan struct{}, 1)}
}

// Instance is the instance part of this archive's keys: the configured
// instance and the run id.
func (a *Archive) Instance() string { return a.opt.Instance + "-" + a.run }

// WriteAudit buffers e. It returns an error, wrapping ErrBufferFull, only
// when e was dropped; it never waits for the store.
func (a *Archive) WriteAudit(_ context.Context, e wq.AuditEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		a.drop(1)
		return fmt.Errorf("audit archive %s: encode entry: %w", a.opt.Name, err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	if a.stats.Buffered+1 > a.opt.BufferEntries || a.stats.BufferedBytes+len(line) > a.opt.BufferBytes {
		buffered, bytes := a.stats.Buffered, a.stats.BufferedBytes
		a.mu.Unlock()
		a.drop(1)
		return fmt.Errorf("audit archive %s: %w (%d entries, %d bytes waiting): entry dropped", a.opt.Name, ErrBufferFull, buffered, bytes)
	}
	if a.open.entries == 0 {
		a.open.started = a.opt.Clock.Now()
	}
	a.open.lines = append(a.open.lines, line...)
	a.open.entries++
	a.stats.Buffered++
	a.stats.BufferedBytes += len(line)
	full := len(a.open.lines) >= a.opt.BatchBytes
	if full {
		a.sealLocked()
	}
	a.mu.Unlock()
	if full {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// drop counts n lost entries; the loss is logged at the next write
// attempt, once per attempt, so that an outage does not flood the log.
func (a *Archive) drop(n int) {
	a.mu.Lock()
	a.stats.Dropped += n
	a.lossSince += n
	a.mu.Unlock()
	if a.opt.Metrics != nil {
		a.opt.Metrics.AuditDropped(a.opt.Name, n)
	}
}

// sealLocked closes the open batch, naming its object.
func (a *Archive) sealLocked() {
	if a.open.entries == 0 {
		return
	}
	a.seq++
	a.open.key = path.Join(a.opt.Prefix, a.open.started.UTC().Format("2006/01/02/15/04"),
		fmt.Sprintf("%s-%06d.json.gz", a.Instance(), a.seq))
	a.sealed = append(a.sealed, a.open)
	a.open = batch{}
}

// Start runs the background writer until Close: it seals the open batch
// every BatchInterval and writes sealed batches as they come.
func (a *Archive) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	a.stop, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		timer := a.opt.Clock.NewTimer(a.opt.BatchInterval)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.kick:
				a.mu.Lock()
				failing := a.failing
				a.mu.Unlock()
				if !failing { // while failing, retry on the timer only
					a.Flush(ctx, false)
				}
			case <-timer.Chan():
				a.Flush(ctx, true)
				timer.Reset(a.opt.BatchInterval)
			}
		}
	}()
}

// Flush writes the sealed batches in order, first sealing the open one
// when seal is set, and stops at the first failure (the batch stays for
// the next attempt). It returns that failure.
func (a *Archive) Flush(ctx context.Context, seal bool) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	a.mu.Lock()
	if seal {
		a.sealLocked()
	}
	a.mu.Unlock()
	a.logLoss()
	for {
		a.mu.Lock()
		if len(a.sealed) == 0 {
			a.failing = false
			a.mu.Unlock()
			return nil
		}
		// Only Flush removes sealed batches, under flushMu, and a sealed
		// batch's lines never change: b stays valid unlocked.
		b := a.sealed[0]
		a.mu.Unlock()
		key, entries, size := b.key, b.entries, len(b.lines)
		body, err := gzipped(b.lines)
		if err == nil {
			putCtx, cancel := context.WithTimeout(ctx, a.opt.PutTimeout)
			err = a.store.Put(putCtx, key, body)
			cancel()
		}
		a.mu.Lock()
		if err != nil {
			a.stats.Failures++
			wasFailing := a.failing
			a.failing = true
			waiting := a.stats.Buffered
			a.mu.Unlock()
			if a.opt.Metrics != nil {
				a.opt.Metrics.AuditFailed(a.opt.Name)
			}
			if !wasFailing {
				a.opt.Log.Error("audit archive write failed; entries stay buffered and are retried", "key", key, "waiting", waiting, "err", err)
			} else {
				a.opt.Log.Debug("audit archive write failed again", "key", key, "waiting", waiting, "err", err)
			}
			return fmt.Errorf("audit archive %s: put %s: %w", a.opt.Name, key, err)
		}
		a.sealed = a.sealed[1:]
		a.stats.Written += entries
		a.stats.Objects++
		a.stats.Buffered -= entries
		a.stats.BufferedBytes -= size
		wasFailing := a.failing
		a.failing = false
		a.mu.Unlock()
		if wasFailing {
			a.opt.Log.Info("audit archive writing again", "key", key)
		}
		if a.opt.Metrics != nil {
			for range entries {
				a.opt.Metrics.AuditWritten(a.opt.Name)
			}
		}
	}
}

// logLoss logs the entries dropped since it last did.
func (a *Archive) logLoss() {
	a.mu.Lock()
	n, total := a.lossSince, a.stats.Dropped
	a.lossSince = 0
	a.mu.Unlock()
	if n > 0 {
		a.opt.Log.Error("audit archive dropped entries: the buffer was full", "dropped", n, "dropped_total", total,
			"buffer_entries", a.opt.BufferEntries, "buffer_bytes", a.opt.BufferBytes)
	}
}

// Close stops the background writer and writes what is buffered, within
// ctx. Entries it cannot write are dropped, counted and logged, and
// Close returns the write's error.
func (a *Archive) Close(ctx context.Context) error {
	if a.stop != nil {
		a.stop()
		<-a.done
	}
	err := a.Flush(ctx, true)
	a.mu.Lock()
	lost := a.stats.Buffered
	a.sealed, a.open = nil, batch{}
	a.stats.Buffered, a.stats.BufferedBytes = 0, 0
	a.stats.Dropped += lost
	a.mu.Unlock()
	if lost > 0 {
		if a.opt.Metrics != nil {
			a.opt.Metrics.AuditDropped(a.opt.Name, lost)
		}
		a.opt.Log.Error("audit archive closed with entries unwritten; they are lost", "dropped", lost, "err", err)
	}
	return err
}

// Stats returns the archive's counts.
func (a *Archive) Stats() ArchiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// randomID is a short random id, unique enough to tell runs of one
// instance apart.
func randomID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
