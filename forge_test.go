package workqueue_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

func TestParseRetryAfterReadsSecondsAndHTTPDatesAndCapsAtADay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		name, header string
		want         time.Duration
	}{
		{"delay seconds are a wait", "30", 30 * time.Second},
		{"surrounding spaces are ignored", " 120 ", 2 * time.Minute},
		{"zero seconds is no wait", "0", 0},
		{"an HTTP-date in the future is the wait until it", date(90 * time.Second), 90 * time.Second},
		{"an obsolete RFC 850 date is read too", now.Add(time.Minute).Format(time.RFC850), time.Minute},
		{"an HTTP-date in the past is no wait", date(-time.Hour), 0},
		{"an HTTP-date now is no wait", date(0), 0},
		{"a negative number is no wait", "-30", 0},
		{"a number below int64 is no wait", "-99999999999999999999999", 0},
		{"garbage is no wait", "soon", 0},
		{"a fraction is not delay-seconds", "1.5", 0},
		{"an empty header is no wait", "", 0},
		{"a huge number of seconds is capped at a day", "31536000", 24 * time.Hour},
		{"a number beyond int64 is capped at a day", "99999999999999999999999", 24 * time.Hour},
		{"a date years ahead is capped at a day", date(3 * 365 * 24 * time.Hour), 24 * time.Hour},
		{"a day exactly is kept", "86400", 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wq.ParseRetryAfter(tc.header, now); got != tc.want {
				t.Errorf("ParseRetryAfter(%q) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

func TestIsTransientClassifiesOutagesAndLetsAPermanentMarkWin(t *testing.T) {
	t.Parallel()
	forge := func(k wq.ForgeErrorKind) error { return &wq.ForgeError{Kind: k, Op: "gitea: commit"} }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a transient forge error", fmt.Errorf("commit: %w", forge(wq.ForgeTransient)), true},
		{"a rate limit", forge(wq.ForgeRateLimited), true},
		{"an unavailable service", wq.Errorf(wq.EUNAVAILABLE, "database down"), true},
		{"an error marked transient", fmt.Errorf("%w: lock timeout", wq.ErrTransient), true},
		{"a transient forge error marked permanent", fmt.Errorf("%w: %w", wq.ErrPermanent, forge(wq.ForgeTransient)), false},
		{"a permanent forge error", forge(wq.ForgePermanent), false},
		{"a missing branch", forge(wq.ForgeNotFound), false},
		{"a conflict", forge(wq.ForgeConflict), false},
		{"an unclassified error", errors.New("disk full"), false},
		{"no error", nil, false},
	} {
		if got := wq.IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	wrapped := fmt.Errorf("commit: %w", &wq.ForgeError{Kind: wq.ForgeRateLimited, RetryAfter: 30 * time.Second})
	if got, want := wq.RetryAfterOf(wrapped), 30*time.Second; got != want {
		t.Errorf("RetryAfterOf(wrapped 429) = %v, want %v", got, want)
	}
	if got := wq.RetryAfterOf(errors.New("x")); got != 0 {
		t.Errorf("RetryAfterOf(plain error) = %v, want 0", got)
	}
}
