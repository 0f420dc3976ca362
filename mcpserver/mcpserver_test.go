package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mcpserver"
	"github.com/workqueue-dev/workqueue/mcpserver/mcptest"
	"github.com/workqueue-dev/workqueue/store"
)

// service is workqueue's API as serve wires it (items, the control plane,
// the incident bridge for dry runs, /mcp) behind an httptest server.
type service struct {
	url    string
	tokens map[string]string // by name: agent, submit, incidents
	cp     cp.Store
	clock  *clockwork.FakeClock // the control plane's
	forge  *actionForge         // the gated actions' forge, "gitea"
}

func newService(t *testing.T) *service {
	t.Helper()
	st := testdb.Open(t, store.KindSQLite)
	cfg := config.Default()
	cfg.Forges = []config.Forge{{Name: "gitea", Kind: "gitea", URL: "http://127.0.0.1:1", TokenEnv: "UNUSED"}}
	cfg.Projects = []config.Project{{Match: "team/**", Forge: "gitea"}}
	s := &service{tokens: map[string]string{}, cp: testdb.ControlPlane(t, store.KindSQLite), clock: clockwork.NewFakeClockAt(time.Now()),
		forge: &actionForge{heads: map[int64]string{}}}
	var tokens []auth.Token
	for name, perms := range map[string][]auth.Permission{"agent": {auth.Agent}, "reviewing-agent": {auth.Agent}, "merging-agent": {auth.Agent},
		"submit": {auth.Submit, auth.Read}, "incidents": {auth.Incidents}} {
		tok, hash, _ := auth.NewToken()
		s.tokens[name] = tok
		tokens = append(tokens, auth.Token{Name: name, SHA256: hash, Permissions: perms})
	}
	authn, err := auth.NewStaticTokens(tokens)
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.NewServer(httpapi.Options{Store: st, Items: testapi.Items(st, cfg), Auth: authn, Log: testkit.Quiet(),
		ControlPlane: &cp.Service{Store: s.cp, Clock: s.clock, Forges: map[string]wq.Forge{"gitea": s.forge}},
		Incidents:    testapi.Incidents(t, s.cp),
		MCP: func(api http.Handler) http.Handler {
			return mcpserver.HTTPHandler(api, mcpserver.HTTPOptions{Faces: testapi.Types.Faces()})
		}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// inMemory is an agent's MCP session with the tools of a fixed client
// of the named token, as `workqueue mcp` serves them.
func (s *service) inMemory(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	c, err := client.New(s.url, s.tokens[token])
	if err != nil {
		t.Fatal(err)
	}
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(mcpserver.Fixed(c), testapi.Types.Faces()).Connect(t.Context(), serverEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return mcptest.Connect(t, clientEnd)
}

// overHTTP is an agent's MCP session with /mcp, as the named token.
func (s *service) overHTTP(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	return mcptest.OverHTTP(t, s.url+"/mcp", s.tokens[token])
}

// seedIssues puts open issues 1 to n of team/app in the inventory.
func (s *service) seedIssues(t *testing.T, n int) {
	t.Helper()
	now := time.Now()
	var work []cp.Work
	for i := 1; i <= n; i++ {
		work = append(work, cp.Work{ID: "w" + string(rune('0'+i)), State: cp.StateOpen, Title: "issue", UpdatedAt: now.Add(time.Duration(i) * time.Second),
			WorkKey: cp.WorkKey{Forge: "gitea", Repo: "team/app", Kind: cp.KindIssue, Number: int64(i)}})
	}
	if err := s.cp.UpsertWork(t.Context(), work, now); err != nil {
		t.Fatal(err)
	}
}

// An agent's whole round through the tools, as stdio serves them: a
// session, a dry run that writes nothing, an assignment under a lease,
// the gate answering both ways, a checkpoint that is redacted and
// reconciles, the release (a second one refused by its reason), the end.
func TestAnAgentWorksThroughTheTools(t *testing.T) {
	s := newService(t)
	s.seedIssues(t, 2)
	agent := s.inMemory(t, "agent")

	sess := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "author", "name": "agent-1", "capabilities": map[string]any{"languages": []string{"go"}}})
	if sess.ID == "" || sess.Status != cp.SessionActive || sess.Role != cp.RoleAuthor || string(sess.Capabilities) != `{"languages":["go"]}` {
		t.Fatalf("start_session: %+v", sess)
	}
	preview := mcptest.Call[cp.Allocation](t, agent, "allocate_work", map[string]any{"session_id": sess.ID, "repo": "team/*"})
	if preview.Outcome != cp.OutcomePreview || preview.Work == nil || len(preview.Candidates) != 1 || preview.Lease != nil {
		t.Fatalf("allocate_work dry run: %+v", preview)
	}
	if leases := mcptest.Call[struct{ Leases []cp.Lease }](t, agent, "list_leases", map[string]any{"session_id": sess.ID}); len(leases.Leases) != 0 {
		t.Fatalf("a dry run took a lease: %+v", leases)
	}
	a := mcptest.Call[cp.Allocation](t, agent, "allocate_work", map[string]any{"session_id": sess.ID, "repo": "team/*", "apply": true})
	if a.Outcome != cp.OutcomeAssigned || a.Lease == nil || a.Assignment == nil || a.Work.Number != preview.Work.Number {
		t.Fatalf("allocate_work applied: %+v, after the dry run's %+v", a, preview.Work)
	}
	gate := func(action cp.Action) cp.Decision {
		return mcptest.Call[cp.Decision](t, agent, "check_gate", map[string]any{"session_id": sess.ID, "assignment_id": a.Assignment.ID, "action": action})
	}
	if d := gate(cp.ActOpenPR); !d.Allowed {
		t.Errorf("check_gate open_pr: %+v, want allowed", d)
	}
	if d := gate(cp.ActMerge); d.Allowed || d.Reason != "action_not_allowed" {
		t.Errorf("check_gate merge: %+v, want refused as action_not_allowed (an answer, not an error)", d)
	}

	key := map[string]any{"session_id": sess.ID, "forge": "gitea", "repo": "team/app", "work_kind": "issue", "work_number": a.Work.Number}
	checkpoint := map[string]any{"lease_id": a.Lease.ID, "workflow_stage": "implement", "next_valid_action": "open_pr",
		"recovery_instructions": "push with glpat-AbCdEfGhIjKlMnOpQrSt", "evidence": map[string]any{"tests": "pass"}, "require_complete": true}
	for k, v := range key {
		checkpoint[k] = v
	}
	written := mcptest.Call[cp.Checkpoint](t, agent, "write_checkpoint", checkpoint)
	if written.Role != cp.RoleAuthor || written.NextValidAction != "open_pr" || strings.Contains(written.RecoveryInstructions, "glpat-") || string(written.Evidence) != `{"tests":"pass"}` {
		t.Errorf("write_checkpoint: %+v, want the session's role and the token redacted", written)
	}
	if text := mcptest.Refused(t, agent, "write_checkpoint", map[string]any{"session_id": sess.ID, "forge": "gitea", "repo": "team/app", "require_complete": true}); !strings.Contains(text, "reason incomplete_checkpoint") || !strings.Contains(text, "next_valid_action") {
		t.Errorf("an incomplete checkpoint: %s", text)
	}
	if list := mcptest.Call[struct{ Checkpoints []cp.Checkpoint }](t, agent, "list_checkpoints", map[string]any{"session_id": sess.ID, "work_number": a.Work.Number}); len(list.Checkpoints) != 1 {
		t.Errorf("list_checkpoints of the work unit: %+v", list)
	}
	got := mcptest.Call[struct {
		Found      bool
		Checkpoint cp.Checkpoint
	}](t, agent, "get_checkpoint", key)
	if !got.Found || got.Checkpoint.WorkflowStage != "implement" || got.Checkpoint.LeaseID != a.Lease.ID {
		t.Errorf("get_checkpoint: %+v", got)
	}
	if none := mcptest.Call[struct{ Found bool }](t, agent, "get_checkpoint", map[string]any{"session_id": sess.ID, "forge": "gitea", "repo": "team/app"}); none.Found {
		t.Errorf("get_checkpoint of the session's own, never written: found")
	}
	if r := mcptest.Call[cp.CheckpointReconcile](t, agent, "reconcile_checkpoint", key); r.ReconcileAction != cp.ReconcileResume || r.Stale {
		t.Errorf("reconcile_checkpoint with the lease live: %+v", r.Diagnosis)
	}
	if l := mcptest.Call[cp.LeaseView](t, agent, "inspect_lease", map[string]any{"lease_id": a.Lease.ID, "session_id": sess.ID}); l.SafeNextAction != cp.NextContinue || !l.Freshness.Live {
		t.Errorf("inspect_lease: %+v", l)
	}

	release := map[string]any{"lease_id": a.Lease.ID, "session_id": sess.ID}
	if l := mcptest.Call[cp.LeaseView](t, agent, "release_lease", release); l.State != cp.LeaseReleased {
		t.Errorf("release_lease: %+v", l)
	}
	if text := mcptest.Refused(t, agent, "release_lease", release); !strings.HasPrefix(text, "refused: code conflict, reason not_active (HTTP 409): ") {
		t.Errorf("a second release: %q, want the code, reason and status", text)
	}
	if r := mcptest.Call[cp.CheckpointReconcile](t, agent, "reconcile_checkpoint", key); r.ReconcileAction != cp.ReconcileReclaim || !r.Stale {
		t.Errorf("reconcile_checkpoint after the release: %+v", r.Diagnosis)
	}
	if ended := mcptest.Call[cp.SessionView](t, agent, "end_session", map[string]any{"session_id": sess.ID}); ended.Status != cp.SessionEnded {
		t.Errorf("end_session: %+v", ended)
	}
	if text := mcptest.Refused(t, agent, "heartbeat_session", map[string]any{"session_id": "0190a0a0-0000-7000-8000-000000000000"}); !strings.Contains(text, "code not_found") || !strings.Contains(text, "(HTTP 404)") {
		t.Errorf("heartbeat of an unknown session: %q", text)
	}
}

// The lease's lifecycle through the tools: a heartbeat whose head is
// checked, never declared; an adoption by another session of the same
// identity once the first went quiet, an abandon
// refused for want of proof, the expiry after time moves, a reclaim, and
// an abandon with proof.
func TestTheLeaseLifecycleThroughTheTools(t *testing.T) {
	s := newService(t)
	s.seedIssues(t, 1)
	agent := s.inMemory(t, "agent")
	if work := mcptest.Call[struct{ Work []cp.Work }](t, agent, "list_work", map[string]any{"repo": "team/app", "kind": "issue", "state": "open"}); len(work.Work) != 1 || work.Work[0].Number != 1 {
		t.Fatalf("list_work: %+v", work)
	}
	first := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "author"})
	second := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "author"})
	a := mcptest.Call[cp.Allocation](t, agent, "allocate_work", map[string]any{"session_id": first.ID, "apply": true})
	if a.Lease == nil {
		t.Fatalf("allocate_work: %+v", a)
	}
	lease := func(sess string, more map[string]any) map[string]any {
		args := map[string]any{"lease_id": a.Lease.ID, "session_id": sess}
		for k, v := range more {
			args[k] = v
		}
		return args
	}
	s.clock.Advance(10 * time.Minute)
	const head = "0123456789abcdef0123456789abcdef01234567"
	if l := mcptest.Call[cp.LeaseView](t, agent, "heartbeat_lease", lease(first.ID, map[string]any{"head_sha": head})); l.HeadSHA != "" || !l.ExpiresAt.After(a.Lease.ExpiresAt) {
		t.Errorf("heartbeat_lease: %+v, want it extended and no head declared", l)
	}
	if text := mcptest.Refused(t, agent, "heartbeat_lease", lease(first.ID, map[string]any{"head_sha": "abc1234"})); !strings.Contains(text, "code invalid") {
		t.Errorf("heartbeat_lease naming no commit id: %q", text)
	}
	if text := mcptest.Refused(t, agent, "adopt_lease", lease(second.ID, map[string]any{"worktree_path": "/work/resumed"})); !strings.Contains(text, "reason wait_foreign_active") {
		t.Errorf("adopt_lease of a sibling session's lease while it heartbeats: %q", text)
	}
	s.clock.Advance(20 * time.Minute) // the first session goes quiet: no heartbeat for longer than the session TTL
	mcptest.Call[cp.SessionView](t, agent, "heartbeat_session", map[string]any{"session_id": second.ID})
	if l := mcptest.Call[cp.LeaseView](t, agent, "adopt_lease", lease(second.ID, map[string]any{"worktree_path": "/work/resumed"})); l.SessionID != second.ID || l.AdoptedFromSessionID != first.ID || l.WorktreePath != "/work/resumed" {
		t.Errorf("adopt_lease: %+v", l)
	}
	if text := mcptest.Refused(t, agent, "abandon_lease", lease(second.ID, map[string]any{"proof": map[string]any{"dead_process": true}})); !strings.Contains(text, "reason insufficient_proof") {
		t.Errorf("abandon_lease without no_live_mutation_risk: %q", text)
	}
	if text := mcptest.Refused(t, agent, "reclaim_lease", lease(second.ID, nil)); !strings.Contains(text, "reason wait_foreign_active") {
		t.Errorf("reclaim_lease of a live lease: %q", text)
	}

	s.clock.Advance(time.Hour) // past the heartbeated lease's expiry and the sessions' TTL
	if expired := mcptest.Call[struct{ Expired []cp.Lease }](t, agent, "expire_leases", map[string]any{}); len(expired.Expired) != 1 || expired.Expired[0].ID != a.Lease.ID {
		t.Fatalf("expire_leases: %+v", expired)
	}
	if sess := mcptest.Call[cp.SessionView](t, agent, "heartbeat_session", map[string]any{"session_id": second.ID}); sess.Status != cp.SessionActive {
		t.Fatalf("heartbeat_session of a stale session: %+v", sess)
	}
	r := mcptest.Call[cp.Allocation](t, agent, "reclaim_lease", lease(second.ID, nil))
	if r.Outcome != cp.OutcomeAssigned || r.Lease == nil || r.Lease.ID == a.Lease.ID {
		t.Fatalf("reclaim_lease: %+v", r)
	}
	proof := map[string]any{"dead_process": true, "no_live_mutation_risk": true}
	if l := mcptest.Call[cp.LeaseView](t, agent, "abandon_lease", map[string]any{"lease_id": r.Lease.ID, "session_id": second.ID, "proof": proof}); l.State != cp.LeaseAbandoned {
		t.Errorf("abandon_lease with proof: %+v", l)
	}
	if all := mcptest.Call[struct{ Leases []cp.Lease }](t, agent, "list_leases", map[string]any{"all": true}); len(all.Leases) != 2 {
		t.Errorf("list_leases, ended ones too: %+v", all)
	}
}

// Every tool is offered with a description, an object input schema with
// its fields described, and an output schema; reads say they are.
func TestEveryToolIsDescribedForAModel(t *testing.T) {
	s := newService(t)
	cs := s.inMemory(t, "agent")
	want := []string{"abandon_lease", "adopt_lease", "allocate_work", "check_gate", "close_issue", "comment", "end_session", "expire_leases",
		"get_checkpoint", "get_item", "heartbeat_lease", "heartbeat_session", "inspect_lease", "list_checkpoints", "list_items", "list_leases",
		"list_work", "merge_pull_request", "reclaim_lease", "reconcile_checkpoint", "reconcile_incident", "release_lease", "review_pull_request",
		"start_session", "submit_change", "write_checkpoint"}
	if diff := cmp.Diff(want, mcptest.ToolNames(t, cs)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	reads := []string{"get_item", "list_items", "list_work", "list_leases", "inspect_lease", "get_checkpoint", "list_checkpoints", "reconcile_checkpoint"}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		var in struct {
			Type       string
			Properties map[string]struct{ Description string }
		}
		b, _ := json.Marshal(tool.InputSchema)
		json.Unmarshal(b, &in)
		if len(tool.Description) < 80 || in.Type != "object" || tool.OutputSchema == nil {
			t.Errorf("%s: description %q, input type %q, output schema %v", tool.Name, tool.Description, in.Type, tool.OutputSchema)
		}
		for name, p := range in.Properties {
			if p.Description == "" {
				t.Errorf("%s: input %s has no description", tool.Name, name)
			}
		}
		if readOnly := tool.Annotations != nil && tool.Annotations.ReadOnlyHint; readOnly != slices.Contains(reads, tool.Name) {
			t.Errorf("%s: read-only %t", tool.Name, readOnly)
		}
	}
}

// submit_change hands the service the arguments as the agent wrote them,
// so that the REST API's own refusals hold: a member given twice, a path
// inspection refuses (named with its rule and action).
func TestSubmitChangeHandsTheServiceTheArgumentsAsWritten(t *testing.T) {
	s := newService(t)
	cs := s.inMemory(t, "submit")
	submission := `{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/a","target_branch":"main",` +
		`"title":"T","file_actions":[{"action":"create","file_path":"a.txt","content":"a\n"}]}`
	created := mcptest.Call[api.Submitted](t, cs, "submit_change", json.RawMessage(submission))
	if created.Result != "created" || created.Item == nil || created.ItemType != "mr" {
		t.Fatalf("submit_change: %+v", created)
	}
	if again := mcptest.Call[api.Submitted](t, cs, "submit_change", json.RawMessage(submission)); again.Result != "unchanged" || again.ID != created.ID {
		t.Errorf("the same submission again: %+v, want unchanged, the same item", again)
	}
	if it := mcptest.Call[api.Item](t, cs, "get_item", map[string]any{"id": created.ID}); it.ID != created.ID || it.Project != "team/app" {
		t.Errorf("get_item: %+v", it)
	}
	if page := mcptest.Call[api.ItemPage](t, cs, "list_items", map[string]any{"item_type": "mr", "limit": 10}); len(page.Items) != 1 || page.Items[0].ID != created.ID {
		t.Errorf("list_items: %+v", page)
	}
	twice := strings.Replace(submission, `"title":"T"`, `"title":"T","title":"U"`, 1)
	if text := mcptest.Refused(t, cs, "submit_change", json.RawMessage(twice)); !strings.Contains(text, `"title" is given twice`) {
		t.Errorf("a member given twice: %q", text)
	}
	inspected := strings.Replace(strings.Replace(submission, "a.txt", ".git/config", 1), "workqueue/a", "workqueue/b", 1)
	if text := mcptest.Refused(t, cs, "submit_change", json.RawMessage(inspected)); !strings.Contains(text, `, rule `) || !strings.Contains(text, `file action 0, path ".git/config"`) {
		t.Errorf("a refused path: %q, want its rule and action", text)
	}
	if page := mcptest.Call[api.ItemPage](t, cs, "list_items", map[string]any{}); len(page.Items) != 1 {
		t.Errorf("refused submissions made items: %+v", page)
	}
}

// Over /mcp each tool call is made with the bearer token of the request
// that carried it, so a tool is authorized as its REST route: the agent
// token may not reconcile incidents (a tool error, nothing filed), the
// incidents token may, and may not start a session.
func TestEachCallOverHTTPIsAuthorizedAsItsRESTCall(t *testing.T) {
	s := newService(t)
	agent, monitoring := s.overHTTP(t, "agent"), s.overHTTP(t, "incidents")
	obs := map[string]any{"observation": map[string]any{"provider": "sentry", "organization": "shop", "project": "web", "fingerprint": "42", "title": "boom"}}
	applied := map[string]any{"observation": obs["observation"], "apply": true}
	if text := mcptest.Refused(t, agent, "reconcile_incident", applied); !strings.HasPrefix(text, "refused: code forbidden (HTTP 403): ") || !strings.Contains(text, `"incidents" permission`) {
		t.Errorf("reconcile_incident with the agent token: %q", text)
	}
	if res := mcptest.Call[incident.Result](t, monitoring, "reconcile_incident", obs); res.Outcome != incident.OutcomeWouldCreate || res.Link != nil {
		t.Errorf("a dry run after the refused call: %+v, want no link yet", res)
	}
	if text := mcptest.Refused(t, monitoring, "start_session", map[string]any{"role": "author"}); !strings.Contains(text, "code forbidden (HTTP 403)") {
		t.Errorf("start_session with the incidents token: %q", text)
	}
	if sess := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "reviewer"}); sess.Identity != "token:agent" {
		t.Errorf("start_session over /mcp: %+v, want the agent token's identity", sess)
	}
}

// actionForge is the forge of the gated actions: each pull request's live
// head, set by the test, and every write, in order.
type actionForge struct {
	wq.Forge // nil: any other method panics
	mu       sync.Mutex
	heads    map[int64]string
	writes   []string
	// approvedAt is the head each pull request was approved at.
	approvedAt map[int64]string
}

// GetWork is a pull request as the forge has it: approved only at the
// head its approval was given on.
func (f *actionForge) GetWork(_ context.Context, _, kind string, n int64) (*wq.WorkInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info := &wq.WorkInfo{Kind: kind, Number: n, State: wq.MergeRequestOpen, Title: "the author's change", HeadSHA: f.heads[n],
		ReviewState: wq.ReviewNone, Mergeable: true, UpdatedAt: time.Unix(1, 0)}
	if at, ok := f.approvedAt[n]; ok && at == f.heads[n] {
		info.ReviewState = wq.ReviewApproved
	}
	return info, nil
}

func (f *actionForge) setHead(n int64, head string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heads[n] = head
}

func (f *actionForge) GetMergeRequest(_ context.Context, _ string, n int64) (*wq.MergeRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &wq.MergeRequest{Number: n, HeadSHA: f.heads[n], State: wq.MergeRequestOpen}, nil
}

// write records one write, which succeeds.
func (f *actionForge) write(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, fmt.Sprintf(format, args...))
	return nil
}

func (f *actionForge) CommentOnWork(_ context.Context, _, kind string, n int64, body string) (int64, error) {
	return 77, f.write("comment on %s %d: %s", kind, n, body)
}

func (f *actionForge) ReviewPullRequest(_ context.Context, _ string, n int64, verdict, _, head string) error {
	f.mu.Lock()
	if verdict == wq.ReviewApproved {
		if f.approvedAt == nil {
			f.approvedAt = map[int64]string{}
		}
		f.approvedAt[n] = head
	}
	f.mu.Unlock()
	return f.write("review %d %s at %s", n, verdict, head)
}

func (f *actionForge) MergeMergeRequest(_ context.Context, _ string, n int64, head string) error {
	return f.write("merge %d at %s", n, head)
}

func (f *actionForge) CloseIssue(_ context.Context, _ string, n int64) error {
	return f.write("close %d", n)
}

func (f *actionForge) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.writes)
}

// The gated actions through their tools: an author comments on its issue
// and keeps its lease, may not review with it, nor review its own pull
// request, and closes its issue at the end, ending its lease; a
// reviewer's verdict is pinned to the head and hands the pull request on
// to a merger, whatever the forge's clock says;
// a merger's merge after a push is refused head_moved and merges nothing,
// and at the pinned head merges and ends the work. Only what was allowed
// reached the forge.
func TestTheGatedActionsThroughTheTools(t *testing.T) {
	s := newService(t)
	s.seedIssues(t, 1)
	// Three identities: the sessions of one are one actor, and never
	// judge what another of them wrote.
	agent, reviewing, merging := s.inMemory(t, "agent"), s.inMemory(t, "reviewing-agent"), s.inMemory(t, "merging-agent")
	author := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "author"})
	ownReviewer := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "reviewer"})
	reviewer := mcptest.Call[cp.SessionView](t, reviewing, "start_session", map[string]any{"role": "reviewer"})
	merger := mcptest.Call[cp.SessionView](t, merging, "start_session", map[string]any{"role": "merger"})
	issue := mcptest.Call[cp.Allocation](t, agent, "allocate_work", map[string]any{"session_id": author.ID, "apply": true})
	if issue.Assignment == nil || issue.Work.Kind != cp.KindIssue {
		t.Fatalf("the author's allocation: %+v", issue)
	}
	// The author's pull request, last updated by the forge's clock, which
	// runs a minute ahead of the service's.
	now := s.clock.Now()
	s.forge.setHead(2, "1111111")
	if err := s.cp.UpsertWork(t.Context(), []cp.Work{{ID: "pr2", State: cp.StateOpen, Title: "the author's change", HeadSHA: "1111111",
		ReviewState: cp.ReviewNone, Mergeable: true, AuthorSession: author.ID, UpdatedAt: now.Add(time.Minute),
		WorkKey: cp.WorkKey{Forge: "gitea", Repo: "team/app", Kind: cp.KindPR, Number: 2}}}, now); err != nil {
		t.Fatal(err)
	}
	act := func(session string, a cp.Allocation, more map[string]any) map[string]any {
		args := map[string]any{"session_id": session, "assignment_id": a.Assignment.ID}
		for k, v := range more {
			args[k] = v
		}
		return args
	}

	said := mcptest.Call[cp.ActionResult](t, agent, "comment", act(author.ID, issue, map[string]any{"body": "Working on it."}))
	if said.Action != cp.ActComment || said.CommentID != 77 || said.Released || said.Work.Number != issue.Work.Number {
		t.Errorf("comment: %+v, want the forge's comment id and the lease kept", said)
	}
	if text := mcptest.Refused(t, agent, "review_pull_request", act(author.ID, issue, map[string]any{"verdict": "approve"})); !strings.Contains(text, "reason wrong_kind") {
		t.Errorf("review_pull_request with an issue's assignment: %q", text)
	}

	if own := mcptest.Call[cp.Allocation](t, agent, "allocate_work", map[string]any{"session_id": ownReviewer.ID, "apply": true}); own.Work != nil {
		t.Fatalf("a reviewer session of the author's own identity was handed %+v", own)
	}
	review := mcptest.Call[cp.Allocation](t, reviewing, "allocate_work", map[string]any{"session_id": reviewer.ID, "apply": true})
	if review.Work == nil || review.Work.Number != 2 {
		t.Fatalf("the reviewer's allocation: %+v", review)
	}
	if text := mcptest.Refused(t, agent, "review_pull_request", act(author.ID, review, map[string]any{"verdict": "approve"})); !strings.Contains(text, "reason own_pull_request") {
		t.Errorf("a review by the pull request's author: %q", text)
	}
	if text := mcptest.Refused(t, reviewing, "review_pull_request", act(reviewer.ID, review, map[string]any{"verdict": "request_changes"})); !strings.Contains(text, "code invalid") || !strings.Contains(text, "body") {
		t.Errorf("request_changes without a body: %q", text)
	}
	approved := mcptest.Call[cp.ActionResult](t, reviewing, "review_pull_request", act(reviewer.ID, review, map[string]any{"verdict": "approve", "body": "Right."}))
	if !approved.Released || approved.HeadSHA != "1111111" || approved.Work.ReviewState != cp.ReviewApproved {
		t.Errorf("approve: %+v, want the lease released at head 1111111, approved", approved)
	}

	allocateMerge := func() cp.Allocation {
		t.Helper()
		merge := mcptest.Call[cp.Allocation](t, merging, "allocate_work", map[string]any{"session_id": merger.ID, "apply": true})
		if merge.Work == nil || merge.Work.Number != 2 || !slices.Contains(merge.Assignment.AllowedActions, cp.ActMerge) {
			t.Fatalf("the merger's allocation: %+v", merge)
		}
		return merge
	}
	merge := allocateMerge()
	s.forge.setHead(2, "2222222") // someone pushes
	if text := mcptest.Refused(t, merging, "merge_pull_request", act(merger.ID, merge, nil)); !strings.Contains(text, "reason head_moved") {
		t.Errorf("a merge after a push: %q", text)
	}
	if again := mcptest.Call[cp.Allocation](t, merging, "allocate_work", map[string]any{"session_id": merger.ID, "apply": true}); again.Work != nil {
		t.Errorf("after a push past the approval the merger was handed %+v", again)
	}
	s.forge.setHead(2, "1111111") // the push undone: the approved head is back
	if err := s.cp.UpsertWork(t.Context(), []cp.Work{{ID: "pr2", State: cp.StateOpen, Title: "the author's change", HeadSHA: "1111111",
		ReviewState: cp.ReviewApproved, Mergeable: true, UpdatedAt: now.Add(2 * time.Minute),
		WorkKey: cp.WorkKey{Forge: "gitea", Repo: "team/app", Kind: cp.KindPR, Number: 2}}}, now); err != nil {
		t.Fatal(err)
	}
	merge = allocateMerge()
	merged := mcptest.Call[cp.ActionResult](t, merging, "merge_pull_request", act(merger.ID, merge, nil))
	if !merged.Released || merged.HeadSHA != "1111111" || merged.Work.State != cp.StateMerged {
		t.Errorf("merge: %+v, want merged at 1111111 and the lease released", merged)
	}
	if text := mcptest.Refused(t, merging, "close_issue", act(merger.ID, merge, nil)); !strings.Contains(text, "reason wrong_kind") {
		t.Errorf("close_issue with a pull request's assignment: %q", text)
	}
	// The author's issue needed no more (its pull request is merged): the
	// author closes it, and its lease ends.
	closed := mcptest.Call[cp.ActionResult](t, agent, "close_issue", act(author.ID, issue, nil))
	if !closed.Released || closed.Work.State != cp.StateClosed {
		t.Errorf("close_issue under the author's assignment: %+v, want closed and the lease released", closed)
	}
	want := []string{"comment on issue 1: Working on it.", "review 2 approved at 1111111", "merge 2 at 1111111", "close 1"}
	if diff := cmp.Diff(want, s.forge.written()); diff != "" {
		t.Errorf("forge writes (-want +got):\n%s", diff)
	}
}
