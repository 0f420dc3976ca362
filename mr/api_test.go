package mr_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr"
)

// The answer to a submission carries the item's detail without reading
// it back (wq.SubmitDetailer); it must be the detail a read gives, on
// every driver and for every result.
func TestTheDetailASubmissionAnswersWithIsTheDetailAReadGives(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		s := testdb.Open(t, kind)
		// A project without a managed label: a submission without
		// labels then has none at all.
		api := mr.API(mr.APIOptions{Store: s, Project: func(string, string) (mr.Project, bool) { return mr.Project{}, true }})
		var sd wq.SubmitDetailer = api
		submit := func(step, body string, want wq.SubmitResult) *wq.Item {
			t.Helper()
			sub, err := api.Decode([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			it, answered, result, err := sd.SubmitDetail(ctx, sub, wq.Submitter{Identity: "alice"}, t0)
			if err != nil || result != want {
				t.Fatalf("%s: result %q, %v; want %q", step, result, err, want)
			}
			if answered == nil {
				return it // nil has the service read it
			}
			read, err := api.Detail(ctx, it)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(answered)
			r, _ := json.Marshal(read)
			if string(a) != string(r) {
				t.Errorf("%s: the submission answered with detail\n%s\nbut a read gives\n%s", step, a, r)
			}
			return it
		}
		const body = `{"item_type": "mr", "forge": "gitea", "project": "o/r", "source_branch": "wq/d", "target_branch": "main",
			"title": "T", "file_actions": [{"action": "create", "file_path": "a.txt", "content": "a"},
			{"action": "move", "file_path": "c.txt", "previous_path": "b.txt"}]`
		it := submit("created without labels", body+`}`, wq.SubmitCreated)

		// The forge's state, recorded by a run, is part of what an
		// unchanged submission answers with.
		l, err := s.ClaimItem(ctx, it.ID, "w", t0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RecordForgeState(ctx, l, mr.ForgeState{MRNumber: 12, MRURL: "http://forge/o/r/pulls/12", HeadSHA: "abc", HeadPipelineID: 3}, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
		submit("unchanged, with the forge's state", body+`}`, wq.SubmitUnchanged)
		submit("updated", body+`, "labels": ["x"], "description": "now with a description"}`, wq.SubmitUpdated)

		l, err = s.ClaimItem(ctx, it.ID, "w", t0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCancelled}, t0); err != nil {
			t.Fatal(err)
		}
		submit("a new generation, with labels", body+`, "labels": ["y", "x"]}`, wq.SubmitCreated)
	})
}

// firstCounting counts the first-item creations a submission tries.
type firstCounting struct {
	*testdb.Store
	tries int
}

func (f *firstCounting) CreateFirstMR(ctx context.Context, n wq.NewItem, d mr.Detail, now time.Time) (*wq.Item, bool, error) {
	f.tries++
	return f.Store.CreateFirstMR(ctx, n, d, now)
}

// A new branch's item is created without a read first (mr.FirstCreator);
// once a branch was found to have an item, its next submissions read
// first instead of trying, and failing, that creation again. Every
// submission still gets the result reading first gives.
func TestABranchFoundWithAnItemIsReadFirstOnItsNextSubmissions(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		s := &firstCounting{Store: testdb.Open(t, kind)}
		api := mr.API(mr.APIOptions{Store: s, Project: func(string, string) (mr.Project, bool) { return mr.Project{}, true }})
		submit := func(step, content string, want wq.SubmitResult, wantTries int) {
			t.Helper()
			sub, err := api.Decode([]byte(`{"item_type": "mr", "forge": "gitea", "project": "o/r", "source_branch": "wq/h", "target_branch": "main",
				"title": "T", "file_actions": [{"action": "create", "file_path": "a.txt", "content": "` + content + `"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			s.tries = 0
			_, result, err := api.Submit(ctx, sub, wq.Submitter{Identity: "alice"}, t0)
			if err != nil || result != want {
				t.Fatalf("%s: result %q, %v; want %q", step, result, err, want)
			}
			if s.tries != wantTries {
				t.Errorf("%s: %d first-item creations tried; want %d", step, s.tries, wantTries)
			}
		}
		submit("a new branch", "a", wq.SubmitCreated, 1)
		submit("its first update", "b", wq.SubmitUpdated, 1) // finds the item: the branch is known now
		submit("its next update", "c", wq.SubmitUpdated, 0)
		submit("the same again", "c", wq.SubmitUnchanged, 0)
	})
}
