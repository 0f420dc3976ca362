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

// Every needs_* dimension the package declares is in the type's
// Dimensions, whose series are on the first scrape: a new dimension left
// out of the list fails here.
func TestEveryDimensionIsListedForTheFirstScrape(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := mr.Type(mr.Options{}).Dimensions
	found := 0
	for _, f := range pkgs["mr"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			if strings.HasPrefix(s, "needs_") && !strings.ContainsAny(s, " %") {
				found++
				if !slices.Contains(listed, s) {
					t.Errorf("dimension %q is not in the mr type's Dimensions %v", s, listed)
				}
			}
			return true
		})
	}
	if found < len(listed) {
		t.Errorf("found %d needs_* literals, fewer than the %d listed: the scan is broken", found, len(listed))
	}
}
