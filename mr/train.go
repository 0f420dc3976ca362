package mr

import (
	"cmp"
	"slices"
)

// The merge train (issue 54; docs/merge-train.md): per project and target
// branch, the items whose merge requests would be merged join a train
// instead, in order of arrival (priority first). The first batch_size
// cars ride: each is built on the car ahead of it (the first on the
// target's head), so that the merge request of car k holds the target
// plus the changes of cars 1..k, and the forge's CI, running on it as on
// any push to a merge request, tests exactly what the target becomes
// once car k is merged. A car is merged when it is first, its CI passed,
// and the target still holds what it was built on; so every state the
// target passes through is one CI saw. A car whose CI failed while every
// car ahead passed is the change that broke the batch: it leaves the
// train and the cars behind it are built again without it.
//
// PlanTrain is the train's decider: pure, over what the store and the
// forge said about the cars, it says what each car does next. The cars'
// executors carry the steps out, each for its own item, under its own
// lease.

// CarCI is what a car's CI says about the head it was built at.
type CarCI int

const (
	CarCIPending CarCI = iota // not decided yet, or no head yet
	CarCIPassed
	CarCIFailed
)

// Car is one item in a train, as the planner needs it.
type Car struct {
	Item     string // the item's id
	Priority int    // higher rides first (the control plane's priority labels)
	Seq      int64  // arrival order within a priority
	Head     string // the merge request's head, "" before the first push
	Base     string // the commit Head was built on ("" when unknown)
	CI       CarCI  // of Head
}

// TrainStep is what a car does next.
type TrainStep string

const (
	StepWait    TrainStep = "wait"    // queued behind the window, or waiting for its CI or for the cars ahead
	StepRebuild TrainStep = "rebuild" // build its commit again on Plan.On (the car ahead's head, or the target's)
	StepMerge   TrainStep = "merge"   // merge its merge request, pinned to its head
	StepEject   TrainStep = "eject"   // it broke the batch: leave the train, comment, wait for a new submission
)

// Plan is one car's next step.
type Plan struct {
	Item string
	Step TrainStep
	// On is the commit the car must be built on: the head of the car
	// ahead, or the target's head for the first car.
	On string
	// Culprit is set on StepEject: the cars ahead all passed.
	Why string
}

// TrainTarget is the target branch as the planner needs it.
type TrainTarget struct {
	Head string // the target branch's head now
	// Holds reports whether the target holds exactly commit's tree: true
	// for commit == Head, and for a merge request merged with a merge
	// commit whose tree is commit's. The executor asks the forge.
	Holds func(commit string) bool
}

// SortCars puts cars in train order: higher priority first, then
// arrival, then item id (a stable order whatever the store returns).
func SortCars(cars []Car) {
	slices.SortStableFunc(cars, func(a, b Car) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Item, b.Item))
	})
}

// PlanTrain says what each car of one train does next, in train order.
// Only the first batch cars ride; the rest wait. A car rides on the car
// ahead of it: while that car has no head, or was built on something
// else than what it rests on now, the cars behind it wait or rebuild.
func PlanTrain(cars []Car, target TrainTarget, batch int) []Plan {
	cars = slices.Clone(cars)
	SortCars(cars)
	batch = max(batch, 1)
	out := make([]Plan, 0, len(cars))
	allAheadPassed := true // every riding car ahead of this one passed
	prevOK := true         // the car ahead sits where the chain needs it
	on := target.Head      // what the next car must be built on
	for i, c := range cars {
		p := Plan{Item: c.Item, Step: StepWait}
		switch {
		case i >= batch:
			// Queued behind the window.
		case !prevOK:
			// The car ahead is being built again: build on it once it is.
		case c.Head == "" || c.Base != on && !(i == 0 && c.Base != "" && target.Holds != nil && target.Holds(c.Base)):
			p.Step, p.On = StepRebuild, on
		case c.CI == CarCIFailed && allAheadPassed:
			p.Step, p.Why = StepEject, "its CI failed on top of the cars ahead of it, which passed"
		case c.CI == CarCIPassed && i == 0:
			p.Step = StepMerge
		}
		out = append(out, p)
		if i >= batch {
			continue
		}
		switch p.Step {
		case StepEject:
			// The cars behind ride on the car ahead of the culprit.
			continue
		case StepRebuild:
			prevOK = false
		}
		allAheadPassed = allAheadPassed && c.CI == CarCIPassed && p.Step != StepRebuild
		if c.Head != "" {
			on = c.Head
		}
	}
	return out
}
