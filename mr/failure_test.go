package mr

import (
	"errors"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

func TestForgeFailureKeepsTheForgeErrorInTheChain(t *testing.T) {
	for _, tc := range []struct {
		kind      wq.ForgeErrorKind
		permanent bool
	}{
		{wq.ForgeNotFound, true},
		{wq.ForgePermanent, true},
		{wq.ForgeTransient, false},
		{wq.ForgeConflict, false},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			cause := &wq.ForgeError{Kind: tc.kind, Op: "gitea: read o/r", Status: 404, Message: "gone"}
			err := forgeFailure("read the merge request", cause)
			var got *wq.ForgeError
			if !errors.As(err, &got) || got != cause {
				t.Errorf("%v: the forge error is not in the chain", err)
			}
			if errors.Is(err, wq.ErrPermanent) != tc.permanent {
				t.Errorf("%v: permanent = %v, want %v", err, !tc.permanent, tc.permanent)
			}
		})
	}
}
