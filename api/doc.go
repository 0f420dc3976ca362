// Package api is the one wire package of workqueue's HTTP API: the
// request and response bodies of every route, as the server (httpapi)
// decodes and writes them, the Go client (client) sends and reads them,
// and the MCP tools (mcpserver) take and answer them.
//
// It holds:
//
//   - items: an item's view (Item, Dimension), a submission's answer
//     (Submitted) and a page of items (ItemPage) (items.go);
//   - the control plane's requests and lists: sessions, the inventory's
//     work, allocations and the gate (controlplane.go), leases and their
//     lifecycle calls (leases.go), and checkpoints with their reconcile
//     (checkpoints.go); the values they carry and answer (a session, a
//     work item, an allocation, a decision, a gated action and its
//     result, a lease, a checkpoint) are package cptype's;
//   - incidents: an observation to reconcile and a provider delivery's
//     answer (incidents.go); the result, link and issue a reconcile makes
//     are package incidenttype's (cptype/incidenttype);
//   - who the caller is (Me, me.go);
//   - errors: Problem, the RFC 9457 document of every error answer, and
//     StatusOf, the one table from application error codes to HTTP
//     statuses that the API and the dashboard answer with (problem.go).
//
// The control plane's value types are declared once, in the leaf
// package cptype, which the domain (controlplane) and this package share:
// a field is one declaration with its JSON name, not a copy here and a
// mapping in httpapi (issue 52, point 5); the incident bridge's are in
// cptype/incidenttype. An observation (and a lease's abandon proof) is
// still declared here and mapped: the bridge's own carries its
// validation and redaction (the control plane's proof is recorded in
// full in its event log). Request types that are also MCP tool inputs
// carry jsonschema tags, the schema's descriptions read by a model.
//
// It is a leaf: it names no store, engine, control plane, forge or
// database driver (of the module it imports the root package, cptype
// and cptype/incidenttype only; scripts/check holds that), so that a
// client, and an MCP server built on one, links none of them.
package api
