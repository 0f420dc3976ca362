package budget_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/budget"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

// Both kinds' adapters read the budget's own answer during a pause as
// the rate limit it stands for: a transient forge error whose wait is
// what is left of the pause, so that the engine backs the item off until
// then without counting an attempt, and nothing reaches the forge.
func TestBothKindsReadTheBudgetsAnswerAsARateLimit(t *testing.T) {
	for _, kind := range []struct {
		name string
		open func(url string, c *http.Client) (wq.Forge, error)
	}{
		{"gitea", func(url string, c *http.Client) (wq.Forge, error) {
			return gitea.New(url, "token", forge.Options{HTTPClient: c})
		}},
		{"gitlab", func(url string, c *http.Client) (wq.Forge, error) {
			return gitlab.New(url, "token", forge.Options{HTTPClient: c})
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			var got atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				w.Header().Set("Retry-After", "120")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write([]byte(`{"message":"slow down"}`))
			}))
			defer srv.Close()
			clock := clockwork.NewFakeClock()
			b := budget.New(budget.Options{Forge: "f", Clock: clock})
			f, err := kind.open(srv.URL, &http.Client{Transport: b.Transport(nil)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := f.BranchHead(ctx, "o/r", "main"); !wq.IsForgeError(err, wq.ForgeRateLimited) {
				t.Fatalf("the forge's 429: %v, want a rate limit", err)
			}
			clock.Advance(30 * time.Second)
			_, err = f.GetMergeRequest(budget.InBackground(ctx), "o/r", 7)
			if !wq.IsForgeError(err, wq.ForgeRateLimited) || !wq.IsTransient(err) || wq.RetryAfterOf(err) != 90*time.Second {
				t.Errorf("during the pause: %v (retry after %s), want a transient rate limit for the 90s left", err, wq.RetryAfterOf(err))
			}
			if n := got.Load(); n != 1 {
				t.Errorf("the forge got %d requests, want 1", n)
			}
		})
	}
}

// priorities records the budget priority of each request that passes it.
type priorities struct {
	mu  sync.Mutex
	got []budget.Priority
}

func (p *priorities) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.got = append(p.got, budget.PriorityOf(r.Context()))
	p.mu.Unlock()
	return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// Both kinds' adapters send their requests with the caller's context, so
// the budget sees the priority a sweep marked it with.
func TestBothKindsCarryTheCallersPriorityToTheBudget(t *testing.T) {
	for _, kind := range []struct {
		name string
		open func(url string, c *http.Client) (wq.Forge, error)
	}{
		{"gitea", func(url string, c *http.Client) (wq.Forge, error) {
			return gitea.New(url, "token", forge.Options{HTTPClient: c})
		}},
		{"gitlab", func(url string, c *http.Client) (wq.Forge, error) {
			return gitlab.New(url, "token", forge.Options{HTTPClient: c})
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			rec := &priorities{}
			f, err := kind.open("http://forge.test", &http.Client{Transport: rec})
			if err != nil {
				t.Fatal(err)
			}
			f.GetMergeRequest(budget.InBackground(context.Background()), "o/r", 7)
			f.GetMergeRequest(context.Background(), "o/r", 7)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.got) != 2 || rec.got[0] != budget.Background || rec.got[1] != budget.Foreground {
				t.Errorf("the priorities the transport saw: %v, want background then foreground", rec.got)
			}
		})
	}
}
