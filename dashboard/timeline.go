package dashboard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
)

// An item's page tells its audit trail as a timeline a person reads top
// to bottom (issue 55): each entry one sentence of what happened, who did
// it, and what it changed, old value to new, instead of the entries'
// JSON. The words come from the entry's type and its state members; an
// entry of a type this file does not know still shows, as its type and
// its changes, so that nothing audited is hidden.

// moment is one entry of an item's timeline.
type moment struct {
	Time    time.Time
	Actor   string
	What    string   // one sentence
	Changes []change // what it changed, old to new
	Notes   []string // what else it carries that a person may need: an error, a delivery
	Kind    string   // a CSS class: ok, bad, event, person, step
}

// change is one member an entry changed.
type change struct{ Name, From, To string }

// timeline turns an item's audit trail, oldest first, into moments.
func timeline(trail []wq.AuditEntry) []moment {
	out := make([]moment, 0, len(trail))
	for _, e := range trail {
		out = append(out, describe(e))
	}
	return out
}

// describe says one audit entry in words.
func describe(e wq.AuditEntry) moment {
	m := moment{Time: e.Time, Actor: e.Actor, Kind: "step"}
	str := func(src map[string]any, k string) string { return valueWords(src[k]) }
	switch e.EventType {
	case wq.AuditItemCreated:
		m.What, m.Kind = "Submitted", "person"
	case wq.AuditItemUpdated:
		m.What, m.Kind = "Submitted again with changes", "person"
	case wq.AuditItemUnchanged:
		m.What, m.Kind = "Submitted again, unchanged", "person"
	case wq.AuditItemRetried:
		m.What, m.Kind = "Retried", "person"
	case wq.AuditItemCancelled:
		m.What, m.Kind = "Cancelled", "person"
	case wq.AuditItemCancelRequested:
		m.What, m.Kind = "Asked to cancel: the item winds itself down", "person"
	case wq.AuditPhaseChange:
		m.What = "Became " + str(e.NewState, "phase")
		if r := str(e.NewState, "reason"); r != "" {
			m.What += " (" + r + ")"
		}
		switch str(e.NewState, "phase") {
		case string(wq.PhaseCompleted):
			m.Kind = "ok"
		case string(wq.PhaseFailed):
			m.Kind = "bad"
		}
	case wq.AuditDimensionChange:
		dim := str(e.NewState, "dimension")
		if v := str(e.NewState, "variant"); v != "" {
			dim += " (" + v + ")"
		}
		m.What = stepWords(dim) + ": " + statusWords(str(e.NewState, "status"), e.NewState["pending_until"])
		if e.NewState["status"] == wq.StatusFalse {
			m.Kind = "ok"
		}
	case wq.AuditAction:
		m.What = "Ran " + str(e.Trigger, "action")
	case wq.AuditActionFailed:
		m.What, m.Kind = "Action "+str(e.Trigger, "action")+" failed", "bad"
		if str(e.NewState, "phase") == string(wq.PhaseFailed) {
			m.What += ": the item failed"
		} else if ra := str(e.NewState, "retry_after"); ra != "" {
			m.What += ": it is tried again after " + ra
		}
		if msg := str(e.Trigger, "error"); msg != "" {
			m.Notes = append(m.Notes, msg)
		}
	case wq.AuditWriteRefused:
		m.What, m.Kind = "A write was refused: another worker holds the item ("+str(e.Trigger, "operation")+")", "bad"
	case wq.AuditWriteSuperseded:
		m.What = "A write of " + str(e.Trigger, "action") + " was dropped: newer work arrived during it, so it is decided again"
	case wq.AuditItemHeld:
		m.What, m.Kind = "Held: its creator is frozen, so nothing is written until they are unfrozen", "bad"
	case wq.AuditWebhookStored:
		m.What, m.Kind = "The forge reported a "+str(e.Trigger, "event_type")+" event", "event"
	case wq.AuditEventApplied:
		m.What, m.Kind = "Applied the forge's "+str(e.Metadata, "event_type")+" event", "event"
	case wq.AuditEventIgnored:
		why := str(e.Trigger, "reason")
		if w := str(e.Metadata, "why"); w != "" {
			why = w
		}
		m.What, m.Kind = "Ignored a forge event", "event"
		if why != "" {
			m.What += ": " + strings.ReplaceAll(why, "_", " ")
		}
	default:
		m.What = strings.ReplaceAll(e.EventType, "_", " ")
	}
	switch e.EventType {
	case wq.AuditItemCreated:
		// A new item's state is the submission's: nothing changed.
	case wq.AuditDimensionChange, wq.AuditPhaseChange:
	default:
		m.Changes = changes(e.OldState, e.NewState)
	}
	if from := str(e.OldState, "status"); from != "" && from != str(e.NewState, "status") && e.EventType == wq.AuditDimensionChange {
		// A step written again with its status (scheduled anew, say)
		// says so in its sentence: only a new status is a change.
		m.Changes = []change{{Name: "status", From: statusWords(from, nil), To: statusWords(str(e.NewState, "status"), e.NewState["pending_until"])}}
	} else if e.EventType == wq.AuditPhaseChange {
		m.Changes = []change{{Name: "phase", From: str(e.OldState, "phase"), To: str(e.NewState, "phase")}}
	}
	if reason := str(e.Metadata, "reason"); reason != "" {
		m.Notes = append(m.Notes, reason)
	}
	return m
}

// changes lists the members whose value differs between old and new, in
// name order; a member only in new changed from nothing.
func changes(old, new map[string]any) []change {
	var out []change
	for k, v := range new {
		from, to := valueWords(old[k]), valueWords(v)
		if from != to {
			out = append(out, change{Name: strings.ReplaceAll(k, "_", " "), From: from, To: to})
		}
	}
	slices.SortFunc(out, func(a, b change) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// valueWords is a state member as text: strings as they are, times as
// UTC, anything else as its JSON.
func valueWords(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return absolute(t)
		}
		return x
	case time.Time:
		return absolute(x)
	case *time.Time:
		if x == nil {
			return ""
		}
		return absolute(*x)
	case fmt.Stringer:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.Trim(string(b), `"`)
}

// stepWords names a dimension as a step: needs_ci_retry is "ci retry".
func stepWords(dimension string) string {
	return strings.ReplaceAll(strings.TrimPrefix(dimension, "needs_"), "_", " ")
}

// statusWords says a dimension's status: true is still to do, false is
// done (DDR-48), with when it is scheduled.
func statusWords(status string, pendingUntil any) string {
	switch status {
	case wq.StatusFalse:
		return "done"
	case wq.StatusTrue:
		if at := valueWords(pendingUntil); at != "" {
			return "to do, not before " + at
		}
		return "to do"
	}
	return status
}

// waiting says, in words, what an item waits for: nothing once it
// completed or was cancelled, a person once it failed, else its steps
// still to do, when each is next looked at, and what the type's detail
// of a step says blocks it (a "blocker" member).
func waiting(it *api.Item, now time.Time) []string {
	switch it.Phase {
	case wq.PhaseCompleted:
		return []string{"Nothing: it completed" + reasonWords(it.Reason) + "."}
	case wq.PhaseCancelled:
		return []string{"Nothing: it was cancelled" + reasonWords(it.Reason) + ". Retry it to start it again."}
	case wq.PhaseFailed:
		return []string{"A person: it failed and does nothing more until someone with the retry permission retries it (the error is below)."}
	}
	var out []string
	out = append(out, it.Warnings...)
	if it.RetryAfter != nil && it.RetryAfter.After(now) {
		out = append(out, fmt.Sprintf("Its next try after a failed action, %s (attempt %d so far).", relative(*it.RetryAfter, now), it.Attempts))
	}
	for _, d := range it.Dimensions {
		if d.Status != wq.StatusTrue {
			continue
		}
		s := "The step " + stepWords(d.Dimension)
		if d.Variant != "" {
			s += " (" + d.Variant + ")"
		}
		if d.PendingUntil != nil && d.PendingUntil.After(now) {
			s += ", next looked at " + relative(*d.PendingUntil, now)
		} else {
			s += ", due now"
		}
		var detail struct {
			Blocker string `json:"blocker"`
		}
		if json.Unmarshal(d.Detail, &detail) == nil && detail.Blocker != "" {
			s += ": blocked by " + strings.ReplaceAll(detail.Blocker, "_", " ")
		}
		out = append(out, s+".")
	}
	if len(out) == 0 {
		out = append(out, "Its first steps: none has run yet (a step without a row is still to do).")
	}
	return out
}

func reasonWords(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + strings.ReplaceAll(reason, "_", " ") + ")"
}
