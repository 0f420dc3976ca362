package forge

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Op is the kind of operation a forge answered. Most statuses mean the same
// whatever was asked; Op selects the few that do not (see overrides).
type Op int

// Operations with overrides of their own.
const (
	OpAny   Op = iota // every call without an override of its own
	OpMerge           // merging a merge request
	OpTree            // reading a tree (Gitea's git/trees)
)

// Answer is what a forge answered one call.
type Answer struct {
	Status  int         // HTTP status; 0 when no answer came (network, timeout, unreadable body)
	Header  http.Header // the answer's headers; nil when none came
	Message string      // the forge's message, if any
	Err     error       // the underlying error, if any
}

// override is a status that means something else for one operation,
// on one forge or ("") on both.
type override struct {
	forge  string
	op     Op
	status int
	kind   wq.ForgeErrorKind
}

// overrides are the only places where the classification depends on the
// operation or the forge. Everything else follows Kind's base table.
var overrides = []override{
	// Both forges answer 405 to a merge that is not possible now: GitLab
	// when the merge request is not mergeable (closed, draft, CI, checks
	// still running); Gitea while it recomputes mergeability ("Please try
	// again later"), for a draft, or while required checks or approvals are
	// missing. The next reconcile tries again. Elsewhere 405 is a route the
	// forge does not have: permanent.
	{"", OpMerge, http.StatusMethodNotAllowed, wq.ForgeUnprocessable},
	// GitLab before 17.x answered 406 "Branch cannot be merged" when the
	// branch conflicts or needs a rebase; Gitea never answers 406.
	{wq.ForgeGitLab, OpMerge, http.StatusNotAcceptable, wq.ForgeUnprocessable},
	// GitLab 17.x answers 422 "Branch cannot be merged" for the same, and
	// every release when the merge lost a race: not mergeable now. On every
	// other GitLab call 422 is a validation refusal (a merge request into a
	// missing branch: "Source branch \"x\" does not exist"), and Gitea's 422
	// on a merge is a malformed form: both permanent, the base table.
	{wq.ForgeGitLab, OpMerge, http.StatusUnprocessableEntity, wq.ForgeUnprocessable},
	// Gitea answers 400 "sha not found [ref]" for a tree whose ref it
	// cannot resolve (routers/api/v1/repo/tree.go): the ref is missing.
	{wq.ForgeGitea, OpTree, http.StatusBadRequest, wq.ForgeNotFound},
}

// Kind classifies status, as forge (wq.ForgeGitea or wq.ForgeGitLab)
// answered op. Status 0 (no answer) is transient.
//
// The base table, for both forges and every operation: 404 not found; 409
// conflict (already exists, head moved, merge conflict); 429 rate limited;
// 408 and 5xx transient; 0 transient; any other status permanent, since
// the same request gets the same answer (400 and 422 validation, 401, 403,
// Gitea's 423 for an archived repository and 412 for a merge request whose
// branch is gone: a person must act first).
func Kind(forge string, op Op, status int) wq.ForgeErrorKind {
	for _, o := range overrides {
		if o.op == op && o.status == status && (o.forge == "" || o.forge == forge) {
			return o.kind
		}
	}
	switch {
	case status == 0:
		return wq.ForgeTransient
	case status == http.StatusNotFound:
		return wq.ForgeNotFound
	case status == http.StatusConflict:
		return wq.ForgeConflict
	case status == http.StatusTooManyRequests:
		return wq.ForgeRateLimited
	case status >= 500, status == http.StatusRequestTimeout:
		return wq.ForgeTransient
	default:
		return wq.ForgePermanent
	}
}

// Classify turns a failed call into a *wq.ForgeError: what names the call
// ("gitlab: merge g/p!3"). A rate limit or a transient failure carries the
// wait the forge asked for (RetryAfter).
func Classify(forge string, op Op, what string, a Answer) *wq.ForgeError {
	fe := &wq.ForgeError{Kind: Kind(forge, op, a.Status), Op: what, Status: a.Status, Message: a.Message, Err: a.Err}
	if fe.Message == "" && a.Err != nil {
		fe.Message = a.Err.Error()
	}
	if fe.Kind == wq.ForgeRateLimited || fe.Kind == wq.ForgeTransient {
		fe.RetryAfter = RetryAfter(a.Status, a.Header, time.Now())
	}
	return fe
}

// RetryAfter is how long a forge asked to wait, from its answer's headers:
// Retry-After (seconds or an HTTP date) when present. A 429 without it
// (GitLab's rate limiter sends none on some paths) is read from
// RateLimit-Reset (RateLimitReset). Only a 429 reads RateLimit-Reset: on any
// other answer the window says nothing about when the forge is back. Like
// Retry-After, the wait is capped at a day.
func RetryAfter(status int, h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After"); strings.TrimSpace(v) != "" {
		return wq.ParseRetryAfter(v, now)
	}
	if status != http.StatusTooManyRequests {
		return 0
	}
	return RateLimitReset(h, now)
}

// RateLimitReset is the wait until the forge's rate-limit window resets,
// from RateLimit-Reset: the Unix time at which GitLab's window resets, or
// a value too small to be a Unix time taken as seconds from now, as the
// IETF draft of that header has it; 0 without one. Capped at a day.
func RateLimitReset(h http.Header, now time.Time) time.Duration {
	n, err := strconv.ParseInt(strings.TrimSpace(h.Get("RateLimit-Reset")), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	const unixTimeFloor = 1_000_000_000 // 2001: anything smaller is a number of seconds
	if n < unixTimeFloor {
		return wq.ParseRetryAfter(strconv.FormatInt(n, 10), now)
	}
	return min(max(time.Unix(n, 0).Sub(now), 0), 24*time.Hour)
}
