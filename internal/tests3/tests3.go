// Package tests3 gives tests a real S3-compatible server: the versitygw
// that scripts/test starts (TEST_S3_ENDPOINT, TEST_S3_ACCESS_KEY,
// TEST_S3_SECRET_KEY), or one of a test's own from the binary in
// TEST_VERSITYGW, which the test may stop and start again to make an
// outage.
//
// Without them an S3 test skips, except when CI is set: then it fails,
// because an S3 half that silently skips is a failed run.
package tests3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/workqueue-dev/workqueue/internal/eventually"
)

// Server is an S3-compatible server on loopback, spoken to over plain
// HTTP.
type Server struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not set in CI: the S3 half must run (use scripts/test)", what)
	}
	t.Skipf("%s not set; run scripts/test for the S3 half", what)
}

// Get returns the shared test server, or skips (fails in CI) when there
// is none.
func Get(t testing.TB) Server {
	t.Helper()
	s := Server{Endpoint: os.Getenv("TEST_S3_ENDPOINT"), AccessKey: os.Getenv("TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("TEST_S3_SECRET_KEY")}
	if s.Endpoint == "" || s.AccessKey == "" || s.SecretKey == "" {
		missing(t, "TEST_S3_ENDPOINT/ACCESS_KEY/SECRET_KEY are")
	}
	return s
}

// Client returns a client of the server.
func (s Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatalf("s3 client: %v", err)
	}
	return c
}

// NewBucket creates a bucket with a fresh name and returns the name.
func (s Server) NewBucket(t testing.TB) string {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	name := "t-" + hex.EncodeToString(b)
	if err := s.Client(t).MakeBucket(context.Background(), name, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
	return name
}

// Objects returns the body of every object in bucket, by key.
func (s Server) Objects(t testing.TB, bucket string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	c := s.Client(t)
	out := map[string][]byte{}
	for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("list %s: %v", bucket, obj.Err)
		}
		r, err := c.GetObject(ctx, bucket, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", obj.Key, err)
		}
		body, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("read %s: %v", obj.Key, err)
		}
		out[obj.Key] = body
	}
	return out
}

// Keys returns the keys of objects, sorted.
func Keys(objects map[string][]byte) []string {
	var keys []string
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Process is a test's own versitygw, which it may stop and start again
// on the same address and directory.
type Process struct {
	Server
	bin, dir string
	cmd      *exec.Cmd
}

// Start starts a server of the test's own, stopped when the test ends;
// it skips (fails in CI) without TEST_VERSITYGW.
func Start(t testing.TB) *Process {
	t.Helper()
	bin := os.Getenv("TEST_VERSITYGW")
	if bin == "" {
		missing(t, "TEST_VERSITYGW is")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	key := make([]byte, 12)
	rand.Read(key)
	p := &Process{Server: Server{Endpoint: addr, AccessKey: "wqtest", SecretKey: hex.EncodeToString(key)},
		bin: bin, dir: filepath.Join(t.TempDir(), "data")}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop) // also when a restart fails
	p.Restart(t)
	return p
}

// Restart starts the stopped server again and waits until it answers.
func (p *Process) Restart(t testing.TB) {
	t.Helper()
	cmd := exec.Command(p.bin, "--port", p.Endpoint, "--quiet", "posix", p.dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+p.AccessKey, "ROOT_SECRET_ACCESS_KEY="+p.SecretKey)
	log, err := os.Create(filepath.Join(filepath.Dir(p.dir), fmt.Sprintf("versitygw-%d.log", time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the server has its own copy
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	p.cmd = cmd
	eventually.True(t, 30*time.Second, "versitygw answers on "+p.Endpoint, func() (bool, any) {
		resp, err := http.Get("http://" + p.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil, logText(log.Name())
	})
}

// logText is a server's log, read when it is printed: what the server
// said when it did not answer.
type logText string

func (l logText) String() string {
	body, _ := os.ReadFile(string(l))
	return "its log:\n" + string(body)
}

// Stop stops the server and waits for it to exit.
func (p *Process) Stop() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.cmd = nil
}
