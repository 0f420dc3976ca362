package api

import (
	"time"

	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
)

// Observation is what an error tracker says of one of its issues. (The
// key it embeds, and a reconcile's result with its link and issue, are
// package incidenttype's, which the bridge shares.)
type Observation struct {
	incidenttype.Key
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

// IncidentDelivery is the answer to a provider's webhook delivery: what
// became of each observation it carried, or why it was ignored.
type IncidentDelivery struct {
	Ignored string                 `json:"ignored"`
	Results []*incidenttype.Result `json:"results"`
}
