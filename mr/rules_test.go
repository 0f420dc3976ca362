package mr_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/mr"
)

// Every Rule constant of the package is in mr.Rules, which the OpenAPI
// document enumerates: a new rule cannot reach callers undocumented.
func TestRulesListsEveryRuleConstant(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range pkgs["mr"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Rule") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					found = append(found, v)
				}
			}
			return true
		})
	}
	if len(found) < 30 {
		t.Fatalf("found only %d rule constants: the test no longer sees them", len(found))
	}
	for _, r := range found {
		if !slices.Contains(mr.Rules, r) {
			t.Errorf("rule %q is not in mr.Rules (nor in the OpenAPI document's enum)", r)
		}
	}
}
