package example

import (
	"context"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/strictjson"
)

// MaxSteps bounds a submission's steps.
const MaxSteps = 1000

// API returns the type's face to callers: POST /api/v1/items with
// {"item_type": "example", "steps": N} makes an item of N steps; its
// detail counts the steps done.
func API(store wq.Store) wq.ItemAPI { return typeAPI{store: store} }

type typeAPI struct {
	store wq.Store
}

type request struct {
	ItemType string `json:"item_type"`
	Steps    int    `json:"steps"`
}

func (request) Scope() wq.Scope { return wq.Scope{} } // acts on no project
func (request) Key() string     { return "" }         // every submission is a new item

// Detail is the API's view of an example item.
type Detail struct {
	Steps int `json:"steps"`
	Done  int `json:"done"`
}

func (typeAPI) Type() string { return Name }

func (typeAPI) Decode(body []byte) (wq.Submission, error) {
	var r request
	if err := strictjson.Decode(body, &r, ""); err != nil {
		return nil, err
	}
	if r.Steps < 0 || r.Steps > MaxSteps {
		return nil, wq.Errorf(wq.EINVALID, "steps: want 0 to %d, got %d", MaxSteps, r.Steps)
	}
	return r, nil
}

func (a typeAPI) Submit(ctx context.Context, s wq.Submission, by wq.Submitter, now time.Time) (*wq.Item, wq.SubmitResult, error) {
	r, ok := s.(request)
	if !ok {
		return nil, "", fmt.Errorf("example: submission of type %T", s)
	}
	n := New(r.Steps)
	n.CallerIdentity = by.Identity
	it, err := a.store.CreateItem(ctx, n, now)
	if err != nil {
		return nil, "", err
	}
	return it, wq.SubmitCreated, nil
}

func (typeAPI) Detail(_ context.Context, it *wq.Item) (any, error) {
	var d Detail
	for k, row := range it.Dimensions {
		if k.Dimension == dimStep {
			d.Steps++
			if row.Status == wq.StatusFalse {
				d.Done++
			}
		}
	}
	return d, nil
}

// RetryDimensions: nothing to reset; the steps not done are still needed.
func (typeAPI) RetryDimensions(*wq.Item) []wq.DimensionUpdate { return nil }
