// Command workqueue is the work queue service and its command-line tools.
//
// world.go is its composition root: the one file that names every kind
// of forge, item type and store driver the program links, one line each,
// as registry values the commands receive. A new kind, type or driver is
// its package and one line there (docs/layout.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns its exit status, having
// reported an error on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if cmd == root {
		err = usageError{err} // the root runs nothing: an unknown command
	}
	return reportError(stderr, cmd, err)
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	return newRootCommandIn(assemble(), stdout, stderr)
}

// newRootCommandIn is the command line of a program that links w.
func newRootCommandIn(w *world, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "workqueue",
		Short: "Drive desired changes to a code forge safely on behalf of untrusted automation",
		Long: `workqueue stands between untrusted automation (AI agents, CI jobs, scripts)
and trusted writes to a code forge. Callers submit desired state as data;
the service inspects it, then drives each item to completion.

Start the service with 'workqueue serve'. With no configuration at all it
runs on SQLite in the working directory and listens on 127.0.0.1:8080.

Every command that prints takes -o table (for people, the default), -o
json or -o yaml; with -o json an error is a problem document (RFC 9457)
on stderr. Exit status: 0 done (an item completed); 1 failed (an item
failed or was cancelled, a check found problems, the server refused);
2 usage (a wrong flag or argument); 3 transport or auth (the server was
unreachable, or the token missing or refused).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().Bool("verbose", false, "on an error, also print the underlying error chain (a failed connection's Go error)")
	root.AddCommand(newBenchCommand(w)) // measurements of this build, not operations (bench.go)
	root.Version = buildVersion()
	root.SetVersionTemplate("{{.Version}}")
	root.AddCommand(newVersionCommand(), newConfigCommand(w), newServeCommand(w), newMigrateCommand(w), newTokenCommand(), newItemsCommand(w), newHooksCommand(w),
		newSessionsCommand(), newWorkCommand(), newAllocateCommand(), newGateCommand(), newLeasesCommand(), newCheckpointsCommand(), newIncidentsCommand(), newIdentitiesCommand(), newMCPCommand(w),
		newHerderCommand(w), newWhoamiCommand(), newLoginCommand(), newLogoutCommand())
	wrapUsage(root)
	return root
}

// registerConfigFlags adds the flags of every command that reads the
// configuration.
func registerConfigFlags(cmd *cobra.Command) {
	cmd.Flags().String("config", os.Getenv("WORKQUEUE_CONFIG"),
		"YAML configuration file (default $WORKQUEUE_CONFIG; none: built-in defaults)")
	cmd.Flags().String("db", "",
		"database URL, overriding the file: sqlite:///abs/path.db, sqlite:relative.db or postgres://…")
}

// loadOutputConfig is loadConfig for a command that prints in an
// --output format: the format is checked (and "text" made "table")
// first, so that a wrong one fails before the configuration is read.
func loadOutputConfig(cmd *cobra.Command, w *world, output *string) (config.Config, error) {
	if err := checkOutput(output); err != nil {
		return config.Config{}, err
	}
	return loadConfig(cmd, w)
}

// loadConfig returns a command's effective configuration: the file (or the
// defaults), with the --db and --listen flags that were given applied over
// it, validated.
func loadConfig(cmd *cobra.Command, w *world) (config.Config, error) {
	cfg := config.Default()
	if file, _ := cmd.Flags().GetString("config"); file != "" {
		var err error
		if cfg, err = config.Load(file, w.known()); err != nil {
			return cfg, err
		}
	}
	fromFile := cfg
	flagged := false
	for name, field := range map[string]*string{"db": &cfg.Database, "listen": &cfg.Listen} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			*field = f.Value.String()
			flagged = true
		}
	}
	if err := cfg.Validate(w.known()); err != nil {
		if flagged && fromFile.Validate(w.known()) == nil {
			// Only a flag's value is wrong: a usage error (issue 29:
			// migrate --db mysql://x exited 1).
			return cfg, usageError{fmt.Errorf("config: %w", err)}
		}
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

func newLogger(w io.Writer, c config.Log) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(c.Level)) // validated already
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func newServeCommand(w *world) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service: HTTP API, processing engine and sweep",
		Long: `Run the service until SIGINT or SIGTERM.

It opens the database (applying migrations unless auto_migrate is false),
starts the processing engine for the configured handled_types, and serves
HTTP: GET /healthz (process up) and GET /readyz (database reachable and
schema current). On a signal it stops taking work, lets in-flight items
finish within processing.shutdown_grace, and releases their leases.

With no --config and no $WORKQUEUE_CONFIG it uses the defaults: SQLite in
./workqueue.db and 127.0.0.1:8080, and an admin API token that it creates
on first start in ./workqueue-admin.token (mode 0600); audit entries go to
the log and to an archive in ./workqueue-audit.`,
		Example: `  workqueue serve
  workqueue serve --config /etc/workqueue.yaml
  workqueue serve --db postgres://wq@db:5432/wq --listen 0.0.0.0:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := precheckConfig(cmd, w); err != nil {
				return err
			}
			cfg, err := loadConfig(cmd, w)
			if err != nil {
				return err
			}
			softMemoryLimit()
			m := newServeMain(cmd, w, cfg)
			if err := m.Run(cmd.Context()); err != nil {
				m.Close()
				return err
			}
			<-cmd.Context().Done()
			m.Log.Info("shutting down")
			return m.Close()
		},
	}
	registerConfigFlags(cmd)
	cmd.Flags().String("listen", "", "HTTP listen address, overriding the file (default 127.0.0.1:8080)")
	return cmd
}

// DefaultMemoryLimit is serve's soft memory limit (runtime/debug's) when
// GOMEMLIMIT does not set one: the collector works harder as the heap
// nears it, so that garbage from large request bodies does not pile up
// to several times what is live. docs/DESIGN.md ("Request bodies and
// memory") gives the ceiling it keeps the process under.
const DefaultMemoryLimit = 160 << 20

func softMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
}

// precheckConfig runs config check's checks on serve's file before
// anything is opened, and refuses to start with every problem listed (not
// one per start, some only after migrations ran). Warnings are printed
// and do not stop it.
func precheckConfig(cmd *cobra.Command, w *world) error {
	file, _ := cmd.Flags().GetString("config")
	if file == "" {
		return nil
	}
	_, problems := config.Check(file, w.known())
	if w := problems.Warnings(); len(w) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s:\n", file, countOf(len(w), "warning"))
		config.FormatProblems(cmd.ErrOrStderr(), w)
	}
	if errs := problems.Errors(); len(errs) > 0 {
		var b strings.Builder
		config.FormatProblems(&b, errs)
		return fmt.Errorf("config %s: %s, not starting:\n%s", file, countOf(len(errs), "problem"), strings.TrimRight(b.String(), "\n"))
	}
	return nil
}

// adminTokenFile is where serve without a config file keeps its admin
// token, beside the default database in the working directory.
const adminTokenFile = "workqueue-admin.token"

// newServeMain builds serve's process: without a config file, it also
// gets an admin token, created on first start.
func newServeMain(cmd *cobra.Command, w *world, cfg config.Config) *Main {
	m := newMainIn(w, cfg, newLogger(cmd.ErrOrStderr(), cfg.Log))
	if file, _ := cmd.Flags().GetString("config"); file == "" {
		m.AdminTokenFile = adminTokenFile
		m.Config.Audit.Sinks = append(m.Config.Audit.Sinks, config.AuditSink{Kind: config.AuditDir, Path: defaultAuditDir})
	} else {
		// A file may name the same token (the example does), so that the
		// README's next step keeps the token its first step made.
		m.AdminTokenFile = cfg.Auth.AdminTokenFile
	}
	return m
}

func newMigrateCommand(w *world) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations and report the schema version",
		Long: `Apply the database migrations that are not applied yet, each in its own
transaction, and report the schema version. Running it again applies
nothing. Several instances may run it at once on PostgreSQL: they take
turns under an advisory lock.`,
		Example: `  workqueue migrate --db sqlite:workqueue.db
  workqueue migrate --db postgres://wq@db:5432/wq`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadOutputConfig(cmd, w, &output)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			all, err := w.openStores(ctx, cfg.Database)
			if err != nil {
				return err
			}
			s := all.queue
			defer s.Close()
			applied, err := s.Migrate(ctx)
			if err != nil {
				return err
			}
			version, latest, err := s.SchemaVersion(ctx)
			if err != nil {
				return err
			}
			if version != latest {
				return errors.New("schema not current after migrating")
			}
			return printOutput(cmd.OutOrStdout(), output, map[string]any{"applied": len(applied), "schema_version": version}, func(w io.Writer) {
				if len(applied) == 0 {
					fmt.Fprintf(w, "schema already current (%d migrations); nothing to apply\n", version)
				} else {
					fmt.Fprintf(w, "applied %d migrations; schema current (%d migrations)\n", len(applied), version)
				}
			})
		},
	}
	registerConfigFlags(cmd)
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}
