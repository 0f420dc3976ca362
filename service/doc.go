// Package service holds the services between the API and the store
// (DESIGN section 3). Each turns an authenticated caller's request, or a
// forge's delivery, into store writes, wakes the engine and audits:
//
//   - Items (items.go) submits, gets, lists, retries and cancels items and
//     renders the API's view of each; ResolveID (shortid.go) reads an item
//     id given in full or as a short prefix, as git reads a commit's.
//   - Webhooks (webhooks.go) has the forge's kind verify and read a
//     delivery, hands an issue's or pull request's new state to the
//     control plane's work inventory, and stores the event for the active
//     item it concerns.
//
// It names no item type: each type registers its face (wq.ItemAPI)
// beside its engine registration, and the service routes by item_type;
// a type that takes forge events says which item an event concerns
// (wq.EventResolver).
package service
