package policy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/policy"
)

// docs/policy.md lists every built-in protected path and every refusal
// rule, so that people read the policy the code holds.
func TestThePolicyDocListsEveryProtectedPathAndRule(t *testing.T) {
	b, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, e := range policy.BuiltinProtected {
		if !strings.Contains(doc, "| `"+e.Glob+"` |") {
			t.Errorf("docs/policy.md does not list %q", e.Glob)
		}
	}
	for _, rule := range []string{policy.RuleSecret, policy.RuleProtectedPath, policy.RuleClosingReference, policy.RuleTargetNotAllowed,
		policy.RuleTargetOwned, policy.RuleTargetIsSource, policy.RuleLabelReserved, policy.RuleLabelNotAllowed, policy.RuleSourceNotOwned} {
		if !strings.Contains(doc, "`"+rule+"`") {
			t.Errorf("docs/policy.md does not name the rule %q", rule)
		}
	}
}
