package workqueue_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// Every audit event type the code can emit says what it records
// (wq.AuditKinds): the module's string constants named Audit… are the
// event types, every one of them is in the table, and no entry is written
// with a literal event type that could escape it. A submission's outcome
// ("item_" + its result) is in the table for every result.
func TestEveryAuditEventTypeTheCodeEmitsIsInTheTable(t *testing.T) {
	fset := token.NewFileSet()
	consts := map[string]string{} // name → value, of string constants named Audit…
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "tools" || name == "bench" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				// Typed constants (wq.AuditKind) and config's sink kinds
				// (config.AuditDir…) are not event types.
				if n.Type != nil || strings.HasPrefix(path, "config/") {
					return true
				}
				for i, name := range n.Names {
					if !strings.HasPrefix(name.Name, "Audit") || i >= len(n.Values) {
						continue
					}
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						consts[path+": "+name.Name] = v
					}
				}
			case *ast.CompositeLit:
				if !isAuditEntry(n.Type) {
					return true
				}
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if key, isKey := kv.Key.(*ast.Ident); !ok || !isKey || key.Name != "EventType" {
						continue
					}
					if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						t.Errorf("%s: an audit entry's event type is the literal %s: name it with an Audit… constant in wq.AuditKinds", fset.Position(kv.Pos()), lit.Value)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(consts) < len(wq.AuditKinds) {
		t.Fatalf("found %d Audit… constants, fewer than the table's %d: the walk missed some", len(consts), len(wq.AuditKinds))
	}
	for where, v := range consts {
		if _, ok := wq.AuditKinds[v]; !ok {
			t.Errorf("%s = %q is not in wq.AuditKinds: say whether it records a change, a creation or neither", where, v)
		}
	}
	for _, r := range []wq.SubmitResult{wq.SubmitCreated, wq.SubmitUnchanged, wq.SubmitUpdated, wq.SubmitRetried} {
		if _, ok := wq.AuditKinds[wq.AuditSubmitted(r)]; !ok {
			t.Errorf("a submission's outcome %s is not in wq.AuditKinds", wq.AuditSubmitted(r))
		}
	}
}

// isAuditEntry reports whether a composite literal's type is the audit
// entry (wq.AuditEntry, or AuditEntry in the root package).
func isAuditEntry(typ ast.Expr) bool {
	switch t := typ.(type) {
	case *ast.Ident:
		return t.Name == "AuditEntry"
	case *ast.SelectorExpr:
		return t.Sel.Name == "AuditEntry"
	}
	return false
}

// Check holds each kind to its states.
func TestAnAuditEntryCarriesTheStatesItsKindAsksFor(t *testing.T) {
	st := map[string]any{"phase": "active"}
	for _, c := range []struct {
		e  wq.AuditEntry
		ok bool
	}{
		{wq.AuditEntry{EventType: wq.AuditPhaseChange, OldState: st, NewState: st}, true},
		{wq.AuditEntry{EventType: wq.AuditPhaseChange, NewState: st}, false},
		{wq.AuditEntry{EventType: wq.AuditItemRetried, OldState: st}, false},
		{wq.AuditEntry{EventType: wq.AuditItemCreated, NewState: st}, true},
		{wq.AuditEntry{EventType: wq.AuditItemCreated, OldState: st, NewState: st}, false},
		{wq.AuditEntry{EventType: wq.AuditDimensionChange, NewState: st, Metadata: map[string]any{"first_write": true}}, true},
		{wq.AuditEntry{EventType: wq.AuditDimensionChange, NewState: st}, false},
		{wq.AuditEntry{EventType: wq.AuditAuthRefused}, true},
		{wq.AuditEntry{EventType: "made_up"}, false},
	} {
		if err := c.e.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: Check() = %v, want ok %v", c.e, err, c.ok)
		}
	}
}
