package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/workqueue-dev/workqueue/mcpserver"
)

func newMCPCommand(w *world) *cobra.Command {
	var flags clientFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve workqueue's tools to an AI agent over MCP on standard input and output",
		Long: `Serve workqueue's tools to an AI agent over MCP (Model Context Protocol) on
standard input and output, one JSON-RPC message a line, until the input
ends. Every tool call is one call to a running workqueue server with the
token given here, and is authorized as that call: forge tokens stay with
the service, and the agent holds only its workqueue token.

An agent's MCP client launches it as a local process; in the client's
configuration, for example:

  {
    "mcpServers": {
      "workqueue": {
        "command": "workqueue",
        "args": ["mcp"],
        "env": {"WORKQUEUE_URL": "https://workqueue.internal", "WORKQUEUE_TOKEN": "<token with permission agent>"}
      }
    }
  }

The tools submit changes and follow items, and drive the control plane:
sessions, allocation, the gate, leases, the inventory, checkpoints and
incidents. Each says in its description what it is for and when to call
it. A refusal of the service is a tool error naming its code and reason.

A client that connects by URL uses the server's own /mcp instead (MCP's
Streamable HTTP), with the token as a bearer: the same tools, authorized
the same way.

The server and token come from $WORKQUEUE_URL and $WORKQUEUE_TOKEN, or
--server and --token. Nothing but MCP is written to standard output.`,
		Example: `  WORKQUEUE_URL=http://127.0.0.1:8080 WORKQUEUE_TOKEN=... workqueue mcp`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			if stdinIsTerminal(cmd.InOrStdin()) {
				server, _, _ := flags.resolve()
				fmt.Fprint(cmd.ErrOrStderr(), mcpTerminalNotice(server))
			}
			return mcpserver.ServeIO(cmd.Context(), c, w.types.Faces(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	flags.register(cmd)
	_ = cmd.PersistentFlags().MarkHidden("output") // MCP is the only output
	return cmd
}

// stdinIsTerminal reports whether r is a terminal; a variable so that
// tests can pretend it is.
var stdinIsTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// mcpTerminalNotice is what mcp says on standard error when a person
// starts it on a terminal, where it would otherwise wait in silence for
// an agent runtime's JSON-RPC (issue 55). It still serves afterwards.
func mcpTerminalNotice(server string) string {
	return `workqueue mcp: this is an MCP server for an AI agent's runtime, not an
interactive command. It speaks MCP (JSON-RPC, one message a line) on
standard input and output, calling the workqueue server at ` + server + `.
An agent's MCP client starts it itself; in the client's configuration:

  {"mcpServers": {"workqueue": {"command": "workqueue", "args": ["mcp"],
    "env": {"WORKQUEUE_URL": "` + server + `", "WORKQUEUE_TOKEN": "<token with permission agent>"}}}}

A client that connects by URL uses ` + server + `/mcp instead. See
'workqueue mcp --help' and docs/agents.md. Waiting for MCP messages on
standard input (Ctrl-D or Ctrl-C ends it).
`
}
