// Package metrics is workqueue's Prometheus instrumentation (issue 15):
// one registry of its own (never the global default) holding every
// collector, typed methods the rest of the code calls, a RoundTripper for
// the forge adapters' HTTP clients and scrape-time counts read from the
// stores. No other package imports Prometheus.
//
// Every method is safe on a nil *Metrics, so a component built without
// metrics needs no checks. Labels are low in cardinality by construction:
// item types, actions, dimensions, configured forge names, outcome and
// reason words, and forge API operations with every name and number
// elided (Operation). Never an item id or a project path.
package metrics
