package testkit

import (
	"testing"

	"github.com/workqueue-dev/workqueue/audit"
)

// CheckedAudit is an audit sink that keeps every entry and, when the test
// ends, fails it for each entry that does not carry the states its event
// type's kind asks for (wq.AuditEntry.Check: a change its old and new, a
// creation its new only), or whose event type is not in wq.AuditKinds.
func CheckedAudit(t testing.TB) *audit.Memory {
	t.Helper()
	m := &audit.Memory{}
	t.Cleanup(func() {
		for _, e := range m.Entries() {
			if err := e.Check(); err != nil {
				t.Errorf("audit entry %s of item %s: %v (old %v, new %v)", e.EventType, e.ItemID, err, e.OldState, e.NewState)
			}
		}
	})
	return m
}
