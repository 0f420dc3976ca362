package auth_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
)

func claimsOf(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func values(t *testing.T, v any) []string {
	t.Helper()
	out, err := auth.ClaimValues(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestClaimRulesMatch(t *testing.T) {
	gitlab := `{"aud":"workqueue","sub":"project_path:g/app:ref_type:branch:ref:main","project_id":42,"project_path":"G/App",
		"ref":"main","ref_protected":true,"groups":["dev","ops"],"kubernetes.io":{"namespace":"ci","serviceaccount":{"name":"bot"}},
		"a/b":{"c~d":"x"},"list":[{"k":"v"}],"nothing":null}`
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   bool
	}{
		{"a single claim", map[string]any{"aud": "workqueue"}, true},
		{"AND: all claims match", map[string]any{"aud": "workqueue", "ref": "main"}, true},
		{"AND: one claim differs", map[string]any{"aud": "workqueue", "ref": "dev"}, false},
		{"AND: a claim the token lacks", map[string]any{"aud": "workqueue", "environment": "prod"}, false},
		{"OR within a list", map[string]any{"ref": []any{"dev", "main"}}, true},
		{"OR: none of the list", map[string]any{"ref": []any{"dev", "stable"}}, false},
		{"a number claim matches a number value", map[string]any{"project_id": 42}, true},
		{"a number claim matches a string value", map[string]any{"project_id": "42"}, true},
		{"a number claim, another number", map[string]any{"project_id": 43}, false},
		{"a boolean claim matches a boolean value", map[string]any{"ref_protected": true}, true},
		{"a boolean claim matches a string value", map[string]any{"ref_protected": "TRUE"}, true},
		{"a boolean claim, the other boolean", map[string]any{"ref_protected": false}, false},
		{"values compare lowercase", map[string]any{"project_path": "g/app"}, true},
		{"a list claim matches any element", map[string]any{"groups": "ops"}, true},
		{"a list claim with no matching element", map[string]any{"groups": "admin"}, false},
		{"a nested claim by JSON pointer", map[string]any{"/kubernetes.io/serviceaccount/name": "bot"}, true},
		{"a nested claim, wrong value", map[string]any{"/kubernetes.io/namespace": "prod"}, false},
		{"a pointer with escapes", map[string]any{"/a~1b/c~0d": "x"}, true},
		{"a pointer into a list", map[string]any{"/list/0/k": "v"}, true},
		{"a pointer past a list's end", map[string]any{"/list/1/k": "v"}, false},
		{"a pointer to a missing claim", map[string]any{"/kubernetes.io/pod/name": "x"}, false},
		{"an object is no value", map[string]any{"kubernetes.io": "x"}, false},
		{"null is no value", map[string]any{"nothing": "null"}, false},
		{"a top-level name is not a pointer", map[string]any{"kubernetes.io/namespace": "ci"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := auth.Rule{Claims: map[string][]string{}}
			for k, v := range tc.claims {
				r.Claims[k] = values(t, v)
			}
			if got := r.MatchClaims(claimsOf(t, gitlab)); got != tc.want {
				t.Errorf("MatchClaims = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGrantsAreNarrowedToProjectGlobs(t *testing.T) {
	c := &auth.Caller{Grants: []auth.Grant{
		{Rule: "app-ci", Permissions: []auth.Permission{auth.Submit, auth.Read}, Projects: []string{"group/app", "group/libs/**"}},
		{Rule: "readers", Permissions: []auth.Permission{auth.Read}},
	}}
	for _, tc := range []struct {
		perm    auth.Permission
		project string
		want    bool
	}{
		{auth.Submit, "group/app", true},
		{auth.Submit, "group/libs/deep/one", true},
		{auth.Submit, "group/other", false},
		{auth.Submit, "group/app-evil", false},
		{auth.Read, "group/other", true}, // the unscoped grant
		{auth.Retry, "group/app", false},
	} {
		if got := c.CanOn(tc.perm, tc.project); got != tc.want {
			t.Errorf("CanOn(%s, %s) = %v, want %v", tc.perm, tc.project, got, tc.want)
		}
	}
	if got := c.Permissions(); len(got) != 2 || got[0] != auth.Read || got[1] != auth.Submit {
		t.Errorf("effective permissions %v", got)
	}
}

func TestGroupRulesMatchAnyGroup(t *testing.T) {
	r := auth.Rule{Groups: []string{"wq-admins", "sre"}}
	if !r.MatchGroups([]string{"dev", "sre"}) || r.MatchGroups([]string{"dev"}) || r.MatchGroups(nil) {
		t.Error("group matching")
	}
}

func TestClaimValuesRefuseStructures(t *testing.T) {
	for _, bad := range []any{map[string]any{"a": 1}, []any{}, []any{[]any{"x"}}, nil} {
		if _, err := auth.ClaimValues(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for _, p := range []string{"/", "nope", "/a~2", "/a~"} {
		if auth.ValidPointer(p) {
			t.Errorf("pointer %q accepted", p)
		}
	}
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func TestCanEverywhereNeedsAnUnscopedGrant(t *testing.T) {
	scoped := &auth.Caller{Grants: []auth.Grant{{Rule: "a", Permissions: []auth.Permission{auth.Read}, Projects: []string{"g/**"}}}}
	if scoped.CanEverywhere(auth.Read) {
		t.Error("a scoped grant reads everywhere")
	}
	scoped.Grants = append(scoped.Grants, auth.Grant{Rule: "b", Permissions: []auth.Permission{auth.Admin}})
	if !scoped.CanEverywhere(auth.Read) {
		t.Error("an unscoped admin grant does not read everywhere")
	}
}
