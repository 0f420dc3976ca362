package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeImage writes a docker-format image tarball, as ko build --tarball
// does, whose one layer holds binary at /ko-app/workqueue.
func writeImage(t *testing.T, cfg imageConfig, binary []byte) string {
	t.Helper()
	var layer bytes.Buffer
	zw := gzip.NewWriter(&layer)
	lw := tar.NewWriter(zw)
	must(t, lw.WriteHeader(&tar.Header{Name: "ko-app/workqueue", Mode: 0o555, Size: int64(len(binary)), Typeflag: tar.TypeReg}))
	_, err := lw.Write(binary)
	must(t, err)
	must(t, lw.Close())
	must(t, zw.Close())
	config, err := json.Marshal(cfg)
	must(t, err)
	manifest, err := json.Marshal([]map[string]any{{"Config": "config.json", "Layers": []string{"layer.tar.gz"}}})
	must(t, err)

	file := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(file)
	must(t, err)
	tw := tar.NewWriter(f)
	for name, body := range map[string][]byte{"manifest.json": manifest, "config.json": config, "layer.tar.gz": layer.Bytes()} {
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}))
		_, err := tw.Write(body)
		must(t, err)
	}
	must(t, tw.Close())
	must(t, f.Close())
	return file
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckFindsEveryProblem builds an image around this test binary,
// whose build information has no VCS version, with a root user, a wrong
// entrypoint and no labels: each is reported.
func TestCheckFindsEveryProblem(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	must(t, err)
	binary, err := os.ReadFile(self)
	must(t, err)
	var cfg imageConfig
	cfg.Config.User = "root"
	cfg.Config.Entrypoint = []string{"/bin/sh"}
	problems, err := check(writeImage(t, cfg, binary), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{`entrypoint ["/bin/sh"]`, `user "root", want a numeric user`, "no version to label", "no revision to label"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not mention %q:\n%s", want, got)
		}
	}
}

// TestCheckRefusesAnImageWithoutTheBinary: a tarball whose layers lack
// the entrypoint is an error, not a pass.
func TestCheckRefusesAnImageWithoutTheBinary(t *testing.T) {
	t.Parallel()
	var cfg imageConfig
	cfg.Config.User = "65532"
	cfg.Config.Entrypoint = []string{entrypoint}
	file := writeImage(t, cfg, []byte("not a Go binary"))
	if _, err := check(file, io.Discard); err == nil {
		t.Error("a layer holding no Go binary passed")
	}
}
