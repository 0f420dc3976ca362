package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/metrics"
	"github.com/workqueue-dev/workqueue/mr"
)

// The forge's budget (issue 53): what serve asks a forge, counted request
// by request at the HTTP transport of a proxy in front of it, by operation
// (metrics.Operation: the method and the API path with every name and
// number elided). serve runs whole, from its API to the forge, on a fake
// clock that the measurement moves, on the real Gitea and on the
// GitLab-shaped test server. The repositories hold their files three
// levels deep, at most costFanOut(n) entries a directory, as a real
// repository spreads them; the change is one new file beside others,
// two directories down, the same in every repository.

// opCounts counts the requests that pass through it by operation.
type opCounts struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
	last time.Time // of the latest request
}

func (c *opCounts) RoundTrip(r *http.Request) (*http.Response, error) {
	op := metrics.Operation(r.Method, r.URL.EscapedPath())
	c.mu.Lock()
	c.n[op]++
	c.last = time.Now()
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// quiet waits until no request came for d (at most ten seconds): serve's
// checks of the forge at start (its version, the project's settings) run
// beside everything else, and are no part of a push.
func (c *opCounts) quiet(d time.Duration) {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(d / 4) {
		c.mu.Lock()
		last := c.last
		c.mu.Unlock()
		if time.Since(last) >= d {
			return
		}
	}
}

// take returns the counts so far, and starts again from none.
func (c *opCounts) take() opTally {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := opTally(c.n)
	c.n = map[string]int{}
	return t
}

// opTally is a number of requests by operation.
type opTally map[string]int

func (t opTally) total() int {
	n := 0
	for _, c := range t {
		n += c
	}
	return n
}

// String lists the operations, the most frequent first, on one line (go
// test keeps ten lines of a benchmark's log).
func (t opTally) String() string {
	ops := make([]string, 0, len(t))
	for op := range t {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b string) int {
		if t[a] != t[b] {
			return t[b] - t[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, op := range ops {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%d %s", sep, t[op], op)
	}
	return b.String()
}

// costFanOut is how many entries each directory of a repository of n
// files holds at most: the cube root, so that 100,000 files are 47
// directories of 47 of 47 files, within one page of a listing on both
// forges.
func costFanOut(n int) int {
	return max(2, int(math.Ceil(math.Cbrt(float64(n)))))
}

// costPath is the path of file i of a repository of n files.
func costPath(i, n int) string {
	f := costFanOut(n)
	return fmt.Sprintf("d%03d/s%03d/f%03d.txt", i/(f*f), (i/f)%f, i%f)
}

// costChange is the one-file change of submission seq: a new file
// beside others, in a directory every repository has.
func costChange(seq int) map[string]any {
	return map[string]any{"action": "create", "file_path": fmt.Sprintf("d000/s000/new-%d.txt", seq), "content": "new\n"}
}

// costWorld is serve on one forge, through a counting proxy, on a fake
// clock, with one project of files files.
type costWorld struct {
	t       testing.TB
	kind    string
	m       *Main
	clock   *clockwork.FakeClock
	counts  *opCounts
	project string
	base    string // the service
	token   string // submit and read
	seq     int
}

// startCostWorld makes the project (gitea needs the test Gitea: it skips
// without one) and starts serve on it; autoMerge is the project's.
func startCostWorld(t testing.TB, kind string, files int, autoMerge bool) *costWorld {
	t.Helper()
	w := &costWorld{t: t, kind: kind, clock: clockwork.NewFakeClock(), counts: &opCounts{next: http.DefaultTransport, n: map[string]int{}}}
	var target, token string
	switch kind {
	case "gitlab":
		srv := gitlabtest.New()
		t.Cleanup(srv.Close)
		w.project = "bench/repo"
		all := make(map[string]string, files+1)
		all["README.md"] = "# a repository of many files\n"
		for i := range files {
			all[costPath(i, files)] = "x\n"
		}
		srv.CreateProjectWith(w.project, "main", all)
		target, token = srv.URL, srv.Token
	case "gitea":
		srv := testgitea.Get(t)
		w.project = giteaRepoOf(t, srv, files)
		target, token = srv.URL, srv.Token
	default:
		t.Fatalf("no forge of kind %q here", kind)
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = w.counts
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	t.Setenv("WQ_TEST_COST_TOKEN", token)
	tok, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	w.token = tok
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	cfg.HandledTypes = []string{mr.ItemType}
	cfg.Forges = []config.Forge{{Name: kind, Kind: kind, URL: front.URL, TokenEnv: "WQ_TEST_COST_TOKEN"}}
	cfg.Projects = []config.Project{{Match: w.project, Forge: kind, AutoMerge: autoMerge}}
	cfg.Auth.Tokens = []config.Token{{Name: "bench", SHA256: hash, Permissions: []string{"submit", "read"}}}
	if err := cfg.Validate(assemble().known()); err != nil {
		t.Fatal(err)
	}
	w.m = NewMain(cfg, testkit.Quiet())
	w.m.Clock = w.clock
	if err := w.m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.m.Close() })
	w.base = "http://" + w.m.Addr()
	w.settle()
	w.counts.quiet(500 * time.Millisecond)
	return w
}

// giteaRepoOf makes a repository of files files on the test Gitea: one
// commit built with git fast-import and pushed, where a commit through
// the API would take minutes.
func giteaRepoOf(t testing.TB, srv testgitea.Server, files int) string {
	t.Helper()
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("cost-%d-%d", files, time.Now().UnixNano())
	repo, _, err := c.CreateRepo(sdk.CreateRepoOption{Name: name, DefaultBranch: "main"})
	if err != nil {
		t.Fatalf("create repo: %v", err)
	}
	dir := t.TempDir()
	git := func(stdin []byte, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var stream bytes.Buffer
	stream.WriteString("blob\nmark :1\ndata 2\nx\n\nblob\nmark :2\ndata 30\n# a repository of many files\n\n")
	stream.WriteString("commit refs/heads/main\ncommitter A Person <person@example.com> 1700000000 +0000\ndata 5\nseed\n")
	stream.WriteString("M 100644 :2 README.md\n")
	for i := range files {
		fmt.Fprintf(&stream, "M 100644 :1 %s\n", costPath(i, files))
	}
	stream.WriteString("\n")
	git(nil, "init", "--quiet", "--bare", ".")
	git(stream.Bytes(), "fast-import", "--quiet")
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path = url.UserPassword(srv.User, srv.Token), "/"+repo.FullName+".git"
	git(nil, "push", "--quiet", u.String(), "main")
	return repo.FullName
}

// settle lets serve finish what is due at the fake clock's now.
func (w *costWorld) settle() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range 2 { // an item the first sweep finished may be due again at once
		if err := w.m.Engine.WaitIdle(ctx); err != nil {
			w.t.Fatalf("serve did not go idle: %v", err)
		}
		if _, err := w.m.Engine.Sweep(ctx); err != nil {
			w.t.Fatal(err)
		}
	}
	if err := w.m.Engine.WaitIdle(ctx); err != nil {
		w.t.Fatalf("serve did not go idle: %v", err)
	}
}

// advance moves the clock by d in steps of step, settling after each; a
// forge that works in the background (Gitea's mergeability) is given
// pause of real time a step.
func (w *costWorld) advance(d, step, pause time.Duration) {
	w.t.Helper()
	for end := w.clock.Now().Add(d); w.clock.Now().Before(end); {
		w.clock.Advance(min(step, end.Sub(w.clock.Now())))
		time.Sleep(pause)
		w.settle()
	}
}

// submit submits a one-file change through the API and returns its id.
func (w *costWorld) submit() string {
	w.t.Helper()
	w.seq++
	change := costChange(w.seq)
	body, _ := json.Marshal(map[string]any{"item_type": "mr", "forge": w.kind, "project": w.project,
		"source_branch": fmt.Sprintf("workqueue/cost-%d", w.seq), "target_branch": "main", "title": "One file",
		"file_actions": []map[string]any{change}})
	var out struct {
		ID string `json:"id"`
	}
	if status := w.call("POST", "/api/v1/items", body, &out); status != http.StatusCreated && status != http.StatusOK {
		w.t.Fatalf("submit: status %d", status)
	}
	return out.ID
}

// costItem is what the measurement reads of an item.
type costItem struct {
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
	Error  string `json:"error"`
	Detail struct {
		MRIID int64 `json:"mr_iid"`
	} `json:"detail"`
}

func (w *costWorld) item(id string) costItem {
	w.t.Helper()
	var it costItem
	if status := w.call("GET", "/api/v1/items/"+id, nil, &it); status != http.StatusOK {
		w.t.Fatalf("GET item %s: status %d", id, status)
	}
	return it
}

func (w *costWorld) call(method, path string, body []byte, out any) int {
	w.t.Helper()
	req, err := http.NewRequest(method, w.base+path, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode
}

// pushCost is the forge requests of one one-file change, from its
// submission to its merge request being open.
func (w *costWorld) pushCost() opTally {
	w.t.Helper()
	w.counts.take()
	id := w.submit()
	w.settle()
	if it := w.item(id); it.Phase != "active" || it.Detail.MRIID == 0 {
		w.t.Fatalf("after the push: item %s/%s (error %q), merge request %d; want active with one", it.Phase, it.Reason, it.Error, it.Detail.MRIID)
	}
	return w.counts.take()
}

// mergedCost is the forge requests of one one-file change from its
// submission to its merge request merged, in a project that merges on
// its own and runs no CI.
func (w *costWorld) mergedCost() opTally {
	w.t.Helper()
	w.counts.take()
	id := w.submit()
	w.settle()
	for range 120 { // ten minutes of fake time at most
		if it := w.item(id); it.Phase != "active" {
			if it.Phase != "completed" || it.Reason != "merged" {
				w.t.Fatalf("item %s/%s (error %q), want completed/merged", it.Phase, it.Reason, it.Error)
			}
			return w.counts.take()
		}
		w.advance(5*time.Second, 5*time.Second, 100*time.Millisecond)
	}
	w.t.Fatalf("item %s not merged after ten minutes", id)
	return nil
}

// waitingCost is the forge requests of an hour of mrs open merge
// requests of one project that wait for a person, at the default
// intervals.
func (w *costWorld) waitingCost(mrs int) opTally {
	w.t.Helper()
	for range mrs {
		w.pushCost()
	}
	w.advance(time.Minute, 10*time.Second, 50*time.Millisecond) // what follows the opening (its first reconcile, its note)
	w.counts.take()
	w.advance(time.Hour, 30*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // a sweep of the last step still running in the background
	return w.counts.take()
}

// bulkListing is the operation of the bulk reconciliation's listing of
// a project's open merge requests (mr/bulk.go): one a project each
// interval, whatever the number of its open merge requests, so it is a
// cost per project and not per merge request. Outside a push (whose
// search for a merge request a crash may have lost uses it too) it is
// the bulk reconciliation's alone.
func bulkListing(kind string) string {
	if kind == "gitea" {
		return "GET repos/{}/pulls"
	}
	return "GET projects/{}/merge_requests"
}

// costForges are the forges the measurements run on: the GitLab-shaped
// test server always, the real Gitea when there is one.
func costForges() []string {
	if os.Getenv("TEST_GITEA_URL") != "" {
		return []string{"gitlab", "gitea"}
	}
	return []string{"gitlab"}
}

// A one-file change costs the forge as many requests from its submission
// to its merge request in a repository of ten files as in one of five
// thousand, and at most 20 (issue 53): nothing on the way reads what
// grows with the repository. Counted, not timed.
func TestAOneFileChangeCostsTheSameInASmallAndALargeRepository(t *testing.T) {
	for _, kind := range costForges() {
		t.Run(kind, func(t *testing.T) {
			small := startCostWorld(t, kind, 10, false).pushCost()
			large := startCostWorld(t, kind, 5000, false).pushCost()
			t.Logf("%s, 10 files: %d requests%s", kind, small.total(), small)
			if large.total() != small.total() || large.total() > 20 {
				t.Errorf("%s: a one-file change costs %d requests with 10 files and %d with 5,000, want the same and at most 20; with 5,000:%s",
					kind, small.total(), large.total(), large)
			}
		})
	}
}

// A merge request merged without CI costs the forge at most 15 requests
// once a repository has the service's label, and one waiting for a
// person at most 4 an hour beyond its project's bulk listing, which its
// project's merge requests share (issue 53). Counted on the fake clock,
// not timed.
func TestAMergedMergeRequestAndAnHourOfWaitingCostWhatTheIssueBounds(t *testing.T) {
	for _, kind := range costForges() {
		t.Run(kind, func(t *testing.T) {
			w := startCostWorld(t, kind, 10, true)
			first := w.mergedCost()
			next := w.mergedCost()
			t.Logf("%s: the first merged merge request %d requests%s; the next %d%s", kind, first.total(), first, next.total(), next)
			if next.total() > 15 {
				t.Errorf("%s: a merged merge request costs %d requests, want at most 15:%s", kind, next.total(), next)
			}
			const mrs = 2
			hour := startCostWorld(t, kind, 10, false).waitingCost(mrs)
			listing := hour[bulkListing(kind)]
			if perMR := float64(hour.total()-listing) / mrs; perMR > 4 {
				t.Errorf("%s: an hour of waiting costs %.1f requests a merge request beyond the bulk listing, want at most 4:%s", kind, perMR, hour)
			}
		})
	}
}

// BenchmarkForgeRequests reports what the forge is asked, by operation
// (scripts/bench forge runs it): the requests of one push from
// submission to an open merge request against repositories of
// BENCH_FILES files (default 10, 10000 and 100000), of a merge request
// from submission to merged without CI, and of an hour of an open merge
// request waiting at the default intervals. Counted, not timed: run it
// with -benchtime 1x.
func BenchmarkForgeRequests(b *testing.B) {
	sizes := []int{10, 10000, 100000}
	if s := os.Getenv("BENCH_FILES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("BENCH_FILES: %q is not a number of files", f)
			}
			sizes = append(sizes, n)
		}
	}
	// The first merge request of a repository also makes the service's
	// label there (Gitea: a listing more, and the label): "requests" is
	// the first one's, "requests-next" the next one's in the same
	// repository.
	report := func(b *testing.B, what string, first, next opTally) {
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(float64(first.total()), "requests")
		b.Logf("%s: %d requests%s", what, first.total(), first)
		if next != nil {
			b.ReportMetric(float64(next.total()), "requests-next")
			b.Logf("the next one in the same repository: %d requests%s", next.total(), next)
		}
	}
	for _, kind := range costForges() {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/push/files=%d", kind, n), func(b *testing.B) {
				w := startCostWorld(b, kind, n, false)
				first := w.pushCost()
				report(b, fmt.Sprintf("one push on %s, %d files", kind, n), first, w.pushCost())
			})
		}
		b.Run(kind+"/merged", func(b *testing.B) {
			w := startCostWorld(b, kind, 10, true)
			first := w.mergedCost()
			report(b, "one merge request to merged on "+kind, first, w.mergedCost())
		})
		// Two merge requests of one project wait an hour: the bulk
		// listing is the project's (reported per project per hour), the
		// rest is theirs, halved (per merge request per hour: what issue
		// 53 bounds at 4).
		b.Run(kind+"/waiting-hour", func(b *testing.B) {
			const mrs = 2
			w := startCostWorld(b, kind, 10, false)
			hour := w.waitingCost(mrs)
			listing := hour[bulkListing(kind)]
			perMR := float64(hour.total()-listing) / mrs
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(hour.total()), "requests")
			b.ReportMetric(float64(listing), "bulk-per-project-hour")
			b.ReportMetric(perMR, "per-mr-hour")
			b.Logf("an hour of %d open merge requests of one project waiting on %s: %d requests%s", mrs, kind, hour.total(), hour)
			b.Logf("of which the project's bulk listing %d (per project per hour, shared by its merge requests), and %.1f per merge request per hour",
				listing, perMR)
		})
	}
}
