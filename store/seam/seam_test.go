package seam

import (
	"fmt"
	"testing"
)

// Placeholders become $1, $2… in order, whatever else the statement
// holds, and a statement asked for again gets the same rewrite.
func TestPlaceholdersAreNumberedInOrder(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 1":     "SELECT 1",
		"SELECT ? , ?": "SELECT $1 , $2",
		"UPDATE t SET a = ?, b = 'é' WHERE c = ?": "UPDATE t SET a = $1, b = 'é' WHERE c = $2",
		"?": "$1",
	} {
		for range 2 { // the first rewrite, then the kept one
			if got := numberPlaceholders(q); got != want {
				t.Errorf("%q: %q, want %q", q, got, want)
			}
		}
	}
}

// Statements built at run time never grow the kept rewrites past their
// bound, and are still rewritten.
func TestKeptRewritesAreBounded(t *testing.T) {
	for i := range maxNumbered + 100 {
		q := fmt.Sprintf("SELECT ? -- %d", i)
		if got, want := numberPlaceholders(q), fmt.Sprintf("SELECT $1 -- %d", i); got != want {
			t.Fatalf("%q: %q, want %q", q, got, want)
		}
	}
	if n := numberedCount.Load(); n > maxNumbered {
		t.Errorf("%d rewrites kept, bound %d", n, maxNumbered)
	}
}

func FuzzNumberPlaceholders(f *testing.F) {
	f.Add("SELECT ? FROM t WHERE x = ?")
	f.Add("é?ü?")
	f.Fuzz(func(t *testing.T, q string) {
		got := numberPlaceholders(q)
		n := 0
		var want []byte
		for i := 0; i < len(q); i++ {
			if q[i] == '?' {
				n++
				want = fmt.Appendf(want, "$%d", n)
			} else {
				want = append(want, q[i])
			}
		}
		if got != string(want) {
			t.Errorf("%q: %q, want %q", q, got, want)
		}
	})
}
