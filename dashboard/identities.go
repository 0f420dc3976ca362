package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/identity"
)

// identityAction is an admin's freeze (freeze true) or unfreeze of the
// identity the form names, from the sessions page. Admin of every
// project only, as the API's route: a freeze reaches every project.
func (d *Dashboard) identityAction(freeze bool) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		if d.o.Identities == nil {
			d.fail(w, r, s, wq.Errorf(wq.ENOTFOUND, "identities cannot be frozen on this instance"))
			return
		}
		if !s.caller.CanEverywhere(auth.Admin) {
			d.refuse(r, s.caller, "no matched rule grants admin on every project")
			d.fail(w, r, s, wq.Errorf(wq.EFORBIDDEN, "%s may not freeze or unfreeze identities: permission admin on every project is required", s.caller.Identity))
			return
		}
		id := strings.TrimSpace(r.PostFormValue("identity"))
		var err error
		done := "unfrozen"
		if freeze {
			_, err = d.o.Identities.Freeze(r.Context(), s.caller.Identity, id, strings.TrimSpace(r.PostFormValue("reason")))
			done = "frozen"
		} else {
			_, err = d.o.Identities.Unfreeze(r.Context(), s.caller.Identity, id)
		}
		if err != nil {
			d.fail(w, r, s, err)
			return
		}
		http.Redirect(w, r, "/ui/sessions?"+url.Values{"done": {done}, "identity": {id}}.Encode(), http.StatusSeeOther)
	}
}

// refuseFrozen answers a frozen identity's page or form 403, as the API
// answers its calls; it reports whether it answered.
func (d *Dashboard) refuseFrozen(w http.ResponseWriter, r *http.Request, s *session) bool {
	err := d.o.Identities.Check(r.Context(), s.caller.Identity)
	if err == nil {
		return false
	}
	if wq.ErrorReason(err) == identity.ReasonFrozen {
		d.refuse(r, s.caller, wq.ErrorMessage(err))
	}
	d.fail(w, r, s, err)
	return true
}
