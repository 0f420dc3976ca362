package config_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/workqueue-dev/workqueue/config"
)

// A setting copied from the example with its placeholder host left in
// is warned about by field and line, and does not stop the service
// (issue 55: the example's introspection host refused every token).
func TestConfigCheckWarnsOfSettingsPointingAtAnExampleHost(t *testing.T) {
	doc := `public_url: https://wq.example.org
forges:
  - {name: g, kind: gitea, url: 'https://git.corp.example:3000/', token_file: /dev/null}
  - {name: h, kind: gitea, url: 'https://gitea.internal.test', token_file: /dev/null}
handled_types: [example]
auth:
  introspection:
    url: https://api.cluster.example.com:6443/apis/user.openshift.io/v1/users/~
  rules:
    - {name: ci, issuer: 'https://EXAMPLE.COM', claims: {aud: workqueue}, permissions: [read]}
    - {name: people, groups: [example], permissions: [read]}
`
	_, problems := checkDoc(t, doc)
	var got []string
	for _, p := range problems {
		if p.Warning && strings.Contains(p.Message, "placeholder host") {
			got = append(got, p.Field+"@"+itoa(p.Line))
		}
	}
	want := []string{"public_url@1", "forges[g].url@3", "auth.introspection.url@8", "auth.rules[ci].issuer@10"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("example-host warnings (-want +got):\n%s\nall problems: %v", diff, problemLines(problems))
	}
	if _, err := config.Parse(strings.NewReader(doc), known); err != nil {
		t.Errorf("a placeholder host failed Parse: %v", err)
	}
}

// The example configuration, which the README runs, points at no
// placeholder host: those settings are commented out.
func TestTheExampleConfigPointsAtNoExampleHost(t *testing.T) {
	b, err := os.ReadFile("../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, problems := checkDoc(t, string(b))
	for _, p := range problems {
		if p.Warning && strings.Contains(p.Message, "placeholder host") {
			t.Errorf("the example warns: %v", p)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
