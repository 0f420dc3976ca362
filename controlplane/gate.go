package controlplane

import (
	"slices"
	"time"
)

// Gate refusal reasons. They are stable: agents branch on them.
const (
	GateNoAssignment     = "no_assignment"      // the assignment (or its session, lease or work) does not exist
	GateLeaseExpired     = "lease_expired"      // the assignment's lease is no longer live
	GateNotOwner         = "not_owner"          // the lease is another session's
	GateActionNotAllowed = "action_not_allowed" // the assignment does not allow this action
	GateWorkTerminal     = "work_terminal"      // the work was merged or closed
	GateHeadMoved        = "head_moved"         // the pull request's head is not the one the assignment pinned
)

// GateReasons are every refusal reason of the gate: a closed set, which
// the metrics report from the first scrape.
var GateReasons = []string{GateNoAssignment, GateLeaseExpired, GateNotOwner, GateActionNotAllowed, GateWorkTerminal, GateHeadMoved}

// GateInput is everything the gate decides on. Nil pointers are rows that
// do not exist.
type GateInput struct {
	SessionID  string
	Session    *Session
	Assignment *Assignment
	Lease      *Lease
	Work       *Work
	Action     Action
	// LiveHead is the pull request head seen now; "" when nobody looked,
	// and the inventory's head counts instead. LiveFromForge says the
	// service read it from the forge, and it alone counts; otherwise it
	// is the caller's claim, checked beside the inventory's head.
	LiveHead      string
	LiveFromForge bool
	Now           time.Time
}

// Check is the mutation gate (#613): a mutation passes only under a live
// lease the session holds, for an action its assignment allows, on work
// that is still open, at the head the assignment pinned (or the service
// pushed for the owner since, on its lease). Every doubt fails closed,
// except an unknown live head, which is not checked. It is pure.
func Check(in GateInput) Decision {
	refuse := func(reason string) Decision { return Decision{Reason: reason} }
	switch {
	case in.Assignment == nil || in.Session == nil || in.Lease == nil || in.Work == nil ||
		in.Assignment.SessionID == "" || in.Lease.ID != in.Assignment.LeaseID:
		return refuse(GateNoAssignment)
	case in.Lease.SessionID != in.SessionID || in.Session.ID != in.SessionID || !in.Session.EndedAt.IsZero():
		// The lease is the authority on who holds the work: an adopted
		// lease moved to the adopting session, with the assignment.
		return refuse(GateNotOwner)
	case !in.Lease.Live(in.Now):
		return refuse(GateLeaseExpired)
	case !slices.Contains(in.Assignment.AllowedActions, in.Action):
		return refuse(GateActionNotAllowed)
	case in.Work.State.Terminal():
		return refuse(GateWorkTerminal)
	}
	expected := PinnedHead(in.Assignment, in.Lease) // the service's own push for the owner, else the head at assignment
	heads := []string{in.LiveHead}
	if !in.LiveFromForge || in.LiveHead == "" {
		heads = append(heads, in.Work.HeadSHA) // a claim never outweighs the service's own record
	}
	if in.Work.Kind != KindPR || expected == "" {
		return Decision{Allowed: true}
	}
	checked := false
	for _, h := range heads {
		if h == "" {
			continue
		}
		if h != expected {
			return Decision{Reason: GateHeadMoved, HeadChecked: true}
		}
		checked = true
	}
	return Decision{Allowed: true, HeadChecked: checked}
}
