// Package swarm runs a swarm of simulated agent sessions against a
// workqueue service and audits what they did (issues 13 and 25): the
// demo behind `scripts/demo agents`, whose command (cmd/workqueue-swarm)
// this package lives under, and cmd/workqueue's test of the whole agent
// loop on the real Gitea (swarm_test.go).
//
// Four parts, kept apart on purpose:
//
//   - The stage opens the issues on the forge with the forge's own token
//     and watches the forge to know when everything is done. It never
//     acts for an agent.
//   - The honest agents are MCP clients of the service's /mcp
//     (Streamable HTTP), each with its own agent-only token: they hold no
//     forge token, and every write they make (a change, a review, a
//     merge) is made by the service after the gate. Authors turn issues
//     into pull requests, reviewers approve them, mergers merge them.
//   - The hostile agents (hostile.go), MCP clients too, with agent-only
//     tokens of their own and an honest author's, try every way around
//     the gate against the others' work while they work. Every attempt
//     must be refused; one that is not is a violation.
//   - The audit reads the forge, the control plane's leases and items,
//     and its event log afterwards, and says whether the safety
//     properties held: each issue closed by exactly one merged pull
//     request, no work item held by two sessions at once, every forge
//     write made under a lease of its work held by a session of the
//     right role, every merge at a head another identity approved, no
//     identity judging its own pull request, and no identity writing on
//     another's item.
package swarm
