// Command river burns down no-op jobs with River on a PostgreSQL
// database and prints jobs/s: the reference figure that scripts/bench
// sets beside workqueue's own engine burn-down on the same database.
//
// It is a module of its own so that River never enters the product's
// go.mod. It runs River's migrations into a fresh schema, inserts the
// jobs before starting the client (as workqueue bench engine seeds its
// items before starting the engine), times the client from start until
// River has recorded every job as completed, and drops the schema.
//
// By default River runs as tuned for throughput by its own benchmark
// (cmd/river bench): 2,000 workers, a 2 ms fetch cooldown and a 20 ms
// poll interval. River's client defaults (100 ms cooldown, 1 s poll) cap
// a burn-down of pre-inserted jobs at about workers/0.1s, which would
// make the comparison flatter than it is.
//
//	go run . -database "$TEST_DATABASE_URL" -jobs 20000
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // database/sql's "sqlite", the driver workqueue runs on
)

// noOpArgs is a job that does nothing: what is measured is River's own
// cost per job (fetch, run, complete).
type noOpArgs struct{}

func (noOpArgs) Kind() string { return "bench_no_op" }

type noOpWorker struct{ river.WorkerDefaults[noOpArgs] }

func (noOpWorker) Work(context.Context, *river.Job[noOpArgs]) error { return nil }

// result is what one run measured; -o json prints it.
type result struct {
	System         string  `json:"system"`
	Database       string  `json:"database"` // postgres or sqlite
	Version        string  `json:"version"`
	Jobs           int     `json:"jobs"`
	Workers        int     `json:"workers"` // per client
	Clients        int     `json:"clients"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	JobsPerSecond  float64 `json:"jobs_per_second"`
	// CPUMsPer1000 is the machine's busy CPU time during the burn-down
	// (this process, the database server, the kernel: /proc/stat), in
	// milliseconds per 1,000 jobs: read as workqueue bench engine reads
	// it, for the same comparison.
	CPUMsPer1000 float64 `json:"cpu_ms_per_1000"`
}

// riverVersion is the River release this module pins (go.mod).
const riverVersion = "v0.51.2"

func main() {
	database := flag.String("database", os.Getenv("TEST_DATABASE_URL"), "PostgreSQL URL (default $TEST_DATABASE_URL); River's tables go into a fresh schema in it, dropped at the end")
	sqlitePath := flag.String("sqlite", "", "run on a new SQLite file at this path instead, with River's SQLite driver (the file must not exist; it is removed at the end)")
	jobs := flag.Int("jobs", 20_000, "no-op jobs to burn down")
	workers := flag.Int("workers", 2_000, "River's MaxWorkers for the queue")
	cooldown := flag.Duration("fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown")
	poll := flag.Duration("fetch-poll-interval", 20*time.Millisecond, "River's FetchPollInterval")
	output := flag.String("o", "text", "output format: text or json")
	keep := flag.Bool("keep", false, "keep the schema afterwards (its name is printed on stderr)")
	clients := flag.Int("clients", 1, "River clients sharing the jobs, each with its own connection pool and -workers workers, as that many instances of a service would run (PostgreSQL only): the scale-out reference for workqueue bench engine --instances")
	flag.Parse()
	if (*database == "" && *sqlitePath == "") || *jobs < 1 || *workers < 1 || *clients < 1 || (*output != "text" && *output != "json") {
		flag.Usage()
		os.Exit(2)
	}
	if *sqlitePath != "" && *clients != 1 {
		fmt.Fprintln(os.Stderr, "river bench: -clients: only 1 with -sqlite (River's SQLite driver runs on one connection)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var r result
	var err error
	if *sqlitePath != "" {
		if _, statErr := os.Stat(*sqlitePath); statErr == nil {
			fmt.Fprintln(os.Stderr, "river bench: -sqlite: the file exists already; give a new path")
			os.Exit(2)
		}
		defer os.Remove(*sqlitePath)
		defer os.Remove(*sqlitePath + "-wal")
		defer os.Remove(*sqlitePath + "-shm")
		r, err = runSQLite(ctx, *sqlitePath, *jobs, *workers, *cooldown, *poll)
	} else {
		r, err = run(ctx, *database, *jobs, *workers, *clients, *cooldown, *poll, *keep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
	if *output == "json" {
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	fmt.Printf("River %s on %s: %d no-op jobs, %d clients of %d workers, %.2fs: %.0f jobs/s\n",
		r.Version, r.Database, r.Jobs, r.Clients, r.Workers, r.ElapsedSeconds, r.JobsPerSecond)
}

func run(ctx context.Context, url string, jobs, workers, clients int, cooldown, poll time.Duration, keep bool) (result, error) {
	schema, err := createSchema(ctx, url)
	if err != nil {
		return result{}, err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "schema:", schema)
	} else {
		defer dropSchema(url, schema)
	}
	drivers := make([]riverdriver.Driver[pgx.Tx], clients)
	for i := range drivers {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			return result{}, fmt.Errorf("connect: %w", err)
		}
		defer pool.Close()
		drivers[i] = riverpgxv5.New(pool)
	}
	r, err := burnDown(ctx, drivers, schema, jobs, workers, cooldown, poll)
	r.Database = "postgres"
	return r, err
}

// runSQLite burns down on a SQLite file at path with River's SQLite
// driver, as its documentation advises it: one connection (River's
// operations run in parallel, which SQLite answers with SQLITE_BUSY),
// WAL, and synchronous=FULL as workqueue runs its SQLite.
func runSQLite(ctx context.Context, path string, jobs, workers int, cooldown, poll time.Duration) (result, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	r, err := burnDown(ctx, []riverdriver.Driver[*sql.Tx]{riversqlite.New(db)}, "", jobs, workers, cooldown, poll)
	r.Database = "sqlite"
	return r, err
}

// burnDown migrates River into schema, inserts the jobs and times one
// client per driver, all on the same queue, from their start until every
// job is recorded completed.
func burnDown[TTx any](ctx context.Context, drivers []riverdriver.Driver[TTx], schema string, jobs, workers int, cooldown, poll time.Duration) (result, error) {
	driver := drivers[0]
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: log})
	if err != nil {
		return result{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return result{}, fmt.Errorf("migrate River: %w", err)
	}

	registry := river.NewWorkers()
	river.AddWorker(registry, &noOpWorker{})
	clients := make([]*river.Client[TTx], len(drivers))
	for i, d := range drivers {
		c, err := river.NewClient(d, &river.Config{
			Schema:            schema,
			Logger:            log,
			FetchCooldown:     cooldown,
			FetchPollInterval: poll,
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
			Workers:           registry,
		})
		if err != nil {
			return result{}, err
		}
		clients[i] = c
	}
	client := clients[0]

	params := make([]river.InsertManyParams, jobs)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noOpArgs{}}
	}
	fmt.Fprintf(os.Stderr, "inserting %d jobs into schema %s\n", jobs, schema)
	for start := 0; start < jobs; start += 5_000 {
		if _, err := client.InsertManyFast(ctx, params[start:min(start+5_000, jobs)]); err != nil {
			return result{}, fmt.Errorf("insert jobs: %w", err)
		}
	}

	// Completion events come after River has written the completion, so
	// the clock stops when the last job is recorded done, not merely run.
	// The channel holds every event: River drops those that overflow it.
	// Every client's completions go into one channel, and a nil when its
	// subscription closes: before every job completed, that is a failure.
	completed := make(chan *river.Event, jobs+len(clients)) // never full: one event per job, one nil per client
	for _, c := range clients {
		events, cancel := c.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: jobs + 1000})
		defer cancel()
		go func() {
			for ev := range events {
				completed <- ev
			}
			completed <- nil
		}()
	}
	fmt.Fprintf(os.Stderr, "burning down with %d clients of %d workers\n", len(clients), workers)
	busy, start := machineBusy(), time.Now()
	for _, c := range clients {
		if err := c.Start(ctx); err != nil {
			return result{}, fmt.Errorf("start client: %w", err)
		}
	}
	progress := time.NewTicker(2 * time.Second)
	defer progress.Stop()
	for done := 0; done < jobs; {
		select {
		case ev := <-completed:
			if ev == nil {
				return result{}, errors.New("subscription closed before every job completed")
			}
			done++
		case <-progress.C:
			fmt.Fprintf(os.Stderr, "%d/%d jobs completed\n", done, jobs)
		case <-ctx.Done():
			return result{}, ctx.Err()
		}
	}
	elapsed, busy := time.Since(start), machineBusy()-busy
	stopCtx, stopCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer stopCancel()
	for _, c := range clients {
		if err := c.Stop(stopCtx); err != nil {
			return result{}, fmt.Errorf("stop client: %w", err)
		}
	}
	return result{System: "river", Version: riverVersion, Jobs: jobs, Workers: workers, Clients: len(clients),
		ElapsedSeconds: elapsed.Seconds(), JobsPerSecond: float64(jobs) / elapsed.Seconds(),
		CPUMsPer1000: float64(busy) / float64(time.Millisecond) * 1000 / float64(jobs)}, nil
}

// machineBusy is the CPU time all cores have spent on anything but idling
// and waiting for I/O since boot (the first line of /proc/stat, in
// USER_HZ ticks of 10 ms), or 0 where /proc is not there. This module
// cannot import the product's internal/machinecpu, which reads the same.
func machineBusy() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0
	}
	var ticks int64
	for i, f := range fields[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// createSchema makes an empty schema for this run, so that River's tables
// start empty and nothing else in the database is touched.
func createSchema(ctx context.Context, url string) (string, error) {
	b := make([]byte, 4)
	rand.Read(b)
	schema := "river_bench_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	return schema, nil
}

func dropSchema(url, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drop schema:", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		fmt.Fprintln(os.Stderr, "drop schema:", err)
	}
}
