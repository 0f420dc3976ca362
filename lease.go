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
}
