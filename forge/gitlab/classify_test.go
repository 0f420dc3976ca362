package gitlab_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

// failingGitLab is a GitLab that answers every API call with status and
// the Retry-After header retryAfter (none when empty), and counts them.
func failingGitLab(t *testing.T, status int, retryAfter string) (*gitlab.Forge, *atomic.Int32) {
	t.Helper()
	calls := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			calls.Add(1)
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"message":"` + http.StatusText(status) + `"}`))
	}))
	t.Cleanup(srv.Close)
	f, err := gitlab.New(srv.URL, "token", gitlab.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f, calls
}

func TestOverloadedGitLabIsTransientAndSaysHowLongToWait(t *testing.T) {
	t.Parallel()
	inTwoMinutes := func() string { return time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat) }
	for _, tc := range []struct {
		name             string
		status           int
		retryAfter       string
		wantKind         wq.ForgeErrorKind
		wantMin, wantMax time.Duration
	}{
		{"a 429 with Retry-After 30 is rate limited for 30s", http.StatusTooManyRequests, "30", wq.ForgeRateLimited, 30 * time.Second, 30 * time.Second},
		{"a 503 with an HTTP-date is transient until that date", http.StatusServiceUnavailable, inTwoMinutes(), wq.ForgeTransient, time.Minute + 55*time.Second, 2 * time.Minute},
		{"a 429 without Retry-After is rate limited with no wait of its own", http.StatusTooManyRequests, "", wq.ForgeRateLimited, 0, 0},
		{"a 502 is transient", http.StatusBadGateway, "", wq.ForgeTransient, 0, 0},
		{"a 403 is permanent and its Retry-After is ignored", http.StatusForbidden, "30", wq.ForgePermanent, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, calls := failingGitLab(t, tc.status, tc.retryAfter)
			_, err := f.BranchHead(context.Background(), "g/p", "workqueue/x")
			var fe *wq.ForgeError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *ForgeError", err)
			}
			if fe.Kind != tc.wantKind || fe.Status != tc.status {
				t.Errorf("kind %s status %d, want %s %d (%v)", fe.Kind, fe.Status, tc.wantKind, tc.status, err)
			}
			if fe.RetryAfter < tc.wantMin || fe.RetryAfter > tc.wantMax {
				t.Errorf("RetryAfter %v, want between %v and %v", fe.RetryAfter, tc.wantMin, tc.wantMax)
			}
			if got, want := wq.IsTransient(err), tc.wantKind != wq.ForgePermanent; got != want {
				t.Errorf("IsTransient = %v, want %v", got, want)
			}
			// The client's own retries are off: the engine backs off per item.
			if n := calls.Load(); n != 1 {
				t.Errorf("the client asked %d times, want once", n)
			}
		})
	}
}
