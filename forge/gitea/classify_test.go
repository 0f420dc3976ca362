package gitea_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
)

// failingGitea is a Gitea that answers every API call with status and the
// Retry-After header retryAfter (none when empty).
func failingGitea(t *testing.T, status int, retryAfter string) *gitea.Forge {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/version" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"version":"` + gitea.ServerVersion + `"}`))
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"message":"` + http.StatusText(status) + `"}`))
	}))
	t.Cleanup(srv.Close)
	f, err := gitea.New(srv.URL, "token", gitea.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestOverloadedGiteaIsTransientAndSaysHowLongToWait(t *testing.T) {
	t.Parallel()
	inTwoMinutes := func() string { return time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat) }
	// Both paths of the adapter: an SDK call and a plain net/http call.
	calls := map[string]func(f *gitea.Forge) error{
		"branch head (SDK)": func(f *gitea.Forge) error {
			_, err := f.BranchHead(context.Background(), "o/r", "workqueue/x")
			return err
		},
		"commit changes (net/http)": func(f *gitea.Forge) error {
			_, err := f.CommitChanges(context.Background(), "o/r", "0123456789abcdef0123456789abcdef01234567")
			return err
		},
	}
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
		for call, do := range calls {
			t.Run(tc.name+" on "+call, func(t *testing.T) {
				t.Parallel()
				err := do(failingGitea(t, tc.status, tc.retryAfter))
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
			})
		}
	}
}
