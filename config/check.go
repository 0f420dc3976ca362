package config

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// SecretRef names where one secret comes from, never its value.
type SecretRef struct {
	Field    string // e.g. forges[gitea].token
	Env      string // the environment variable, or ""
	File     string // the file, or ""
	Required bool
}

// Secrets lists every secret the configuration refers to.
func (c Config) Secrets() []SecretRef {
	var out []SecretRef
	add := func(field, env, file string, required bool) {
		if env != "" || file != "" || required {
			out = append(out, SecretRef{Field: field, Env: env, File: file, Required: required})
		}
	}
	for _, f := range c.Forges {
		field := "forges[" + f.Name + "]"
		add(field+".token", f.TokenEnv, f.TokenFile, true)
		add(field+".webhook_secret", f.WebhookSecretEnv, f.WebhookSecretFile, false)
		add(field+".review_token", f.ReviewTokenEnv, f.ReviewTokenFile, false)
	}
	add("incidents.sentry.secret", c.Incidents.Sentry.SecretEnv, c.Incidents.Sentry.SecretFile, false)
	add("incidents.glitchtip.secret", c.Incidents.GlitchTip.SecretEnv, c.Incidents.GlitchTip.SecretFile, false)
	add("dashboard.cookie_key", c.Dashboard.CookieKeyEnv, c.Dashboard.CookieKeyFile, false)
	for i, s := range c.Audit.Sinks {
		if s.Kind == AuditS3 {
			field := fmt.Sprintf("audit.sinks[%d]", i)
			add(field+".access_key", s.AccessKeyEnv, s.AccessKeyFile, true)
			add(field+".secret_key", s.SecretKeyEnv, s.SecretKeyFile, true)
		}
	}
	return out
}

// Status says whether the secret can be read, without reading it out:
// "env X: set", "file F: readable", or what is wrong, with ok false.
func (r SecretRef) Status() (status string, ok bool) {
	switch {
	case r.Env != "" && r.File != "":
		return fmt.Sprintf("both env %s and file %s are set; set one", r.Env, r.File), false
	case r.Env != "":
		if os.Getenv(r.Env) == "" {
			return fmt.Sprintf("env %s: empty or unset", r.Env), false
		}
		return fmt.Sprintf("env %s: set", r.Env), true
	case r.File != "":
		if _, err := secret("", r.File, r.Field); err != nil {
			return fmt.Sprintf("file %s: unreadable or empty", r.File), false
		}
		return fmt.Sprintf("file %s: readable", r.File), true
	}
	return "not configured", !r.Required
}

// Notes say in words what some settings allow, for config check to
// print beside the resolved file: who may write without the control
// plane's say, and whether token guessing is limited.
func (c Config) Notes() []string {
	var out []string
	switch {
	case !c.ControlPlane.RequireAssignment:
		out = append(out, "agent-only tokens may submit changes without an assignment (control_plane.require_assignment: false): nothing binds their writes to work the control plane gave them")
	case len(c.ControlPlane.Repos) == 0:
		out = append(out, "agent-only tokens submit changes only for an assignment (control_plane.require_assignment: true, the default), and with no control_plane.repos there is no work to assign: they cannot submit")
	default:
		out = append(out, "agent-only tokens submit changes only for an assignment (control_plane.require_assignment: true, the default)")
	}
	if c.Auth.FailureLimit == 0 {
		out = append(out, "failed authentications are not limited (auth.failure_limit: 0): tokens may be guessed as fast as the service answers")
	} else {
		out = append(out, fmt.Sprintf("a network prefix (IPv4 /24, IPv6 /64) with %d failed authentications within %s, or all addresses with %d, has its further failures answered 429 until they age out; a token that validates always passes (auth.failure_limit, auth.failure_global_limit, auth.failure_window)",
			c.Auth.FailureLimit, time.Duration(c.Auth.FailureWindow), c.Auth.FailureGlobalLimit))
	}
	return out
}

// Known is what the program links that a configuration may name: the
// kinds of forge forges[].kind names, and the item types handled_types
// names, each with the warnings its section gives. The program's
// composition root builds it from its registries (cmd/workqueue/registry.go):
// config links neither, so that reading a configuration links no forge's
// client and no item type.
type Known struct {
	ForgeKinds []string
	ItemTypes  []KnownType
}

// KnownType is an item type the program can process.
type KnownType struct {
	Name string
	// Section is the type's own section of the file (nil: none).
	Section *KnownSection
	// Warnings says what the type's configuration makes a trap on an
	// instance configured by c (nil: nothing).
	Warnings func(c Config) []Warning
}

// KnownSection is an item type's own section of the file: config
// decodes and checks it as it does its own (unknown keys with a
// suggestion, values of the wrong shape, the schema) without linking the
// type.
type KnownSection struct {
	// Key is the section's top-level key ("mr").
	Key string
	// Default returns a new value of the section with every default set:
	// a pointer to a struct whose yaml tags name the keys.
	Default func() any
	// Validate returns the decoded section's problems, each an error
	// "key.field: what is wrong" (nil: nothing to check).
	Validate func(v any) []error
}

// Resolver is an item type's section that also reads the parts of the
// configuration every type shares (the projects, the forges, the public
// URL): Resolved returns the section with them, for the type's build.
// The program's composition root calls it (SectionOf).
type Resolver interface {
	Resolved(c Config) any
}

// SectionOf returns the section of key in c, resolved (Resolver): the
// value the file decoded, or def's defaults where c has none (a Config
// made in code, or a type the file never saw).
func (c Config) SectionOf(key string, def func() any) any {
	v, ok := c.Sections[key]
	if !ok {
		v = def()
	}
	if r, ok := v.(Resolver); ok {
		return r.Resolved(c)
	}
	return v
}

// EditSection returns the section of key in c, to change in place: the
// value c holds, or def's defaults, put in c first (a configuration made
// in code).
func (c *Config) EditSection(key string, def func() any) any {
	if v, ok := c.Sections[key]; ok {
		return v
	}
	if c.Sections == nil {
		c.Sections = map[string]any{}
	}
	v := def()
	c.Sections[key] = v
	return v
}

// sections are the known types' sections.
func (k Known) sections() []*KnownSection {
	var out []*KnownSection
	for _, t := range k.ItemTypes {
		if t.Section != nil {
			out = append(out, t.Section)
		}
	}
	return out
}

// DefaultFor returns Default with the sections of known's types, each
// with its defaults: what an empty file resolves to in a program that
// links known.
func DefaultFor(known Known) Config {
	c := Default()
	c.Sections = map[string]any{}
	for _, s := range known.sections() {
		c.Sections[s.Key] = s.Default()
	}
	return c
}

// typeNames are k's item types' names, sorted.
func (k Known) typeNames() []string {
	names := make([]string, 0, len(k.ItemTypes))
	for _, t := range k.ItemTypes {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// Warning is what an item type's configuration section makes a trap:
// Field names the key it is about, Message says why.
type Warning struct {
	Field, Message string
}

// Check reads the configuration file at path like Load and returns what
// it resolved (the defaults filled in) and every problem at once, before
// anything touches a database or a forge: the file's syntax, unknown keys
// (with a suggestion), values of the wrong shape, invalid fields, item
// types no instance would process, projects whose forge is missing, and
// each secret that cannot be read. Problems carry the line of the file
// where it sets the field. The configuration is the zero Config when the
// file does not parse.
func Check(path string, known Known) (Config, Problems) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, Problems{{Message: err.Error()}}
	}
	defer f.Close()
	cfg, doc, problems := parse(io.LimitReader(f, maxFileSize+1), known)
	if doc == nil {
		return Config{}, problems
	}
	problems = append(problems, cfg.secretProblems(doc)...)
	slices.SortStableFunc(problems, func(a, b *Problem) int { return cmpLine(a.Line, b.Line) })
	return cfg, problems
}

// CheckSecrets reports each secret of the configuration that cannot be
// read, all at once (serve checks them before it opens anything).
func (c Config) CheckSecrets() Problems { return c.secretProblems(nil) }

func (c Config) secretProblems(doc *yaml.Node) Problems {
	var out Problems
	for _, r := range c.Secrets() {
		status, ok := r.Status()
		if ok {
			continue
		}
		p := &Problem{Field: r.Field, Message: status}
		switch {
		case r.Env != "":
			p.Line = lineOf(doc, r.Field+"_env")
		case r.File != "":
			p.Line = lineOf(doc, r.Field+"_file")
		default:
			p.Line = lineOf(doc, r.Field[:strings.LastIndex(r.Field, ".")])
		}
		out = append(out, p)
	}
	return out
}

// validateItemTypes reports a handled type this program has no processor
// for: items of it would wait forever.
func (c Config) validateItemTypes(known Known, bad func(field, format string, args ...any)) {
	names := known.typeNames()
	for i, t := range c.HandledTypes {
		if t != "" && !slices.Contains(names, t) {
			bad(fmt.Sprintf("handled_types[%d]", i), "%q is not an item type this instance can process; want one of %s", t, strings.Join(names, ", "))
		}
	}
}

// typeWarnings says when the API takes items that this instance will not
// process: right for an API-only instance beside processing ones
// (DDR-25), a trap for a single instance. Each item type says it of its
// own section.
func (c Config) typeWarnings(known Known, doc *yaml.Node) Problems {
	var out Problems
	for _, t := range known.ItemTypes {
		if t.Warnings == nil {
			continue
		}
		for _, w := range t.Warnings(c) {
			out = append(out, &Problem{Field: w.Field, Line: lineOf(doc, w.Field), Warning: true, Message: w.Message})
		}
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// PrintResolved writes the configuration as YAML, every URL's password
// redacted (the file holds no other secret values: they come from
// environment variables and files, which it names).
func (c Config) PrintResolved(w io.Writer) error {
	c.Database = RedactURL(c.Database)
	c.PublicURL = RedactURL(c.PublicURL)
	c.Auth.Introspection.URL = RedactURL(c.Auth.Introspection.URL)
	c.Forges = append([]Forge(nil), c.Forges...)
	for i := range c.Forges {
		c.Forges[i].URL = RedactURL(c.Forges[i].URL)
	}
	// What an unset project field resolves to, not null (issue 29).
	c.Projects = append([]Project(nil), c.Projects...)
	for i := range c.Projects {
		prefix, deletes := c.Projects[i].SourceBranchPrefix(), c.Projects[i].DeletesSourceBranch()
		c.Projects[i].BranchPrefix, c.Projects[i].DeleteSourceBranch = &prefix, &deletes
		track := c.Projects[i].Tracking()
		c.Projects[i].TrackLabel = &track
		c.Projects[i].MergeTrain.BatchSize = c.Projects[i].MergeTrain.Batch()
		if c.Projects[i].ProtectedPaths.Mode == "" {
			c.Projects[i].ProtectedPaths.Mode = ProtectedRefuse
		}
		// caller_labels unset is a rule, not a list (none for agent-only
		// callers, any existing label for others): it is left out.
	}
	doc, err := c.document()
	if err != nil {
		return err
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// document is c as the file would say it: its own keys in their order,
// then the item types' sections by key.
func (c Config) document() (*yaml.Node, error) {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return nil, err
	}
	for _, key := range slices.Sorted(maps.Keys(c.Sections)) {
		var v yaml.Node
		if err := v.Encode(c.Sections[key]); err != nil {
			return nil, err
		}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &v)
	}
	return &doc, nil
}

// FormatProblems writes problems one a line, indented, warnings marked.
func FormatProblems(w io.Writer, problems Problems) {
	for _, p := range problems {
		if p.Warning {
			fmt.Fprint(w, "  - warning: ")
			p = &Problem{Field: p.Field, Line: p.Line, Message: p.Message}
			for i, line := range strings.Split(p.Error(), "\n") {
				if i > 0 {
					fmt.Fprint(w, "    ")
				}
				fmt.Fprintln(w, line)
			}
			continue
		}
		for i, line := range strings.Split(p.Error(), "\n") {
			if i == 0 {
				fmt.Fprintf(w, "  - %s\n", line)
			} else {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
}
