package forge

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"

	wq "github.com/workqueue-dev/workqueue"
)

// Plugin is everything the service knows of one kind of forge, registered
// once (Register; forge/kinds registers the kinds shipped): how to build a
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

	// EventTypes are the event types its deliveries store
	// (Delivery.EventType) that DecodeEvent reads. They are unique across
	// kinds: a stored event is decoded by its type alone.
	EventTypes []string
	// DecodeEvent reads a stored event's body, the delivery's payload as
	// the forge sent it, into the forge-neutral Event item types read.
	DecodeEvent func(eventType string, body []byte) (Event, error)

	// JobPage reads the path of a CI job's web page, below the forge's
	// base URL, into the job it shows; false if it is not one.
	JobPage func(path string) (JobRef, bool)

	// WorkPage, when set, is the path, below the forge's base URL, of the
	// web page of an issue (kind "issue") or a pull request (kind "pr")
	// of repo, which the dashboard links.
	WorkPage func(repo, kind string, number int64) string

	// SetsFileModes says whether its file writes can set a file's
	// executable bit (a chmod); a forge that cannot gets such a change
	// refused before anything is written.
	SetsFileModes bool

	// InertText returns a text the forge interprets (a description, the
	// body of a comment, a review or an issue) in the form the kind's
	// adapter sends it: with nothing in it that the forge would run as the
	// service's account (GitLab's quick actions). It is idempotent and the
	// adapter applies it again before sending, so a policy that inspects
	// and records this form records what the forge receives. nil: the
	// kind sends such texts as they are (Plugin.Inert).
	InertText func(text string) string
}

// Inert is p.InertText(text), or text where the kind has none.
func (p Plugin) Inert(text string) string {
	if p.InertText == nil {
		return text
	}
	return p.InertText(text)
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

var registry struct {
	sync.RWMutex
	plugins map[string]Plugin
	events  map[string]Plugin // by event type
}

// Register adds a kind of forge. It panics on a plugin without a name, a
// constructor or a webhook reader, on a kind registered twice and on an
// event type another kind already reads: registration happens once, at
// start, and a mistake there is a programming error.
func Register(p Plugin) {
	registry.Lock()
	defer registry.Unlock()
	if p.Name == "" || p.Open == nil || p.ParseWebhook == nil || (len(p.EventTypes) > 0 && p.DecodeEvent == nil) {
		panic(fmt.Sprintf("forge: plugin %q lacks a name, Open, ParseWebhook or DecodeEvent", p.Name))
	}
	if registry.plugins == nil {
		registry.plugins, registry.events = map[string]Plugin{}, map[string]Plugin{}
	}
	if _, dup := registry.plugins[p.Name]; dup {
		panic(fmt.Sprintf("forge: kind %q registered twice", p.Name))
	}
	for _, t := range p.EventTypes {
		if other, dup := registry.events[t]; dup {
			panic(fmt.Sprintf("forge: kind %q registers event type %q, which kind %q reads", p.Name, t, other.Name))
		}
	}
	registry.plugins[p.Name] = p
	for _, t := range p.EventTypes {
		registry.events[t] = p
	}
}

// Lookup returns the plugin of a kind of forge.
func Lookup(kind string) (Plugin, bool) {
	registry.RLock()
	defer registry.RUnlock()
	p, ok := registry.plugins[kind]
	return p, ok
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.plugins))
	for n := range registry.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open builds the client of a configured forge of the given kind.
func Open(kind string, c Config) (wq.Forge, error) {
	p, ok := Lookup(kind)
	if !ok {
		return nil, wq.Errorf(wq.EINVALID, "unknown forge kind %q (known: %v)", kind, Kinds())
	}
	return p.Open(c)
}

// SetsFileModes reports whether a forge of this kind can set a file's
// executable bit; false for an unknown kind.
func SetsFileModes(kind string) bool {
	p, _ := Lookup(kind)
	return p.SetsFileModes
}

// EventTypes returns every event type a registered kind stores, sorted:
// an item type that reads forge events takes all of them, and reads each
// with DecodeEvent.
func EventTypes() []string {
	registry.RLock()
	defer registry.RUnlock()
	types := make([]string, 0, len(registry.events))
	for t := range registry.events {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}

// DecodeEvent reads a stored forge event into the forge-neutral Event, by
// the kind that stores events of its type. EINVALID for a type no kind
// reads or a body its kind cannot read.
func DecodeEvent(eventType string, body []byte) (Event, error) {
	registry.RLock()
	p, ok := registry.events[eventType]
	registry.RUnlock()
	if !ok {
		return Event{}, wq.Errorf(wq.EINVALID, "no forge kind reads events of type %q", eventType)
	}
	return p.DecodeEvent(eventType, body)
}
