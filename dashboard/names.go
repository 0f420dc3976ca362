package dashboard

import (
	"context"
	"fmt"

	"github.com/workqueue-dev/workqueue/controlplane"
)

// The control plane's pages name work as people know it (issue 55):
// "platform/api #7 (issue)", its title, a link to its page on the forge,
// and the session holding it by its name and identity, never by the
// end of an id. A page reads each work item and session it names once.

// workName is one work item as a page names it.
type workName struct {
	ID    string
	Label string // "platform/api #7 (issue)"
	Title string
	URL   string // its page on the forge; "" when the forge's address is not known
	Known bool   // false: the work is no longer in the inventory, and only its id is shown
}

// sessionName is one session as a page names it.
type sessionName struct {
	ID, Name, Identity, Role string
	Known                    bool
}

// Label is the session's name, or its id when it has none.
func (s sessionName) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.ID
}

// namer reads the work and sessions a page names, each once.
type namer struct {
	d        *Dashboard
	work     map[string]workName
	sessions map[string]sessionName
}

func (d *Dashboard) namer() *namer {
	return &namer{d: d, work: map[string]workName{}, sessions: map[string]sessionName{}}
}

// nameWork names w, with the link its forge's kind makes.
func (d *Dashboard) nameWork(w *controlplane.Work) workName {
	n := workName{ID: w.ID, Label: fmt.Sprintf("%s #%d (%s)", w.Repo, w.Number, w.Kind), Title: w.Title, Known: true}
	if d.o.WorkURL != nil {
		n.URL = d.o.WorkURL(w.Forge, w.Repo, string(w.Kind), w.Number)
	}
	return n
}

// workOf names the work of id. The pages call it only with ids the
// control plane's scoped lists gave the person.
func (n *namer) workOf(ctx context.Context, id string) workName {
	if id == "" {
		return workName{}
	}
	if w, ok := n.work[id]; ok {
		return w
	}
	name := workName{ID: id, Label: id}
	if w, err := n.d.o.ControlPlane.Store.GetWork(ctx, id); err == nil {
		name = n.d.nameWork(w)
	}
	n.work[id] = name
	return name
}

// sessionOf names the session of id.
func (n *namer) sessionOf(ctx context.Context, id string) sessionName {
	if id == "" {
		return sessionName{}
	}
	if s, ok := n.sessions[id]; ok {
		return s
	}
	name := sessionName{ID: id}
	if s, err := n.d.o.ControlPlane.Store.GetSession(ctx, id); err == nil {
		name = sessionName{ID: id, Name: s.Name, Identity: s.Identity, Role: string(s.Role), Known: true}
	}
	n.sessions[id] = name
	return name
}
