// Package workqueue holds the domain of the work queue service: work items,
// their phases and needs_* dimensions, pending events, leases, audit entries,
// the application error type, and the interfaces between the parts (the
// store seam and the item-type contract).
//
// The root package imports no database driver and no HTTP handler. Drivers
// live in store/sqlite and store/postgres, the processing engine in engine,
// item types in their own packages (example, later mr). See docs/DESIGN.md.
package workqueue
