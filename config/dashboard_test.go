package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/config"
)

func TestTheCookieKeyComesFromTheEnvironmentOrAFileAndIsLongEnough(t *testing.T) {
	if key, err := (config.Dashboard{}).CookieKey(); key != nil || err != nil {
		t.Errorf("none configured: %q, %v; want nil (the database keeps one)", key, err)
	}
	long := strings.Repeat("k", 44)
	t.Setenv("WQ_TEST_COOKIE_KEY", long)
	if key, err := (config.Dashboard{CookieKeyEnv: "WQ_TEST_COOKIE_KEY"}).CookieKey(); string(key) != long || err != nil {
		t.Errorf("from the environment: %q, %v", key, err)
	}
	file := filepath.Join(t.TempDir(), "cookie-key")
	os.WriteFile(file, []byte("short\n"), 0o600)
	if _, err := (config.Dashboard{CookieKeyFile: file}).CookieKey(); err == nil || !strings.Contains(err.Error(), "dashboard.cookie_key: want at least 32 characters") {
		t.Errorf("a short key: %v", err)
	}
	t.Setenv("WQ_TEST_COOKIE_KEY", "")
	if _, err := (config.Dashboard{CookieKeyEnv: "WQ_TEST_COOKIE_KEY"}).CookieKey(); err == nil || !strings.Contains(err.Error(), "dashboard.cookie_key_env") {
		t.Errorf("an unset variable: %v", err)
	}
}
