package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/identity/idstore"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/mcpserver"
	"github.com/workqueue-dev/workqueue/metrics"
	"github.com/workqueue-dev/workqueue/policy"
	"github.com/workqueue-dev/workqueue/service"
)

// Main is one workqueue serve process: the store, the engine and the HTTP
// server, wired from a configuration.
type Main struct {
	Config config.Config
	Log    *slog.Logger
	// AdminTokenFile, when set, holds an admin API token, created on
	// first start (serve does this when it runs without a config file).
	AdminTokenFile string
	// Clock is the one clock every part reads (nil: the real one), so
	// that a test drives the whole process's time.
	Clock clockwork.Clock
	// AuditMetrics, when set, counts the audit archives' writes,
	// failures and losses (default: Metrics).
	AuditMetrics audit.Metrics
	// archives are the audit archives that Close flushes (cmd/workqueue/audit.go).
	archives []*audit.Archive

	// world is what the process links: its kinds of forge, item types
	// and store drivers (world.go).
	world *world

	Store  wq.Store
	Engine *engine.Engine
	HTTP   *http.Server
	// Metrics are the process's Prometheus metrics; nil when
	// metrics.enabled is false (every method then does nothing).
	Metrics *metrics.Metrics
	// metricsServer serves /metrics on metrics.listen; nil without one.
	metricsServer *metricsServer

	listener net.Listener
	served   chan error
	// stopSync stops the inventory's periodic sync; synced is closed
	// once it has.
	stopSync context.CancelFunc
	synced   chan struct{}
	// stopTypes stops the work item types do beside the engine (the mr
	// type's bulk reconciliation); typesDone is closed once it has.
	stopTypes context.CancelFunc
	typesDone chan struct{}
	closeOnce sync.Once
	closeErr  error
	// dashboardTrail gives the dashboard an item's audit entries: the
	// history in the database, or this process's recent ones.
	dashboardTrail dashboard.AuditTrail
	// stopHistory stops the history's writer, which writes what it has
	// queued first; historyDone is closed once it has.
	stopHistory context.CancelFunc
	historyDone chan struct{}
	// checks are the forge checks (forgechecks.go): the settings read at
	// start and the webhook check; stopChecks ends them, checksDone is
	// closed once they have.
	checks     *forgeChecks
	stopChecks context.CancelFunc
	checksDone chan struct{}
	// holders keeps the holder notes; Close stops it.
	holders *controlplane.HolderNotes
}

// NewMain returns a process for cfg that links what this program ships
// (assemble); Run starts it.
func NewMain(cfg config.Config, log *slog.Logger) *Main { return newMainIn(assemble(), cfg, log) }

// newMainIn returns a process for cfg that links w.
func newMainIn(w *world, cfg config.Config, log *slog.Logger) *Main {
	return &Main{Config: cfg, Log: log, world: w}
}

// Run opens the store, migrates it if configured to, starts the engine and
// starts serving HTTP. It returns once everything is running; Close stops
// it.
func (m *Main) Run(ctx context.Context) error {
	m.Log.Info("starting workqueue", "config", m.Config.Redacted())
	if m.Clock == nil {
		m.Clock = clockwork.NewRealClock()
	}
	// Bind first: a busy port must fail the start before a database,
	// an admin token or an audit directory is made (issue 29).
	var err error
	m.listener, err = net.Listen("tcp", m.Config.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	all, err := m.world.openStores(ctx, m.Config.Database)
	if err != nil {
		return err
	}
	s := all.queue
	m.Store = s
	if m.Config.AutoMigrate {
		applied, err := s.Migrate(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if len(applied) > 0 {
			m.Log.Info("applied migrations", "versions", applied)
		}
	}
	if applied, latest, err := s.SchemaVersion(ctx); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	} else if applied != latest {
		return fmt.Errorf("database schema has %d of its %d migrations: run workqueue migrate", applied, latest)
	}

	m.Metrics = m.newMetrics(s, all.cp)
	forges, err := m.world.openForgesMeasured(m.Config, m.Metrics, m.Clock, m.Log)
	if err != nil {
		return err
	}
	// A forge below its kind's minimum fails in ways that look like the
	// service's bugs: refuse it before anything runs (issue 50).
	if err := m.checkVersions(ctx, forges); err != nil {
		return err
	}
	m.startForgeChecks(ctx, forges)
	authn, err := m.authenticator()
	if err != nil {
		return err
	}
	sink, err := m.openAudit()
	if err != nil {
		return err
	}
	sink = m.withDashboardTrail(sink)
	m.Engine, err = engine.New(engineConfig(m.Config), s, m.Clock, audit.Safe(sink, m.Log), m.Log)
	if err != nil {
		return err
	}
	m.Engine.SetMetrics(m.Metrics)
	cpc := m.Config.ControlPlane
	cps := &controlplane.Service{Store: all.cp, Clock: m.Clock, Log: m.Log,
		Policy:   controlplane.Policy{BlockedLabels: cpc.BlockedLabels, PriorityLabels: cpc.PriorityLabels},
		LeaseTTL: time.Duration(cpc.LeaseTTL), SessionTTL: time.Duration(cpc.SessionTTL), Forges: forges, Metrics: m.Metrics,
		MaxCheckpoints: cpc.MaxCheckpointsPerSession, ReviewLabel: m.world.reviewLabel(m.Config), Audit: audit.Safe(sink, m.Log)}
	if cpc.HolderNotes {
		// Who holds what, on the forge (issue 50): a note per work unit,
		// edited as its leases change.
		cps.Holders = &controlplane.HolderNotes{Store: all.cp, Forges: forges, Clock: m.Clock, Log: m.Log}
		m.holders = cps.Holders
	}
	// The per-identity budgets and freezes: a freeze ends the identity's
	// leases, and the engine holds its items before any forge write.
	ids := &identity.Guard{Store: all.ids, Limits: m.Config.IdentityLimits(), Audit: audit.Safe(sink, m.Log), Clock: m.Clock,
		Log: m.Log.With("component", "identity"),
		OnFreeze: func(ctx context.Context, id, by string) (int, error) {
			ended, err := cps.EndLeasesOf(ctx, controlplane.Caller{Identity: by, Admin: true}, id)
			return len(ended), err
		}}
	m.Engine.SetHold(ids.Hold)
	items := &service.Items{Store: s, Notify: m.Engine.Notify, Audit: audit.Safe(sink, m.Log), Clock: m.Clock, Identities: ids,
		RequireAssignment: cpc.RequireAssignment, HandledHere: m.Config.HandledTypes, Handlers: registryOf(s),
		// Three sweeps missed: an instance handling the type is gone.
		HandlerWindow: max(service.DefaultHandlerWindow, 3*time.Duration(m.Config.Processing.SweepInterval))}
	// Each registered item type the configuration enables registers with
	// the engine and, beside it, its face to callers; the work a type
	// does beside the engine runs where the type is handled.
	built, err := m.world.types.BuildAll(itemtype.Env{Queue: s, Forges: forges, Assignments: cps.AssignmentGate(),
		Audit: audit.Safe(sink, m.Log), Notify: m.Engine.Notify, Metrics: m.Metrics.Registerer(), Clock: m.Clock, Log: m.Log}, all.types,
		func(p itemtype.Plugin) any { return sectionOf(m.Config, p) }, m.Config.HandledTypes)
	if err != nil {
		return err
	}
	for _, b := range built {
		m.Engine.Register(b.Type)
		items.Register(b.Type, b.API)
		if q, ok := b.API.(wq.MergeQueuer); ok {
			// A merger's merge goes through the type's merge train.
			cps.MergeQueue = q
		}
		if b.Face != nil {
			items.Describe(*b.Face)
		}
	}
	for _, b := range built {
		m.Metrics.ItemType(b.Type) // their series from the first scrape
	}
	if err := m.Engine.Start(ctx); err != nil {
		return err
	}
	var besides []func(context.Context)
	for _, b := range built {
		if b.Run != nil {
			besides = append(besides, b.Run)
		}
	}
	if len(besides) > 0 {
		var typesCtx context.Context
		typesCtx, m.stopTypes = context.WithCancel(context.WithoutCancel(ctx))
		m.typesDone = make(chan struct{})
		var wg sync.WaitGroup
		for _, run := range besides {
			wg.Go(func() { run(typesCtx) })
		}
		go func() { wg.Wait(); close(m.typesDone) }()
	}
	hookForges := map[string]service.WebhookForge{}
	for _, f := range m.Config.Forges {
		secret, err := f.WebhookSecret()
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		hookForges[f.Name] = service.WebhookForge{Kind: f.Kind, Secret: secret}
	}
	hooks := &service.Webhooks{Store: s, Forges: hookForges, Kinds: m.world.kinds, Types: items.Types(), Notify: m.Engine.Notify,
		Audit: audit.Safe(sink, m.Log), Clock: m.Clock, Metrics: deliveryMetrics{m.Metrics, m.checks}}
	if len(cpc.Repos) > 0 {
		inv := &controlplane.Inventory{Store: all.cp, Forges: forges, Clock: m.Clock, Log: m.Log,
			Interval: time.Duration(cpc.SyncInterval)}
		for _, r := range cpc.Repos {
			inv.Repos = append(inv.Repos, controlplane.RepoMatch{Forge: r.Forge, Match: r.Match})
		}
		cps.Inventory, hooks.Inventory = inv, inv
		var syncCtx context.Context
		syncCtx, m.stopSync = context.WithCancel(context.WithoutCancel(ctx))
		m.synced = make(chan struct{})
		go func() { defer close(m.synced); inv.Run(syncCtx) }()
	}

	// One limiter of failed authentications for the API and the
	// dashboard, so that a guesser's failures on either count together.
	var limiter *auth.FailureLimiter
	if a := m.Config.Auth; a.FailureLimit > 0 {
		limiter = auth.NewFailureLimiter(auth.LimiterOptions{Limit: a.FailureLimit, Window: time.Duration(a.FailureWindow),
			GlobalLimit: a.FailureGlobalLimit, Clock: m.Clock, Metrics: m.Metrics})
	}
	apiOpts := httpapi.Options{Store: s, Items: items, Webhooks: hooks, Auth: authn, FailureLimiter: limiter, Log: m.Log,
		Audit: audit.Safe(sink, m.Log), Clock: m.Clock, ControlPlane: cps, Identities: ids,
		ProxyAccessTokenHeader: m.Config.Auth.ProxyAccessTokenHeader,
		PublicURL:              m.Config.PublicURL, // the base the OAuth protected-resource metadata of /mcp names
		WebhookHealth:          m.checks.webhookHealth,
		// The same tools for agents over MCP at /mcp, each call made on
		// the API with the caller's token; a submission as large as REST
		// takes fits.
		MCP: func(api http.Handler) http.Handler {
			return mcpserver.HTTPHandler(api, mcpserver.HTTPOptions{Log: m.Log.With("component", "mcp"), MaxRequestBytes: httpapi.MaxSubmitBytes + 1<<20, Faces: items.Faces()})
		}}
	if err := m.serveDashboard(ctx, &apiOpts, items, cps, authn, limiter, sink); err != nil {
		return err
	}
	if err := m.serveIncidents(ctx, &apiOpts, all.cp, forges); err != nil {
		return err
	}
	if err := m.serveMetrics(&apiOpts); err != nil {
		return err
	}
	m.HTTP = &http.Server{
		Handler:           httpapi.NewServer(apiOpts),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	m.served = make(chan error, 1)
	go func() { m.served <- m.HTTP.Serve(m.listener) }()
	m.Log.Info("listening", "addr", m.Addr())
	m.logWhatItDoes()
	return nil
}

// logWhatItDoes says in one line what this instance processes and, when
// that is nothing, what to configure (issue 29): zero-config serve takes
// the API's calls but has no forge to write to. Without a config file
// it also says how to use the admin token it keeps.
func (m *Main) logWhatItDoes() {
	c := m.Config
	dashboard := "http://" + m.Addr() + "/ui/"
	if len(c.HandledTypes) == 0 || len(c.Forges) == 0 {
		m.Log.Warn("this instance processes no items: it serves the API, the dashboard and the control plane, "+
			"but has no handled_types, forges or projects; configure them (workqueue.example.yaml documents every key) "+
			"and start it with --config FILE",
			"handled_types", c.HandledTypes, "forges", len(c.Forges), "projects", len(c.Projects), "dashboard", dashboard)
	} else {
		m.Log.Info("processing", "handled_types", c.HandledTypes, "forges", len(c.Forges), "projects", len(c.Projects), "dashboard", dashboard)
	}
	if m.AdminTokenFile != "" {
		m.Log.Info("to use the CLI or the dashboard as admin: export WORKQUEUE_TOKEN=$(cat "+m.AdminTokenFile+
			") or workqueue login < "+m.AdminTokenFile, "server", "http://"+m.Addr())
	}
}

// serveIncidents starts the incident bridge when incidents are
// configured: the legacy links imported (or the start refused, naming
// the conflicts), and gives it to the API's options for the reconcile
// route and each provider's webhook receiver that has a secret.
func (m *Main) serveIncidents(ctx context.Context, api *httpapi.Options, cps controlplane.Store, forges map[string]wq.Forge) error {
	cfg := m.Config.Incidents
	if len(cfg.Projects) == 0 && cfg.ProjectsFile == "" {
		return nil
	}
	listed, err := m.Config.IncidentProjects()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	projects := make([]incident.Project, len(listed))
	for i, p := range listed {
		projects[i] = incident.Project{Provider: p.Provider, Organization: p.Organization, Project: p.Project,
			Forge: p.Forge, Repo: p.Repo, Labels: p.Labels}
	}
	var secrets httpapi.IncidentSecrets
	for _, s := range []struct {
		field  string
		secret config.IncidentSecret
		into   *string
	}{{"incidents.sentry", cfg.Sentry, &secrets.Sentry}, {"incidents.glitchtip", cfg.GlitchTip, &secrets.GlitchTip}} {
		if s.secret.Configured() {
			if *s.into, err = s.secret.Secret(s.field); err != nil {
				return fmt.Errorf("config: %w", err)
			}
		}
	}
	links, err := cpstore.NewIncidents(cps)
	if err != nil {
		return err
	}
	bridge, err := incident.New(links, func(name string) (incident.IssueForge, bool) {
		f, ok := forges[name]
		return f, ok
	}, projects, m.Clock, m.Log)
	if err != nil {
		return fmt.Errorf("incidents: %w", err)
	}
	rep, err := bridge.ImportLegacy(ctx)
	if err != nil {
		return fmt.Errorf("incidents: import the legacy incident_links table: %w", err)
	}
	m.Log.Info("incident bridge", "projects", len(projects), "sentry_webhook", secrets.Sentry != "",
		"glitchtip_webhook", secrets.GlitchTip != "", "legacy_import", rep)
	api.Incidents, api.IncidentSecrets = bridge, secrets
	return nil
}

// stores are the database's stores: the queue's, each item type's (by
// type name) and the control plane's.
type stores struct {
	queue wq.Store
	types map[string]any
	cp    controlplane.Store
	ids   identity.Store // the budgets' counts and the freezes
}

// openStores opens the database the URL names with every component's
// store on it, every registered item type's included, so that their
// migrations are registered before any runs.
func (w *world) openStores(ctx context.Context, url string) (stores, error) {
	db, err := w.drivers.Open(ctx, url)
	if err != nil {
		return stores{}, fmt.Errorf("open database: %w", err)
	}
	s := stores{queue: db}
	if s.types, err = w.types.Stores(db); err == nil {
		s.cp, err = cpstore.New(db)
	}
	if err == nil {
		s.ids, err = idstore.New(db)
	}
	if err != nil {
		db.Close()
		return stores{}, fmt.Errorf("open database: %w", err)
	}
	return s, nil
}

// openForges builds a client for every configured forge, each with its
// budget on the real clock.
func (w *world) openForges(cfg config.Config) (map[string]wq.Forge, error) {
	return w.openForgesMeasured(cfg, nil, clockwork.NewRealClock(), nil)
}

// openForgesMeasured is openForges with every forge's budget on clock,
// and its HTTP requests and budget measured in mx (nil: not measured).
// Everything serve runs is given these clients: one forge, one client,
// one budget for every caller.
func (w *world) openForgesMeasured(cfg config.Config, mx *metrics.Metrics, clock clockwork.Clock, log *slog.Logger) (map[string]wq.Forge, error) {
	forges := map[string]wq.Forge{}
	for _, f := range cfg.Forges {
		token, err := f.Token()
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		reviewToken, err := f.ReviewToken() // "" without one: reviews of the service's own pull requests are refused
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		// Guarded: every write passes the outbound policy (package policy).
		g, err := policy.Open(w.kinds, cfg, w.serviceLabels(cfg), f, forge.Config{URL: f.URL, Token: token, ReviewToken: reviewToken,
			HTTPClient: forgeHTTPClient(mx, f, clock, log)})
		if err != nil {
			return nil, err
		}
		forges[f.Name] = g
	}
	return forges, nil
}

// authenticator returns the configured static tokens, plus the admin
// token of AdminTokenFile when it is set (serve without a config file).
func (m *Main) authenticator() (auth.Authenticator, error) {
	tokens := m.Config.StaticTokens()
	if m.AdminTokenFile != "" {
		token, created, err := adminToken(m.AdminTokenFile)
		if err != nil {
			return nil, err
		}
		if created {
			m.Log.Warn("created an admin API token; it is in the file named here (mode 0600)", "file", m.AdminTokenFile)
		} else {
			m.Log.Info("admin API token read from file", "file", m.AdminTokenFile)
		}
		tokens = append(tokens, auth.Token{Name: "admin", SHA256: auth.HashToken(token), Permissions: []auth.Permission{auth.Admin}})
	}
	static, err := auth.NewStaticTokens(tokens)
	if err != nil {
		return nil, err
	}
	chain := &auth.Chain{Static: static}
	rules := m.Config.AuthRules()
	if slices.ContainsFunc(rules, func(r auth.Rule) bool { return r.Issuer != "" }) {
		chain.JWTs, err = auth.NewJWTs(context.Background(), rules, auth.JWTOptions{Log: m.Log, Clock: m.Clock, Metrics: m.Metrics,
			Leeway: time.Duration(m.Config.Auth.JWT.Leeway), MinRefresh: time.Duration(m.Config.Auth.JWT.MinRefresh)})
		if err != nil {
			return nil, err
		}
	}
	if in := m.Config.Auth.Introspection; in.URL != "" {
		chain.Introspection = &auth.Introspection{URL: in.URL, TTL: time.Duration(in.TTL), Rules: rules, Clock: m.Clock}
	}
	return chain, nil
}

// adminToken reads the admin token from path, or creates it there with
// mode 0600 on first start.
func adminToken(path string) (token string, created bool, err error) {
	if b, err := os.ReadFile(path); err == nil {
		token = strings.TrimSpace(string(b))
		if token == "" {
			return "", false, fmt.Errorf("admin token file %s is empty", path)
		}
		return token, false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", false, fmt.Errorf("admin token: %w", err)
	}
	token, _, err = auth.NewToken()
	if err != nil {
		return "", false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("admin token: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return "", false, fmt.Errorf("admin token: %w", err)
	}
	return token, true, f.Close()
}

// Addr is the address the HTTP server listens on (useful with port 0).
func (m *Main) Addr() string {
	if m.listener == nil {
		return ""
	}
	return m.listener.Addr().String()
}

// Close shuts down in order: stop taking requests, stop the engine within
// its grace period (releasing leases), close the database (DDR-36). It is
// safe to call more than once.
func (m *Main) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Main) close() error {
	var errs []error
	if m.HTTP == nil && m.listener != nil {
		m.listener.Close() // Run failed after it bound
	}
	if m.HTTP != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.HTTP.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		cancel()
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if err := m.metricsServer.close(); err != nil {
		errs = append(errs, err)
	}
	m.stopForgeChecks()
	m.holders.Stop()
	if m.stopSync != nil {
		m.stopSync()
		<-m.synced
	}
	if m.stopTypes != nil {
		m.stopTypes()
		<-m.typesDone
	}
	if m.Engine != nil {
		m.Engine.Stop(context.Background())
	}
	if m.stopHistory != nil {
		m.stopHistory()
		<-m.historyDone
	}
	if err := m.closeAudit(); err != nil {
		errs = append(errs, fmt.Errorf("audit: %w", err))
	}
	if m.Store != nil {
		if err := m.Store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// registryOf is the store's registry of handled types, or nil.
func registryOf(s wq.Store) wq.HandlerRegistry {
	r, _ := s.(wq.HandlerRegistry)
	return r
}
