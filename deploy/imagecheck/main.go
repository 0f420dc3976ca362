// Command imagecheck checks an OCI image tarball written by
// "ko build --tarball" (scripts/image): that its entrypoint is the
// workqueue binary, that it runs as a numeric non-root user (so that
// Kubernetes can enforce runAsNonRoot), and that its version and revision
// labels say what the binary inside it says of itself in its build
// information. It prints what it found and exits 1 naming every problem.
//
//	go run ./deploy/imagecheck IMAGE.tar
package main

import (
	"archive/tar"
	"compress/gzip"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The binary's path in ko's images, and the labels scripts/image sets.
const (
	entrypoint    = "/ko-app/workqueue"
	labelVersion  = "org.opencontainers.image.version"
	labelRevision = "org.opencontainers.image.revision"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: imagecheck IMAGE.tar")
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	problems, err := check(flag.Arg(0), os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "imagecheck: %v\n", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "imagecheck: %s\n", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// imageConfig is the part of an image's config blob checked here.
type imageConfig struct {
	Config struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// check reads the tarball's one image and returns what is wrong with it.
func check(file string, out io.Writer) ([]string, error) {
	var manifest []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	if err := readMember(file, "manifest.json", func(r io.Reader) error { return json.NewDecoder(r).Decode(&manifest) }); err != nil {
		return nil, fmt.Errorf("%s: manifest.json: %w", file, err)
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("%s: want one image, found %d", file, len(manifest))
	}
	var cfg imageConfig
	if err := readMember(file, manifest[0].Config, func(r io.Reader) error { return json.NewDecoder(r).Decode(&cfg) }); err != nil {
		return nil, fmt.Errorf("%s: config %s: %w", file, manifest[0].Config, err)
	}
	c := cfg.Config
	fmt.Fprintf(out, "entrypoint: %q\nuser:       %q\n", c.Entrypoint, c.User)
	var problems []string
	if !slices.Equal(c.Entrypoint, []string{entrypoint}) {
		problems = append(problems, fmt.Sprintf("entrypoint %q, want [%q]", c.Entrypoint, entrypoint))
	}
	// A name would pass for non-root, but the kubelet can only enforce
	// runAsNonRoot on a number.
	uid, _, _ := strings.Cut(c.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n <= 0 {
		problems = append(problems, fmt.Sprintf("user %q, want a numeric user other than root (0)", c.User))
	}

	// The binary's own build information, from the layer that holds it.
	binary, err := extractBinary(file, manifest[0].Layers)
	if err != nil {
		return nil, err
	}
	defer os.Remove(binary)
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("%s in the image: %w", entrypoint, err)
	}
	revision := ""
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	fmt.Fprintf(out, "binary:     %s %s (revision %q, %s)\n", info.Path, info.Main.Version, revision, info.GoVersion)
	for _, l := range []struct{ key, want string }{{labelVersion, info.Main.Version}, {labelRevision, revision}} {
		got, ok := c.Labels[l.key]
		fmt.Fprintf(out, "label:      %s=%q\n", l.key, got)
		switch {
		case l.want == "" || l.want == "(devel)":
			problems = append(problems, fmt.Sprintf("the binary's build information has no %s to label the image with (built without -buildvcs?)", strings.TrimPrefix(l.key, "org.opencontainers.image.")))
		case !ok:
			problems = append(problems, fmt.Sprintf("no label %s (want %q)", l.key, l.want))
		case got != l.want:
			problems = append(problems, fmt.Sprintf("label %s=%q, but the binary says %q", l.key, got, l.want))
		}
	}
	return problems, nil
}

// readMember calls read with the tarball's member name.
func readMember(file, name string, read func(io.Reader) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("no member %s", name)
		}
		if err != nil {
			return err
		}
		if path.Clean(h.Name) == path.Clean(name) {
			return read(tr)
		}
	}
}

// extractBinary writes the entrypoint's file from the image's layers to a
// temporary file, the last layer that has it winning as in the image.
func extractBinary(file string, layers []string) (string, error) {
	tmp, err := os.CreateTemp("", "imagecheck-*")
	if err != nil {
		return "", err
	}
	defer tmp.Close()
	found := false
	for _, layer := range layers {
		err := readMember(file, layer, func(r io.Reader) error {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return err
			}
			lr := tar.NewReader(zr)
			for {
				h, err := lr.Next()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				if "/"+strings.TrimPrefix(path.Clean(h.Name), "/") != entrypoint || h.Typeflag != tar.TypeReg {
					continue
				}
				if err := tmp.Truncate(0); err != nil {
					return err
				}
				if _, err := tmp.Seek(0, io.SeekStart); err != nil {
					return err
				}
				if _, err := io.Copy(tmp, lr); err != nil {
					return err
				}
				found = true
			}
		})
		if err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("%s: layer %s: %w", file, layer, err)
		}
	}
	if !found {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("%s: no layer holds %s", file, entrypoint)
	}
	return tmp.Name(), nil
}
