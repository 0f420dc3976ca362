package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/config"
)

func TestAForgesReviewTokenIsOptionalAndComesFromOneSource(t *testing.T) {
	const forge = "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T, "
	cfg, err := config.Parse(strings.NewReader(forge+"review_token_env: R}]"), known)
	if err != nil || cfg.Forges[0].ReviewTokenEnv != "R" {
		t.Fatalf("review_token_env: %+v, %v", cfg.Forges, err)
	}
	if cfg, err = config.Parse(strings.NewReader(forge+"review_token_file: /run/review}]"), known); err != nil || cfg.Forges[0].ReviewTokenFile != "/run/review" {
		t.Fatalf("review_token_file: %+v, %v", cfg.Forges, err)
	}
	_, err = config.Parse(strings.NewReader(forge+"review_token_env: R, review_token_file: /run/review}]"), known)
	if err == nil || !strings.Contains(err.Error(), "forges[0]: set at most one of review_token_env and review_token_file") {
		t.Errorf("both: %v", err)
	}
}

func TestAForgesReviewTokenIsReadLikeItsToken(t *testing.T) {
	t.Setenv("WQ_TEST_REVIEW_TOKEN", "review-from-env")
	file := t.TempDir() + "/review"
	if err := os.WriteFile(file, []byte("review-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		forge config.Forge
		want  string
	}{
		{config.Forge{Name: "g"}, ""},
		{config.Forge{Name: "g", ReviewTokenEnv: "WQ_TEST_REVIEW_TOKEN"}, "review-from-env"},
		{config.Forge{Name: "g", ReviewTokenFile: file}, "review-from-file"},
	} {
		if got, err := tc.forge.ReviewToken(); err != nil || got != tc.want {
			t.Errorf("%+v: ReviewToken = %q, %v; want %q", tc.forge, got, err, tc.want)
		}
	}
	if _, err := (config.Forge{Name: "g", ReviewTokenEnv: "WQ_TEST_UNSET"}).ReviewToken(); err == nil || !strings.Contains(err.Error(), "forges[g].review_token_env") {
		t.Errorf("unset env: %v", err)
	}
	if _, err := (config.Forge{Name: "g", ReviewTokenFile: file + ".missing"}).ReviewToken(); err == nil || !strings.Contains(err.Error(), "forges[g].review_token_file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestAForgesRequestsPerMinuteIsOptionalAndNotNegative(t *testing.T) {
	const forge = "forges: [{name: g, kind: gitlab, url: 'http://x', token_env: T"
	cfg, err := config.Parse(strings.NewReader(forge+"}]"), known)
	if err != nil || cfg.Forges[0].RequestsPerMinute != 0 {
		t.Fatalf("unset: %+v, %v; want 0, no ceiling", cfg.Forges, err)
	}
	if cfg, err = config.Parse(strings.NewReader(forge+", requests_per_minute: 600}]"), known); err != nil || cfg.Forges[0].RequestsPerMinute != 600 {
		t.Fatalf("600: %+v, %v", cfg.Forges, err)
	}
	for _, bad := range []string{"-1", "ten", "1.5"} {
		_, err = config.Parse(strings.NewReader(forge+", requests_per_minute: "+bad+"}]"), known)
		if err == nil || !strings.Contains(err.Error(), "requests_per_minute") {
			t.Errorf("requests_per_minute: %s: %v, want an error naming the field", bad, err)
		}
	}
}
