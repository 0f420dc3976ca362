package mr

import (
	"strings"
	"testing"
)

// A field refused for its shape is quoted redacted: a refusal never
// carries a secret back to the caller (issue 48).
func TestAFieldRefusedForItsShapeIsQuotedWithoutTheSecretItHolds(t *testing.T) {
	token := "ghp" + "_" + strings.Repeat("Zq7Rk2Lm9Xw4", 3)
	for _, edit := range []func(s *Submission){
		func(s *Submission) { s.Labels = []string{"a," + token} },
		func(s *Submission) { s.SourceBranch = "workqueue/" + token + ".lock" },
		func(s *Submission) { s.TargetBranch = "main/." + token },
		func(s *Submission) { s.Project = token },
	} {
		s := Submission{Forge: "gitea", Project: "o/r", SourceBranch: "workqueue/x", TargetBranch: "main", Title: "t"}
		edit(&s)
		err := s.validate()
		if err == nil || strings.Contains(err.Error(), token) {
			t.Errorf("%+v: %v", s, err)
		}
	}
}
