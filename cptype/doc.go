// Package cptype holds the control plane's value types once: the
// enumerations (roles, kinds of work, states, review states, lease
// states, actions, session statuses, allocation outcomes) and the values
// that both the domain (package controlplane) and the wire (package api,
// and through it the server, the Go client and the MCP tools) speak:
// sessions, work, allocations and the gate's decision, gated actions,
// leases and checkpoints (the incident bridge's values are in the leaf
// beside it, cptype/incidenttype). Each field is declared here once, with its
// JSON name, so that a field added to the control plane is one edit and
// reaches the domain, the store and the wire alike (issue 52, point 5).
//
// It is a leaf, as River's rivertype is for its client and drivers: it
// imports nothing of workqueue but the root package, so that the wire
// package and a client built on it link no store, engine, control plane
// service, forge or driver. scripts/check holds that. What a value means
// beyond its fields (validation against the server's bounds, redaction,
// the allocator and the gate) stays in controlplane.
//
// The values' words are stable: they are stored, and they are the API's.
package cptype
