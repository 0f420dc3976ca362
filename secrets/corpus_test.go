package secrets_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/internal/secretcorpus"
	"github.com/workqueue-dev/workqueue/secrets"
)

// Every shape of the corpus, in its context, is gone after Text, and
// after JSON wherever it is planted: a value, a member name, deep in
// arrays and objects, under a name that says nothing.
func TestNoSecretOfTheCorpusSurvives(t *testing.T) {
	corpus := secretcorpus.Corpus(1, 3)
	if len(corpus) < 150 {
		t.Fatalf("the corpus has %d samples, want at least 150", len(corpus))
	}
	classes := map[string]int{}
	for _, s := range corpus {
		classes[s.Class]++
		if out := secrets.Text(s.Text); strings.Contains(out, s.Secret) {
			t.Errorf("%s/%s: %q survives in %q", s.Class, s.Shape, s.Secret, out)
			continue
		}
		doc, _ := json.Marshal(map[string]any{"evidence": []any{map[string]any{"note": s.Text, "n": 1}}, s.Text: "as a name", "deep": map[string]any{"a": map[string]any{"b": []any{s.Text}}}})
		out, err := secrets.JSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		var back any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s: the redacted document is not JSON: %v", s.Shape, err)
		}
		if strings.Contains(string(out), s.Secret) || strings.Contains(decoded(back), s.Secret) {
			t.Errorf("%s/%s: survives in JSON %s", s.Class, s.Shape, out)
		}
	}
	t.Logf("%d samples: %v", len(corpus), classes)
}

// decoded is every string of a decoded JSON value, joined.
func decoded(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v + "\n")
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for k, x := range v {
				b.WriteString(k + "\n")
				walk(x)
			}
		}
	}
	walk(v)
	return b.String()
}
