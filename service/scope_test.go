package service_test

import (
	"slices"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/service"
)

// A reader narrowed to team-a pages over team-a's items as if the store
// held nothing else: team-b's items, more than a store page of them
// between team-a's, are on no page, no cursor is theirs, a page is full
// whenever team-a has the items to fill it, and a phase's count is
// team-a's (issue 48).
func TestAListNarrowedToAProjectPagesOverItsItemsAlone(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := t.Context()
		st := testdb.Open(t, kind)
		items := &service.Items{Store: st}
		now := time.Now()
		create := func(project string) string {
			t.Helper()
			it, err := st.CreateItem(ctx, wq.NewItem{ItemType: "scope-test", Scope: wq.Scope{Forge: "gitea", Project: project}}, now)
			if err != nil {
				t.Fatal(err)
			}
			return it.ID.String()
		}
		// Newest first: a2, a1, then more of team-b's than a store page
		// holds, then a0.
		a0 := create("team-a/app")
		for range wq.MaxListLimit + 5 {
			create("team-b/app")
		}
		a1, a2 := create("team-a/app"), create("team-a/app")

		reader := &auth.Caller{Identity: "token:a", Grants: []auth.Grant{{Rule: "a", Permissions: []auth.Permission{auth.Read}, Projects: []string{"team-a/**"}}}}
		var pages [][]string
		var cursors []string
		f := wq.ItemFilter{Limit: 2}
		for range 5 {
			page, next, err := items.List(ctx, reader, f)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, ids(page))
			cursors = append(cursors, next)
			if next == "" {
				break
			}
			if f.Before, err = service.ParseID("cursor", next); err != nil {
				t.Fatal(err)
			}
		}
		want := [][]string{{a2, a1}, {a0}}
		if !slices.EqualFunc(pages, want, slices.Equal) {
			t.Errorf("team-a's pages: %q, want %q", pages, want)
		}
		if wantCursors := []string{a1, ""}; !slices.Equal(cursors, wantCursors) {
			t.Errorf("the cursors: %q, want %q (team-a's own ids)", cursors, wantCursors)
		}

		active, _, err := items.List(ctx, reader, wq.ItemFilter{Phase: wq.PhaseActive, Limit: wq.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(active) != 3 {
			t.Errorf("team-a's active items: %d, want its 3", len(active))
		}
		b, _, err := items.List(ctx, reader, wq.ItemFilter{Project: "team-b/app"})
		if err != nil || len(b) != 0 {
			t.Errorf("team-b's items to team-a's reader: %d (%v), want none", len(b), err)
		}

		everyone := &auth.Caller{Identity: "token:all", Grants: []auth.Grant{{Rule: "all", Permissions: []auth.Permission{auth.Read}}}}
		page, next, err := items.List(ctx, everyone, wq.ItemFilter{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(page); len(got) != 3 || got[0] != a2 || got[1] != a1 || next != got[2] {
			t.Errorf("an unnarrowed reader's first page: %q next %q, want a2, a1 and team-b's newest", got, next)
		}
	})
}

func ids(page []*api.Item) []string {
	out := []string{}
	for _, it := range page {
		out = append(out, it.ID)
	}
	return out
}
