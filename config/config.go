// Package config loads workqueue's YAML configuration: defaults in one
// place (Default), the file decoded strictly (unknown keys are errors), and
// Validate returning errors that name the field.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/dburl"
)

// Config is the whole configuration file.
type Config struct {
	// Listen is the HTTP listen address.
	Listen string `yaml:"listen"`
	// Database is sqlite:///absolute/path.db, sqlite:relative.db or postgres://….
	Database string `yaml:"database"`
	// AutoMigrate applies pending migrations when serve starts.
	AutoMigrate bool `yaml:"auto_migrate"`
	// HandledTypes are the item types this instance processes; empty means
	// none (DDR-25).
	HandledTypes []string `yaml:"handled_types"`
	// Processing tunes the engine.
	Processing Processing `yaml:"processing"`
	// Log sets the log level and format.
	Log Log `yaml:"log"`
	// Audit says where audit entries go (config/audit.go).
	Audit Audit `yaml:"audit"`
	// PublicURL is the service's base URL as forges and people reach it
	// (links in merge request notes, webhook targets).
	PublicURL string `yaml:"public_url"`
	// Forges are the code forges the service writes to.
	Forges []Forge `yaml:"forges"`
	// Projects map project paths on a forge to their policy; a submission
	// for a project no entry covers is refused.
	Projects []Project `yaml:"projects"`
	// Auth configures who may call the API.
	Auth Auth `yaml:"auth"`
	// ControlPlane configures agent coordination: its work inventory,
	// leases and sessions (config/controlplane.go).
	ControlPlane ControlPlane `yaml:"control_plane"`
	// Incidents configures the incident bridge: which monitoring
	// projects' alerts become issues where (config/incidents.go).
	Incidents Incidents `yaml:"incidents"`
	// Herder configures the CI job retry herder (config/herder.go).
	Herder Herder `yaml:"herder"`
	// Metrics configures the Prometheus metrics (config/metrics.go).
	Metrics Metrics `yaml:"metrics"`
	// Dashboard configures the web dashboard (config/dashboard.go).
	Dashboard Dashboard `yaml:"dashboard"`
	// Limits are the per-identity write budgets (config/limits.go).
	Limits Limits `yaml:"limits"`
	// Hooks configures serve's check and repair of the projects'
	// webhooks (config/hooks.go).
	Hooks Hooks `yaml:"hooks"`

	// Sections are the item types' own sections, by key ("mr"): each the
	// value its type's KnownSection.Default gives, decoded from the file
	// over its defaults. A section the file leaves out is there with its
	// defaults; one of a type the program does not link is an unknown
	// key. Parse fills it; a Config made in code may leave it empty
	// (SectionOf then gives the defaults).
	Sections map[string]any `yaml:"-"`
}

// Processing tunes the engine; engine.Config documents each field (the
// program's composition root turns this section into one).
type Processing struct {
	Workers       int      `yaml:"workers"`
	Lease         Duration `yaml:"lease"`
	Heartbeat     Duration `yaml:"heartbeat"` // 0: a third of lease
	SweepInterval Duration `yaml:"sweep_interval"`
	SweepBatch    int      `yaml:"sweep_batch"`
	// ClaimBatch is how many queued items are leased in one claim.
	ClaimBatch   int      `yaml:"claim_batch"`
	ItemDeadline Duration `yaml:"item_deadline"`
	MaxAttempts  int      `yaml:"max_attempts"`
	// GiveUpAfter is how long an item may fail transiently without a
	// break (forge unreachable, 5xx, rate limited) before it fails.
	GiveUpAfter   Duration `yaml:"give_up_after"`
	BackoffBase   Duration `yaml:"backoff_base"`
	BackoffMax    Duration `yaml:"backoff_max"`
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// DeliveryRetention is how long webhook delivery ids are remembered
	// for deduplication.
	DeliveryRetention Duration `yaml:"delivery_retention"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// UnmarshalYAML accepts only duration strings: a bare number has no unit
// and would silently mean nanoseconds.
//
// Its error is a *yaml.TypeError so that decoding goes on to the other
// fields and every problem is reported in one run.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a duration such as 30s or 5m, got %q", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Default returns the configuration used when no file is given: SQLite in
// the working directory, a loopback listener, and the engine defaults.
func Default() Config {
	e := defaultProcessing
	return Config{
		Listen:      "127.0.0.1:8080",
		Database:    "sqlite:workqueue.db",
		AutoMigrate: true,
		Processing:  e,
		Log:         Log{Level: "info", Format: "text"},
		Audit:       defaultAudit(),
		Auth: Auth{JWT: JWT{Leeway: Duration(30 * time.Second), MinRefresh: Duration(time.Minute)},
			Introspection: Introspection{TTL: Duration(5 * time.Minute)},
			FailureLimit:  auth.DefaultFailureLimit, FailureWindow: Duration(auth.DefaultFailureWindow),
			FailureGlobalLimit: auth.DefaultGlobalFailureLimit},
		ControlPlane: defaultControlPlane(),
		Metrics:      Metrics{Enabled: true},
		Limits:       defaultLimits(),
		Hooks:        defaultHooks(),
	}
}

// defaultProcessing is the processing section's defaults: the engine's
// (engine.DefaultConfig, which a test of the composition root holds equal).
var defaultProcessing = Processing{
	Workers:           10,
	Lease:             Duration(60 * time.Second),
	SweepInterval:     Duration(60 * time.Second),
	SweepBatch:        1000,
	ClaimBatch:        32,
	ItemDeadline:      Duration(60 * time.Second),
	MaxAttempts:       5,
	GiveUpAfter:       Duration(24 * time.Hour),
	BackoffBase:       Duration(10 * time.Second),
	BackoffMax:        Duration(10 * time.Minute),
	ShutdownGrace:     Duration(30 * time.Second),
	DeliveryRetention: Duration(7 * 24 * time.Hour),
}

// minInterval bounds the mr intervals from below.
const minInterval = 100 * time.Millisecond

// maxFileSize bounds the configuration file: it is read whole.
const maxFileSize = 1 << 20

// Load reads the file at path over the defaults and validates the result.
func Load(path string, known Known) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	cfg, err := Parse(io.LimitReader(f, maxFileSize+1), known)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes a configuration document over the defaults and validates
// it. An empty document gives the defaults. The error lists every
// problem (unknown keys, values of the wrong shape, invalid fields), each
// a *Problem naming its field and, where the file sets it, its line.
func Parse(r io.Reader, known Known) (Config, error) {
	cfg, _, problems := parse(r, known)
	if err := problems.Err(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// parse decodes a document over the defaults and returns what it resolved,
// the document's node tree (nil if it did not parse) and every problem,
// warnings included. It decodes as much as it can despite problems, so
// that one run reports them all: a value of the wrong shape or an unknown
// key keeps the default and is reported, and the rest is validated.
func parse(r io.Reader, known Known) (Config, *yaml.Node, Problems) {
	body, err := io.ReadAll(r)
	if err != nil {
		return Config{}, nil, Problems{{Message: err.Error()}}
	}
	if len(body) > maxFileSize {
		return Config{}, nil, Problems{{Message: fmt.Sprintf("larger than %d bytes", maxFileSize)}}
	}
	cfg := DefaultFor(known)
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, nil, problemsOfYAML(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, nil, Problems{{Line: extra.Line, Message: "want one YAML document, found more (a second --- line?)"}}
	}
	var problems Problems
	// The item types' sections are decoded apart, each into its own
	// type; the rest is the configuration's own.
	own, sections := splitSections(&doc, known)
	checkNode(own, reflect.TypeFor[Config](), "", &problems)
	for _, s := range known.sections() {
		n := sections[s.Key]
		if n == nil {
			continue
		}
		v := cfg.Sections[s.Key]
		checkNode(n, reflect.TypeOf(v), s.Key, &problems)
		if err := n.Decode(v); err != nil {
			problems = append(problems, yamlProblems(err, problems)...)
		}
	}
	if own.Kind != 0 {
		if err := own.Decode(&cfg); err != nil {
			// The key walk reported these in the file's terms already;
			// the YAML library's own words are kept only for anything
			// it did not.
			problems = append(problems, yamlProblems(err, problems)...)
		}
	}
	if err := cfg.Validate(known); err != nil {
		for _, e := range unjoin(err) {
			problems = append(problems, problemOf(e, &doc))
		}
	}
	for _, s := range known.sections() {
		if s.Validate == nil {
			continue
		}
		for _, e := range s.Validate(cfg.Sections[s.Key]) {
			problems = append(problems, problemOf(e, &doc))
		}
	}
	problems = append(problems, cfg.typeWarnings(known, &doc)...)
	problems = append(problems, exampleHostWarnings(&doc)...)
	slices.SortStableFunc(problems, func(a, b *Problem) int { return cmpLine(a.Line, b.Line) })
	return cfg, &doc, problems
}

// yamlProblems are the YAML library's words for err, except on the lines
// where the key walk has reported a problem in the file's terms already.
func yamlProblems(err error, reported Problems) Problems {
	lines := map[int]bool{}
	for _, p := range reported {
		lines[p.Line] = true
	}
	var out Problems
	for _, p := range problemsOfYAML(err) {
		if !lines[p.Line] {
			out = append(out, p)
		}
	}
	return out
}

// splitSections returns doc without the item types' sections, and each
// section's node by key (doc itself is left as it is, for lineOf).
func splitSections(doc *yaml.Node, known Known) (*yaml.Node, map[string]*yaml.Node) {
	sections := map[string]*yaml.Node{}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return doc, sections
	}
	keys := map[string]bool{}
	for _, s := range known.sections() {
		keys[s.Key] = true
	}
	m := doc.Content[0]
	rest := *m
	rest.Content = nil
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && keys[k.Value] {
			sections[k.Value] = m.Content[i+1]
			continue
		}
		rest.Content = append(rest.Content, m.Content[i], m.Content[i+1])
	}
	own := *doc
	own.Content = []*yaml.Node{&rest}
	return &own, sections
}

// cmpLine orders problems by line, those without one last.
func cmpLine(a, b int) int {
	switch {
	case a == b:
		return 0
	case a == 0:
		return 1
	case b == 0:
		return -1
	case a < b:
		return -1
	}
	return 1
}

// checkUniqueName reports a list entry's name that pattern (described by
// want) does not match, or that an earlier entry has already; seen
// collects the list's names.
func checkUniqueName(bad func(field, format string, args ...any), field, name string, pattern *regexp.Regexp, want string, seen map[string]bool) {
	if !pattern.MatchString(name) {
		bad(field, "want %s, got %q", want, name)
	} else if seen[name] {
		bad(field, "%q is configured twice", name)
	}
	seen[name] = true
}

// Validate checks every field and returns all problems, each naming its
// field; known is what the program links (the forge kinds and item types
// a configuration may name).
func (c Config) Validate(known Known) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		bad("listen", "want host:port, such as 127.0.0.1:8080, got %q", c.Listen)
	}
	if _, _, err := dburl.Parse(c.Database); err != nil {
		bad("database", "want sqlite:///absolute/path.db, sqlite:relative.db or postgres://…, got %q", RedactURL(c.Database))
	}
	seen := map[string]bool{}
	for i, t := range c.HandledTypes {
		if t == "" || seen[t] {
			bad(fmt.Sprintf("handled_types[%d]", i), "empty or repeated type %q", t)
		}
		seen[t] = true
	}
	c.validateItemTypes(known, bad)
	c.validateLimits(bad)
	p := c.Processing
	if p.Workers < 1 || p.Workers > 1000 {
		bad("processing.workers", "must be between 1 and 1000, got %d", p.Workers)
	}
	if p.Lease < Duration(time.Second) {
		bad("processing.lease", "must be at least 1s, got %s", time.Duration(p.Lease))
	}
	if p.Heartbeat < 0 || (p.Heartbeat > 0 && p.Heartbeat >= p.Lease) {
		bad("processing.heartbeat", "must be shorter than processing.lease (%s), got %s", time.Duration(p.Lease), time.Duration(p.Heartbeat))
	}
	if p.SweepInterval < Duration(100*time.Millisecond) {
		bad("processing.sweep_interval", "must be at least 100ms, got %s", time.Duration(p.SweepInterval))
	}
	if p.DeliveryRetention < Duration(time.Hour) {
		bad("processing.delivery_retention", "must be at least 1h (a person may resend a delivery from the forge later), got %s", time.Duration(p.DeliveryRetention))
	}
	if p.SweepBatch < 1 || p.SweepBatch > 100000 {
		bad("processing.sweep_batch", "must be between 1 and 100000, got %d", p.SweepBatch)
	}
	if p.ClaimBatch < 1 || p.ClaimBatch > 1000 {
		bad("processing.claim_batch", "must be between 1 and 1000, got %d", p.ClaimBatch)
	}
	if p.ItemDeadline <= 0 {
		bad("processing.item_deadline", "must be positive, got %s", time.Duration(p.ItemDeadline))
	}
	if p.MaxAttempts < 1 {
		bad("processing.max_attempts", "must be at least 1, got %d", p.MaxAttempts)
	}
	if p.GiveUpAfter < Duration(time.Minute) {
		bad("processing.give_up_after", "must be at least 1m (an item should outlive a forge restart), got %s", time.Duration(p.GiveUpAfter))
	}
	if p.BackoffBase <= 0 {
		bad("processing.backoff_base", "must be positive, got %s", time.Duration(p.BackoffBase))
	}
	if p.BackoffMax < p.BackoffBase {
		bad("processing.backoff_max", "must be at least processing.backoff_base (%s), got %s", time.Duration(p.BackoffBase), time.Duration(p.BackoffMax))
	}
	if p.ShutdownGrace < 0 {
		bad("processing.shutdown_grace", "must not be negative, got %s", time.Duration(p.ShutdownGrace))
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		bad("log.level", "want debug, info, warn or error, got %q", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		bad("log.format", "want text or json, got %q", c.Log.Format)
	}
	c.Audit.validate(bad)
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("public_url", "want http(s)://host[:port][/path], got %q", c.PublicURL)
		}
	}
	c.validateForges(known, bad)
	c.validateAuth(bad)
	c.validateControlPlane(bad)
	c.validateIncidents(bad)
	c.Herder.validate(bad)
	c.validateMetrics(bad)
	c.validateHooks(bad)
	c.validateDashboard(bad)
	return errors.Join(errs...)
}

// Redacted returns the configuration as one line of JSON with secrets
// hidden, for the start-up log.
func (c Config) Redacted() string {
	c.Database = RedactURL(c.Database)
	node, err := c.document()
	if err != nil {
		return "(unprintable: " + err.Error() + ")"
	}
	out, err := yaml.Marshal(node)
	if err != nil {
		return "(unprintable: " + err.Error() + ")"
	}
	var doc any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		return "(unprintable: " + err.Error() + ")"
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return "(unprintable: " + err.Error() + ")"
	}
	return string(line)
}

// RedactURL hides a password in a database URL.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if strings.Contains(s, "@") {
			return "(redacted)"
		}
		return s
	}
	return u.Redacted()
}
