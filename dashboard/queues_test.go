package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/example"
)

// queuedAPI is the example type's API with queues of its own, as the mr
// type has its merge trains.
type queuedAPI struct {
	wq.ItemAPI
	queues []wq.ItemQueue
}

func (q queuedAPI) Queues(context.Context) ([]wq.ItemQueue, error) { return q.queues, nil }

func TestTheQueuesPageShowsEachTrainInOrderToWhoMayReadIt(t *testing.T) {
	id := wq.NewItemID()
	queues := []wq.ItemQueue{{Kind: "merge train", Forge: "gl", Project: "team/app", Name: "into main",
		Items: []wq.QueuedItem{{ID: id, Title: "Bump the parser", Link: "https://gl.example/team/app/-/merge_requests/7", LinkName: "!7", State: "CI passed"},
			{ID: wq.NewItemID(), Title: "Fix the lexer", State: "being built on the one ahead"}}}}
	w := newWorldWith(t, func(o *dashboard.Options) {
		o.Items.Register(example.Type(example.Options{}), queuedAPI{ItemAPI: example.API(o.Items.Store), queues: queues})
	})
	reader := browserClient(t)
	login(t, reader, w.base, w.tokens["reader"])
	status, body := get(t, reader, w.base+"/ui/queues")
	if status != http.StatusOK {
		t.Fatalf("/ui/queues: %d\n%s", status, body)
	}
	first, second := strings.Index(body, "Bump the parser"), strings.Index(body, "Fix the lexer")
	if first < 0 || second < first || !strings.Contains(body, "merge train into main of team/app on gl") ||
		!strings.Contains(body, `href="https://gl.example/team/app/-/merge_requests/7"`) || !strings.Contains(body, "/ui/items/"+id.String()) {
		t.Errorf("/ui/queues does not show the train in order:\n%s", body)
	}
	agent := browserClient(t)
	login(t, agent, w.base, w.tokens["agent"])
	if status, _ := get(t, agent, w.base+"/ui/queues"); status != http.StatusForbidden {
		t.Errorf("/ui/queues without read: %d, want 403", status)
	}
}
