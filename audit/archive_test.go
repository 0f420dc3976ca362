package audit_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// entries returns n distinct entries, numbered from first.
func entries(first, n int) []wq.AuditEntry {
	var out []wq.AuditEntry
	for i := first; i < first+n; i++ {
		out = append(out, wq.AuditEntry{Time: start.Add(time.Duration(i) * time.Second), EventType: wq.AuditPhaseChange,
			ItemID: fmt.Sprintf("item-%03d", i), ItemType: "mr", Actor: "system",
			NewState: map[string]any{"phase": "completed"}, Trigger: map[string]any{"source": "decider"}})
	}
	return out
}

// decode reads one archived object: gzipped JSON lines.
func decode(t *testing.T, body []byte) []wq.AuditEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	var out []wq.AuditEntry
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		var e wq.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dirObjects returns every object under root by key, decoded.
func dirObjects(t *testing.T, root string) map[string][]wq.AuditEntry {
	t.Helper()
	out := map[string][]wq.AuditEntry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") { // .partial-*: being written
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = decode(t, body)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// outage is a store that fails while down, and otherwise writes to a
// directory.
type outage struct {
	audit.DirStore
	mu   sync.Mutex
	down bool
}

func (o *outage) set(down bool) { o.mu.Lock(); o.down = down; o.mu.Unlock() }

func (o *outage) Put(ctx context.Context, key string, body []byte) error {
	o.mu.Lock()
	down := o.down
	o.mu.Unlock()
	if down {
		return errors.New("connection refused")
	}
	return o.DirStore.Put(ctx, key, body)
}

// tick moves the clock one batch interval and waits until the archive's
// writer has flushed and waits on its timer again.
func tick(t *testing.T, clock *clockwork.FakeClock, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the archive's writer is not waiting on its timer")
	}
	clock.Advance(d)
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the archive's writer did not come back to its timer after a flush")
	}
}

func write(t *testing.T, sink wq.AuditSink, es []wq.AuditEntry) (dropped int) {
	t.Helper()
	for _, e := range es {
		if err := sink.WriteAudit(context.Background(), e); errors.Is(err, audit.ErrBufferFull) {
			dropped++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	return dropped
}

var keyPattern = regexp.MustCompile(`^audit/2026/01/02/03/04/host-a-[0-9a-f]{8}-(\d{6})\.json\.gz$`)

func TestArchiveWritesABatchEachIntervalUnderItsMinuteKey(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	root := t.TempDir()
	a := audit.NewArchive(audit.DirStore{Root: root}, audit.ArchiveOptions{Name: "dir", Prefix: "audit", Instance: "host-a",
		BatchInterval: time.Minute, Clock: clock, Log: testkit.Quiet()})
	a.Start()
	defer a.Close(context.Background())

	want := entries(0, 3)
	write(t, a, want)
	if got := dirObjects(t, root); len(got) != 0 {
		t.Fatalf("written before the interval ended: %v", got)
	}
	tick(t, clock, time.Minute)
	got := dirObjects(t, root)
	if len(got) != 1 {
		t.Fatalf("want one object, got %d: %v", len(got), got)
	}
	for key, es := range got {
		if m := keyPattern.FindStringSubmatch(key); m == nil || m[1] != "000001" {
			t.Errorf("key %q, want audit/2026/01/02/03/04/host-a-<run>-000001.json.gz", key)
		}
		if !strings.HasPrefix(key, "audit/2026/01/02/03/04/"+a.Instance()+"-") {
			t.Errorf("key %q does not carry the instance %q", key, a.Instance())
		}
		if diff := cmp.Diff(want, es); diff != "" {
			t.Errorf("object holds other entries (-want +got):\n%s", diff)
		}
	}
	if s := a.Stats(); s.Written != 3 || s.Objects != 1 || s.Buffered != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v", s)
	}

	// An interval without entries writes nothing.
	tick(t, clock, time.Minute)
	if n := len(dirObjects(t, root)); n != 1 {
		t.Errorf("an empty interval wrote an object: %d objects", n)
	}
}

func TestArchiveSealsABatchOnceItReachesBatchBytes(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	root := t.TempDir()
	line, _ := json.Marshal(entries(0, 1)[0])
	a := audit.NewArchive(audit.DirStore{Root: root}, audit.ArchiveOptions{Name: "dir", Instance: "host-a",
		BatchBytes: 2 * (len(line) + 1), BatchInterval: time.Hour, Clock: clock, Log: testkit.Quiet()})
	a.Start()
	defer a.Close(context.Background())

	write(t, a, entries(0, 4)) // two full batches, with no time passing
	got := eventually.Value(t, 10*time.Second, "two objects written by size", func() (map[string][]wq.AuditEntry, bool) {
		got := dirObjects(t, root)
		return got, len(got) == 2
	})
	var all []wq.AuditEntry
	for _, key := range []string{"000001", "000002"} {
		full := "2026/01/02/03/04/" + a.Instance() + "-" + key + ".json.gz"
		if len(got[full]) != 2 {
			t.Errorf("%s holds %d entries, want 2 (objects: %v)", full, len(got[full]), got)
		}
		all = append(all, got[full]...)
	}
	if diff := cmp.Diff(entries(0, 4), all); diff != "" {
		t.Errorf("objects in sequence hold other entries (-want +got):\n%s", diff)
	}
}

func TestArchiveBuffersThroughAnOutageAndDropsPastItsBound(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	root := t.TempDir()
	store := &outage{DirStore: audit.DirStore{Root: root}, down: true}
	var logs bytes.Buffer
	metrics := &counters{}
	a := audit.NewArchive(store, audit.ArchiveOptions{Name: "s3", Instance: "host-a", BatchInterval: time.Minute,
		BufferEntries: 5, Clock: clock, Log: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: metrics})
	a.Start()
	defer a.Close(context.Background())

	write(t, a, entries(0, 3))
	tick(t, clock, time.Minute) // the write fails: the batch stays
	if s := a.Stats(); s.Failures != 1 || s.Buffered != 3 || s.Written != 0 {
		t.Fatalf("after a failed write: %+v", s)
	}
	if dropped := write(t, a, entries(3, 4)); dropped != 2 {
		t.Errorf("%d entries dropped past a bound of 5 with 7 written, want 2", dropped)
	}
	tick(t, clock, time.Minute) // fails again; the loss is logged
	if s := a.Stats(); s.Dropped != 2 || s.Buffered != 5 || s.Failures != 2 {
		t.Errorf("during the outage: %+v", s)
	}
	if !strings.Contains(logs.String(), "audit archive dropped entries") || !strings.Contains(logs.String(), "dropped=2") {
		t.Errorf("the loss was not logged:\n%s", logs.String())
	}

	store.set(false)
	tick(t, clock, time.Minute)
	// The second batch began a minute later, after the first failed write.
	objects := dirObjects(t, root)
	got := append(objects["2026/01/02/03/04/"+a.Instance()+"-000001.json.gz"], objects["2026/01/02/03/05/"+a.Instance()+"-000002.json.gz"]...)
	if diff := cmp.Diff(entries(0, 5), got); diff != "" {
		t.Errorf("after the outage the buffered entries did not arrive in order (-want +got):\n%s", diff)
	}
	if s := a.Stats(); s.Written != 5 || s.Buffered != 0 || s.Dropped != 2 {
		t.Errorf("after the outage: %+v", s)
	}
	if want := (counts{written: 5, failed: 2, dropped: 2}); metrics.get() != want {
		t.Errorf("metrics %+v, want %+v", metrics.get(), want)
	}
}

func TestArchiveCloseWritesWhatIsBufferedAndCountsWhatItCannot(t *testing.T) {
	t.Parallel()
	for _, down := range []bool{false, true} {
		clock := clockwork.NewFakeClockAt(start)
		root := t.TempDir()
		store := &outage{DirStore: audit.DirStore{Root: root}, down: down}
		a := audit.NewArchive(store, audit.ArchiveOptions{Name: "dir", Instance: "host-a", Clock: clock, Log: testkit.Quiet()})
		a.Start()
		write(t, a, entries(0, 2))
		err := a.Close(context.Background())
		objects := dirObjects(t, root)
		if down {
			if err == nil || a.Stats().Dropped != 2 || len(objects) != 0 {
				t.Errorf("close with the store down: err %v, stats %+v", err, a.Stats())
			}
			continue
		}
		if err != nil || len(objects) != 1 || a.Stats().Written != 2 {
			t.Errorf("close did not flush: err %v, stats %+v, objects %v", err, a.Stats(), objects)
		}
	}
}

func TestArchiveDropsAnEntryItCannotEncode(t *testing.T) {
	t.Parallel()
	a := audit.NewArchive(audit.DirStore{Root: t.TempDir()}, audit.ArchiveOptions{Name: "dir", Log: testkit.Quiet()})
	err := a.WriteAudit(context.Background(), wq.AuditEntry{EventType: "x", Metadata: map[string]any{"f": func() {}}})
	if err == nil || a.Stats().Dropped != 1 {
		t.Errorf("err %v, stats %+v", err, a.Stats())
	}
}

func TestDirStoreRefusesKeysOutsideItsRoot(t *testing.T) {
	t.Parallel()
	d := audit.DirStore{Root: t.TempDir()}
	for _, key := range []string{"../x.json.gz", "/etc/x", "a/.partial-1"} {
		if err := d.Put(context.Background(), key, []byte("x")); err == nil {
			t.Errorf("key %q accepted", key)
		}
	}
}

// counters is a Metrics that keeps its counts.
type counters struct {
	mu sync.Mutex
	n  counts
}

type counts struct{ written, failed, dropped int }

func (c *counters) AuditWritten(string)          { c.mu.Lock(); c.n.written++; c.mu.Unlock() }
func (c *counters) AuditFailed(string)           { c.mu.Lock(); c.n.failed++; c.mu.Unlock() }
func (c *counters) AuditDropped(_ string, n int) { c.mu.Lock(); c.n.dropped += n; c.mu.Unlock() }
func (c *counters) get() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
