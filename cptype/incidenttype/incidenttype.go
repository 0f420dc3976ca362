// Package incidenttype holds the incident bridge's value types once: the
// key of a provider issue, the link that ties it to the forge issue filed
// for it, and a reconcile's result, with their JSON names. The bridge
// (controlplane/incident) keeps and answers them, and the wire (package
// api, and through it the server, the Go client and the MCP tools)
// carries them as they are, so that a field is one declaration (issue
// 52, point 5).
//
// It is a leaf, as cptype is for the rest of the control plane: it
// imports nothing of workqueue, and scripts/check holds that. An
// observation is not here: the bridge's own type carries its validation
// and redaction, and the wire's is mapped to it.
package incidenttype

import (
	"fmt"
	"time"
)

// Key names one provider issue: a link's unique key. Scope keys the
// provider did not give are "" (hard rule 6).
type Key struct {
	Provider     string `json:"provider"`
	Organization string `json:"organization"`
	Project      string `json:"project"`
	Environment  string `json:"environment"`
	// Fingerprint is the provider's issue (group) id.
	Fingerprint string `json:"fingerprint"`
}

// String is k as logs and errors name it: provider:org/project/env#fingerprint.
func (k Key) String() string {
	return fmt.Sprintf("%s:%s/%s/%s#%s", k.Provider, k.Organization, k.Project, k.Environment, k.Fingerprint)
}

// LinkState is where a link stands.
type LinkState string

// Link states.
const (
	// LinkCreating: a bridge claimed the link and is filing its forge
	// issue; the link has no issue yet.
	LinkCreating LinkState = "creating"
	// LinkLinked: the link names its forge issue.
	LinkLinked LinkState = "linked"
)

// Link is the row that ties a provider issue to the forge issue filed
// for it (seed 003's incident_links): the provider issue's key, the forge
// issue, and the latest of what the provider observed.
type Link struct {
	ID string `json:"id"`
	Key
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
	State      LinkState `json:"state"`
	// ClaimedAt is when the claim of a creating link was made or taken
	// over; ClaimToken names the bridge call holding it (never on the
	// wire). A bridge finishes only a claim whose token is still its own.
	ClaimedAt  time.Time `json:"claimed_at,omitzero"`
	ClaimToken string    `json:"-"`
	// Revision counts the writes of the row: a conditional update
	// compares it.
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Outcome says what a reconcile did or, in a dry run, would do.
type Outcome string

// Outcomes of a reconcile.
const (
	// Dry run: no link exists (or its claim is stale): the issue that
	// would be filed is in Result.Issue.
	OutcomeWouldCreate Outcome = "would_create"
	// Dry run: the link exists; it would take the observation in.
	OutcomeWouldUpdate Outcome = "would_update"
	// Applied: this call filed the forge issue and linked it.
	OutcomeCreated Outcome = "created"
	// Applied: the link existed; the observation was taken in.
	OutcomeLinked Outcome = "linked"
	// Another call is filing the issue (its claim is fresh): nothing
	// to do now; a later delivery finds the link.
	OutcomePending Outcome = "pending"
	// No link exists and the provider says the issue is resolved or
	// ignored: no issue is filed for it.
	OutcomeSkipped Outcome = "skipped"
)

// Result is a reconcile's answer.
type Result struct {
	Outcome Outcome `json:"outcome"`
	Forge   string  `json:"forge"`
	Repo    string  `json:"repo"`
	// Issue is the issue filed (created) or that would be (would_create).
	Issue *IssuePlan `json:"issue,omitempty"`
	// Link is the link as it stands after the call (as read, in a dry
	// run); absent when none exists.
	Link   *Link  `json:"link,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// IssuePlan is the forge issue filed (or that would be) for an
// observation.
type IssuePlan struct {
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Labels []string `json:"labels,omitempty"`
}
