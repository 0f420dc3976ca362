package dashboard

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDetailLinks(t *testing.T) {
	for _, tc := range []struct {
		name, detail string
		want         []link
	}{
		{"a merge request's link is shown", `{"mr_iid": 4, "mr_url": "https://git.example/g/p/-/merge_requests/4"}`,
			[]link{{"MR", "https://git.example/g/p/-/merge_requests/4"}}},
		{"links are sorted by name", `{"z_url": "http://b.example/", "a_url": "https://a.example/"}`,
			[]link{{"A", "https://a.example/"}, {"Z", "http://b.example/"}}},
		{"a script URL is no link", `{"mr_url": "javascript:alert(1)"}`, nil},
		{"a relative URL is no link", `{"mr_url": "/elsewhere"}`, nil},
		{"members not named *_url are no links", `{"web": "https://a.example/"}`, nil},
		{"a detail that is not an object has none", `[1, 2]`, nil},
		{"no detail has none", ``, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, detailLinks(json.RawMessage(tc.detail)), cmp.AllowUnexported(link{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSafeNextStaysOnTheDashboard(t *testing.T) {
	for next, want := range map[string]string{
		"/ui/items/x?done=retry": "/ui/items/x?done=retry",
		"https://evil.example/":  "/ui/items",
		"//evil.example/ui/":     "/ui/items",
		"/ui/\\evil":             "/ui/items",
		"/api/v1/items":          "/ui/items",
		"":                       "/ui/items",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}
