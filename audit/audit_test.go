package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
)

func TestLogSinkWritesOneStructuredRecordPerEntry(t *testing.T) {
	var buf bytes.Buffer
	sink := audit.NewLogSink(slog.New(slog.NewJSONHandler(&buf, nil)))
	err := sink.WriteAudit(context.Background(), wq.AuditEntry{
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), EventType: wq.AuditPhaseChange, ItemID: "i1", ItemType: "mr",
		Actor: "host:1/w0", OldState: map[string]any{"phase": "active"}, NewState: map[string]any{"phase": "completed"},
		Trigger: map[string]any{"source": "event"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %v\n%s", err, buf.String())
	}
	for key, want := range map[string]any{"msg": "audit", "event_type": "phase_change", "item": "i1", "item_type": "mr",
		"actor": "host:1/w0", "component": "audit"} {
		if rec[key] != want {
			t.Errorf("%s = %v, want %v", key, rec[key], want)
		}
	}
	if rec["new_state"].(map[string]any)["phase"] != "completed" || rec["trigger"].(map[string]any)["source"] != "event" {
		t.Errorf("state or trigger missing: %v", rec)
	}
	if _, ok := rec["metadata"]; ok {
		t.Error("an empty metadata map was logged")
	}
}

type failing struct{ panics bool }

func (f failing) WriteAudit(context.Context, wq.AuditEntry) error {
	if f.panics {
		panic("disk on fire")
	}
	return errors.New("bucket unreachable")
}

func TestSafeSwallowsAndLogsSinkFailures(t *testing.T) {
	for _, f := range []failing{{panics: false}, {panics: true}} {
		var buf bytes.Buffer
		sink := audit.Safe(f, slog.New(slog.NewTextHandler(&buf, nil)))
		if err := sink.WriteAudit(context.Background(), wq.AuditEntry{EventType: "x", ItemID: "i1"}); err != nil {
			t.Errorf("Safe returned %v", err)
		}
		if !strings.Contains(buf.String(), "entry lost") || !strings.Contains(buf.String(), "item=i1") {
			t.Errorf("failure not logged: %s", buf.String())
		}
	}
}

func TestMultiWritesToEverySinkAndReportsTheFirstError(t *testing.T) {
	var a, b bytes.Buffer
	m := audit.Multi{failing{}, audit.NewLogSink(slog.New(slog.NewTextHandler(&a, nil))), audit.NewLogSink(slog.New(slog.NewTextHandler(&b, nil)))}
	if err := m.WriteAudit(context.Background(), wq.AuditEntry{EventType: "x"}); err == nil {
		t.Error("Multi hid the failing sink's error")
	}
	if a.Len() == 0 || b.Len() == 0 {
		t.Error("a failing sink stopped the others")
	}
}

func TestMemoryKeepsEntriesAndFiltersByType(t *testing.T) {
	m := &audit.Memory{}
	for _, ev := range []string{"a", "b", "a"} {
		m.WriteAudit(context.Background(), wq.AuditEntry{EventType: ev})
	}
	if len(m.Entries()) != 3 || len(m.Entries("a")) != 2 || len(m.Entries("b", "c")) != 1 {
		t.Errorf("entries %v", m.Entries())
	}
}

func TestLogSinkLogsAllowedReadsAtDebugAndDecisionsAtInfo(t *testing.T) {
	var buf bytes.Buffer
	sink := audit.NewLogSink(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for _, e := range []wq.AuditEntry{
		{EventType: wq.AuditAuthAllowed, Trigger: map[string]any{"source": "api", "method": "GET", "path": "/api/v1/items"}},
		{EventType: wq.AuditAuthAllowed, Trigger: map[string]any{"source": "api", "method": "POST", "path": "/api/v1/items"}},
		{EventType: wq.AuditAuthRefused, Trigger: map[string]any{"source": "api", "method": "GET", "path": "/api/v1/items"}},
		{EventType: wq.AuditPhaseChange, ItemID: "i1"},
	} {
		sink.WriteAudit(context.Background(), e)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, rec["level"].(string))
	}
	if want := []string{"DEBUG", "INFO", "INFO", "INFO"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("levels %v, want %v (an allowed GET at debug; a write, a refusal, a change at info)", got, want)
	}
}

// An entry below the logger's level is not built: every request makes
// one, and a service logging at WARN paid for each record it dropped.
func TestLogSinkBuildsNothingItsLevelDrops(t *testing.T) {
	var buf bytes.Buffer
	sink := audit.NewLogSink(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	e := wq.AuditEntry{EventType: wq.AuditPhaseChange, ItemID: "i1", ItemType: "mr", Actor: "engine", Time: time.Now(),
		OldState: map[string]any{"phase": "active"}, NewState: map[string]any{"phase": "completed"}}
	if allocs := testing.AllocsPerRun(100, func() { sink.WriteAudit(context.Background(), e) }); allocs != 0 {
		t.Errorf("%v allocations per dropped entry, want 0", allocs)
	}
	if buf.Len() != 0 {
		t.Errorf("logged %q at WARN", buf.String())
	}
}
