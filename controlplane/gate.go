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

// GateInput is everything the gate decides on. Nil pointers are rows that
// do not exist.
type GateInput struct {
	SessionID  string
	Session    *Session
	Assignment *Assignment
	Lease      *Lease
	Work       *Work
	Action     Action
	// LiveHead is the pull request head the caller sees now; "" when it
	// did not look, and the inventory's head counts instead.
	LiveHead string
	Now      time.Time
}

// Decision is the gate's answer.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	// HeadChecked says whether a head was compared: a head neither the
	// caller nor the inventory knows is "not checked", never a mismatch.
	HeadChecked bool `json:"head_checked"`
}

// Check is the mutation gate (#613): a mutation passes only under a live
// lease the session holds, for an action its assignment allows, on work
// that is still open, at the head the assignment pinned (or the owner
// declared since, on its lease). Every doubt fails closed, except an
// unknown live head, which is not checked. It is pure.
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
	expected := in.Assignment.ExpectedHeadSHA
	if in.Lease.HeadSHA != "" {
		expected = in.Lease.HeadSHA // the owner's own push, declared on its lease
	}
	live := in.LiveHead
	if live == "" {
		live = in.Work.HeadSHA
	}
	if in.Work.Kind != KindPR || expected == "" || live == "" {
		return Decision{Allowed: true}
	}
	if live != expected {
		return Decision{Reason: GateHeadMoved, HeadChecked: true}
	}
	return Decision{Allowed: true, HeadChecked: true}
}
