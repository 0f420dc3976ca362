// Package workqueue holds the domain of the work queue service: work items,
// their phases and needs_* dimensions, pending events, leases, audit entries,
// the application error type, and the interfaces between the parts (the
// store seam, the forge seam, and the item-type contract: ItemType for the
// engine, ItemAPI for callers).
//
// The root package imports no database driver and no HTTP handler, and
// names no item type. Drivers live in store/sqlite and store/postgres, the
// processing engine in engine, item types in their own packages with their
// own stores. See docs/DESIGN.md.
package workqueue
