package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dashboard"
)

func TestABulkActionOverTheLimitIsRefusedNamingIt(t *testing.T) {
	w := newWorld(t, "")
	id := w.submit(1)
	w.fail(id, "boom")
	c := browserClient(t)
	if resp := login(t, c, w.base, w.tokens["operator"]); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login answered %d, want 303", resp.StatusCode)
	}
	_, page := get(t, c, w.base+"/ui/items")
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the items page has no form with a CSRF token:\n%s", page)
	}
	// confirm posts a confirmation of a bulk retry of the failed item
	// and n-1 other ids.
	confirm := func(n int) (int, string) {
		t.Helper()
		form := url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "id": {id}}
		for range n - 1 {
			form.Add("id", uuid.NewString())
		}
		resp, err := c.PostForm(w.base+"/ui/bulk/retry", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	status, body := confirm(dashboard.MaxBulkItems + 1)
	if want := fmt.Sprintf("at most %d items", dashboard.MaxBulkItems); status != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
		t.Errorf("a bulk retry of %d items: %d; want 422 naming %q:\n%.2000s", dashboard.MaxBulkItems+1, status, want, body)
	}
	if got := w.phase(id); got != wq.PhaseFailed {
		t.Fatalf("after a refused bulk retry the item is %s, want failed: none of it is done", got)
	}

	if status, body := confirm(dashboard.MaxBulkItems); status != http.StatusSeeOther {
		t.Errorf("a bulk retry of %d items: %d, want 303:\n%.2000s", dashboard.MaxBulkItems, status, body)
	}
	if got := w.phase(id); got != wq.PhaseActive {
		t.Errorf("after a bulk retry at the limit the item is %s, want active", got)
	}
}
