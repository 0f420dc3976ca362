package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// rateLimitWindow is the GitLab test server behind a front that answers
// 429 to everything while the test's clock is in [from, to), with a
// Retry-After, and counts the requests that reached it then.
type rateLimitWindow struct {
	clock      clockwork.Clock
	retryAfter string

	mu       sync.Mutex
	from, to time.Time
	inWindow []string
}

func (w *rateLimitWindow) open(from, to time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.from, w.to = from, to
}

func (w *rateLimitWindow) during() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.inWindow...)
}

func (w *rateLimitWindow) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		now := w.clock.Now()
		w.mu.Lock()
		limited := !now.Before(w.from) && now.Before(w.to)
		if limited {
			w.inWindow = append(w.inWindow, fmt.Sprintf("%s %s at +%s", r.Method, r.URL.Path, now.Sub(w.from)))
		}
		w.mu.Unlock()
		if limited {
			rw.Header().Set("Retry-After", w.retryAfter)
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusTooManyRequests)
			rw.Write([]byte(`{"message":"429 Too Many Requests"}`))
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// During a window in which the forge answers 429 to everything, the
// service sends it a handful of requests in all, not a handful per item,
// and every item completes after the window (issue 53): the first 429
// pauses every caller of the forge until the Retry-After, the items back
// off until then without a call, and when it ends one request probes the
// forge alone. On both databases, with serve's clock moved by the test.
func TestA429WindowCostsAHandfulOfRequestsAndEveryItemCompletesAfterIt(t *testing.T) {
	testdb.EachKindInTurn(t, func(t *testing.T, kind string) {
		const (
			items   = 12
			workers = 4
			window  = 3 * time.Minute
		)
		srv := gitlabtest.New()
		t.Cleanup(srv.Close)
		srv.CreateProject("g/p")
		clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
		// The forge asks for 90s: one probe falls inside the window.
		limit := &rateLimitWindow{clock: clock, retryAfter: "90"}
		target, _ := url.Parse(srv.URL)
		front := httptest.NewServer(limit.handler(httputil.NewSingleHostReverseProxy(target)))
		t.Cleanup(front.Close)

		t.Setenv("WQ_TEST_GITLAB_TOKEN", srv.Token)
		token, hash, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		doc := fmt.Sprintf(`listen: 127.0.0.1:0
database: %q
handled_types: [mr]
processing: {workers: %d, sweep_interval: 5s}
mr: {reconcile_interval: 2m, merge_recheck_interval: 10s}
forges: [{name: lab, kind: gitlab, url: %q, token_env: WQ_TEST_GITLAB_TOKEN}]
projects: [{match: g/p, forge: lab, auto_merge: true}]
auth:
  tokens:
    - {name: submitter, sha256: %s, permissions: [submit, read]}
`, testdb.URL(t, kind), workers, front.URL, hash)
		cfg, err := config.Parse(strings.NewReader(doc), assemble().known())
		if err != nil {
			t.Fatalf("config: %v\n%s", err, doc)
		}
		m := NewMain(cfg, testkit.Quiet())
		m.Clock = clock
		ctx := context.Background()
		if err := m.Run(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		// What serve reads of the forge at start is done before the window.
		eventually.True(t, time.Minute, "the start's forge checks", func() (bool, any) { return len(m.checks.Reports()) == 1, nil })
		settle := func() {
			t.Helper()
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			for range 2 {
				if err := m.Engine.WaitIdle(wctx); err != nil {
					t.Fatalf("the engine did not go idle: %v", err)
				}
				if _, err := m.Engine.Sweep(wctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Engine.WaitIdle(wctx); err != nil {
				t.Fatalf("the engine did not go idle: %v", err)
			}
		}

		start := clock.Now()
		limit.open(start, start.Add(window))
		w := &glWorld{t: t, base: "http://" + m.Addr(), write: token, read: token}
		ids := make([]string, items)
		for i := range ids {
			ids[i], _ = w.glSubmit(fmt.Sprintf("workqueue/item-%02d", i), fmt.Sprintf("f%02d.txt", i), "content\n")
		}
		settle()
		for clock.Now().Before(start.Add(window)) {
			clock.Advance(5 * time.Second)
			settle()
		}
		during := limit.during()
		t.Logf("%d requests reached the forge during the %s window of 429s, for %d items:\n%s",
			len(during), window, items, strings.Join(during, "\n"))
		// The requests in flight when the window began (at most one a
		// worker) and one probe per wait the forge asked for.
		if len(during) > workers+1 {
			t.Errorf("%d requests during the window, want a handful: at most %d", len(during), workers+1)
		}

		// After the window every item completes, on the clock: pushed,
		// opened and merged.
		completed := func() (int, []string) {
			n, states := 0, []string{}
			for _, id := range ids {
				it := w.glItem(id)
				if it.Phase == "completed" {
					n++
				} else {
					states = append(states, fmt.Sprintf("%s %s/%s %s", id, it.Phase, it.Reason, it.Error))
				}
			}
			return n, states
		}
		for end := clock.Now().Add(30 * time.Minute); clock.Now().Before(end); {
			if n, _ := completed(); n == items {
				break
			}
			clock.Advance(5 * time.Second)
			settle()
		}
		if n, states := completed(); n != items {
			t.Fatalf("%d of %d items completed 30 minutes after the window; the others:\n%s", n, items, strings.Join(states, "\n"))
		}
		for _, id := range ids {
			if it := w.glItem(id); it.Reason != "merged" {
				t.Errorf("item %s: %s/%s, want merged", id, it.Phase, it.Reason)
			}
		}
		t.Logf("every item merged by +%s", clock.Now().Sub(start))
	})
}
