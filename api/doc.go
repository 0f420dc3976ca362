// Package api is the one wire package of workqueue's HTTP API: the
// request and response bodies of every route, as the server (httpapi)
// decodes and writes them, the Go client (client) sends and reads them,
// and the MCP tools (mcpserver) take and answer them.
//
// It holds:
//
//   - items: an item's view (Item, Dimension), a submission's answer
//     (Submitted) and a page of items (ItemPage) (items.go);
//   - the control plane: sessions, the inventory's work and its sync,
//     allocations and the gate (controlplane.go), gated actions
//     (actions.go), leases and their lifecycle calls (leases.go), and
//     checkpoints with their reconcile (checkpoints.go);
//   - incidents: an observation to reconcile and the result, link and
//     issue it makes, and a provider delivery's answer (incidents.go);
//   - who the caller is (Me, me.go);
//   - errors: Problem, the RFC 9457 document of every error answer, and
//     StatusOf, the one table from application error codes to HTTP
//     statuses that the API and the dashboard answer with (problem.go).
//
// The control plane's and the incident bridge's domain types are not
// wire types: httpapi maps them to these, so that a field added to the
// domain reaches the wire only when it is added here. Request types that
// are also MCP tool inputs carry jsonschema tags, the schema's
// descriptions read by a model.
//
// It is a leaf: it names no store, engine, control plane, forge or
// database driver, so that a client, and an MCP server built on one,
// links none of them.
package api
