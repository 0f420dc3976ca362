package api

import "time"

// FreezeRequest is the optional body of POST
// /api/v1/identities/{identity}/freeze: why the admin froze it.
type FreezeRequest struct {
	Reason string `json:"reason,omitempty"`
}

// IdentityFreeze is an admin's freeze of an identity.
type IdentityFreeze struct {
	Identity string    `json:"identity"`
	By       string    `json:"by"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// IdentityState answers a freeze or an unfreeze: whether the identity is
// frozen now, and the freeze when it is. LeasesEnded counts the
// control-plane leases the freeze ended.
type IdentityState struct {
	Identity    string          `json:"identity"`
	Frozen      bool            `json:"frozen"`
	Freeze      *IdentityFreeze `json:"freeze,omitempty"`
	LeasesEnded int             `json:"leases_ended"`
}

// FrozenIdentities answers GET /api/v1/identities/frozen.
type FrozenIdentities struct {
	Identities []IdentityFreeze `json:"identities"`
}
