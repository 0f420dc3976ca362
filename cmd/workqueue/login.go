package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
)

// The client commands' saved logins, as gh keeps its hosts: one file in
// the user's configuration directory (os.UserConfigDir, so
// $XDG_CONFIG_HOME/workqueue/hosts.yaml on Linux), mode 0600 in a
// directory of mode 0700, holding a token per server and the server
// logged in to last. A token is read from standard input or a prompt
// that does not echo it, and never printed.

// savedLogins is the logins file's content.
type savedLogins struct {
	// Default is the server logged in to last: client commands talk to
	// it when neither --server nor $WORKQUEUE_URL names one.
	Default string                 `yaml:"default,omitempty"`
	Servers map[string]savedServer `yaml:"servers,omitempty"`
}

type savedServer struct {
	Token string `yaml:"token"`
}

// loginsFile is where the logins are kept.
func loginsFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("saved logins: %w", err)
	}
	return filepath.Join(dir, "workqueue", "hosts.yaml"), nil
}

// normalServer is the key a server's login is saved under: its URL
// without a trailing slash.
func normalServer(server string) string { return strings.TrimRight(server, "/") }

// loadLogins reads the saved logins; none saved is no error.
func loadLogins() (savedLogins, error) {
	var saved savedLogins
	path, err := loginsFile()
	if err != nil {
		return saved, nil // no configuration directory: nothing was saved
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return saved, nil
	}
	if err != nil {
		return saved, fmt.Errorf("saved logins: %w", err)
	}
	if err := yaml.Unmarshal(b, &saved); err != nil {
		return saved, fmt.Errorf("saved logins %s: %w", path, err)
	}
	return saved, nil
}

// saveLogins writes the logins file, readable by its owner only.
func saveLogins(saved savedLogins) (string, error) {
	path, err := loginsFile()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("saved logins: %w", err)
	}
	b, err := yaml.Marshal(saved)
	if err != nil {
		return "", err
	}
	// Written beside and renamed over, so that a crash leaves the old
	// file or the new one; created 0600, so the token is never readable
	// by others, not even for a moment.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hosts-*.yaml")
	if err != nil {
		return "", fmt.Errorf("saved logins: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("saved logins: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return "", fmt.Errorf("saved logins: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("saved logins: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("saved logins: %w", err)
	}
	return path, nil
}

// readToken reads a token: from a prompt that does not echo when
// standard input is a terminal, else the first line of standard input.
func readToken(cmd *cobra.Command, server string) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Paste an API token for %s: ", server)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(cmd.ErrOrStderr())
		if err != nil {
			return "", fmt.Errorf("read the token: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the token: %w", err)
	}
	return strings.TrimSpace(line), nil
}

func newLoginCommand() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "login [--server URL] < TOKEN_FILE",
		Short: "Save an API token for a server, for every client command to use",
		Long: `Save an API token for a workqueue server, as 'gh auth login' does: the
token is read from standard input (or, on a terminal, from a prompt
that does not echo it), checked with the server (GET /me), and kept in
the user's configuration directory ($XDG_CONFIG_HOME/workqueue/hosts.yaml,
or ~/.config/workqueue/hosts.yaml, mode 0600). The token is never
printed.

Every client command then uses it: --server and --token come first,
then $WORKQUEUE_URL and $WORKQUEUE_TOKEN, then the saved login (the
server logged in to last, and its token). A token the server refuses is
not saved, and exits 3.`,
		Example: `  workqueue login < workqueue-admin.token
  workqueue login --server https://workqueue.internal
  workqueue logout --server https://workqueue.internal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server = normalServer(cmp.Or(server, os.Getenv("WORKQUEUE_URL"), defaultServer))
			token, err := readToken(cmd, server)
			if err != nil {
				return err
			}
			if token == "" {
				return usageErrorf("no token on standard input")
			}
			c, err := (&clientFlags{server: server, token: token, output: "table"}).client()
			if err != nil {
				return err
			}
			me, err := c.Me(cmd.Context())
			if err != nil {
				return err
			}
			saved, err := loadLogins()
			if err != nil {
				return err
			}
			if saved.Servers == nil {
				saved.Servers = map[string]savedServer{}
			}
			saved.Servers[server] = savedServer{Token: token}
			saved.Default = server
			path, err := saveLogins(saved)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s as %s; the token is saved in %s\n", server, me.Identity, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "workqueue server URL (default $WORKQUEUE_URL, else "+defaultServer+")")
	return cmd
}

func newLogoutCommand() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "logout [--server URL]",
		Short: "Forget the API token saved for a server",
		Long: `Remove the token 'workqueue login' saved for a server (default: the
server logged in to last). The token itself stays valid on the server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			saved, err := loadLogins()
			if err != nil {
				return err
			}
			server = normalServer(cmp.Or(server, saved.Default))
			if _, ok := saved.Servers[server]; !ok || server == "" {
				return fmt.Errorf("not logged in to %q", server)
			}
			delete(saved.Servers, server)
			if saved.Default == server {
				saved.Default = ""
			}
			if _, err := saveLogins(saved); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged out of %s\n", server)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "workqueue server URL (default: the server logged in to last)")
	return cmd
}
