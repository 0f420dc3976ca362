// Package example is a forge-free item type that exercises the engine end
// to end: an item runs a number of steps, each one action, then completes.
// Tests, the crash test of workqueue serve and demos use it; enable it with
// handled_types: [example].
package example

import (
	"context"
	"slices"
	"strconv"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Name is the item type's name.
const Name = "example"

// Actions.
const (
	ActionStep   = "step"
	ActionFinish = "finish"
)

const dimStep = "needs_step"

// Options tune the type.
type Options struct {
	StepDelay time.Duration // how long each step takes, to make items observable mid-processing
}

// New returns a new item that takes steps actions before it completes.
func New(steps int) wq.NewItem {
	n := wq.NewItem{ItemType: Name}
	for i := 1; i <= steps; i++ {
		n.Dimensions = append(n.Dimensions, wq.DimensionUpdate{
			DimensionKey: wq.DimensionKey{Dimension: dimStep, Variant: strconv.Itoa(i)}, Status: wq.StatusTrue})
	}
	return n
}

// Type returns the item type.
func Type(opts Options) wq.ItemType {
	return wq.ItemType{
		Name:       Name,
		Decide:     decide,
		Dimensions: []string{dimStep},
		Executors: map[string]wq.Executor{
			ActionStep: func(ctx context.Context, x *wq.Execution) error {
				if opts.StepDelay > 0 {
					t := time.NewTimer(opts.StepDelay)
					defer t.Stop()
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-t.C:
					}
				}
				next, _ := nextStep(x.Item, x.Now)
				return x.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{{
					DimensionKey: wq.DimensionKey{Dimension: dimStep, Variant: next}, Status: wq.StatusFalse}}})
			},
			ActionFinish: func(ctx context.Context, x *wq.Execution) error {
				return x.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: "done"})
			},
		},
	}
}

// decide: the lowest step still needed, then finish.
func decide(item *wq.Item, now time.Time) string {
	if _, ok := nextStep(item, now); ok {
		return ActionStep
	}
	return ActionFinish
}

func nextStep(item *wq.Item, now time.Time) (string, bool) {
	var variants []int
	for k := range item.Dimensions {
		if k.Dimension == dimStep && item.Dimensions.Needs(dimStep, k.Variant, now) {
			if n, err := strconv.Atoi(k.Variant); err == nil {
				variants = append(variants, n)
			}
		}
	}
	if len(variants) == 0 {
		return "", false
	}
	return strconv.Itoa(slices.Min(variants)), true
}
