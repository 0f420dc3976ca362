package forge

import (
	"fmt"
	"net/http"
	"sort"

	wq "github.com/workqueue-dev/workqueue"
)

// Plugin is everything the service knows of one kind of forge, registered
// once in a Registry (cmd/workqueue/registry.go registers the kinds shipped): how to build a
// client for a configured forge, how to verify and read its webhook
// deliveries and the events they store, how to read the address of a CI
// job's page, and what it can do. Nothing outside forge/ switches on a
// kind: serve, the webhook receiver, the herder, the configuration and the
// item types look the kind up here.
type Plugin struct {
	// Name is the kind, as forges[].kind names it ("gitea", "gitlab").
	Name string

	// Open builds the client of one configured forge.
	Open func(c Config) (wq.Forge, error)

	// ParseWebhook verifies a delivery against secret (never empty here)
	// and reads it, as ParseWebhook documents; the generic checks of
	// ParseWebhook run after it.
	ParseWebhook func(secret string, h http.Header, body []byte) (*Delivery, error)

	// VerifyHeader, when set, checks what a delivery's headers alone
	// prove against secret (never empty here), before its body is read:
	// a kind whose forge sends its secret in a header (GitLab's
	// X-Gitlab-Token) refuses a wrong one without taking a byte of the
	// body, and one that signs the body can refuse a signature that
	// cannot be one. It returns EUNAUTHORIZED, as ParseWebhook would;
	// ParseWebhook still verifies the delivery in full. nil: the body
	// is read and ParseWebhook decides.
	VerifyHeader func(secret string, h http.Header) error

	// EventTypes are the types of its deliveries (Delivery.EventType)
	// that tell an item something, which DecodeEvent reads.
	EventTypes []string
	// DecodeEvent reads the payload of a delivery of one of EventTypes, as
	// the forge sent it, into the forge-neutral Event that is stored and
	// that item types read: at receipt, once (Registry.ParseWebhook).
	DecodeEvent func(eventType string, body []byte) (Event, error)

	// JobPage reads the path of a CI job's web page, below the forge's
	// base URL, into the job it shows; false if it is not one.
	JobPage func(path string) (JobRef, bool)

	// WorkPage, when set, is the path, below the forge's base URL, of the
	// web page of an issue (kind "issue") or a pull request (kind "pr")
	// of repo, which the dashboard links.
	WorkPage func(repo, kind string, number int64) string
}

// Config is what Plugin.Open builds a client from.
type Config struct {
	URL   string // the base URL, http(s)://host[:port][/path]
	Token string // the service's API token
	// ReviewToken is the token of the account that gives review verdicts;
	// "" refuses reviews of the service's own pull requests (Options).
	ReviewToken string
	HTTPClient  *http.Client // nil: the adapter's own
}

// JobRef is a CI job as its web page names it: a job id the API reads
// (GitLab), or the run it belongs to, whose jobs are matched by their
// page's URL (Gitea Actions, whose pages number jobs by position).
type JobRef struct {
	Project string
	JobID   int64 // the API's job id; 0 when only the run is known
	RunID   int64 // the run (pipeline) of the job, when JobID is 0
}

// Registry is the kinds of forge a program links: built once by the
// program's composition root (cmd/workqueue/registry.go), one Register
// line per kind, and passed to what needs a kind (the configuration's
// check, the webhook receiver, the outbound policy that opens clients).
// No package registers a kind by being imported.
type Registry struct {
	plugins map[string]Plugin
}

// NewRegistry returns a registry of the given kinds (Register each).
func NewRegistry(kinds ...Plugin) *Registry {
	r := &Registry{plugins: map[string]Plugin{}}
	for _, p := range kinds {
		r.Register(p)
	}
	return r
}

// Register adds a kind of forge. It panics on a plugin without a name, a
// constructor or a webhook reader and on a kind registered twice:
// registration happens once, at start, and a mistake there is a
// programming error. It is not safe to call while the registry is in use.
func (r *Registry) Register(p Plugin) {
	if p.Name == "" || p.Open == nil || p.ParseWebhook == nil || (len(p.EventTypes) > 0 && p.DecodeEvent == nil) {
		panic(fmt.Sprintf("forge: plugin %q lacks a name, Open, ParseWebhook or DecodeEvent", p.Name))
	}
	if _, dup := r.plugins[p.Name]; dup {
		panic(fmt.Sprintf("forge: kind %q registered twice", p.Name))
	}
	r.plugins[p.Name] = p
}

// Lookup returns the plugin of a kind of forge.
func (r *Registry) Lookup(kind string) (Plugin, bool) {
	p, ok := r.plugins[kind]
	return p, ok
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	names := make([]string, 0, len(r.plugins))
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open builds the client of a configured forge of the given kind.
func (r *Registry) Open(kind string, c Config) (wq.Forge, error) {
	p, ok := r.Lookup(kind)
	if !ok {
		return nil, wq.Errorf(wq.EINVALID, "unknown forge kind %q (known: %v)", kind, r.Kinds())
	}
	return p.Open(c)
}
