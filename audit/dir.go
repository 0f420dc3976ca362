package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DirStore is an ObjectStore on a local directory, with the bucket's key
// layout as paths under Root: the archive of a single instance without an
// S3 bucket (serve without a configuration file keeps one beside its
// database).
type DirStore struct {
	Root string
}

// Put writes body to Root/key through a temporary file renamed into
// place, so that a reader never sees half an object.
func (d DirStore) Put(_ context.Context, key string, body []byte) error {
	if !filepath.IsLocal(filepath.FromSlash(key)) || strings.HasPrefix(filepath.Base(key), ".") {
		return fmt.Errorf("audit dir: key %q is not a plain relative path", key)
	}
	dst := filepath.Join(d.Root, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return fmt.Errorf("audit dir: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".partial-*")
	if err != nil {
		return fmt.Errorf("audit dir: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	if _, err := f.Write(body); err != nil {
		f.Close()
		return fmt.Errorf("audit dir: write %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("audit dir: sync %s: %w", key, err)
	}
	if err := f.Chmod(0o640); err != nil {
		f.Close()
		return fmt.Errorf("audit dir: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit dir: write %s: %w", key, err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return fmt.Errorf("audit dir: %w", err)
	}
	return nil
}
