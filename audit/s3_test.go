package audit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"
	"github.com/minio/minio-go/v7"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/internal/tests3"
)

func s3Store(t *testing.T, s tests3.Server, bucket string) *audit.S3Store {
	t.Helper()
	store, err := audit.NewS3Store(audit.S3Options{Endpoint: s.Endpoint, Bucket: bucket, Region: "us-east-1",
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func TestS3ArchivePutsGzippedJSONLinesUnderMinuteKeys(t *testing.T) {
	t.Parallel()
	srv := tests3.Get(t)
	bucket := srv.NewBucket(t)
	clock := clockwork.NewFakeClockAt(start)
	a := audit.NewArchive(s3Store(t, srv, bucket), audit.ArchiveOptions{Name: "s3", Prefix: "wq/audit", Instance: "host-a",
		BatchInterval: time.Minute, Clock: clock, Log: testkit.Quiet()})
	a.Start()
	defer a.Close(context.Background())

	write(t, a, entries(0, 3))
	tick(t, clock, time.Minute)
	write(t, a, entries(3, 2))
	if err := a.Close(context.Background()); err != nil { // shutdown writes the open batch
		t.Fatal(err)
	}

	objects := srv.Objects(t, bucket)
	wantKeys := []string{
		"wq/audit/2026/01/02/03/04/" + a.Instance() + "-000001.json.gz",
		"wq/audit/2026/01/02/03/05/" + a.Instance() + "-000002.json.gz",
	}
	if diff := cmp.Diff(wantKeys, tests3.Keys(objects)); diff != "" {
		t.Fatalf("keys (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(a.Instance(), "host-a-") {
		t.Errorf("instance %q does not start with the configured one", a.Instance())
	}
	var got []wq.AuditEntry
	for _, k := range wantKeys {
		got = append(got, decode(t, objects[k])...)
	}
	if diff := cmp.Diff(entries(0, 5), got); diff != "" {
		t.Errorf("objects hold other entries (-want +got):\n%s", diff)
	}
	info, err := srv.Client(t).StatObject(context.Background(), bucket, wantKeys[0], minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if enc := info.Metadata.Get("Content-Encoding"); enc != "gzip" {
		t.Errorf("Content-Encoding %q, want gzip (DDR-28: S3 clients decompress transparently)", enc)
	}
}

func TestS3ArchiveKeepsEntriesThroughAnOutageAndCountsWhatItDrops(t *testing.T) {
	t.Parallel()
	srv := tests3.Start(t)
	bucket := srv.NewBucket(t)
	clock := clockwork.NewFakeClockAt(start)
	var logs bytes.Buffer
	a := audit.NewArchive(s3Store(t, srv.Server, bucket), audit.ArchiveOptions{Name: "s3", Instance: "host-a",
		BatchInterval: time.Minute, BufferEntries: 5, PutTimeout: 20 * time.Second, Clock: clock,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	a.Start()
	defer a.Close(context.Background())

	write(t, a, entries(0, 2))
	tick(t, clock, time.Minute)
	if s := a.Stats(); s.Written != 2 {
		t.Fatalf("before the outage: %+v", s)
	}

	srv.Stop()
	write(t, a, entries(2, 3))
	tick(t, clock, time.Minute) // fails: the server is down
	if dropped := write(t, a, entries(5, 4)); dropped != 2 {
		t.Errorf("%d of 4 entries dropped with 3 of 5 buffered, want 2", dropped)
	}
	tick(t, clock, time.Minute) // fails again
	if s := a.Stats(); s.Failures < 2 || s.Dropped != 2 || s.Buffered != 5 || s.Written != 2 {
		t.Errorf("during the outage: %+v", s)
	}
	if !strings.Contains(logs.String(), "audit archive dropped entries") {
		t.Errorf("the loss was not logged:\n%s", logs.String())
	}

	srv.Restart(t)
	tick(t, clock, time.Minute)
	if s := a.Stats(); s.Written != 7 || s.Buffered != 0 || s.Dropped != 2 {
		t.Errorf("after the outage: %+v", s)
	}
	objects := srv.Objects(t, bucket)
	var got []wq.AuditEntry
	for _, k := range tests3.Keys(objects) {
		got = append(got, decode(t, objects[k])...)
	}
	if diff := cmp.Diff(entries(0, 7), got); diff != "" {
		t.Errorf("after the restart the bucket holds other entries (-want +got):\n%s", diff)
	}
}
