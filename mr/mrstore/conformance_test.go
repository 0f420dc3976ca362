package mrstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store/storetest"
)

// MRStore is a database as the suite needs it: the generic store and the
// mr type's.
type MRStore interface {
	wq.Store
	mr.Store
}

var T0 = storetest.T0

// TestConformance runs the mr store's conformance suite on both drivers.
func TestConformance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		runConformance(t, func(t *testing.T) MRStore { return testdb.Open(t, kind) })
	})
}

// mrPart is the mr store itself: a testdb.Store's MR, whose optional
// interfaces are what serve finds, not the test store's forwards.
func mrPart(s MRStore) any {
	if db, ok := s.(*testdb.Store); ok {
		return db.MR
	}
	return s
}

func runConformance(t *testing.T, open func(t *testing.T) MRStore) {
	ctx := context.Background()
	content := "hello\n"
	detail := mr.Detail{Forge: "gitea", Project: "o/r", SourceBranch: "wq/a", TargetBranch: "main", Title: "T", Description: "D",
		CommitMessage: "C", Labels: []string{"managed"}, FileActions: []mr.FileAction{{Action: mr.ActionCreate, FilePath: "a", Content: &content}}, AutoMerge: true}
	newItem := func(gen int) wq.NewItem {
		return wq.NewItem{ItemType: mr.ItemType, IdempotencyKey: mr.IdempotencyKey("gitea", "o/r", "wq/a"), Generation: gen, ContentHash: "h1"}
	}
	create := func(t *testing.T, s MRStore, edit ...func(*wq.NewItem, *mr.Detail)) *wq.Item {
		t.Helper()
		n, d := newItem(1), detail
		for _, e := range edit {
			e(&n, &d)
		}
		it, err := s.CreateMR(ctx, n, d, T0)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}

	t.Run("open merge requests are the active items with a recorded one, by project", func(t *testing.T) {
		s := open(t)
		none := create(t, s) // no merge request yet
		withMR := create(t, s, func(n *wq.NewItem, d *mr.Detail) {
			n.IdempotencyKey, d.SourceBranch = mr.IdempotencyKey("gitea", "o/r", "wq/b"), "wq/b"
		})
		ended := create(t, s, func(n *wq.NewItem, d *mr.Detail) {
			n.IdempotencyKey, d.SourceBranch = mr.IdempotencyKey("gitea", "o/r", "wq/c"), "wq/c"
		})
		for _, it := range []*wq.Item{withMR, ended} {
			l, err := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.RecordForgeState(ctx, l, mr.ForgeState{MRNumber: 7, HeadSHA: "abc"}, T0); err != nil {
				t.Fatal(err)
			}
			if it == ended {
				if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted, Reason: "merged"}, T0); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := s.OpenMRs(ctx, "gitea")
		if err != nil {
			t.Fatal(err)
		}
		if want := []mr.OpenMR{{ItemID: withMR.ID, Project: "o/r", Number: 7, HeadSHA: "abc"}}; !cmp.Equal(want, got) {
			t.Errorf("OpenMRs = %+v, want %+v (not %s, which has none, nor the ended one)", got, want, none.ID)
		}
		if other, err := s.OpenMRs(ctx, "gitlab"); err != nil || len(other) != 0 {
			t.Errorf("another forge's: %+v, %v", other, err)
		}
	})

	t.Run("summaries give many items' titles and merge requests in one call", func(t *testing.T) {
		s := open(t)
		a := create(t, s)
		b := create(t, s, func(n *wq.NewItem, d *mr.Detail) {
			n.IdempotencyKey, d.SourceBranch, d.Title = mr.IdempotencyKey("gitea", "o/r", "wq/b"), "wq/b", "Second"
		})
		l, err := s.ClaimItem(ctx, b.ID, "w", T0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RecordForgeState(ctx, l, mr.ForgeState{MRNumber: 7, MRURL: "https://forge/o/r/pulls/7"}, T0); err != nil {
			t.Fatal(err)
		}
		got, err := s.MRSummaries(ctx, []wq.ItemID{a.ID, b.ID, wq.NewItemID()})
		if err != nil {
			t.Fatal(err)
		}
		want := map[wq.ItemID]mr.Summary{a.ID: {Title: "T"}, b.ID: {Title: "Second", MRNumber: 7, MRURL: "https://forge/o/r/pulls/7"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("summaries (-want +got):\n%s", diff)
		}
		if none, err := s.MRSummaries(ctx, nil); err != nil || len(none) != 0 {
			t.Errorf("summaries of no items: %v, %v", none, err)
		}
	})

	t.Run("an mr item is stored with its detail and found by its natural key", func(t *testing.T) {
		s := open(t)
		it, err := s.CreateMR(ctx, newItem(1), detail, T0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetMRDetail(ctx, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := detail
		want.ContentHash = "h1" // the item's, read with the file actions
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("detail (-want +got):\n%s", diff)
		}
		found, fd, err := s.FindMRItem(ctx, "gitea", "o/r", "wq/a")
		if err != nil || found == nil || found.ID != it.ID || fd.Title != "T" {
			t.Fatalf("FindMRItem = %+v, %+v, %v", found, fd, err)
		}
		if none, _, err := s.FindMRItem(ctx, "gitea", "o/r", "other"); err != nil || none != nil {
			t.Errorf("FindMRItem for another branch = %+v, %v", none, err)
		}
		if g, err := s.LatestMRGeneration(ctx, "gitea", "o/r", "wq/a"); err != nil || g != 1 {
			t.Errorf("LatestMRGeneration = %d, %v", g, err)
		}
		if _, err := s.GetMRDetail(ctx, wq.NewItemID()); wq.ErrorCode(err) != wq.ENOTFOUND {
			t.Errorf("detail of a missing item: %v", err)
		}
	})

	t.Run("a second live item for the same branch is a conflict; a new generation after a terminal one is not", func(t *testing.T) {
		s := open(t)
		first, err := s.CreateMR(ctx, newItem(1), detail, T0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateMR(ctx, newItem(2), detail, T0); wq.ErrorCode(err) != wq.ECONFLICT {
			t.Fatalf("second live item: %v, want conflict", err)
		}
		l, _ := s.ClaimItem(ctx, first.ID, "w", T0, time.Minute)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted}, T0); err != nil {
			t.Fatal(err)
		}
		if found, _, _ := s.FindMRItem(ctx, "gitea", "o/r", "wq/a"); found != nil {
			t.Error("a completed item is still found as live")
		}
		second, err := s.CreateMR(ctx, newItem(2), detail, T0)
		if err != nil {
			t.Fatalf("new generation: %v", err)
		}
		if g, _ := s.LatestMRGeneration(ctx, "gitea", "o/r", "wq/a"); g != 2 || second.Generation != 2 {
			t.Errorf("generation %d, latest %d", second.Generation, g)
		}
	})

	t.Run("what a submission decides on, read at once, agrees with the item, its owner and its number read apart", func(t *testing.T) {
		s := open(t)
		currentOf, ok := mrPart(s).(mr.CurrentReader)
		if !ok {
			t.Fatalf("the mr store %T does not read what a submission decides on at once", s)
		}
		check := func(step string) {
			t.Helper()
			c, err := currentOf.CurrentMR(ctx, "gitea", "o/r", "wq/a")
			item, d, err0 := s.FindMRItem(ctx, "gitea", "o/r", "wq/a")
			owner, phase, err1 := s.LatestMROwner(ctx, "gitea", "o/r", "wq/a")
			g, err2 := s.LatestMRGeneration(ctx, "gitea", "o/r", "wq/a")
			if err != nil || err0 != nil || err1 != nil || err2 != nil {
				t.Fatalf("%s: %v; apart %v, %v, %v", step, err, err0, err1, err2)
			}
			if c.Owner != owner || c.Phase != phase || c.Generation != g {
				t.Errorf("%s: CurrentMR's latest = %q %q %d; apart %q %q %d", step, c.Owner, c.Phase, c.Generation, owner, phase, g)
			}
			if diff := cmp.Diff(item, c.Item); diff != "" {
				t.Errorf("%s: CurrentMR's item differs from FindMRItem's (-apart +at once):\n%s", step, diff)
			}
			if diff := cmp.Diff(d, c.Detail); diff != "" {
				t.Errorf("%s: CurrentMR's detail differs from FindMRItem's (-apart +at once):\n%s", step, diff)
			}
		}
		check("no item")
		first, err := s.CreateMR(ctx, newItem(1), detail, T0)
		if err != nil {
			t.Fatal(err)
		}
		check("one active item")
		l, _ := s.ClaimItem(ctx, first.ID, "w", T0, time.Minute)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCancelled}, T0); err != nil {
			t.Fatal(err)
		}
		check("its generation cancelled")
		second, err := s.CreateMR(ctx, newItem(2), detail, T0)
		if err != nil {
			t.Fatal(err)
		}
		check("a second generation")
		l, _ = s.ClaimItem(ctx, second.ID, "w", T0, time.Minute)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseFailed, Error: "e"}, T0); err != nil {
			t.Fatal(err)
		}
		check("the second generation failed")
	})

	t.Run("a branch's first item is created without a read, and only while the branch never had one", func(t *testing.T) {
		s := open(t)
		firstOf, ok := mrPart(s).(mr.FirstCreator)
		if !ok {
			t.Fatalf("the mr store %T does not create a branch's first item in one step", s)
		}
		first, created, err := firstOf.CreateFirstMR(ctx, newItem(0), detail, T0)
		if err != nil || !created {
			t.Fatalf("CreateFirstMR on a new branch = %v, %v; want it created", created, err)
		}
		if first.Generation != 1 {
			t.Errorf("first item's generation = %d; want 1", first.Generation)
		}
		found, d, err := s.FindMRItem(ctx, "gitea", "o/r", "wq/a")
		if err != nil || found == nil || found.ID != first.ID || d.Title != detail.Title {
			t.Fatalf("FindMRItem after CreateFirstMR = %v, %v, %v; want the item and its detail", found, d, err)
		}
		// A live item: nothing is written, whatever the idempotency key.
		if it, created, err := firstOf.CreateFirstMR(ctx, newItem(0), detail, T0); err != nil || created || it != nil {
			t.Fatalf("CreateFirstMR on a branch with a live item = %v, %v, %v; want nothing created, no error", it, created, err)
		}
		// A cancelled one: still nothing, though its key is free again
		// (the submission must read the owner of the branch's last item).
		l, _ := s.ClaimItem(ctx, first.ID, "w", T0, time.Minute)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCancelled}, T0); err != nil {
			t.Fatal(err)
		}
		if it, created, err := firstOf.CreateFirstMR(ctx, newItem(0), detail, T0); err != nil || created || it != nil {
			t.Fatalf("CreateFirstMR on a branch whose item was cancelled = %v, %v, %v; want nothing created, no error", it, created, err)
		}
		if g, _ := s.LatestMRGeneration(ctx, "gitea", "o/r", "wq/a"); g != 1 {
			t.Errorf("after refused first creations the latest generation is %d; want 1", g)
		}
		// The same branch name in another project is another branch.
		other := detail
		other.Project = "o/other"
		n := newItem(0)
		n.IdempotencyKey = mr.IdempotencyKey("gitea", "o/other", "wq/a")
		if _, created, err := firstOf.CreateFirstMR(ctx, n, other, T0); err != nil || !created {
			t.Fatalf("CreateFirstMR for the branch name in another project = %v, %v; want it created", created, err)
		}
	})

	t.Run("resubmitting replaces the desired state, needs_mr and wakes the item, only at the seen revision", func(t *testing.T) {
		s := open(t)
		it := create(t, s)
		l, _ := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: mr.DimMR}, Status: wq.StatusFalse}}}, T0); err != nil {
			t.Fatal(err)
		}
		if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || !exited {
			t.Fatal(exited, err)
		}
		changed := detail
		changed.Title, changed.TargetBranch = "T2", "develop"
		got, err := s.ResubmitMR(ctx, it.ID, it.Revision, changed, "h2", it.CallerIdentity, T0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Actionable || got.Revision != it.Revision+1 || got.ContentHash != "h2" || got.Dimensions[wq.DimensionKey{Dimension: mr.DimMR}].Status != wq.StatusTrue {
			t.Errorf("after resubmit: %+v", got)
		}
		if d, _ := s.GetMRDetail(ctx, it.ID); d.Title != "T2" || d.TargetBranch != "develop" {
			t.Errorf("detail after resubmit: %+v", d)
		}
		if _, err := s.ResubmitMR(ctx, it.ID, it.Revision, changed, "h3", it.CallerIdentity, T0); wq.ErrorCode(err) != wq.ECONFLICT {
			t.Errorf("resubmit at a stale revision: %v, want conflict", err)
		}
	})

	t.Run("resubmitting a failed item makes it active with a clean slate", func(t *testing.T) {
		s := open(t)
		it := create(t, s)
		l, _ := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
		if _, err := s.RecordFailure(ctx, l, wq.Failure{Error: "boom", Fail: true}, T0); err != nil {
			t.Fatal(err)
		}
		_ = s.ReleaseLease(ctx, l)
		failed, _ := s.GetItem(ctx, it.ID)
		got, err := s.ResubmitMR(ctx, it.ID, failed.Revision, detail, "h1", it.CallerIdentity, T0)
		if err != nil {
			t.Fatal(err)
		}
		if got.Phase != wq.PhaseActive || got.Attempts != 0 || got.Error != "" || !got.FinishedAt.IsZero() || !got.Actionable {
			t.Errorf("after retry: %+v", got)
		}
	})

	t.Run("events resolve to the active item by number, pipeline, branch or pushed head", func(t *testing.T) {
		s := open(t)
		it := create(t, s)
		other := create(t, s, func(n *wq.NewItem, d *mr.Detail) {
			d.SourceBranch = "wq/other"
			n.IdempotencyKey = mr.IdempotencyKey(d.Forge, d.Project, d.SourceBranch)
		})
		find := func(forge, project string, ref mr.EventRef) (wq.ItemID, bool) {
			t.Helper()
			id, ok, err := s.FindActiveMR(ctx, forge, project, ref)
			if err != nil {
				t.Fatal(err)
			}
			return id, ok
		}
		if id, ok := find("gitea", "o/r", mr.EventRef{Number: 7, SourceBranch: "wq/a"}); !ok || id != it.ID {
			t.Errorf("by branch before the number is known: %v %v", id, ok)
		}
		if id, ok := find("gitea", "o/r", mr.EventRef{Number: 7, SourceBranch: "wq/a", TargetBranch: "main"}); !ok || id != it.ID {
			t.Errorf("by branch and target before the number is known: %v %v", id, ok)
		}
		if _, ok := find("gitea", "o/r", mr.EventRef{Number: 7, SourceBranch: "wq/a", TargetBranch: "release"}); ok {
			t.Error("a merge request from the branch into another target resolved before the number is known")
		}
		if id, ok := find("gitea", "o/r", mr.EventRef{SourceBranch: "wq/a"}); !ok || id != it.ID {
			t.Errorf("a CI event by branch before the number is known: %v %v", id, ok)
		}
		if _, ok := find("gitea", "o/r", mr.EventRef{HeadSHA: ""}); ok {
			t.Error("an empty reference resolved")
		}
		if _, ok := find("gitea", "o/r", mr.EventRef{Number: 7}); ok {
			t.Error("a number no item has recorded resolved (an empty head or a NULL number matched)")
		}
		l, _ := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
		if err := s.RecordForgeState(ctx, l, mr.ForgeState{MRNumber: 7, HeadSHA: "abc", HeadPipelineID: 40}, T0); err != nil {
			t.Fatal(err)
		}
		ol, _ := s.ClaimItem(ctx, other.ID, "w", T0, time.Minute)
		if err := s.RecordForgeState(ctx, ol, mr.ForgeState{MRNumber: 8, HeadSHA: "def", HeadPipelineID: 41}, T0); err != nil {
			t.Fatal(err)
		}
		if d, err := s.GetMRDetail(ctx, it.ID); err != nil || d.HeadPipelineID != 40 {
			t.Errorf("head pipeline recorded: %+v %v", d, err)
		}
		for name, tc := range map[string]struct {
			ref  mr.EventRef
			want wq.ItemID
		}{
			"number":                     {mr.EventRef{Number: 7, SourceBranch: "elsewhere"}, it.ID},
			"number beats branch":        {mr.EventRef{Number: 8, SourceBranch: "wq/a"}, other.ID},
			"pipeline":                   {mr.EventRef{PipelineID: 41}, other.ID},
			"pipeline beats branch":      {mr.EventRef{PipelineID: 40, SourceBranch: "wq/other"}, it.ID},
			"pushed head beats branch":   {mr.EventRef{SourceBranch: "wq/a", HeadSHA: "def"}, other.ID},
			"pushed head":                {mr.EventRef{HeadSHA: "def"}, other.ID},
			"number of another pipeline": {mr.EventRef{Number: 7, PipelineID: 41}, it.ID},
		} {
			if id, ok := find("gitea", "o/r", tc.ref); !ok || id != tc.want {
				t.Errorf("%s: resolved %v %v, want %v", name, id, ok, tc.want)
			}
		}
		for name, miss := range map[string]struct {
			forge, project string
			ref            mr.EventRef
		}{
			"other forge":   {"gitlab", "o/r", mr.EventRef{Number: 7, SourceBranch: "wq/a"}},
			"other project": {"gitea", "o/x", mr.EventRef{Number: 7, SourceBranch: "wq/a"}},
			"nothing known": {"gitea", "o/r", mr.EventRef{Number: 9, PipelineID: 9, SourceBranch: "nope", HeadSHA: "fff"}},
			// Once an item has its number, only its own merge request's events
			// are its: a person's other pull request from the same branch
			// (into another target) must not move it.
			"another merge request from the same branch": {"gitea", "o/r", mr.EventRef{Number: 67, SourceBranch: "wq/a", TargetBranch: "release"}},
			"another merge request naming our head":      {"gitea", "o/r", mr.EventRef{Number: 67, SourceBranch: "wq/a", HeadSHA: "abc"}},
			"a CI event by branch after the number":      {"gitea", "o/r", mr.EventRef{PipelineID: 99, SourceBranch: "wq/other"}},
		} {
			if _, ok := find(miss.forge, miss.project, miss.ref); ok {
				t.Errorf("%s resolved", name)
			}
		}
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted}, T0); err != nil {
			t.Fatal(err)
		}
		if _, ok := find("gitea", "o/r", mr.EventRef{Number: 7, SourceBranch: "wq/a"}); ok {
			t.Error("a completed item still resolves (DDR-32: active only)")
		}
	})

	t.Run("items are listed by forge and project", func(t *testing.T) {
		s := open(t)
		mine := create(t, s)
		other := detail
		other.Project, other.SourceBranch = "o/other", "wq/b"
		n := newItem(1)
		n.IdempotencyKey = mr.IdempotencyKey("gitea", "o/other", "wq/b")
		if _, err := s.CreateMR(ctx, n, other, T0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateItem(ctx, wq.NewItem{ItemType: "example"}, T0); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListItems(ctx, wq.ItemFilter{Forge: "gitea", Project: "o/r"})
		if err != nil || len(got) != 1 || got[0].ID != mine.ID {
			t.Errorf("by project: %v, %v; want only %s", got, err, mine.ID)
		}
		if got, _ := s.ListItems(ctx, wq.ItemFilter{Forge: "gitea"}); len(got) != 2 {
			t.Errorf("by forge: %d items, want the 2 mr items", len(got))
		}
		if got, _ := s.ListItems(ctx, wq.ItemFilter{Forge: "gitlab"}); len(got) != 0 {
			t.Errorf("another forge: %d items", len(got))
		}
		if got, _ := s.ListItems(ctx, wq.ItemFilter{}); len(got) != 3 {
			t.Errorf("unfiltered: %d items, want 3", len(got))
		}
	})

	t.Run("a branch head is owned only if an item of ours pushed it", func(t *testing.T) {
		s := open(t)
		old := create(t, s)
		l, _ := s.ClaimItem(ctx, old.ID, "w", T0, time.Minute)
		for _, head := range []string{"abb", "abc"} { // a push, then the push of a resubmission
			if err := s.RecordForgeState(ctx, l, mr.ForgeState{HeadSHA: head, PushedHash: "h1"}, T0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted}, T0); err != nil {
			t.Fatal(err)
		}
		create(t, s, func(n *wq.NewItem, _ *mr.Detail) { n.Generation = 2 }) // a new generation pushed nothing yet
		for _, tc := range []struct {
			forge, project, branch, sha string
			want                        bool
		}{
			{"gitea", "o/r", "wq/a", "abc", true}, // an earlier generation's push
			{"gitea", "o/r", "wq/a", "abb", true}, // and the head it pushed before a resubmission
			{"gitea", "o/r", "wq/b", "abb", false},
			{"gitea", "o/r", "wq/a", "def", false},
			{"gitea", "o/r", "wq/b", "abc", false},
			{"gitea", "o/x", "wq/a", "abc", false},
			{"gitlab", "o/r", "wq/a", "abc", false},
			{"gitea", "o/r", "wq/a", "", false}, // nothing recorded is never a match
		} {
			if got, err := s.OwnsBranchHead(ctx, tc.forge, tc.project, tc.branch, tc.sha, ""); err != nil || got != tc.want {
				t.Errorf("OwnsBranchHead(%s, %s, %s, %q) = %v, %v; want %v", tc.forge, tc.project, tc.branch, tc.sha, got, err, tc.want)
			}
		}
		// For whom: the caller whose items pushed it, no other.
		for _, tc := range []struct {
			sha, caller string
			want        bool
		}{{"abc", old.CallerIdentity, true}, {"abb", old.CallerIdentity, true}, {"abc", "someone-else", false}, {"abb", "someone-else", false}} {
			if got, err := s.OwnsBranchHead(ctx, "gitea", "o/r", "wq/a", tc.sha, tc.caller); err != nil || got != tc.want {
				t.Errorf("OwnsBranchHead(%q for %q) = %v, %v; want %v", tc.sha, tc.caller, got, err, tc.want)
			}
		}
	})

	t.Run("the pushing hash is recorded and cleared with the forge state", func(t *testing.T) {
		s := open(t)
		it := create(t, s)
		l, _ := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
		if err := s.RecordForgeState(ctx, l, mr.ForgeState{PushingHash: "h1"}, T0); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.GetMRDetail(ctx, it.ID); d.PushingHash != "h1" {
			t.Errorf("pushing hash %q after recording the intent, want h1", d.PushingHash)
		}
		if err := s.RecordForgeState(ctx, l, mr.ForgeState{HeadSHA: "abc", PushedHash: "h1"}, T0); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.GetMRDetail(ctx, it.ID); d.PushingHash != "" || d.PushedHash != "h1" || d.HeadSHA != "abc" {
			t.Errorf("after the push: %+v", d)
		}
	})

	t.Run("forge state is written only under the lease", func(t *testing.T) {
		s := open(t)
		it := create(t, s)
		stale, _ := s.ClaimItem(ctx, it.ID, "a", T0, time.Minute)
		fresh, _ := s.ClaimItem(ctx, it.ID, "b", T0.Add(2*time.Minute), time.Minute)
		state := mr.ForgeState{MRNumber: 7, MRURL: "http://forge/o/r/pulls/7", HeadSHA: "abc", PushedHash: "h1", NoteID: 9}
		if err := s.RecordForgeState(ctx, stale, state, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("stale lease: %v, want ErrLeaseLost", err)
		}
		if err := s.RecordForgeState(ctx, fresh, state, T0); err != nil {
			t.Fatal(err)
		}
		d, _ := s.GetMRDetail(ctx, it.ID)
		if d.MRNumber != 7 || d.MRURL != state.MRURL || d.HeadSHA != "abc" || d.PushedHash != "h1" || d.NoteID != 9 {
			t.Errorf("detail %+v", d)
		}
	})
}
