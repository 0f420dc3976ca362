package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forgecheck"
	"github.com/workqueue-dev/workqueue/metrics"
)

// The forges as they really are (issue 50, docs/forge-checks.md): serve
// reads each forge's version at start and refuses one below its kind's
// minimum, reads the configured projects' settings and reports those the
// service's safety relies on, and checks the projects' webhooks at start
// and every hooks.check_interval. config check --online runs the first
// two.

// versionTimeout bounds the start's read of one forge's version: a forge
// that does not answer is a warning, not a start that hangs.
const versionTimeout = 15 * time.Second

// maxSettingsProjects bounds how many projects of one projects[] entry
// have their settings read: a glob over a large group would otherwise
// cost two calls for each of its projects at every start.
const maxSettingsProjects = 20

// configuredProjects lists the projects of forge name that the token
// reaches and a projects[] entry covers: the projects hooks ensure and
// the hook check look after.
func configuredProjects(ctx context.Context, cfg config.Config, name string, f wq.Forge) ([]string, error) {
	listed, err := f.ListProjects(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range listed {
		if _, ok := cfg.ProjectFor(name, p); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// settingsProjects picks, from the projects the token reaches, those
// whose settings are read: for each projects[] entry on forge name, the
// first maxSettingsProjects it matches. skipped counts the others.
func settingsProjects(cfg config.Config, name string, listed []string) (picked []string, skipped int) {
	seen := map[string]bool{}
	for _, entry := range cfg.Projects {
		if entry.Forge != name {
			continue
		}
		n := 0
		for _, p := range listed {
			if ok, _ := doublestar.Match(entry.Match, p); !ok {
				continue
			}
			if n == maxSettingsProjects {
				skipped++
				continue
			}
			n++
			if !seen[p] {
				seen[p] = true
				picked = append(picked, p)
			}
		}
	}
	return picked, skipped
}

// inspectForge reads one forge's version and its configured projects'
// settings (forgecheck.Inspect).
func inspectForge(ctx context.Context, cfg config.Config, fc config.Forge, f wq.Forge) forgecheck.Report {
	listed, err := f.ListProjects(ctx)
	if err != nil {
		r := forgecheck.Inspect(ctx, fc.Name, fc.Kind, f, nil)
		r.Projects = []forgecheck.ProjectReport{{Error: "the projects could not be listed: " + err.Error()}}
		return r
	}
	return inspectListed(ctx, cfg, fc, f, listed)
}

// inspectListed is inspectForge with the projects the token reaches
// already listed.
func inspectListed(ctx context.Context, cfg config.Config, fc config.Forge, f wq.Forge, listed []string) forgecheck.Report {
	picked, skipped := settingsProjects(cfg, fc.Name, listed)
	r := forgecheck.Inspect(ctx, fc.Name, fc.Kind, f, picked)
	if skipped > 0 {
		r.Projects = append(r.Projects, forgecheck.ProjectReport{Project: fmt.Sprintf("(%d more)", skipped),
			Error: fmt.Sprintf("not read: at most %d projects of each projects[] entry are checked", maxSettingsProjects)})
	}
	return r
}

// forgeProblems turns a forge's report into config check's problems: a
// version below the minimum is an error, the rest warnings.
func forgeProblems(r forgecheck.Report) (problems config.Problems, checked []string) {
	field := "forges[" + r.Forge + "]"
	switch r.VersionStatus {
	case "too_old":
		problems = append(problems, &config.Problem{Field: field, Message: r.VersionMessage})
	case "supported":
		checked = append(checked, field+": "+r.VersionMessage)
	default:
		problems = append(problems, &config.Problem{Field: field, Message: r.VersionMessage, Warning: true})
	}
	for _, p := range r.Projects {
		if p.Error != "" {
			problems = append(problems, &config.Problem{Field: field, Message: strings.TrimSpace(p.Project + " settings: " + p.Error), Warning: true})
			continue
		}
		for _, s := range p.Settings {
			if s.Known && s.Safe {
				checked = append(checked, fmt.Sprintf("%s %s: %s", field, p.Project, forgecheck.SettingLine(s)))
				continue
			}
			problems = append(problems, &config.Problem{Field: field, Message: p.Project + ": " + forgecheck.SettingLine(s), Warning: true})
		}
	}
	return problems, checked
}

// forgeChecks is what serve found of its forges, for the dashboard and
// /readyz.
type forgeChecks struct {
	mu      sync.Mutex
	reports []forgecheck.Report
	hooks   *forgecheck.HookChecker // nil: hooks are not checked
	// hooksOff says why, when hooks is nil.
	hooksOff string
}

// Reports returns the forges' versions and settings as read at start
// (none until the read is done).
func (c *forgeChecks) Reports() []forgecheck.Report {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reports
}

// Hooks returns what the last webhook check found, and why hooks are not
// checked when they are not.
func (c *forgeChecks) Hooks() ([]forgecheck.HookStatus, string) {
	if c == nil {
		return nil, "not started"
	}
	if c.hooks == nil {
		return nil, c.hooksOff
	}
	return c.hooks.Status(), ""
}

// checkVersions reads every forge's version, bounded by versionTimeout
// each, and refuses the start when one is below its kind's minimum.
func (m *Main) checkVersions(ctx context.Context, forges map[string]wq.Forge) error {
	var tooOld []string
	for _, fc := range m.Config.Forges {
		vr, ok := forges[fc.Name].(wq.VersionReader)
		if !ok {
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, versionTimeout)
		raw, err := vr.ServerVersion(vctx)
		cancel()
		log := m.Log.With("component", "forgecheck", "forge", fc.Name)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			log.Warn("forge version not checked: the adapter cannot read it")
			continue
		case err != nil:
			log.Warn("forge version not read: serve starts, but cannot tell whether the forge is supported", "err", err)
			continue
		}
		verdict, msg := forge.CheckVersion(fc.Kind, vr.MinServerVersion(), raw)
		switch verdict {
		case forge.VersionTooOld:
			tooOld = append(tooOld, fmt.Sprintf("forges[%s] (%s): %s", fc.Name, fc.URL, msg))
		case forge.VersionUnknown:
			log.Warn("forge version unreadable", "detail", msg)
		default:
			log.Info("forge version", "detail", msg)
		}
	}
	if len(tooOld) > 0 {
		return fmt.Errorf("refusing to start: %s", strings.Join(tooOld, "; "))
	}
	return nil
}

// startForgeChecks reads the projects' settings and starts the webhook
// check, beside the start: neither delays serving. It returns at once;
// stopForgeChecks ends them.
func (m *Main) startForgeChecks(ctx context.Context, forges map[string]wq.Forge) {
	m.checks = &forgeChecks{}
	ctx, m.stopChecks = context.WithCancel(context.WithoutCancel(ctx))
	m.checksDone = make(chan struct{})
	targets, off := m.hookTargets(forges)
	if off != "" {
		m.checks.hooksOff = off
		m.Log.Info("webhooks are not checked: "+off, "component", "hooks")
	} else {
		m.checks.hooks = &forgecheck.HookChecker{Targets: targets, Interval: time.Duration(m.Config.Hooks.CheckInterval),
			Repair: m.Config.Hooks.Repair, Clock: m.Clock, Log: m.Log, Metrics: hookMetrics{m.Metrics}}
		for _, t := range targets {
			m.Metrics.HookChecks(forgecheck.HookOutcomes, t.Name) // from the first scrape
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		var reports []forgecheck.Report
		for _, fc := range m.Config.Forges {
			r := inspectForge(ctx, m.Config, fc, forges[fc.Name])
			if ctx.Err() != nil {
				return
			}
			for _, w := range r.Warnings() {
				m.Log.Warn("forge check: "+w, "component", "forgecheck", "forge", fc.Name)
			}
			reports = append(reports, r)
		}
		m.checks.mu.Lock()
		m.checks.reports = reports
		m.checks.mu.Unlock()
	})
	if m.checks.hooks != nil {
		wg.Go(func() { m.checks.hooks.Run(ctx) })
	}
	go func() { wg.Wait(); close(m.checksDone) }()
}

// hookTargets are the forges whose hooks serve checks, or why none is.
func (m *Main) hookTargets(forges map[string]wq.Forge) ([]forgecheck.HookTarget, string) {
	if m.Config.PublicURL == "" {
		return nil, "no public_url, so there is no address for the forges to deliver to"
	}
	var targets []forgecheck.HookTarget
	for _, fc := range m.Config.Forges {
		secret, err := fc.WebhookSecret()
		if err != nil || secret == "" {
			continue // config check reports a secret it cannot read
		}
		name, f := fc.Name, forges[fc.Name]
		targets = append(targets, forgecheck.HookTarget{Name: name, Forge: f, Secret: secret,
			URL: strings.TrimRight(m.Config.PublicURL, "/") + "/webhooks/" + name,
			Projects: func(ctx context.Context) ([]string, error) {
				return configuredProjects(ctx, m.Config, name, f)
			}})
	}
	if len(targets) == 0 {
		return nil, "no forge has a webhook secret"
	}
	return targets, ""
}

// stopForgeChecks ends the settings read and the webhook check.
func (m *Main) stopForgeChecks() {
	if m.stopChecks != nil {
		m.stopChecks()
		<-m.checksDone
	}
}

// hookMetrics counts the webhook checks in the process's metrics (nil:
// not measured; its methods do nothing then).
type hookMetrics struct{ m *metrics.Metrics }

func (h hookMetrics) WebhookChecked(forge, outcome string) { h.m.WebhookChecked(forge, outcome) }
func (h hookMetrics) WebhooksBroken(forge string, n int)   { h.m.WebhooksBroken(forge, n) }

// deliveryMetrics counts webhook deliveries and tells the hook check of
// those refused for their signature, whose hook's secret is then written
// again (forgecheck.HookChecker.SecretRefused).
type deliveryMetrics struct {
	m      *metrics.Metrics
	checks *forgeChecks
}

func (d deliveryMetrics) WebhookDelivery(forge, outcome string) {
	d.m.WebhookDelivery(forge, outcome)
	if outcome == metrics.DeliveryRefusedSignature && d.checks != nil && d.checks.hooks != nil {
		d.checks.hooks.SecretRefused(forge)
	}
}

// webhookHealth is GET /readyz's webhook detail: the projects the last
// check left wrong.
func (c *forgeChecks) webhookHealth() api.Webhooks {
	statuses, off := c.Hooks()
	w := api.Webhooks{Checked: off == "", NotChecked: off, Broken: []api.WebhookCheck{}}
	for _, s := range statuses {
		if s.Outcome != forgecheck.HookBroken && s.Outcome != forgecheck.HookError {
			continue
		}
		w.Broken = append(w.Broken, webhookCheckOf(s))
	}
	return w
}

// webhookCheckOf is a hook status on the wire.
func webhookCheckOf(s forgecheck.HookStatus) api.WebhookCheck {
	c := api.WebhookCheck{Forge: s.Forge, Project: s.Project, Outcome: s.Outcome, Error: s.Error, CheckedAt: s.CheckedAt}
	for _, p := range s.Problems {
		c.Problems = append(c.Problems, string(p))
	}
	return c
}
