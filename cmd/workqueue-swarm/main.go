// Command workqueue-swarm runs a swarm of simulated agent sessions
// against a running workqueue service and a Gitea (issues 13 and 25):
// it opens issues, lets authors, reviewers and mergers work them to
// merged pull requests over MCP, each session with its own agent-only
// token, while hostile sessions try every way around the gate against
// their work, prints one line per event and a summary, and audits the
// run. The exit status is 1 when a safety check failed, a hostile
// attempt got through or not everything was merged within the bound, 2
// when the run could not be made. scripts/demo agents sets it all up.
//
//	workqueue-swarm -repo OWNER/NAME -gitea URL -agent-tokens FILE -db URL [-issues 40] [-sessions 8] [-hostile N] [-runaway-token FILE]
//
// The environment holds the secrets: WORKQUEUE_URL (the service),
// WORKQUEUE_TOKEN (permission admin: the stage reads the inventory, the
// sessions, the leases and the items, and syncs), GITEA_TOKEN (the
// stage opens the issues and reads the forge for the audit). Agents get
// only the agent tokens. The audit reads the control plane's event log
// from the service's database (-db), which the API does not list; it
// writes nothing there.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/workqueue-dev/workqueue/cmd/workqueue-swarm/swarm"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/sqlite"
)

func main() {
	os.Exit(run())
}

func run() int {
	cfg := swarm.Config{Service: os.Getenv("WORKQUEUE_URL"), AdminToken: os.Getenv("WORKQUEUE_TOKEN"),
		GiteaToken: os.Getenv("GITEA_TOKEN"), Out: os.Stdout}
	var tokensFile, runawayFile, database string
	flag.StringVar(&cfg.Service, "service", cfg.Service, "the workqueue service's base URL (default $WORKQUEUE_URL)")
	flag.StringVar(&cfg.GiteaURL, "gitea", "", "the Gitea's base URL")
	flag.StringVar(&cfg.Forge, "forge", "gitea", "the forge's name in the service's configuration")
	flag.StringVar(&cfg.Repo, "repo", "", "the repository (owner/name) to open the issues in; control_plane.repos must cover it")
	flag.StringVar(&tokensFile, "agent-tokens", "", "a file of agent-only tokens, one a line, one per session (fewer are used round robin)")
	flag.IntVar(&cfg.Issues, "issues", 40, "how many issues to open")
	flag.IntVar(&cfg.Sessions, "sessions", 8, "how many agent sessions (at least 3 honest ones): of the honest ones a merger per 8, a reviewer per 4, the rest authors")
	flag.IntVar(&cfg.Hostile, "hostile", -1, "how many of the sessions are hostile, each with an agent token of its own (the last ones of the file); default 2 from 5 sessions, else 1, with sessions added to keep 3 honest ones")
	flag.StringVar(&runawayFile, "runaway-token", "", "a file of one agent-only token of an identity of its own: a runaway session comments in a loop until its budget stops it and the stage freezes it")
	flag.StringVar(&database, "db", "", "the service's database (sqlite://PATH or postgres://...), for the control plane's event log")
	flag.DurationVar(&cfg.Timeout, "timeout", 0, "what is not merged by then is a failure (default 15m, or 2m and 30s an issue when longer)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: workqueue-swarm -repo OWNER/NAME -gitea URL -agent-tokens FILE -db URL [flags]\n"+
			"Environment: WORKQUEUE_URL, WORKQUEUE_TOKEN (admin), GITEA_TOKEN.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || cfg.Service == "" || cfg.Repo == "" || cfg.GiteaURL == "" || tokensFile == "" || database == "" {
		flag.Usage()
		return 2
	}
	b, err := os.ReadFile(tokensFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workqueue-swarm:", err)
		return 2
	}
	cfg.AgentTokens = strings.Fields(string(b))
	var note string
	cfg.Sessions, cfg.Hostile, note = swarm.Sessions(cfg.Sessions, cfg.Hostile)
	if note != "" {
		fmt.Fprintln(os.Stdout, note)
	}
	if runawayFile != "" {
		b, err := os.ReadFile(runawayFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "workqueue-swarm:", err)
			return 2
		}
		cfg.RunawayToken = strings.TrimSpace(string(b))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The swarm opens the control plane's store only, on either driver.
	db, err := store.NewRegistry(sqlite.Driver, postgres.Driver).Open(ctx, database)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workqueue-swarm: open the database:", err)
		return 2
	}
	defer db.Close()
	if cfg.Events, err = cpstore.New(db); err != nil {
		fmt.Fprintln(os.Stderr, "workqueue-swarm: open the database:", err)
		return 2
	}
	report, err := swarm.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workqueue-swarm:", err)
		return 2
	}
	report.Summary(os.Stdout)
	if !report.OK() {
		return 1
	}
	return 0
}
