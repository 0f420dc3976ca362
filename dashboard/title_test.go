package dashboard

import (
	"encoding/json"
	"testing"

	"github.com/workqueue-dev/workqueue/api"
)

func TestTheTitleColumnShowsTheTitleOfAnyTypesSummaryOrDetail(t *testing.T) {
	for _, tc := range []struct {
		name string
		it   api.Item
		want string
	}{
		{"a summary's title", api.Item{Summary: json.RawMessage(`{"title":"Add a greeting","mr_iid":3}`)}, "Add a greeting"},
		{"a detail's title when the summary has none", api.Item{Detail: json.RawMessage(`{"title":"From the detail"}`)}, "From the detail"},
		{"no title at all", api.Item{Detail: json.RawMessage(`{"steps":2}`)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summaryTitle(&tc.it); got != tc.want {
				t.Errorf("summaryTitle = %q, want %q", got, tc.want)
			}
		})
	}
}
