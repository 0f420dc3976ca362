package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/client"
)

// Clients gives the client a tool call makes its REST call with: the
// caller's, as the transport that carried the call knows it.
type Clients func(ctx context.Context, req *mcp.CallToolRequest) (*client.Client, error)

// Fixed is Clients answering c for every call: one agent's process,
// with its own token.
func Fixed(c *client.Client) Clients {
	return func(context.Context, *mcp.CallToolRequest) (*client.Client, error) { return c, nil }
}

// instructions tell a model how the tools fit together.
const instructions = `workqueue stands between agents and a code forge. You hold no forge token: every write is made by the service, after its gate checks your lease, your assignment, the work's state and the pull request's head.

Start with start_session and your role (author, reviewer or merger), then allocate_work: apply false previews, apply true takes the work under an exclusive lease and gives an assignment (assignment.id, allowed_actions). heartbeat_session and heartbeat_lease while you work; write_checkpoint what a restarted session would need; release_lease when done and end_session when you stop. After a restart, reconcile_checkpoint says whether to resume, re-inspect or re-acquire.

An author's loop: allocate_work (an issue) → check_gate with action open_pr → the submit tool of the change's item type (below) with the assignment's id as assignment_id (leave auto_merge out: the pull request closes your issue, is yours, and is never merged on its own) → follow the item with get_item until its pull request exists → write_checkpoint. The pull request is then reviewed by a reviewer session and merged by a merger session; if changes are requested, allocate_work hands it back to you (action push: submit to the same branch).

A reviewer is handed pull requests others wrote: review_pull_request, approve or request_changes. A merger is handed approved, mergeable ones: merge_pull_request, at the head the assignment pinned. comment writes on your assignment's issue or pull request; close_issue closes an issue when your assignment allows close. The service checks the gate for these itself; a review, a merge or a close releases your lease and hands the work on.

The submit tools also take work without an assignment, where the service allows it: desired state as data, which the service inspects and drives to completion (a change, to a merged merge request). Follow an item with get_item and list_items.

A tool error is the service's refusal: its text names the code (invalid, not_found, conflict, unauthorized, forbidden), the reason (such as head_moved, own_pull_request, not_owner or wait_foreign_active) and the detail. check_gate's refusal is an answer (allowed false) with the same reasons. Do not repeat a refused call unchanged.`

// New returns the MCP server of workqueue's tools, with a submit tool for
// each item type of faces that has one (its registration's); each tool
// call makes its REST call with the client clients gives for it.
func New(clients Clients, faces []wq.ItemFace) *mcp.Server {
	text := instructions
	var submits []string
	for _, f := range faces {
		if f.Tool != nil {
			submits = append(submits, fmt.Sprintf("%s (item type %s)", f.Tool.Name, f.Type))
		}
	}
	if len(submits) > 0 {
		text += "\n\nSubmit tools here: " + strings.Join(submits, ", ") + "."
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "workqueue", Title: "workqueue", Version: version()},
		&mcp.ServerOptions{Instructions: text})
	for _, f := range faces {
		if f.Tool != nil {
			submitTool(*f.Tool)(s, clients)
		}
	}
	for _, add := range tools {
		add(s, clients)
	}
	return s
}

// submitTool is the tool that submits an item of a type: its input schema
// is the type's, described for a model, and the service is sent the
// arguments as the agent wrote them (the REST API judges them itself:
// duplicate members, invalid UTF-8).
func submitTool(t wq.ItemTool) func(*mcp.Server, Clients) {
	define := sync.OnceValue(func() *mcp.Tool {
		var in jsonschema.Schema
		if err := json.Unmarshal(t.Input(), &in); err != nil {
			panic(fmt.Sprintf("mcpserver: %s's input schema: %v", t.Name, err)) // a declaration error, found by any test
		}
		admitUnknownMembers(&in)
		return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: &in, OutputSchema: objectSchema(schemaFor[*api.Submitted]())}
	})
	return func(s *mcp.Server, clients Clients) {
		mcp.AddTool(s, define(), func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, *api.Submitted, error) {
			c, err := clients(ctx, req)
			if err != nil {
				return nil, nil, err
			}
			out, err := c.Submit(ctx, req.Params.Arguments)
			if err != nil {
				return nil, nil, toolError(err)
			}
			return nil, out, nil
		})
	}
}

// ServeIO serves the tools (with the submit tools of faces) over MCP's stdio transport (one JSON-RPC
// message a line) on in and out, each call made with c, until in ends or
// ctx is done. Every request read before in ends is answered first
// (stdio.go). A batch of more than DefaultMaxBatch messages is answered
// with a JSON-RPC error naming the bound, none of its calls made.
func ServeIO(ctx context.Context, c *client.Client, faces []wq.ItemFace, in io.Reader, out io.Writer) error {
	requests := newInFlight()
	answers := &answerTracker{out: out, inFlight: requests}
	err := New(Fixed(c), faces).Run(ctx, &mcp.IOTransport{
		Reader: &drainingInput{ctx: ctx, in: bufio.NewReader(in), inFlight: requests, maxBatch: DefaultMaxBatch, out: answers},
		Writer: answers})
	if ctx.Err() != nil {
		return nil // asked to stop
	}
	return err
}

// version is the module's version, as the build recorded it.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// tool declares one tool: its input and output schemas come from In and
// Out (their jsonschema tags describe the fields), and call makes its REST
// call with the caller's client. An error of call is the tool's error.
func tool[In, Out any](name, description string, readOnly bool, call func(ctx context.Context, c *client.Client, in In) (Out, error)) func(*mcp.Server, Clients) {
	// The schemas are inferred when a server first needs them, not at
	// the package's init: every command links this package, and inferring
	// them all took 11 ms and 3.8 MB of allocations at each start
	// (GODEBUG=inittrace=1), for a CLI call or a bench that serves no MCP.
	define := sync.OnceValue(func() *mcp.Tool {
		t := &mcp.Tool{Name: name, Description: description, InputSchema: objectSchema(schemaFor[In]()), OutputSchema: objectSchema(schemaFor[Out]())}
		if readOnly {
			t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		return t
	})
	return func(s *mcp.Server, clients Clients) {
		mcp.AddTool(s, define(), func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			var zero Out
			if raw, ok := any(&in).(rawArguments); ok {
				raw.keepRaw(req.Params.Arguments)
			}
			c, err := clients(ctx, req)
			if err != nil {
				return nil, zero, err
			}
			out, err := call(ctx, c, in)
			if err != nil {
				return nil, zero, toolError(err)
			}
			return nil, out, nil
		})
	}
}

// rawArguments is an input that keeps the arguments as the caller sent
// them, before the SDK decoded and re-encoded them: what the REST API
// must judge itself (a submission's duplicate members, its invalid UTF-8).
type rawArguments interface{ keepRaw(json.RawMessage) }

// schemaOptions infer schemas as the API's JSON reads: a json.RawMessage
// is any JSON document, not an array of bytes.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
}}

// schemaFor is the JSON schema of T (of what it points to, for a
// pointer): the SDK would infer it without schemaOptions.
func schemaFor[T any]() *jsonschema.Schema {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s, err := jsonschema.ForType(t, schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %v: %v", t, err)) // a declaration error, found by any test
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[rawArguments]()) {
		admitUnknownMembers(s)
	}
	return s
}

// admitUnknownMembers lifts a schema's refusal of members it does not
// name, at every level: an input the service judges raw is described for
// a model, and the service, not this description, says which members it
// takes (naming the one it refuses).
func admitUnknownMembers(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.AdditionalProperties = nil
	for _, p := range s.Properties {
		admitUnknownMembers(p)
	}
	admitUnknownMembers(s.Items)
}

// toolError is err as a tool's error text. A problem document of the API
// names its code, reason, rule and detail, so that a model tells
// not_owner from head_moved; anything else (the service unreachable) is
// said as it is.
func toolError(err error) error {
	var e *client.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("no answer from the workqueue service: %w", err)
	}
	p := e.Problem
	var b strings.Builder
	if e.Status < 500 {
		b.WriteString("refused: ")
	} else {
		b.WriteString("failed: ")
	}
	fmt.Fprintf(&b, "code %s", p.Code)
	if p.Reason != "" {
		fmt.Fprintf(&b, ", reason %s", p.Reason)
	}
	detail := p.Detail
	if r := p.Refusal; r != nil {
		fmt.Fprintf(&b, ", rule %s", r.Rule)
		if r.Field != "" {
			fmt.Fprintf(&b, ", field %s", r.Field)
		} else {
			fmt.Fprintf(&b, ", file action %d, path %q", r.Index, r.Path)
		}
		detail = r.Message
	}
	fmt.Fprintf(&b, " (HTTP %d): %s", e.Status, detail)
	if p.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", p.RequestID)
	}
	return errors.New(b.String())
}

// queryOf is a tool's input as the query of a REST list: its JSON
// members (inputs leave empty ones out), each as its text.
func queryOf(in any) url.Values {
	b, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: encode %T: %v", in, err)) // inputs are plain structs
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	d.Decode(&m)
	q := url.Values{}
	for name, v := range m {
		q.Set(name, fmt.Sprint(v))
	}
	return q
}

// convert is in as T: an input type that describes an API type's fields
// for a model, read as that type.
func convert[T any](in any) (T, error) {
	var out T
	b, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	return out, err
}
