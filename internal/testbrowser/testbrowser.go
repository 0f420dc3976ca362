// Package testbrowser gives tests the headless Chromium that scripts/test
// installs from Debian's packages (TEST_CHROMIUM, else chromium on PATH).
//
// Without one a browser test skips, except when CI is set: then it fails,
// because a dashboard test that silently skips is a failed run.
package testbrowser

import (
	"os"
	"os/exec"
	"testing"
)

// Path returns the Chromium binary, or skips (fails in CI) when there is
// none.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TEST_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("TEST_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium (TEST_CHROMIUM, or chromium on PATH) in CI: the browser tests must run (use scripts/test, which installs Debian's chromium)")
	}
	t.Skip("no Chromium; run scripts/test, which installs Debian's chromium package, for the browser tests")
	return ""
}
