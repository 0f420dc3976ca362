package workqueue

import "time"

// Lease is a claim on one item. Every write made under it is fenced by
// Token: the store refuses it with ErrLeaseLost once the token changed.
type Lease struct {
	ItemID ItemID
	Token  string
	Owner  string
	Until  time.Time
}

// Claim is an item leased by Store.ClaimItems: the lease that fences the
// worker's writes, and the item with its dimensions as loaded by the claim.
type Claim struct {
	Lease Lease
	Item  *Item
	// NoEvents says that no event was pending for the item when it was
	// claimed, so the loop need not look before its first decision (an
	// event inserted since bumps the revision, which the exit decision
	// checks). False when the store does not say.
	NoEvents bool
}
