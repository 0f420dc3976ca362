package identity

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
)

// Budget names one of an identity's write budgets.
type Budget string

const (
	// Submissions counts submissions (POST /api/v1/items), whatever
	// their outcome.
	Submissions Budget = "submissions"
	// Actions counts gated forge actions: the control plane's actions
	// (comment, review, merge, close) and submissions made for an
	// assignment.
	Actions Budget = "actions"
)

// Window is the span a budget counts over: a clock hour. A fixed window
// keeps the count one row per identity and budget, written in one
// statement on every instance; at a window's turn an identity may spend
// up to twice its budget within a short time, which still bounds it.
const Window = time.Hour

// Default budgets: far above what a busy honest agent writes in an hour
// (the swarm's agents submit and comment a few times per work item).
const (
	DefaultSubmissionsPerHour = 600
	DefaultActionsPerHour     = 600
)

// Stable reasons of the refusals, as the API's problem documents carry
// them.
const (
	// ReasonFrozen refuses every call of a frozen identity (403).
	ReasonFrozen = "identity_frozen"
	// ReasonSubmissionsBudget and ReasonActionsBudget refuse a write
	// beyond the identity's budget this hour (429 with Retry-After).
	ReasonSubmissionsBudget = "submissions_budget_exceeded"
	ReasonActionsBudget     = "actions_budget_exceeded"
)

// Audit event types of this package (declared with the others, in
// wq.AuditKinds).
const (
	AuditFrozen         = wq.AuditIdentityFrozen
	AuditUnfrozen       = wq.AuditIdentityUnfrozen
	AuditBudgetExceeded = wq.AuditBudgetExceeded
)

// Freeze is an admin's freeze of an identity.
type Freeze struct {
	Identity string    `json:"identity"`
	By       string    `json:"by"`     // the admin's identity
	Reason   string    `json:"reason"` // free text, may be ""
	At       time.Time `json:"at"`
}

// Store keeps the budgets' counts and the freezes. identity/idstore
// implements it on both drivers.
type Store interface {
	// Spend counts one write of budget by identity in the window that
	// starts at window, unless limit writes were counted there already:
	// then it counts nothing and returns false. It forgets the
	// identity's counts of the budget's earlier windows. Two instances
	// spending at once never both take the last unit.
	Spend(ctx context.Context, identity string, budget Budget, limit int, window time.Time) (bool, error)
	// SetFreeze stores f, replacing a freeze of the same identity, and
	// returns the one it replaced (nil when there was none).
	SetFreeze(ctx context.Context, f Freeze) (old *Freeze, err error)
	// ClearFreeze removes the identity's freeze and returns it (nil when
	// there was none).
	ClearFreeze(ctx context.Context, identity string) (old *Freeze, err error)
	// GetFreeze returns the identity's freeze, or nil.
	GetFreeze(ctx context.Context, identity string) (*Freeze, error)
	// ListFreezes returns every freeze, by identity.
	ListFreezes(ctx context.Context) ([]Freeze, error)
}

// Limits are the budgets per identity and Window; 0 or less leaves a
// budget unbounded.
type Limits struct {
	SubmissionsPerHour int
	ActionsPerHour     int
}

func (l Limits) of(b Budget) int {
	if b == Submissions {
		return l.SubmissionsPerHour
	}
	return l.ActionsPerHour
}

// BudgetError is the refusal of a write beyond a budget. Its *wq.Error
// (Unwrap) has code EUNAVAILABLE and the budget's reason; the API answers
// it 429 with Retry-After.
type BudgetError struct {
	Identity   string
	Budget     Budget
	Limit      int
	RetryAfter time.Duration // until the window turns
}

func (e *BudgetError) Error() string { return e.Unwrap().Error() }

// Unwrap is the application error the refusal stands for.
func (e *BudgetError) Unwrap() error {
	reason := ReasonActionsBudget
	if e.Budget == Submissions {
		reason = ReasonSubmissionsBudget
	}
	return &wq.Error{Code: wq.EUNAVAILABLE, Reason: reason, Message: fmt.Sprintf(
		"%s: %s made its %d %s of this hour (limits.%s_per_hour); try again in %ds",
		reason, e.Identity, e.Limit, e.Budget, e.Budget, e.RetryAfterSeconds())}
}

// RetryAfterSeconds is RetryAfter in whole seconds, at least 1.
func (e *BudgetError) RetryAfterSeconds() int {
	return max(1, int((e.RetryAfter+time.Second-1)/time.Second))
}

// Guard keeps the budgets and the freezes. A nil *Guard bounds nothing
// and freezes nobody, so that a server built without one serves as
// before.
type Guard struct {
	Store  Store
	Limits Limits
	Audit  wq.AuditSink    // nil: none
	Clock  clockwork.Clock // nil: the real clock
	Log    *slog.Logger    // nil: none
	// OnFreeze runs once an identity is frozen, with the admin who froze
	// it: the composition root ends the identity's control-plane leases
	// here, and returns how many it ended. Its error is logged, and the
	// freeze stands.
	OnFreeze func(ctx context.Context, identity, by string) (int, error)
}

func (g *Guard) now() time.Time {
	if g.Clock != nil {
		return g.Clock.Now()
	}
	return time.Now()
}

func (g *Guard) log() *slog.Logger {
	if g.Log != nil {
		return g.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (g *Guard) audit(ctx context.Context, e wq.AuditEntry) {
	if g.Audit != nil {
		g.Audit.WriteAudit(ctx, e)
	}
}

// Spend counts one write of budget by identity, or refuses it with a
// *BudgetError, audited, when the identity made its budget's writes this
// hour already. source names the call for the audit ("api").
func (g *Guard) Spend(ctx context.Context, identity string, budget Budget, trigger map[string]any) error {
	if g == nil || g.Store == nil {
		return nil
	}
	limit := g.Limits.of(budget)
	if limit <= 0 {
		return nil
	}
	now := g.now()
	window := now.UTC().Truncate(Window)
	ok, err := g.Store.Spend(ctx, identity, budget, limit, window)
	if err != nil {
		return fmt.Errorf("spend the %s budget of %s: %w", budget, identity, err)
	}
	if ok {
		return nil
	}
	refusal := &BudgetError{Identity: identity, Budget: budget, Limit: limit, RetryAfter: window.Add(Window).Sub(now)}
	g.audit(ctx, wq.AuditEntry{Time: now, EventType: AuditBudgetExceeded, Actor: identity, Trigger: trigger,
		Metadata: map[string]any{"budget": string(budget), "limit_per_hour": limit, "window_start": window,
			"retry_after_seconds": refusal.RetryAfterSeconds(), "reason": wq.ErrorReason(refusal)}})
	return refusal
}

// Check refuses, with EFORBIDDEN and ReasonFrozen, an identity an admin
// froze.
func (g *Guard) Check(ctx context.Context, identity string) error {
	if g == nil || g.Store == nil {
		return nil
	}
	f, err := g.Store.GetFreeze(ctx, identity)
	if err != nil {
		return fmt.Errorf("read the freeze of %s: %w", identity, err)
	}
	if f == nil {
		return nil
	}
	return frozenError(f)
}

func frozenError(f *Freeze) error {
	msg := fmt.Sprintf("%s: %s was frozen by %s at %s", ReasonFrozen, f.Identity, f.By, f.At.UTC().Format(time.RFC3339))
	if f.Reason != "" {
		msg += " (" + f.Reason + ")"
	}
	return &wq.Error{Code: wq.EFORBIDDEN, Reason: ReasonFrozen, Message: msg + "; an admin may unfreeze it"}
}

// State is an identity's freeze state, as the freeze and unfreeze
// answer it.
type State struct {
	Identity string  `json:"identity"`
	Frozen   bool    `json:"frozen"`
	Freeze   *Freeze `json:"freeze,omitempty"`
	// LeasesEnded counts the leases OnFreeze ended.
	LeasesEnded int `json:"leases_ended"`
}

// maxReason bounds a freeze's reason.
const maxReason = 500

// Freeze freezes identity on behalf of the admin by (the caller checks
// that by is one), audits it with the old and the new state, and runs
// OnFreeze. Freezing a frozen identity again replaces its reason.
func (g *Guard) Freeze(ctx context.Context, by, identity, reason string) (*State, error) {
	if err := g.usable(identity); err != nil {
		return nil, err
	}
	if len(reason) > maxReason {
		return nil, wq.Errorf(wq.EINVALID, "reason: at most %d bytes, got %d", maxReason, len(reason))
	}
	now := g.now()
	f := Freeze{Identity: identity, By: by, Reason: reason, At: now.UTC().Truncate(time.Microsecond)}
	old, err := g.Store.SetFreeze(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("freeze %s: %w", identity, err)
	}
	g.audit(ctx, wq.AuditEntry{Time: now, EventType: AuditFrozen, Actor: by, OldState: stateOf(old),
		NewState: stateOf(&f), Trigger: map[string]any{"source": "admin"}, Metadata: map[string]any{"identity": identity}})
	st := &State{Identity: identity, Frozen: true, Freeze: &f}
	if g.OnFreeze != nil {
		var err error
		if st.LeasesEnded, err = g.OnFreeze(ctx, identity, by); err != nil {
			g.log().Warn("identity frozen, but its leases could not all be ended; they expire", "identity", identity, "err", err)
		}
	}
	return st, nil
}

// Unfreeze lifts identity's freeze on behalf of the admin by and audits
// it with the old and the new state. Its items go on where they were
// held (the engine looks again when their hold ends); its ended leases
// do not come back. Unfreezing an identity that is not frozen changes
// nothing and is not an error.
func (g *Guard) Unfreeze(ctx context.Context, by, identity string) (*State, error) {
	if err := g.usable(identity); err != nil {
		return nil, err
	}
	old, err := g.Store.ClearFreeze(ctx, identity)
	if err != nil {
		return nil, fmt.Errorf("unfreeze %s: %w", identity, err)
	}
	g.audit(ctx, wq.AuditEntry{Time: g.now(), EventType: AuditUnfrozen, Actor: by, OldState: stateOf(old),
		NewState: stateOf(nil), Trigger: map[string]any{"source": "admin"}, Metadata: map[string]any{"identity": identity}})
	return &State{Identity: identity}, nil
}

// Frozen lists the frozen identities.
func (g *Guard) Frozen(ctx context.Context) ([]Freeze, error) {
	if g == nil || g.Store == nil {
		return nil, nil
	}
	return g.Store.ListFreezes(ctx)
}

// maxIdentity bounds an identity named in a freeze.
const maxIdentity = 500

func (g *Guard) usable(identity string) error {
	if g == nil || g.Store == nil {
		return wq.Errorf(wq.EUNAVAILABLE, "identities cannot be frozen on this server")
	}
	if identity == "" || len(identity) > maxIdentity {
		return wq.Errorf(wq.EINVALID, "identity: want 1 to %d bytes, got %d", maxIdentity, len(identity))
	}
	return nil
}

func stateOf(f *Freeze) map[string]any {
	if f == nil {
		return map[string]any{"frozen": false}
	}
	return map[string]any{"frozen": true, "by": f.By, "reason": f.Reason, "at": f.At}
}

// Hold is the engine's hold (engine.Engine.SetHold): it returns why item
// must not act now (its creator is frozen), or "" when it may.
func (g *Guard) Hold(ctx context.Context, item *wq.Item) (string, error) {
	if g == nil || g.Store == nil || item.CallerIdentity == "" {
		return "", nil
	}
	f, err := g.Store.GetFreeze(ctx, item.CallerIdentity)
	if err != nil || f == nil {
		return "", err
	}
	return wq.ErrorMessage(frozenError(f)), nil
}
