package tally_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/compose"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/itemtype/itemtypetest/tally"
	"github.com/workqueue-dev/workqueue/mcpserver"
	"github.com/workqueue-dev/workqueue/mcpserver/mcptest"
	"github.com/workqueue-dev/workqueue/service"
)

// types is a program's registry with the one line that adds the type:
// nothing else in the tree names it. known is what a configuration may
// name in that program.
var (
	types = itemtype.NewRegistry(tally.Plugin)
	known = compose.Known(forge.NewRegistry(), types)
)

// The type's section is the configuration's like any other: its defaults
// where the file says nothing, unknown keys refused with a suggestion,
// its own checks, and its keys in the schema.
func TestTheTypesSectionIsDecodedStrictlyByTheConfiguration(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(""), known)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Sections[tally.Name].(*tally.Section); s.MaxTarget != tally.MaxTarget {
		t.Errorf("default max_target %d, want %d", s.MaxTarget, tally.MaxTarget)
	}
	for doc, want := range map[string]string{
		"tally: {max_targt: 5}\n":    `max_target`,
		"tally: {max_target: 0}\n":   "tally.max_target: want 1 to 10000",
		"tally: {max_target: ten}\n": "tally.max_target",
	} {
		if _, err := config.Parse(strings.NewReader(doc), known); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", doc, err, want)
		}
	}
	schema, _ := json.Marshal(config.Schema(nil, known))
	if !strings.Contains(string(schema), `"max_target"`) {
		t.Error("the schema has no tally.max_target")
	}
}

// A type added by its package and one registration line is wired as serve
// wires every type (the registry's stores, migrations and builds), taken
// over the HTTP API, processed by the engine under fenced leases on its
// own table, and shown with its detail and summary, on both databases.
func TestATypeAddedByRegistrationAloneRunsThroughTheEngineAndTheAPI(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		db, err := testdb.Drivers.Open(ctx, testdb.URL(t, kind))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		stores, err := types.Stores(db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if applied, latest, err := db.SchemaVersion(ctx); err != nil || applied != latest {
			t.Fatalf("schema %d of %d after migrate: %v", applied, latest, err)
		}
		// The type's own section, read by the configuration it never links.
		cfg, err := config.Parse(strings.NewReader("handled_types: [tally]\ntally: {max_target: 5}\n"), known)
		if err != nil {
			t.Fatalf("handled_types [tally] with its section: %v", err)
		}
		ecfg := engine.DefaultConfig()
		ecfg.HandledTypes, ecfg.SweepInterval = cfg.HandledTypes, 100*time.Millisecond
		e, err := engine.New(ecfg, db, nil, testkit.CheckedAudit(t), testkit.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		items := &service.Items{Store: db, Notify: e.Notify, HandledHere: cfg.HandledTypes}
		built, err := types.BuildAll(itemtype.Env{Queue: db, Notify: e.Notify, Log: testkit.Quiet()}, stores,
			func(p itemtype.Plugin) any { return compose.Section(cfg, p) }, cfg.HandledTypes)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range built {
			e.Register(b.Type)
			items.Register(b.Type, b.API)
			if b.Face != nil {
				items.Describe(*b.Face)
			}
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Stop(context.Background()) })

		token, hash, _ := auth.NewToken()
		static, err := auth.NewStaticTokens([]auth.Token{{Name: "bot", SHA256: hash, Permissions: []auth.Permission{auth.Submit, auth.Read}}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Store: db, Items: items, Auth: &auth.Chain{Static: static}, Log: testkit.Quiet(),
			MCP: func(api http.Handler) http.Handler {
				return mcpserver.HTTPHandler(api, mcpserver.HTTPOptions{Faces: items.Faces()})
			}}))
		t.Cleanup(srv.Close)
		call := func(method, path string, body any) (int, map[string]any) {
			t.Helper()
			var b []byte
			if body != nil {
				b, _ = json.Marshal(body)
			}
			req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out
		}

		for _, target := range []int{0, 6} { // 6: above the section's max_target
			if status, got := call("POST", "/api/v1/items", map[string]any{"item_type": "tally", "target": target}); status != http.StatusUnprocessableEntity && status != http.StatusBadRequest {
				t.Fatalf("target %d: %d %v, want a refusal naming target", target, status, got)
			}
		}
		status, it := call("POST", "/api/v1/items", map[string]any{"item_type": "tally", "target": 3})
		if status != http.StatusCreated {
			t.Fatalf("submit: %d %v", status, it)
		}
		id := it["id"].(string)
		eventually.True(t, 30*time.Second, "the tally's completion", func() (bool, any) {
			_, got := call("GET", "/api/v1/items/"+id, nil)
			return got["phase"] == string(wq.PhaseCompleted), got
		})
		_, got := call("GET", "/api/v1/items/"+id, nil)
		if d, _ := got["detail"].(map[string]any); got["reason"] != "counted" || d["counted"] != float64(3) || d["target"] != float64(3) {
			t.Errorf("the completed item: %v", got)
		}
		_, list := call("GET", "/api/v1/items?item_type=tally", nil)
		rows, _ := list["items"].([]any)
		if len(rows) != 1 {
			t.Fatalf("list: %v", list)
		}
		if sum, _ := rows[0].(map[string]any)["summary"].(map[string]any); sum["title"] != "tally 3/3" {
			t.Errorf("the list's summary: %v", rows[0])
		}

		// Its face, from its registration alone: an agent submits it
		// with its own MCP tool, and the API's document describes it.
		cs := mcptest.OverHTTP(t, srv.URL+"/mcp", token)
		if names := mcptest.ToolNames(t, cs); !slices.Contains(names, "submit_tally") || slices.Contains(names, "submit_change") {
			t.Errorf("tools %v, want submit_tally and no other type's", names)
		}
		if text := mcptest.Refused(t, cs, "submit_tally", map[string]any{"item_type": "tally", "target": 6}); !strings.Contains(text, "max_target") {
			t.Errorf("submit_tally above max_target: %s", text)
		}
		sub := mcptest.Call[api.Submitted](t, cs, "submit_tally", map[string]any{"item_type": "tally", "target": 2})
		if sub.Result != wq.SubmitCreated || sub.ID == "" {
			t.Fatalf("submit_tally: %+v", sub)
		}
		eventually.True(t, 30*time.Second, "the agent's tally's completion", func() (bool, any) {
			_, got := call("GET", "/api/v1/items/"+sub.ID, nil)
			return got["phase"] == string(wq.PhaseCompleted), got
		})
		_, doc := call("GET", "/api/v1/openapi.json", nil)
		schemas, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
		if _, ok := schemas["TallySubmission"]; !ok || schemas["Submission"] != nil {
			t.Errorf("the document's item schemas are not the registered type's alone: has TallySubmission %v, mr's Submission %v", ok, schemas["Submission"] != nil)
		}
	})
}
