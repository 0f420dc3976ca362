// Package metrics is workqueue's Prometheus instrumentation (issue 15).
// No other package imports Prometheus.
//
//   - Metrics (metrics.go) is one registry of its own (never the global
//     default) holding every collector, the Handler that serves it, and
//     the typed methods the rest of the code calls: the engine's (it
//     implements engine.Metrics), the webhook receiver's, auth's (JWKS
//     fetches, throttling), the control plane's (allocations, gate
//     refusals) and the audit sinks'.
//   - ForgeTransport (forge.go) is a RoundTripper for the forge adapters'
//     HTTP clients, counting and timing each call by Operation.
//   - WatchItems and WatchControlPlane (store.go) report counts read from
//     the stores at scrape time, at most every 15 seconds.
//
// Every method is safe on a nil *Metrics, so a component built without
// metrics needs no checks. Labels are low in cardinality by construction:
// item types, actions, dimensions, configured forge names, outcome and
// reason words, and forge API operations with every name and number
// elided (Operation). Never an item id or a project path.
package metrics
