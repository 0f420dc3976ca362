package storetest

import (
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// sessionRevocations: dashboard logins ended before their cookie expired.
func sessionRevocations(t *testing.T, open func(t *testing.T) wq.Store) {
	revocations := func(t *testing.T) wq.SessionRevocations {
		t.Helper()
		s := open(t)
		sr, ok := s.(wq.SessionRevocations)
		if !ok {
			t.Fatalf("%T keeps no session revocations", s)
		}
		return sr
	}
	revoked := func(t *testing.T, s wq.SessionRevocations, id string) bool {
		t.Helper()
		got, err := s.SessionRevoked(ctx, id)
		if err != nil {
			t.Fatalf("SessionRevoked(%q): %v", id, err)
		}
		return got
	}
	t.Run("a revoked login reads as revoked, another does not", func(t *testing.T) {
		s := revocations(t)
		if revoked(t, s, "login-a") {
			t.Fatal("a login never revoked reads as revoked")
		}
		if err := s.RevokeSession(ctx, "login-a", T0.Add(12*time.Hour), T0); err != nil {
			t.Fatal(err)
		}
		if !revoked(t, s, "login-a") || revoked(t, s, "login-b") {
			t.Errorf("after revoking login-a: a %v, b %v; want a only", revoked(t, s, "login-a"), revoked(t, s, "login-b"))
		}
		if err := s.RevokeSession(ctx, "login-a", T0.Add(12*time.Hour), T0.Add(time.Minute)); err != nil {
			t.Errorf("revoking a login twice: %v, want no error", err)
		}
	})
	t.Run("a revocation is forgotten once its cookie expired", func(t *testing.T) {
		s := revocations(t)
		if err := s.RevokeSession(ctx, "short", T0.Add(time.Hour), T0); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeSession(ctx, "long", T0.Add(24*time.Hour), T0); err != nil {
			t.Fatal(err)
		}
		// The next revocation, after the first cookie expired, clears it.
		if err := s.RevokeSession(ctx, "later", T0.Add(26*time.Hour), T0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if revoked(t, s, "short") || !revoked(t, s, "long") || !revoked(t, s, "later") {
			t.Errorf("after the first cookie expired: short %v, long %v, later %v; want only short forgotten",
				revoked(t, s, "short"), revoked(t, s, "long"), revoked(t, s, "later"))
		}
	})
	t.Run("a revocation needs an id", func(t *testing.T) {
		wantCode(t, revocations(t).RevokeSession(ctx, "", T0.Add(time.Hour), T0), wq.EINVALID)
	})
}
