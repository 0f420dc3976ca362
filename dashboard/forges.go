package dashboard

import (
	"net/http"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/forgecheck"
)

// ForgeChecks is what serve found of its forges (issue 50,
// docs/forge-checks.md): their versions and projects' settings, read at
// start, and the webhook check's last findings.
type ForgeChecks interface {
	Reports() []forgecheck.Report
	// Hooks returns the last check of each project's webhook, and why
	// hooks are not checked when they are not.
	Hooks() ([]forgecheck.HookStatus, string)
}

type forgesPage struct {
	Reports        []forgecheck.Report
	Hooks          []forgecheck.HookStatus
	HooksOff       string
	NotRead        bool // the settings are still being read
	HiddenProjects int  // projects the person may not read, left out
}

// forgesPage shows the forges' checks, each project's only to a person
// who may read it.
func (d *Dashboard) forgesPage(w http.ResponseWriter, r *http.Request, s *session) {
	if !s.caller.Can(auth.Read) {
		d.refuse(r, s.caller, "no matched rule grants read")
		d.render(w, r, s, http.StatusForbidden, "error", errorPage{Status: http.StatusForbidden,
			Message: "The read permission is required to see the forges' checks."})
		return
	}
	p := forgesPage{HooksOff: "this instance does not check forges"}
	if d.o.Forges != nil {
		reports := d.o.Forges.Reports()
		p.NotRead = reports == nil
		for _, rep := range reports {
			shown := rep
			shown.Projects = nil
			for _, pr := range rep.Projects {
				if pr.Project == "" || s.caller.CanOn(auth.Read, pr.Project) {
					shown.Projects = append(shown.Projects, pr)
				} else {
					p.HiddenProjects++
				}
			}
			p.Reports = append(p.Reports, shown)
		}
		var hooks []forgecheck.HookStatus
		hooks, p.HooksOff = d.o.Forges.Hooks()
		for _, h := range hooks {
			if h.Project == "" || s.caller.CanOn(auth.Read, h.Project) {
				p.Hooks = append(p.Hooks, h)
			} else {
				p.HiddenProjects++
			}
		}
	}
	d.render(w, r, s, http.StatusOK, "forges", p)
}
