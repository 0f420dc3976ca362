package policy_test

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/policy"
)

// encodings are the usual ways a secret is sent past a scanner that
// reads only the text as written.
var encodings = map[string]func(string) string{
	"plain":         func(s string) string { return s },
	"base64":        func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
	"base64 thrice": func(s string) string { return b64(b64(b64(s))) },
	"base64url":     func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
	"hex":           func(s string) string { return hex.EncodeToString([]byte(s)) },
	"percent":       func(s string) string { return each(s, "%%%02X") },
	"html decimal":  func(s string) string { return each(s, "&#%d;") },
	"html hex":      func(s string) string { return each(s, "&#x%x;") },
	"json escapes":  func(s string) string { return each(s, `\u%04x`) },
	"zero-width joiner": func(s string) string {
		return s[:6] + "\u200d" + s[6:]
	},
	"soft hyphens": func(s string) string { return strings.Join(strings.Split(s, ""), "\u00ad") },
	"split over lines": func(s string) string {
		return `"` + s[:14] + `" +` + "\n" + `"` + s[14:] + `"`
	},
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func each(s, format string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, format, c)
	}
	return b.String()
}

// Every field a write sends × every usual encoding: the secret is found,
// the refusal names the field, and no encoding of the secret is quoted
// (issue 48, point 3).
func TestASecretIsFoundInEveryFieldUnderEveryEncoding(t *testing.T) {
	fields := map[string]func(w *policy.Write, v string){
		"title":                         func(w *policy.Write, v string) { w.Title = "Fix " + v },
		"description":                   func(w *policy.Write, v string) { w.Description = "Use this:\n\n" + v + "\n" },
		"commit_message":                func(w *policy.Write, v string) { w.Message = "fix\n\n" + v },
		"body":                          func(w *policy.Write, v string) { w.Body = "the key is " + v },
		"labels[0]":                     func(w *policy.Write, v string) { w.Labels = []string{v} },
		"source_branch":                 func(w *policy.Write, v string) { w.SourceBranch = "workqueue/" + v },
		"target_branch":                 func(w *policy.Write, v string) { w.TargetBranch = v },
		"file_actions[0].file_path":     func(w *policy.Write, v string) { w.Files[0].Path = "k/" + v },
		"file_actions[0].previous_path": func(w *policy.Write, v string) { w.Files[0].Action, w.Files[0].PreviousPath = "move", "k/"+v },
		"file_actions[0].content":       func(w *policy.Write, v string) { w.Files[0].Content = []byte("x := 1\n" + v + "\n") },
	}
	for field, set := range fields {
		for name, encode := range encodings {
			if strings.Contains(field, "path") || strings.Contains(field, "branch") || strings.HasPrefix(field, "labels") {
				if strings.Contains(name, "lines") {
					continue // one line by construction (inspection refuses a newline there)
				}
			}
			encoded := encode(token)
			w := submit()
			set(&w, encoded)
			d := policy.Check(person, project(), w)
			found := false
			for _, r := range d.Refusals {
				found = found || r.Rule == policy.RuleSecret && r.Field == field
				if quoted := r.Error() + " " + r.Path; strings.Contains(quoted, token) || strings.Contains(quoted, encoded) {
					t.Errorf("%s, %s: a refusal quotes the secret: %v", field, name, r)
				}
			}
			if !found {
				t.Errorf("%s, %s: not refused: %v", field, name, d.Err())
			}
		}
	}
}
