package cptype

import "time"

// Allocation is the allocator's answer.
type Allocation struct {
	Outcome    Outcome         `json:"outcome"`
	Work       *Work           `json:"work,omitempty"`
	Lease      *LeaseRef       `json:"lease,omitempty"`
	Assignment *AssignmentRef  `json:"assignment,omitempty"`
	Candidates []CandidateSkip `json:"candidates"`
}

// LeaseRef names the lease an allocation took.
type LeaseRef struct {
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AssignmentRef is what the session was assigned.
type AssignmentRef struct {
	ID              string   `json:"id"`
	AllowedActions  []Action `json:"allowed_actions"`
	ExpectedHeadSHA string   `json:"expected_head_sha,omitempty"`
}

// CandidateSkip is a candidate passed over and why (a stable reason:
// terminal, foreign_lease, wrong_role, ...).
type CandidateSkip struct {
	Work   *Work  `json:"work"`
	Reason string `json:"reason"`
}

// Decision is the gate's answer; a refusal (Allowed false, with its
// reason) is an answer, not an error.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	// HeadChecked says whether a head was compared: a head neither the
	// caller nor the inventory knows is "not checked", never a mismatch.
	HeadChecked bool `json:"head_checked"`
}
