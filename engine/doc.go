// Package engine is the type-agnostic processing engine (DESIGN section 5).
//
//   - Engine (engine.go) holds the registered item types and runs them:
//     claimers lease notified items in batches for a bounded worker pool;
//     items come from Notify, from the store's wakeups where it has them
//     (wq.WakeupListener), and from the sweep (Sweep), which finds due
//     items and, hourly, forgets old webhook deliveries (PruneDeliveries);
//     a backlog larger than a sweep the claimers lease from the store
//     directly where it can (wq.DueClaimer).
//     Stats counts what it did; Stop lets the actions in flight finish.
//   - The per-item loop (process.go) drains an item's events, decides and
//     executes under a fenced, heartbeated lease, and gives its worker
//     back at the item deadline (DDR-44).
//   - The queue (queue.go) hands notified items to the claimers, never one
//     to two workers at once: one added while it is processed goes again
//     after. It also says when a claimer should claim due items from the
//     store instead (a backlog), one claimer at a time.
//   - Metrics (metrics.go) is what the engine reports to; package metrics
//     implements it.
//
// The engine never names an item type; types register a workqueue.ItemType.
package engine
