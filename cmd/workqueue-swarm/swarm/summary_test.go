package swarm

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every run shows the gate at work (issue 55): a run that does not say
// how many hostile sessions it wants has one, two from five sessions on,
// and a run too small for three honest sessions beside it gets them.
func TestEveryDefaultRunHasAHostileSessionAndThreeHonestOnes(t *testing.T) {
	for _, tc := range []struct {
		asked, hostile, wantSessions, wantHostile int
		note                                      bool
	}{
		{8, -1, 8, 2, false},
		{5, -1, 5, 2, false},
		{4, -1, 4, 1, false},
		{3, -1, 4, 1, true},
		{1, -1, 4, 1, true},
		{3, 0, 3, 0, false}, // asked for none: none
		{8, 3, 8, 3, false}, // asked for three: three
	} {
		sessions, hostile, note := Sessions(tc.asked, tc.hostile)
		if sessions != tc.wantSessions || hostile != tc.wantHostile || (note != "") != tc.note {
			t.Errorf("Sessions(%d, %d) = %d, %d, %q; want %d, %d (a note: %v)", tc.asked, tc.hostile, sessions, hostile, note,
				tc.wantSessions, tc.wantHostile, tc.note)
		}
		if _, err := Roles(sessions - hostile); err != nil {
			t.Errorf("Sessions(%d, %d) leaves too few honest sessions: %v", tc.asked, tc.hostile, err)
		}
	}
}

// The summary counts what it says (issue 55): it said "refusals none"
// above "hostile refused 644". Each line's total is the sum of the
// counts it lists, the honest sessions' refusals are named as theirs and
// agree with their refused events, and the hostile tries are the refused
// ones and those that got through.
func TestTheSummaryCountsWhatItSays(t *testing.T) {
	r := &Report{Split: Split{Authors: 2, Reviewers: 1, Mergers: 1, Hostile: 1}, Done: true,
		Events:          map[string]int{"assigned": 4, "opened": 3, "merged": 3, "refused": 2},
		Allocations:     map[string]int{"assigned": 4},
		Conflicts:       map[string]int{},
		Refusals:        map[string]int{"lost_race": 1, "stale_head": 1},
		Findings:        map[string]int{},
		Attempts:        map[string]int{"submit_unassigned": 600, "adopt_live": 44},
		HostileRefusals: map[string]int{"assignment_required": 600, "wait_foreign_active": 43},
		Violations:      []string{"hostile-1 adopt_live: got through"},
	}
	var out bytes.Buffer
	r.Summary(&out)
	text := out.String()
	for _, want := range []string{
		"honest refused  2: lost_race 1, stale_head 1",
		"hostile tries   644 in 2 classes: 643 refused, 1 got through",
		"hostile refused 643: assignment_required 600, wait_foreign_active 43",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "refusals        none") || strings.Contains(text, "refused 2,") {
		t.Errorf("the summary counts the honest refusals twice or not as theirs:\n%s", text)
	}
	// Each "N: a x, b y" line adds up.
	line := regexp.MustCompile(`(?m)^  [a-z ]+?\s+(\d+): (.+)$`)
	for _, m := range line.FindAllStringSubmatch(text, -1) {
		want, _ := strconv.Atoi(m[1])
		got := 0
		for _, part := range strings.Split(m[2], ", ") {
			fields := strings.Fields(part)
			n, _ := strconv.Atoi(fields[len(fields)-1])
			got += n
		}
		if got != want {
			t.Errorf("%q: its counts add up to %d", m[0], got)
		}
	}
	r.Split.Hostile = 0
	out.Reset()
	r.Summary(&out)
	if !strings.Contains(out.String(), "hostile         none ran") {
		t.Errorf("a run without a hostile session does not say so:\n%s", out.String())
	}
}
