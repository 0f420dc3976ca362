package cptype

// The enumerations of the control plane. Their values are stable: they
// are stored and they are the API's words.
type (
	// Role is what a session does: author, reviewer or merger.
	Role string
	// Kind is what a work item is on the forge: issue or pr. Only issues
	// and pull requests are assignable work (hard rule 1): monitoring
	// incidents become issues first.
	Kind string
	// State is a work item's state on the forge: open, merged or closed.
	State string
	// ReviewState is a pull request's review verdict.
	ReviewState string
	// LeaseState is where a lease is in its lifecycle. Only an active
	// lease whose expires_at is in the future holds its work; every other
	// state is history.
	LeaseState string
	// Action is a mutation an assignment may allow.
	Action string
	// SessionStatus is how a session stands at a time.
	SessionStatus string
	// Outcome is what an allocation answered.
	Outcome string
)

// The values of the enumerations.
const (
	RoleAuthor   Role = "author"   // works issues into pull requests, answers requested changes
	RoleReviewer Role = "reviewer" // reviews pull requests others wrote
	RoleMerger   Role = "merger"   // merges approved, mergeable pull requests

	KindIssue Kind = "issue"
	KindPR    Kind = "pr"

	StateOpen   State = "open"
	StateMerged State = "merged"
	StateClosed State = "closed"

	ReviewNone             ReviewState = "none"
	ReviewApproved         ReviewState = "approved"
	ReviewChangesRequested ReviewState = "changes_requested"

	LeaseActive    LeaseState = "active"
	LeaseReleased  LeaseState = "released"
	LeaseExpired   LeaseState = "expired"
	LeaseAbandoned LeaseState = "abandoned"
	LeaseReclaimed LeaseState = "reclaimed"

	ActComment Action = "comment"
	ActPush    Action = "push"
	ActOpenPR  Action = "open_pr"
	ActReview  Action = "review"
	ActMerge   Action = "merge"
	ActClose   Action = "close"

	SessionActive SessionStatus = "active"
	SessionStale  SessionStatus = "stale" // no heartbeat for the session TTL
	SessionEnded  SessionStatus = "ended"

	OutcomePreview    Outcome = "preview"      // a dry run: this would be assigned
	OutcomeAssigned   Outcome = "assigned"     // assigned under a new lease
	OutcomeWait       Outcome = "wait"         // work for this session exists, but another session holds it now
	OutcomeNoSafeWork Outcome = "no_safe_work" // nothing this session may take
)

// LeaseStates and Outcomes are every lease state and allocation outcome:
// closed sets, which the metrics report from the first scrape.
var (
	LeaseStates = []LeaseState{LeaseActive, LeaseReleased, LeaseExpired, LeaseAbandoned, LeaseReclaimed}
	Outcomes    = []Outcome{OutcomePreview, OutcomeAssigned, OutcomeWait, OutcomeNoSafeWork}
)

// A review's verdicts (ActionRequest.Verdict).
const (
	VerdictApprove        = "approve"
	VerdictRequestChanges = "request_changes"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleAuthor || r == RoleReviewer || r == RoleMerger }

// Valid reports whether a is a known action.
func (a Action) Valid() bool {
	switch a {
	case ActComment, ActPush, ActOpenPR, ActReview, ActMerge, ActClose:
		return true
	}
	return false
}

// Valid reports whether k is an assignable kind.
func (k Kind) Valid() bool { return k == KindIssue || k == KindPR }

// Terminal reports whether nothing more may be done to work in s.
func (s State) Terminal() bool { return s == StateMerged || s == StateClosed }
