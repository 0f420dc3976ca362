package mr

import (
	"fmt"
	"slices"

	"github.com/workqueue-dev/workqueue/policy"
	"github.com/workqueue-dev/workqueue/secrets"
)

// RuleSecret refuses a change whose file holds a secret (push
// protection): one refusal per finding, naming the file, the line, the
// column and the scanner's rule, never the secret itself.
const RuleSecret = "secret_detected"

// SecretAllow lets findings through push protection: the outbound
// policy's, which the forge's guard applies to the same contents again.
type SecretAllow = policy.SecretAllow

// scanSecrets is push protection for a change (seed 000's content
// validation, GitHub's push protection as users know it): every content
// a file action carries, whatever its action (inspection refuses content
// on delete, chmod and move, but what is scanned does not depend on
// that), its encoding or whether it is text or binary, is scanned with
// the rules the service redacts what it stores with (package secrets,
// through its decoders, without the broad rules that flag a word only
// for looking random), before anything is stored or pushed. A project
// opts out with AllowSecrets; an allowlist entry lets a finding through
// for its paths and rules. A base64 content that does not decode is
// scanned as the text it is (and refused by inspection).
func scanSecrets(actions []FileAction, p Policy) []*Refusal {
	if p.AllowSecrets {
		return nil
	}
	var out []*Refusal
	var total int64
	for i, a := range actions {
		if a.Content == nil {
			continue
		}
		content, err := decodedContent(a)
		if err != nil {
			content = []byte(*a.Content)
		}
		// Content past the project's size limits is refused by
		// inspection and never stored or pushed: reading it would only
		// let a caller spend the service's time.
		total += int64(len(content))
		if p.MaxFileBytes > 0 && int64(len(content)) > p.MaxFileBytes || p.MaxTotalBytes > 0 && total > p.MaxTotalBytes {
			continue
		}
		for _, f := range secrets.Scan(content) {
			if slices.ContainsFunc(p.SecretAllowlist, func(al SecretAllow) bool { return al.Allows(a.FilePath, f.Rule) }) {
				continue
			}
			out = append(out, &Refusal{Index: i, Path: a.FilePath, Rule: RuleSecret, Message: fmt.Sprintf(
				"line %d, column %d: a secret (rule %s); remove it, or allow it for this path in the project's secret_allowlist (or allow_secrets)",
				f.Line, f.Column, f.Rule)})
			if len(out) == MaxRefusals {
				return out
			}
		}
	}
	return out
}
