// Package mcpserver serves workqueue's API to agents as MCP tools (Model
// Context Protocol): submit a change, follow items, and the control
// plane's sessions, allocations, gate, gated actions (comment, review,
// merge, close), leases, inventory, checkpoints and incidents.
//
// Every tool makes exactly one REST call through a client.Client, so a
// tool call is authorized, validated and audited as that REST call is,
// and answers what it answers: its output is the call's answer, in
// package api's types. A tool whose input is the call's body takes that api
// request type itself (its jsonschema tags describe it for a model);
// the others (inputs.go) name a path parameter beside the body, or
// describe per tool what one body type carries for several. Where the client comes from is the
// transport's business:
//
//   - ServeIO, behind `workqueue mcp` on an agent's machine, uses one
//     client with the agent's workqueue token; forge tokens stay with the
//     service.
//   - HTTPHandler, mounted at /mcp of the service, makes each call on the
//     service's own handler in process, with the Authorization header of
//     the HTTP request that carried the call.
//
// A refusal of the API (a problem document: 401, 403, 404, 409, 422, an
// inspection rule) is a tool error whose text names the code, the reason
// and the detail; it is never a protocol error. A gate refusal is an
// answer (allowed false), as it is over REST.
package mcpserver
