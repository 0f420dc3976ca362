package workqueue

import (
	"context"
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

// Audit event types written by the generic layer.
const (
	AuditItemCreated     = "item_created"
	AuditPhaseChange     = "phase_change"
	AuditDimensionChange = "dimension_change"
	AuditAction          = "action"
	AuditActionFailed    = "action_failed"
	AuditWriteRefused    = "write_refused"
	AuditWriteSuperseded = "write_superseded" // an executor's write dropped: newer work arrived during the action
	AuditEventApplied    = "event_applied"
	AuditEventIgnored    = "event_ignored"
)

// AuditSink receives audit entries. Callers never let a sink's error or
// panic break processing (see audit.Safe); a sink may still return an error
// so that it can be logged.
type AuditSink interface {
	WriteAudit(ctx context.Context, e AuditEntry) error
}
