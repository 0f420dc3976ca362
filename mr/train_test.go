package mr_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/mr"
)

func steps(plans []mr.Plan) string {
	var out []string
	for _, p := range plans {
		s := p.Item + ":" + string(p.Step)
		if p.On != "" {
			s += "@" + p.On
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func holdsOnly(heads ...string) func(string) bool {
	return func(c string) bool { return slices.Contains(heads, c) }
}

func TestThePlannerBuildsEachCarOnTheCarAheadAndMergesOnlyTheFirst(t *testing.T) {
	T := mr.TrainTarget{Head: "t0", Holds: holdsOnly("t0")}
	for _, tc := range []struct {
		name  string
		cars  []mr.Car
		batch int
		want  string
	}{
		{"new cars are built in a chain", []mr.Car{{Item: "a", Seq: 1}, {Item: "b", Seq: 2}}, 4,
			"a:rebuild@t0 b:wait"},
		{"a car built on the car ahead waits for its CI", []mr.Car{{Item: "a", Seq: 1, Head: "A", Base: "t0"}, {Item: "b", Seq: 2}}, 4,
			"a:wait b:rebuild@A"},
		{"the first car merges once its CI passed", []mr.Car{{Item: "a", Seq: 1, Head: "A", Base: "t0", CI: mr.CarCIPassed},
			{Item: "b", Seq: 2, Head: "B", Base: "A", CI: mr.CarCIPassed}}, 4,
			"a:merge b:wait"},
		{"two that pass alone and fail together: the second is ejected", []mr.Car{{Item: "a", Seq: 1, Head: "A", Base: "t0", CI: mr.CarCIPassed},
			{Item: "b", Seq: 2, Head: "B", Base: "A", CI: mr.CarCIFailed}}, 4,
			"a:merge b:eject"},
		{"a failure behind a car still running waits: it may not be its own", []mr.Car{{Item: "a", Seq: 1, Head: "A", Base: "t0"},
			{Item: "b", Seq: 2, Head: "B", Base: "A", CI: mr.CarCIFailed}}, 4,
			"a:wait b:wait"},
		{"a change that fails alone is ejected and the next rides on the target", []mr.Car{{Item: "a", Seq: 1, Head: "A", Base: "t0", CI: mr.CarCIFailed},
			{Item: "b", Seq: 2, Head: "B", Base: "A", CI: mr.CarCIFailed}, {Item: "c", Seq: 3, Head: "C", Base: "B"}}, 4,
			"a:eject b:rebuild@t0 c:wait"},
		{"only the window rides", []mr.Car{{Item: "a", Seq: 1, Head: "A", Base: "t0"}, {Item: "b", Seq: 2, Head: "B", Base: "A"},
			{Item: "c", Seq: 3}}, 2,
			"a:wait b:wait c:wait"},
		{"a target someone else moved rebuilds the first car, and the rest wait for it", []mr.Car{{Item: "a", Seq: 1, Head: "A", Base: "old", CI: mr.CarCIPassed},
			{Item: "b", Seq: 2, Head: "B", Base: "A", CI: mr.CarCIPassed}}, 4,
			"a:rebuild@t0 b:wait"},
		{"priority rides first", []mr.Car{{Item: "a", Seq: 1}, {Item: "b", Seq: 2, Priority: 1}}, 1,
			"b:rebuild@t0 a:wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := steps(mr.PlanTrain(tc.cars, T, tc.batch)); got != tc.want {
				t.Errorf("plan = %s\nwant   %s", got, tc.want)
			}
		})
	}
}

// After the first car merged with a merge commit, the target's head is
// that commit, which holds the car's tree: the next car, built on the
// merged car's head, is not rebuilt.
func TestACarBuiltOnAMergedCarIsNotRebuiltAfterAMergeCommit(t *testing.T) {
	T := mr.TrainTarget{Head: "M1", Holds: holdsOnly("M1", "A")}
	got := steps(mr.PlanTrain([]mr.Car{{Item: "b", Seq: 2, Head: "B", Base: "A", CI: mr.CarCIPassed}}, T, 4))
	if got != "b:merge" {
		t.Errorf("plan = %s, want b:merge", got)
	}
}

// trainSim runs the planner against a simulated forge and CI: a head's
// CI fails when the changes it holds include a bad set; every merge is
// checked against the same oracle (the target is never red).
type trainSim struct {
	t       *testing.T
	bad     func(changes []string) bool
	target  []string // the changes the target holds, in order
	heads   map[string][]string
	cars    []mr.Car
	runs    int
	ejected []string
	merged  []string
	n       int
}

func (s *trainSim) head(changes []string) string {
	s.n++
	h := fmt.Sprintf("h%d", s.n)
	s.heads[h] = slices.Clone(changes)
	s.runs++ // every push runs CI once
	return h
}

func (s *trainSim) targetHead() string {
	for h, ch := range s.heads {
		if slices.Equal(ch, s.target) && strings.HasPrefix(h, "t") {
			return h
		}
	}
	h := fmt.Sprintf("t%d", len(s.target))
	s.heads[h] = slices.Clone(s.target)
	return h
}

func (s *trainSim) run(batch int) {
	for step := 0; len(s.cars) > 0; step++ {
		if step > 1000 {
			s.t.Fatalf("the train did not empty: %+v", s.cars)
		}
		th := s.targetHead()
		plans := s.carsPlan(th, batch)
		for _, p := range plans {
			i := slices.IndexFunc(s.cars, func(c mr.Car) bool { return c.Item == p.Item })
			c := &s.cars[i]
			switch p.Step {
			case mr.StepRebuild:
				c.Base, c.Head = p.On, s.head(append(slices.Clone(s.heads[p.On]), c.Item))
				c.CI = mr.CarCIPending
			case mr.StepMerge:
				if s.bad(s.heads[c.Head]) {
					s.t.Fatalf("merged %s at a head whose CI fails: the target would go red", c.Item)
				}
				s.target = slices.Clone(s.heads[c.Head])
				s.merged = append(s.merged, c.Item)
				s.cars = slices.Delete(s.cars, i, i+1)
			case mr.StepEject:
				s.ejected = append(s.ejected, c.Item)
				s.cars = slices.Delete(s.cars, i, i+1)
			}
			if p.Step != mr.StepWait {
				break // one step at a time: each car acts alone
			}
		}
		// CI finishes for every car pending.
		for i := range s.cars {
			if c := &s.cars[i]; c.Head != "" && c.CI == mr.CarCIPending {
				c.CI = mr.CarCIPassed
				if s.bad(s.heads[c.Head]) {
					c.CI = mr.CarCIFailed
				}
			}
		}
	}
}

func (s *trainSim) carsPlan(th string, batch int) []mr.Plan {
	holds := func(c string) bool { return slices.Equal(s.heads[c], s.target) }
	return mr.PlanTrain(s.cars, mr.TrainTarget{Head: th, Holds: holds}, batch)
}

func newTrainSim(t *testing.T, n int, bad func([]string) bool) *trainSim {
	s := &trainSim{t: t, bad: bad, heads: map[string][]string{}}
	for i := range n {
		s.cars = append(s.cars, mr.Car{Item: fmt.Sprintf("c%d", i+1), Seq: int64(i)})
	}
	return s
}

func TestTheTrainEjectsTheChangeThatBreaksTheBatchWithinTheRunBound(t *testing.T) {
	for culprit := 1; culprit <= 8; culprit++ {
		name := fmt.Sprintf("c%d", culprit)
		s := newTrainSim(t, 8, func(ch []string) bool { return slices.Contains(ch, name) })
		s.run(4)
		if !slices.Equal(s.ejected, []string{name}) || len(s.merged) != 7 {
			t.Errorf("culprit %s: ejected %v, merged %v", name, s.ejected, s.merged)
		}
		// One run per change is the price of any train; the bound is on
		// the runs a failure adds: ⌈log2 8⌉ + 1.
		if extra := s.runs - 8; extra > 4 {
			t.Errorf("culprit %s: %d extra CI runs, want at most 4", name, extra)
		}
	}
}

func TestTwoChangesThatPassAloneAndFailTogetherLeaveTheSecondOut(t *testing.T) {
	s := newTrainSim(t, 2, func(ch []string) bool { return slices.Contains(ch, "c1") && slices.Contains(ch, "c2") })
	s.run(4)
	if !slices.Equal(s.merged, []string{"c1"}) || !slices.Equal(s.ejected, []string{"c2"}) {
		t.Errorf("merged %v, ejected %v; want c1 merged and c2 ejected", s.merged, s.ejected)
	}
}
