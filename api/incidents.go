package api

import "time"

// IncidentKey names one provider issue: a link's unique key. Scope keys
// the provider did not give are "".
type IncidentKey struct {
	Provider     string `json:"provider"`
	Organization string `json:"organization"`
	Project      string `json:"project"`
	Environment  string `json:"environment"`
	// Fingerprint is the provider's issue (group) id.
	Fingerprint string `json:"fingerprint"`
}

// Observation is what an error tracker says of one of its issues.
type Observation struct {
	IncidentKey
	Title      string    `json:"title,omitempty"`
	Culprit    string    `json:"culprit,omitempty"`
	Level      string    `json:"level,omitempty"`
	Status     string    `json:"status,omitempty"` // the provider's: unresolved, resolved, ignored…
	EventCount int64     `json:"event_count,omitempty"`
	Permalink  string    `json:"permalink,omitempty"`
	FirstSeen  time.Time `json:"first_seen,omitzero"`
	LastSeen   time.Time `json:"last_seen,omitzero"`
	// LinkedPRs are pull requests of the forge repository said to
	// address the issue.
	LinkedPRs []int64 `json:"linked_prs,omitempty"`
}

// IncidentReconcileRequest is POST /api/v1/incidents/reconcile: an
// observation, dry run unless Apply.
type IncidentReconcileRequest struct {
	Observation Observation `json:"observation"`
	Apply       bool        `json:"apply"`
}

// IncidentOutcome says what a reconcile did or, in a dry run, would do:
// would_create, would_update, created, linked, pending or skipped.
type IncidentOutcome string

// IncidentResult is a reconcile's answer.
type IncidentResult struct {
	Outcome IncidentOutcome `json:"outcome"`
	Forge   string          `json:"forge"`
	Repo    string          `json:"repo"`
	// Issue is the issue filed (created) or that would be (would_create).
	Issue *IssuePlan `json:"issue,omitempty"`
	// Link is the link as it stands after the call (as read, in a dry
	// run); absent when none exists.
	Link   *IncidentLink `json:"link,omitempty"`
	Reason string        `json:"reason,omitempty"`
}

// IssuePlan is the forge issue filed (or that would be) for an
// observation.
type IssuePlan struct {
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Labels []string `json:"labels,omitempty"`
}

// IncidentLink ties a provider issue to the forge issue filed for it.
type IncidentLink struct {
	ID string `json:"id"`
	IncidentKey
	Forge       string `json:"forge"`
	Repo        string `json:"repo"`
	IssueNumber int64  `json:"issue_number,omitempty"` // 0 while creating
	IssueURL    string `json:"issue_url,omitempty"`
	// The observation fields, as merged from every observation.
	Status     string    `json:"status,omitempty"`
	EventCount int64     `json:"event_count"`
	Permalink  string    `json:"permalink,omitempty"`
	FirstSeen  time.Time `json:"first_seen,omitzero"`
	LastSeen   time.Time `json:"last_seen,omitzero"`
	LinkedPRs  []int64   `json:"linked_prs,omitempty"`
	State      string    `json:"state"` // creating or linked
	ClaimedAt  time.Time `json:"claimed_at,omitzero"`
	Revision   int64     `json:"revision"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// IncidentDelivery is the answer to a provider's webhook delivery: what
// became of each observation it carried, or why it was ignored.
type IncidentDelivery struct {
	Ignored string            `json:"ignored"`
	Results []*IncidentResult `json:"results"`
}
