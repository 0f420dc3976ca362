package forge

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// MaxBodyBytes bounds a delivery's body.
const MaxBodyBytes = 1 << 20

// Delivery is a verified delivery, reduced to what resolution needs and
// to the forge-neutral Event it tells: a kind's ParseWebhook makes it
// (Registry.ParseWebhook adds the Event, by the kind's DecodeEvent), the
// webhook receiver resolves it to the item it concerns and stores the
// Event, which is what item types read. Of Number,
// PipelineID, SourceBranch and HeadSHA, at least one is set (they are what
// the event says about the merge request it concerns), or Work is.
type Delivery struct {
	DeliveryID   string
	EventType    string
	Project      string
	Number       int64 // merge request number
	PipelineID   int64 // GitLab pipeline id, Gitea Actions run id
	SourceBranch string
	TargetBranch string // set by merge request events: with SourceBranch, it resolves one not yet numbered
	HeadSHA      string
	// EventTS orders phase changes (the stale guard); zero for events that
	// only ask for a look (CI, reviews), whose clocks are not the merge
	// request's.
	EventTS time.Time
	// Event is what the delivery tells an item, forge-neutral; nil for a
	// delivery that tells items nothing (an issue, a push).
	Event *Event

	// Work is the new state of the issue or pull request of Project the
	// event concerns, read from the payload alone, for the control plane's
	// inventory; nil when the event carries none (CI events). An issue
	// event, and a pull request from a fork, carry Work only: their
	// numbers are not merge requests of ours, so nothing above resolves
	// them to an item. Fields the payload does not carry are zero: Author
	// on GitLab (its hooks name the author by id), and ReviewState unless
	// the payload settles the verdict on its own (see RecheckReview).
	Work *wq.WorkInfo
	// RecheckReview says the event may have changed the pull request's
	// review verdict in a way its payload cannot settle: an approval while
	// another reviewer may still request changes, a withdrawn approval, a
	// push (which can dismiss stale approvals). The inventory reads the
	// verdict from the forge then; otherwise an empty ReviewState keeps
	// the verdict it has.
	RecheckReview bool
	// Push is a push to a branch of Project: it moves the head of every
	// open pull request whose head was Before. It reaches the inventory
	// at once, where a pull request's own event waits for the forge's
	// checks (Gitea's synchronized event comes seconds later). A push
	// carries nothing else: it resolves to no item.
	Push *BranchPush
}

// BranchPush is a branch's move.
type BranchPush struct {
	Branch string
	Before string // the branch's head before; all zeros for a new branch
	After  string // its head now; all zeros for a deleted branch
}

// ParseWebhook verifies and reads a delivery from a forge of the given
// kind, with its plugin's ParseWebhook. It returns EUNAUTHORIZED if the
// signature or token does not match (or no secret is configured),
// EINVALID for a delivery of an event workqueue reads whose body is not
// JSON or that has no delivery id, and a nil Delivery for every other
// verified delivery it does not use: an event it does not read (a wiki
// page, a release, a GitLab work item under Issue Hook), or one that names
// nothing it could act on. Those must be acknowledged: GitLab disables a
// hook after four failed deliveries in a row, and then sends nothing at
// all, merges and pipelines included. A merge request from a fork gives a
// Delivery with its Work only: a fork's branch can carry the name of one
// of ours, and workqueue only opens merge requests within a project, so it
// must never resolve to an item; it is still work in the project's
// inventory.
func (r *Registry) ParseWebhook(kind, secret string, h http.Header, body []byte) (*Delivery, error) {
	if secret == "" {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "no webhook secret is configured for this forge")
	}
	p, ok := r.Lookup(kind)
	if !ok {
		return nil, wq.Errorf(wq.EINVALID, "unknown forge kind %q", kind)
	}
	d, err := p.ParseWebhook(secret, h, body)
	if errors.Is(err, ErrNotUsed) {
		return nil, nil
	}
	if err != nil || d == nil {
		return nil, err
	}
	if d.Project == "" || (d.Number <= 0 && d.PipelineID <= 0 && d.SourceBranch == "" && d.HeadSHA == "" && d.Work == nil && d.Push == nil) ||
		d.Number < 0 || d.PipelineID < 0 {
		return nil, nil // names no project, or nothing in it: nothing to act on
	}
	if slices.Contains(p.EventTypes, d.EventType) {
		e, err := p.DecodeEvent(d.EventType, body)
		if err != nil {
			return nil, wq.Errorf(wq.EINVALID, "%s delivery: %v", d.EventType, err)
		}
		e.Type = d.EventType
		d.Event = &e
	}
	return d, nil
}

// VerifyHeader checks a delivery to a forge of the given kind on its
// headers alone, before its body is read (Plugin.VerifyHeader): it
// returns EUNAUTHORIZED when no secret is configured or the kind's check
// refuses them, EINVALID for an unknown kind, and nil when the body must
// be read to decide (ParseWebhook then does). The webhook receiver calls
// it first, so that a sender without the secret of a forge that sends it
// in a header never holds any of the bytes set aside for deliveries.
func (r *Registry) VerifyHeader(kind, secret string, h http.Header) error {
	if secret == "" {
		return wq.Errorf(wq.EUNAUTHORIZED, "no webhook secret is configured for this forge")
	}
	p, ok := r.Lookup(kind)
	if !ok {
		return wq.Errorf(wq.EINVALID, "unknown forge kind %q", kind)
	}
	if p.VerifyHeader == nil {
		return nil
	}
	return p.VerifyHeader(secret, h)
}

// VerifyHMAC reports whether signature (hex, either case, surrounding
// space ignored) is the HMAC-SHA256 of body under secret, compared in
// constant time: how Gitea signs a delivery, and Sentry too.
func VerifyHMAC(body []byte, signature, secret string) bool {
	got, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got)
}

// Unmarshal reads a delivery's body into v, for the kinds' webhook
// readers. A body that is not JSON is EINVALID, the forge's request is
// broken; a member of another type than v's is a payload workqueue does
// not know, acknowledged and not used (ErrNotUsed), never a reason for the
// forge to count a failure.
func Unmarshal(body []byte, v any) error {
	if !json.Valid(body) {
		return wq.Errorf(wq.EINVALID, "body: not JSON")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return ErrNotUsed
	}
	return nil
}

// ErrNotUsed is a body Unmarshal could not read into the event's shape;
// ParseWebhook answers it as an event not used.
var ErrNotUsed = errors.New("a payload of another shape")

// Label is a label in a forge's payload: Gitea names it, GitLab titles
// it.
type Label struct {
	Name  string `json:"name"`
	Title string `json:"title"`
}

// LabelNames returns the labels' names.
func LabelNames(ls []Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, cmp.Or(l.Name, l.Title))
	}
	return out
}

// PayloadTime reads a time as the forges write them in payloads: RFC
// 3339, or GitLab's older "2006-01-02 15:04:05 UTC"; zero when it does
// not read.
func PayloadTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// EventPush is the event type of a push to a branch, on every kind: it
// reaches the inventory (Delivery.Push) and resolves to no item.
const EventPush = "push"

// PushDelivery is the delivery of a push of ref from before to after on
// project, as every kind reads one; nil (not used) for a tag or another
// ref, and for a payload that names no move.
func PushDelivery(project, ref, before, after string) *Delivery {
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || branch == "" || project == "" || before == "" || after == "" {
		return nil
	}
	return &Delivery{EventType: EventPush, Project: project, Push: &BranchPush{Branch: branch, Before: before, After: after}}
}

// SameHookTarget reports whether a project hook's URL is the service's
// own: want itself, or want's path (/webhooks/<forge>) on another host,
// which a hook check repairs back to want.
func SameHookTarget(got, want string) bool {
	if got == want {
		return true
	}
	g, err1 := url.Parse(got)
	w, err2 := url.Parse(want)
	return err1 == nil && err2 == nil && strings.Contains(w.Path, "/webhooks/") && strings.TrimRight(g.Path, "/") == strings.TrimRight(w.Path, "/")
}
