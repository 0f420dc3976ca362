package tally_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/itemtype/itemtypetest/tally"
	"github.com/workqueue-dev/workqueue/service"
)

// types is a program's registry with the one line that adds the type:
// nothing else in the tree names it.
var types = itemtype.NewRegistry(tally.Plugin)

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
		cfg := config.Default()
		cfg.HandledTypes = []string{tally.Name}
		cfg.Processing.SweepInterval = config.Duration(100 * time.Millisecond)
		if err := cfg.Validate(config.Known{ItemTypes: types.Known()}); err != nil {
			t.Fatalf("handled_types [tally]: %v", err)
		}
		ecfg := engine.DefaultConfig()
		ecfg.HandledTypes, ecfg.SweepInterval = cfg.HandledTypes, 100*time.Millisecond
		e, err := engine.New(ecfg, db, nil, &audit.Memory{}, testkit.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		items := &service.Items{Store: db, Notify: e.Notify, HandledHere: cfg.HandledTypes}
		built, err := types.BuildAll(itemtype.Env{Config: cfg, Queue: db, Notify: e.Notify, Log: testkit.Quiet()}, stores)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range built {
			e.Register(b.Type)
			items.Register(b.Type, b.API)
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
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Store: db, Items: items, Auth: &auth.Chain{Static: static}, Log: testkit.Quiet()}))
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

		if status, got := call("POST", "/api/v1/items", map[string]any{"item_type": "tally", "target": 0}); status != http.StatusUnprocessableEntity && status != http.StatusBadRequest {
			t.Fatalf("target 0: %d %v, want a refusal naming target", status, got)
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
	})
}
