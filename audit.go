package workqueue

import (
	"context"
	"fmt"
	"time"
)

// AuditEntry records one decision or transition, following the field
// conventions of DDR-28:
//   - Actor: the caller identity for API and auth events, the worker name
//     for worker events, "system" for decider or system transitions.
//   - OldState / NewState: the state before and after, with the same keys
//     (phase, action, ...); OldState is omitted on creation.
//   - Trigger: what caused it; always has "source" ("api", "worker",
//     "decider", "sweep", "event"), plus "action", "reason" or "error".
//   - Metadata: context orthogonal to the transition.
//
// An entry never holds a token, a secret, or a raw request body.
type AuditEntry struct {
	Time      time.Time      `json:"time"`
	EventType string         `json:"event_type"`
	ItemID    string         `json:"item_id,omitempty"`
	ItemType  string         `json:"item_type,omitempty"`
	Actor     string         `json:"actor"`
	OldState  map[string]any `json:"old_state,omitempty"`
	NewState  map[string]any `json:"new_state,omitempty"`
	Trigger   map[string]any `json:"trigger,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Audit event types, all in one place: the engine's, the API's, the
// webhook receiver's and the authorisation decisions.
const (
	// The engine.
	AuditItemCreated     = "item_created" // also the API's: a submission made a new item
	AuditPhaseChange     = "phase_change"
	AuditDimensionChange = "dimension_change"
	AuditAction          = "action"
	AuditActionFailed    = "action_failed"
	AuditWriteRefused    = "write_refused"
	AuditWriteSuperseded = "write_superseded" // an executor's write dropped: newer work arrived during the action
	AuditEventApplied    = "event_applied"
	AuditEventIgnored    = "event_ignored"
	AuditItemHeld        = "item_held" // the engine's hold stopped an action (its creator is frozen): the item waits

	// The API (a submission's outcome is "item_" + its wq.SubmitResult:
	// item_created, item_unchanged, item_updated, item_retried).
	AuditItemUnchanged       = "item_unchanged"
	AuditItemUpdated         = "item_updated"
	AuditItemRetried         = "item_retried"
	AuditItemCancelled       = "item_cancelled"
	AuditItemCancelRequested = "item_cancel_requested" // the type winds the item down itself (ItemType.CancelDimension)
	AuditAuthAllowed         = "auth_allowed"
	AuditAuthRefused         = "auth_refused"
	AuditSubmitRefused       = "submit_refused" // a submission refused for whose item it would change (owner_conflict)

	// The webhook receiver.
	AuditWebhookStored = "webhook_stored"

	// Identities (package identity): an admin's freezes, and writes past
	// a budget.
	AuditIdentityFrozen   = "identity_frozen"
	AuditIdentityUnfrozen = "identity_unfrozen"
	AuditBudgetExceeded   = "budget_exceeded"

	// The control plane: a lease and its assignment made, ended
	// (released, expired, abandoned, its session ended, its head moved),
	// adopted by another session, or reclaimed after it expired.
	AuditLeaseAssigned  = "lease_assigned"
	AuditLeaseEnded     = "lease_ended"
	AuditLeaseAdopted   = "lease_adopted"
	AuditLeaseReclaimed = "lease_reclaimed"
)

// AuditKind says what an audit event type records, and so which of an
// entry's states it carries (DDR-28): a change of state carries the old
// and the new; a creation the new only (there was nothing before); a
// record of something that changed no state (a decision, a refusal, an
// action taken whose effects are entries of their own) carries neither
// necessarily.
type AuditKind string

// Audit kinds.
const (
	AuditChange   AuditKind = "change"
	AuditCreation AuditKind = "creation"
	AuditRecord   AuditKind = "record"
)

// AuditKinds is every audit event type the code emits, with its kind: a
// test enumerates the event types the code can emit and holds each to
// this table, so that a new one must say what it records.
var AuditKinds = map[string]AuditKind{
	AuditItemCreated:         AuditCreation,
	AuditPhaseChange:         AuditChange,
	AuditDimensionChange:     AuditChange, // a row's first write is its creation: metadata first_write, no old state
	AuditAction:              AuditRecord, // what an action did is in the phase and dimension changes it made
	AuditActionFailed:        AuditChange,
	AuditWriteRefused:        AuditRecord,
	AuditWriteSuperseded:     AuditRecord,
	AuditEventApplied:        AuditRecord, // its phase and dimension changes are entries of their own
	AuditEventIgnored:        AuditRecord,
	AuditItemHeld:            AuditChange,
	AuditItemUnchanged:       AuditRecord,
	AuditItemUpdated:         AuditChange,
	AuditItemRetried:         AuditChange,
	AuditItemCancelled:       AuditChange,
	AuditItemCancelRequested: AuditChange,
	AuditAuthAllowed:         AuditRecord,
	AuditAuthRefused:         AuditRecord,
	AuditSubmitRefused:       AuditRecord,
	AuditWebhookStored:       AuditRecord,
	AuditIdentityFrozen:      AuditChange,
	AuditIdentityUnfrozen:    AuditChange,
	AuditBudgetExceeded:      AuditRecord,
	AuditLeaseAssigned:       AuditCreation,
	AuditLeaseEnded:          AuditChange,
	AuditLeaseAdopted:        AuditChange,
	AuditLeaseReclaimed:      AuditChange, // the expired lease as it was, and the new one
}

// Check says whether e carries the states its event type's kind asks
// for (AuditKinds): a change both, a creation the new only; a dimension
// change whose row had no state before is the row's creation. An unknown
// event type is an error too.
func (e AuditEntry) Check() error {
	kind, ok := AuditKinds[e.EventType]
	if !ok {
		return fmt.Errorf("audit event type %q is not in AuditKinds", e.EventType)
	}
	switch {
	case kind == AuditChange && e.NewState == nil:
		return fmt.Errorf("%s: a change without its new state", e.EventType)
	case kind == AuditChange && e.OldState == nil && !(e.EventType == AuditDimensionChange && e.Metadata["first_write"] == true):
		return fmt.Errorf("%s: a change without its old state", e.EventType)
	case kind == AuditCreation && (e.NewState == nil || e.OldState != nil):
		return fmt.Errorf("%s: a creation carries its new state only", e.EventType)
	}
	return nil
}

// AuditSubmitted is the audit event type of a submission's outcome.
func AuditSubmitted(r SubmitResult) string { return "item_" + string(r) }

// AuditSink receives audit entries. Callers never let a sink's error or
// panic break processing (see audit.Safe); a sink may still return an error
// so that it can be logged. An entry's maps are read-only once written:
// the engine shares one between the entries of an action, so a sink that
// keeps or changes an entry copies its maps first.
type AuditSink interface {
	WriteAudit(ctx context.Context, e AuditEntry) error
}
