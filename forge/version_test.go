package forge_test

import (
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/forge"
)

func TestVersionsAreReadAsTheForgesReportThem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw    string
		want   string // String(); "" when not parsed
		pre    bool
		parsed bool
	}{
		{"1.26.0", "1.26.0", false, true},
		{"v1.26.1", "1.26.1", false, true},
		{"1.27.0+dev-123-gabc", "1.27.0", false, true},
		{"1.26.0+dev-123-gabc", "1.26.0", false, true},
		{"1.26.0-rc1", "1.26.0", true, true},
		{"17.5.0-ee", "17.5.0", false, true},
		{"17.5.0-pre", "17.5.0", false, true},
		{"16.11", "16.11.0", false, true},
		{"11.0.0+gitea-1.22.0", "1.22.0", false, true},
		{"development", "", false, false},
		{"", "", false, false},
		{"1.2x", "", false, false},
		{"1", "", false, false},
		{"\x1b[31m1.26.0", "", false, false},
	}
	for _, tt := range tests {
		got := forge.ParseVersion(tt.raw)
		if got.Parsed != tt.parsed || (tt.parsed && (got.String() != tt.want || got.PreRelease != tt.pre)) {
			t.Errorf("ParseVersion(%q) = %+v (%s), want parsed %v, %q, pre-release %v", tt.raw, got, got, tt.parsed, tt.want, tt.pre)
		}
	}
}

func TestAVersionBelowTheKindsMinimumIsTooOldAndGarbageIsUnknown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind, minimum, raw string
		want               forge.VersionVerdict
	}{
		{"gitea", "1.26.0", "1.26.0", forge.VersionSupported},
		{"gitea", "1.26.0", "1.26.4", forge.VersionSupported},
		{"gitea", "1.26.0", "1.27.0+dev-5-gabc", forge.VersionSupported},
		{"gitea", "1.26.0", "1.25.3", forge.VersionTooOld},
		{"gitea", "1.26.0", "1.26.0-rc1", forge.VersionTooOld},
		{"gitea", "1.26.0", "11.0.0+gitea-1.22.0", forge.VersionTooOld}, // Forgejo naming an old Gitea
		{"gitea", "1.26.0", "development", forge.VersionUnknown},
		{"gitlab", "17.0.0", "17.5.0-ee", forge.VersionSupported},
		{"gitlab", "17.0.0", "16.11.3-ce", forge.VersionTooOld},
		{"gitlab", "17.0.0", "", forge.VersionUnknown},
		{"relay", "", "anything", forge.VersionSupported}, // a kind without a minimum
	}
	for _, tt := range tests {
		got, msg := forge.CheckVersion(tt.kind, tt.minimum, tt.raw)
		if got != tt.want {
			t.Errorf("CheckVersion(%s, %s, %q) = %v (%s), want %v", tt.kind, tt.minimum, tt.raw, got, msg, tt.want)
		}
		if got == forge.VersionTooOld && (!strings.Contains(msg, tt.raw) || !strings.Contains(msg, tt.minimum)) {
			t.Errorf("CheckVersion(%s, %q) says %q: it must name the version found and the one needed", tt.kind, tt.raw, msg)
		}
	}
}

func TestAVersionStringIsNeverPrintedRaw(t *testing.T) {
	t.Parallel()
	_, msg := forge.CheckVersion("gitea", "1.26.0", "evil\nversion: "+strings.Repeat("x", 200))
	if strings.Contains(msg, "\n") || strings.Contains(msg, strings.Repeat("x", 100)) {
		t.Errorf("the message carries the forge's answer as it came: %q", msg)
	}
}
