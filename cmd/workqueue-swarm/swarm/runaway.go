package swarm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/identity"
)

// The runaway (issue 49): a session of an identity of its own stuck in a
// loop, commenting again and again without end, as an agent whose loop
// never meets its exit does. Each comment is a gated forge action, so it
// spends the identity's actions budget whatever the gate answers: once
// the budget is spent every call is answered 429
// actions_budget_exceeded, and after RunawayFreezeAfter such answers the
// stage, as an admin watching would, freezes the identity; its next call
// is refused identity_frozen and it stops. None of its comments may
// reach the forge, and the others' work goes on as without it. At the
// end the stage unfreezes the identity and the runaway ends its session,
// which the unfreeze lets it do again.

// RunawayFreezeAfter is how many budget refusals the stage lets the
// runaway meet before it freezes it.
const RunawayFreezeAfter = 10

// RunawayReport is what the runaway did and what stopped it.
type RunawayReport struct {
	// Calls counts its comment calls; Refusals them by reason.
	Calls    int
	Refusals map[string]int
	// Written counts the comments the service made for it: each is a
	// violation (it holds no assignment).
	Written int
	// Frozen says the stage froze it, LeasesEnded how many leases the
	// freeze ended; Stopped says it stopped on identity_frozen.
	Frozen      bool
	LeasesEnded int
	Stopped     bool
}

type runaway struct {
	run      *run
	conn     *mcpConn
	session  string
	identity string

	mu     sync.Mutex
	report RunawayReport
}

// startRunaway connects the runaway and starts its session; nil without
// a runaway token.
func (r *run) startRunaway(ctx context.Context) (*runaway, error) {
	if r.cfg.RunawayToken == "" {
		return nil, nil
	}
	conn, err := r.connect(ctx, r.cfg.RunawayToken)
	if err != nil {
		return nil, fmt.Errorf("runaway: %w", err)
	}
	s, err := conn.startSession(ctx, cp.RoleAuthor, "swarm runaway (loops)")
	if err != nil {
		return nil, fmt.Errorf("runaway: %w", err)
	}
	r.addSession(s.Session, "runaway", true)
	return &runaway{run: r, conn: conn, session: s.ID, identity: s.Identity, report: RunawayReport{Refusals: map[string]int{}}}, nil
}

// loop comments until the runaway is frozen or ctx ends.
func (w *runaway) loop(ctx context.Context) {
	budget := 0
	for n := 1; ctx.Err() == nil; n++ {
		err := w.conn.call(ctx, "comment", map[string]any{"session_id": w.session,
			"assignment_id": fmt.Sprintf("runaway-%d", n), "body": fmt.Sprintf("still here (%d)", n)}, nil)
		var ref *refusal
		reason := "error"
		if errors.As(err, &ref) {
			reason = ref.reason
		}
		w.mu.Lock()
		w.report.Calls++
		if err == nil {
			w.report.Written++
		} else {
			w.report.Refusals[reason]++
		}
		w.mu.Unlock()
		switch {
		case err != nil && ref == nil:
			w.run.printf("%-11s stopped   %v", "runaway", err) // not the service's answer: do not spin on it
			return
		case err == nil:
			w.run.mu.Lock()
			w.run.report.Violations = append(w.run.report.Violations, fmt.Sprintf("runaway (%s): comment %d without an assignment was made", w.identity, n))
			w.run.mu.Unlock()
			w.run.printf("%-11s VIOLATION a comment without an assignment was made", "runaway")
		case reason == identity.ReasonFrozen:
			w.mu.Lock()
			w.report.Stopped = true
			w.mu.Unlock()
			w.run.printf("%-11s stopped   its identity is frozen after %d calls", "runaway", n)
			return
		case reason == identity.ReasonActionsBudget:
			if budget++; budget == 1 {
				w.run.printf("%-11s budget    spent after %d calls: every call is answered 429 now", "runaway", n)
			}
			if budget == RunawayFreezeAfter {
				w.freeze(ctx)
			}
		}
	}
}

// freeze is the stage's admin freezing the runaway's identity.
func (w *runaway) freeze(ctx context.Context) {
	st, err := w.run.admin.FreezeIdentity(context.WithoutCancel(ctx), w.identity, "swarm: a runaway loop")
	if err != nil {
		w.run.printf("%-11s freeze    failed: %v", "stage", err)
		return
	}
	w.mu.Lock()
	w.report.Frozen, w.report.LeasesEnded = st.Frozen, st.LeasesEnded
	w.mu.Unlock()
	w.run.printf("%-11s frozen    %s (%d leases ended)", "stage", w.identity, st.LeasesEnded)
}

// end unfreezes the runaway's identity, as an admin would once the loop
// is fixed, and ends its session, which its calls may do again.
func (w *runaway) end() RunawayReport {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.run.admin.UnfreezeIdentity(ctx, w.identity); err != nil {
		w.run.printf("%-11s unfreeze  failed: %v", "stage", err)
	}
	if err := w.conn.call(ctx, "end_session", map[string]any{"session_id": w.session}, nil); err != nil {
		w.run.printf("%-11s end_session after the unfreeze: %v", "runaway", err)
	}
	w.conn.cs.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.report
}
