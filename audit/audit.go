package audit

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	wq "github.com/workqueue-dev/workqueue"
)

// LogSink writes each entry as one structured log record: at INFO, but
// a read that was allowed at DEBUG (readLevel), so that the log is not
// one line per GET. Every decision that refuses or changes state stays at
// INFO, and archive sinks receive every entry alike.
type LogSink struct {
	log *slog.Logger
}

// NewLogSink returns a sink that logs through log.
func NewLogSink(log *slog.Logger) *LogSink {
	return &LogSink{log: log.With("component", "audit")}
}

// WriteAudit logs the entry.
func (s *LogSink) WriteAudit(ctx context.Context, e wq.AuditEntry) error {
	lv := level(e)
	if !s.log.Enabled(ctx, lv) {
		return nil // a record the level drops is not built
	}
	attrs := []slog.Attr{slog.String("event_type", e.EventType), slog.String("actor", e.Actor), slog.Time("at", e.Time)}
	if e.ItemID != "" {
		attrs = append(attrs, slog.String("item", e.ItemID), slog.String("item_type", e.ItemType))
	}
	for _, f := range []struct {
		key string
		m   map[string]any
	}{{"old_state", e.OldState}, {"new_state", e.NewState}, {"trigger", e.Trigger}, {"metadata", e.Metadata}} {
		if len(f.m) > 0 {
			attrs = append(attrs, slog.Any(f.key, f.m))
		}
	}
	s.log.LogAttrs(ctx, lv, "audit", attrs...)
	return nil
}

// level is the log level of an entry: DEBUG for an allowed read (a GET or
// HEAD through the API or the dashboard), INFO for anything else.
func level(e wq.AuditEntry) slog.Level {
	if e.EventType == wq.AuditAuthAllowed {
		if m, _ := e.Trigger["method"].(string); m == http.MethodGet || m == http.MethodHead {
			return slog.LevelDebug
		}
	}
	return slog.LevelInfo
}

// Multi fans an entry out to several sinks; it returns the first error
// after trying them all.
type Multi []wq.AuditSink

// WriteAudit writes to every sink.
func (m Multi) WriteAudit(ctx context.Context, e wq.AuditEntry) error {
	var first error
	for _, s := range m {
		if err := s.WriteAudit(ctx, e); err != nil && first == nil {
			first = err
		}
	}
	return first
}

type safe struct {
	sink wq.AuditSink
	log  *slog.Logger
}

// Safe wraps sink so that WriteAudit never fails and never panics: errors
// and panics are logged and swallowed (DDR-28: audit failures never
// propagate).
func Safe(sink wq.AuditSink, log *slog.Logger) wq.AuditSink {
	return &safe{sink: sink, log: log.With("component", "audit")}
}

func (s *safe) WriteAudit(ctx context.Context, e wq.AuditEntry) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("audit sink panicked; entry lost", "event_type", e.EventType, "item", e.ItemID, "panic", p)
		}
	}()
	if err := s.sink.WriteAudit(ctx, e); err != nil {
		s.log.Error("audit sink failed; entry lost", "event_type", e.EventType, "item", e.ItemID, "err", err)
	}
	return nil
}

// Memory keeps every entry in memory, for tests and for callers that
// inspect what was audited.
type Memory struct {
	mu      sync.Mutex
	entries []wq.AuditEntry
}

// WriteAudit keeps e.
func (m *Memory) WriteAudit(_ context.Context, e wq.AuditEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	return nil
}

// Entries returns the entries kept so far, oldest first; with event
// types given, only entries of those types.
func (m *Memory) Entries(eventTypes ...string) []wq.AuditEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []wq.AuditEntry
	for _, e := range m.entries {
		if len(eventTypes) == 0 || slices.Contains(eventTypes, e.EventType) {
			out = append(out, e)
		}
	}
	return out
}
