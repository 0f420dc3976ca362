package dashboard

import (
	"net/http"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
)

type queuesPage struct {
	Queues []wq.ItemQueue
	Hidden int // queues of projects the person may not read, left out
}

// queuesPage shows the queues items wait in (a type's, such as the merge
// trains), each project's only to a person who may read it.
func (d *Dashboard) queuesPage(w http.ResponseWriter, r *http.Request, s *session) {
	if !s.caller.Can(auth.Read) {
		d.refuse(r, s.caller, "no matched rule grants read")
		d.render(w, r, s, http.StatusForbidden, "error", errorPage{Status: http.StatusForbidden,
			Message: "The read permission is required to see the queues."})
		return
	}
	qs, hidden, err := d.o.Items.Queues(r.Context(), s.caller)
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	d.render(w, r, s, http.StatusOK, "queues", queuesPage{Queues: qs, Hidden: hidden})
}
