package forgecheck

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/budget"
)

// HookTarget is one forge whose projects' webhooks are checked.
type HookTarget struct {
	Name  string   // the configured forge name
	Forge wq.Forge // the guarded forge (policy.Open): a repair is a guarded write
	// URL is where its hooks deliver (public_url/webhooks/<name>);
	// Secret signs them. Never logged.
	URL, Secret string
	// Projects lists the configured projects the token reaches, read
	// anew at every check (a project made since is covered).
	Projects func(ctx context.Context) ([]string, error)
}

// HookStatus is what the last check found of one project's webhook.
type HookStatus struct {
	Forge   string `json:"forge"`
	Project string `json:"project"`
	// Problems are what was wrong when it was checked; empty when it was
	// right.
	Problems []wq.WebhookProblem `json:"problems,omitempty"`
	// Outcome is what the check did: "ok", "repaired" (Problems were
	// fixed), "broken" (found wrong and left so: repair is off or failed)
	// or "error" (the forge did not answer).
	Outcome   string    `json:"outcome"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
}

// Outcomes of HookStatus.
const (
	HookOK       = "ok"
	HookRepaired = "repaired"
	HookBroken   = "broken"
	HookError    = "error"
)

// HookOutcomes are every outcome of a check, for the metrics.
var HookOutcomes = []string{HookOK, HookRepaired, HookBroken, HookError}

// HookMetrics counts the checks (package metrics implements it).
type HookMetrics interface {
	WebhookChecked(forge, outcome string)
	WebhooksBroken(forge string, n int)
}

// HookChecker checks every target's projects' webhooks at start and
// every Interval, and repairs them when Repair is on.
//
// Several instances sharing a database each run one, and do not fight:
// a check compares before it writes, so an instance that finds a hook
// right writes nothing, and every instance picks the same hook to keep
// and the same duplicates to delete (the adapters' EnsureWebhook), so
// that two repairing at once converge on one hook. A person editing a
// hook while it is checked is the same race: the check leaves the hook
// as the service needs it, or finds it right at the next interval.
type HookChecker struct {
	Targets  []HookTarget
	Interval time.Duration
	Repair   bool
	Clock    clockwork.Clock
	Log      *slog.Logger
	Metrics  HookMetrics // nil: not counted

	mu     sync.Mutex
	status map[[2]string]HookStatus
	// refused are the forges whose deliveries the receiver refused for
	// their signature since the last check (SecretRefused).
	refused map[string]bool
}

// SecretRefused tells the checker that a delivery to the named forge was
// refused for its signature or token: at the next check, its projects'
// hooks get their secret written again when Repair is on (a secret
// cannot be read back to compare). Anyone can send a refused delivery, so
// this costs at most one write per project per interval, and the write
// sets what the service holds.
func (c *HookChecker) SecretRefused(forge string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.Targets {
		if t.Name == forge {
			if c.refused == nil {
				c.refused = map[string]bool{}
			}
			c.refused[forge] = true
		}
	}
}

// defaults fills in what a HookChecker built without them lacks.
func (c *HookChecker) defaults() {
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Interval <= 0 {
		c.Interval = 10 * time.Minute
	}
}

// Run checks at once, then every Interval until ctx ends.
func (c *HookChecker) Run(ctx context.Context) {
	c.defaults()
	t := c.Clock.NewTicker(c.Interval)
	defer t.Stop()
	// A periodic sweep: its reads wait behind every other caller's under
	// the forge's budget (a repair, a write, does not).
	sweep := budget.InBackground(ctx)
	c.CheckAll(sweep)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			c.CheckAll(sweep)
		}
	}
}

// CheckAll checks every target's projects once and returns what it found.
func (c *HookChecker) CheckAll(ctx context.Context) []HookStatus {
	c.defaults()
	var out []HookStatus
	for _, t := range c.Targets {
		c.mu.Lock()
		refused := c.refused[t.Name]
		delete(c.refused, t.Name)
		c.mu.Unlock()
		found := c.checkTarget(ctx, t, refused)
		if ctx.Err() != nil {
			return out
		}
		broken := 0
		for _, s := range found {
			if s.Outcome == HookBroken || s.Outcome == HookError {
				broken++
			}
			if c.Metrics != nil {
				c.Metrics.WebhookChecked(t.Name, s.Outcome)
			}
		}
		if c.Metrics != nil {
			c.Metrics.WebhooksBroken(t.Name, broken)
		}
		c.mu.Lock()
		if c.status == nil {
			c.status = map[[2]string]HookStatus{}
		}
		for k := range c.status {
			if k[0] == t.Name {
				delete(c.status, k) // a project no longer configured is no longer reported
			}
		}
		for _, s := range found {
			c.status[[2]string{s.Forge, s.Project}] = s
		}
		c.mu.Unlock()
		out = append(out, found...)
	}
	return out
}

func (c *HookChecker) checkTarget(ctx context.Context, t HookTarget, refused bool) []HookStatus {
	log := c.Log.With("component", "hooks", "forge", t.Name)
	now := c.Clock.Now()
	projects, err := t.Projects(ctx)
	if err != nil {
		log.Warn("webhook check: the forge's projects could not be listed", "err", err)
		return []HookStatus{{Forge: t.Name, Outcome: HookError, Error: err.Error(), CheckedAt: now}}
	}
	inspector, ok := t.Forge.(wq.WebhookInspector)
	var out []HookStatus
	for _, p := range projects {
		s := HookStatus{Forge: t.Name, Project: p, CheckedAt: now}
		var health wq.WebhookHealth
		err := errors.ErrUnsupported
		if ok {
			health, err = inspector.InspectWebhook(ctx, p, t.URL)
		}
		if errors.Is(err, errors.ErrUnsupported) {
			// An adapter that cannot read hooks: with repair on, ensuring
			// is the check; with it off, nothing can be said.
			if !c.Repair {
				s.Outcome, s.Error = HookError, "not checked: the adapter cannot read webhooks"
				out = append(out, s)
				continue
			}
			outcome, err := t.Forge.EnsureWebhook(ctx, p, t.URL, t.Secret)
			s.Outcome = map[bool]string{true: HookOK, false: HookRepaired}[outcome == wq.WebhookFound]
			if err != nil {
				s.Outcome, s.Error = HookBroken, err.Error()
			}
			out = append(out, s)
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return out
			}
			s.Outcome, s.Error = HookError, err.Error()
			log.Warn("webhook check: the hooks could not be read", "project", p, "err", err)
			out = append(out, s)
			continue
		}
		s.Problems = health.Problems
		if refused && !slices.Contains(s.Problems, wq.WebhookMissing) {
			s.Problems = append(s.Problems, wq.WebhookSecretRefused)
		}
		if len(s.Problems) == 0 {
			s.Outcome = HookOK
			out = append(out, s)
			continue
		}
		if !c.Repair {
			s.Outcome = HookBroken
			log.Warn("webhook check: the project's webhook is wrong and hooks.repair is off: run workqueue hooks ensure",
				"project", p, "problems", s.Problems)
			out = append(out, s)
			continue
		}
		var outcome wq.WebhookOutcome
		if slices.Contains(s.Problems, wq.WebhookSecretRefused) {
			if r, ok := t.Forge.(wq.WebhookSecretResetter); ok {
				outcome, err = r.ResetWebhookSecret(ctx, p, t.URL, t.Secret)
			} else {
				outcome, err = t.Forge.EnsureWebhook(ctx, p, t.URL, t.Secret)
			}
		} else {
			outcome, err = t.Forge.EnsureWebhook(ctx, p, t.URL, t.Secret)
		}
		if err != nil {
			if ctx.Err() != nil {
				return out
			}
			s.Outcome, s.Error = HookBroken, err.Error()
			log.Warn("webhook check: the repair failed", "project", p, "problems", s.Problems, "err", err)
			out = append(out, s)
			continue
		}
		s.Outcome = HookRepaired
		log.Info("webhook check: repaired the project's webhook", "project", p, "problems", s.Problems, "outcome", outcome)
		out = append(out, s)
	}
	return out
}

// Status returns what the last check found of every project, sorted by
// forge and project.
func (c *HookChecker) Status() []HookStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]HookStatus, 0, len(c.status))
	for _, s := range c.status {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Forge != out[j].Forge {
			return out[i].Forge < out[j].Forge
		}
		return out[i].Project < out[j].Project
	})
	return out
}

// Broken returns the projects whose webhook the last check left wrong.
func (c *HookChecker) Broken() []HookStatus {
	var out []HookStatus
	for _, s := range c.Status() {
		if s.Outcome == HookBroken || s.Outcome == HookError {
			out = append(out, s)
		}
	}
	return out
}
