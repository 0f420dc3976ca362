package dashboard

import (
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/service"
)

// pageScopes says, for every page of the dashboard, how it keeps a
// person narrowed to some projects out of the others' (issue 48): the
// service call that scopes it, whose answers to such a person
// httpapi's TestTheDashboardShowsANarrowedCallerItsProjectsOnly checks
// page by page; or why it concerns no project.
var pageScopes = map[string]string{
	"GET /ui/static/":              "none: the stylesheet and images",
	"GET /ui/{$}":                  "scoped: service.Items.List per phase, the person's projects' items pictured",
	"GET /ui/overview/picture":     "scoped: service.Items.List per phase, as the first page",
	"GET /ui/login":                "none: the login form",
	"POST /ui/login":               "none: a login, the person's own token",
	"GET /ui/login/proxy":          "none: a login through the OAuth proxy",
	"POST /ui/logout":              "none: the person's own session",
	"GET /ui/items":                "scoped: service.Items.List, pages of the person's projects",
	"GET /ui/items/{id}":           "scoped: service.Items.ResolveID and Get, another project's item as a missing one",
	"POST /ui/items/{id}/retry":    "scoped: service.Items.Retry, another project's item as a missing one",
	"POST /ui/items/{id}/cancel":   "scoped: service.Items.Cancel, another project's item as a missing one",
	"POST /ui/bulk/{action}":       "scoped: service.Items.List, then Retry or Cancel per item",
	"GET /ui/sessions":             "none: the person identity's own sessions (every one only for an admin of every project)",
	"GET /ui/work":                 "scoped: controlplane.Service.Work with the person's Caller.Projects",
	"GET /ui/leases":               "scoped: controlplane.Service.Leases with the person's Caller.Projects",
	"GET /ui/allocations":          "scoped: controlplane.Service.Events with the person's Caller.Projects",
	"/ui/":                         "none: the page that is not there",
	"GET /ui/queues":               "scoped: service.Items.Queues, each project's queues only where the person may read it",
	"GET /ui/forges":               "scoped: each project's settings and webhook only where the person has read (auth.Caller.CanOn); a forge's version names no project",
	"POST /ui/identities/freeze":   "none: an admin of every project only; an identity is of no project",
	"POST /ui/identities/unfreeze": "none: an admin of every project only; an identity is of no project",
}

// Every page the dashboard serves is in pageScopes: a new page fails this
// until it says how it keeps a narrowed person to their projects.
func TestEveryPageSaysHowItKeepsANarrowedPersonToTheirProjects(t *testing.T) {
	d, err := New(Options{Items: &service.Items{}, Auth: &auth.Chain{}})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, p := range d.pageRoutes() {
		served[p.pattern] = true
		if _, ok := pageScopes[p.pattern]; !ok {
			t.Errorf("page %s is not in pageScopes: say which scoped service call it makes (and probe it in httpapi's dashboard test), or why it concerns no project", p.pattern)
		}
	}
	for pattern := range pageScopes {
		if !served[pattern] {
			t.Errorf("%s is in pageScopes but not served", pattern)
		}
	}
}
