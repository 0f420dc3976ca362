package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/mr"
)

// hostileAttacks are the attack classes of bench hostile, in the order
// they run (issue 49).
var hostileAttacks = []string{"none", "slowloris", "huge-length", "chunked-dribble", "bad-credentials", "mcp-batch", "write-loop"}

func newBenchHostileCommand(w *world) *cobra.Command {
	var (
		duration  time.Duration
		agents    int
		attackers int
		attacks   []string
	)
	cmd := &cobra.Command{
		Use:   "hostile",
		Short: "Measure honest agents' and CI's latency and failures while each attack runs",
		Long: `Start the service in this process on the database (listening on a free
loopback port), then run honest work all along: A agents, each with a
token of its own, holding a lease from the control plane and, in a
loop, heartbeating their session and their lease and asking the gate;
and a CI token submitting a small change. Meanwhile each attack class
runs, one after another, for --duration each:

  none             no attack: the honest figures to compare with
  slowloris        webhook deliveries that send their declared bytes one
                   a second (Gitea, whose signature needs the body)
  huge-length      deliveries and dashboard logins declaring a terabyte,
                   sent as slowly; GitLab deliveries with a wrong token
  chunked-dribble  chunked deliveries that send a byte every 100 ms
  bad-credentials  guessed bearer tokens and GitLab tokens as fast as
                   possible, each connection from another loopback
                   address (127.x.y.z)
  mcp-batch        JSON-RPC batches of 1,000 MCP tool calls to /mcp with
                   a valid agent token
  write-loop       one identity submitting changes in a loop from 16
                   connections

It prints, per attack, each honest call's count, p50, p99 and maximum
latency and its failures (transport errors and answers other than 2xx),
and what the attack's requests were answered. Nothing calls a forge:
the forges are configured for their webhooks only, and the agents' work
is in an inventory of a forge not configured here.`,
		Example: `  workqueue bench hostile
  workqueue bench hostile --duration 10s --attack slowloris --attack write-loop -o json`,
		Args: cobra.NoArgs,
		RunE: withBench(w, func(cmd *cobra.Command, b *bench) error {
			if duration <= 0 || agents < 1 || attackers < 1 {
				return errors.New("--duration, --agents and --attackers must be positive")
			}
			for _, a := range attacks {
				if !slices.Contains(hostileAttacks, a) {
					return usageError{fmt.Errorf("--attack: %q is none of %s", a, strings.Join(hostileAttacks, ", "))}
				}
			}
			if len(attacks) == 0 {
				attacks = hostileAttacks
			}
			r, err := b.hostile(cmd.Context(), duration, agents, attackers, attacks)
			if err != nil {
				return err
			}
			return b.print(r, r.text())
		}),
	}
	cmd.Flags().DurationVar(&duration, "duration", time.Minute, "how long each attack runs")
	cmd.Flags().IntVar(&agents, "agents", 4, "honest agents, each with a token of its own")
	cmd.Flags().IntVar(&attackers, "attackers", 64, "concurrent connections of each attack")
	cmd.Flags().StringSliceVar(&attacks, "attack", nil, "an attack class to run (repeatable; default: all, "+strings.Join(hostileAttacks, ", ")+")")
	return cmd
}

// hostileResult is what bench hostile measured.
type hostileResult struct {
	Benchmark       string          `json:"benchmark"` // "hostile"
	Database        string          `json:"database"`
	DurationSeconds float64         `json:"duration_seconds"` // of each attack
	Agents          int             `json:"agents"`
	Attackers       int             `json:"attackers"`
	Attacks         []hostileAttack `json:"attacks"`
	PeakRSSBytes    int64           `json:"peak_rss_bytes"`
}

// hostileAttack is one attack's figures.
type hostileAttack struct {
	Attack string        `json:"attack"`
	Honest []honestCalls `json:"honest"`
	// Answers counts the attack's requests by what they were answered
	// ("503", "408", "error: …" for a transport error or a cut
	// connection).
	Answers map[string]int64 `json:"answers"`
}

// honestCalls are one kind of honest call's figures during one attack.
type honestCalls struct {
	Call         string  `json:"call"`
	Count        int     `json:"count"`
	Failures     int     `json:"failures"`
	P50Millis    float64 `json:"p50_ms"`
	P99Millis    float64 `json:"p99_ms"`
	MaxMillis    float64 `json:"max_ms"`
	FirstFailure string  `json:"first_failure,omitempty"`
}

func (r hostileResult) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hostile on %s: %d agents, %d attackers, %s per attack; peak RSS %.1f MiB\n",
		r.Database, r.Agents, r.Attackers, time.Duration(r.DurationSeconds*float64(time.Second)), mib(r.PeakRSSBytes))
	for _, a := range r.Attacks {
		fmt.Fprintf(&b, "%s:\n", a.Attack)
		for _, c := range a.Honest {
			fmt.Fprintf(&b, "  %-16s %6d calls, p50 %7.2f ms, p99 %7.2f ms, max %8.2f ms, %d failed", c.Call, c.Count, c.P50Millis, c.P99Millis, c.MaxMillis, c.Failures)
			if c.FirstFailure != "" {
				fmt.Fprintf(&b, " (first: %s)", c.FirstFailure)
			}
			b.WriteString("\n")
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range a.Answers {
				if !yield(k) {
					return
				}
			}
		})
		var answers []string
		for _, k := range keys {
			answers = append(answers, fmt.Sprintf("%s×%d", k, a.Answers[k]))
		}
		if len(answers) > 0 {
			fmt.Fprintf(&b, "  attack answered: %s\n", strings.Join(answers, ", "))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// hostileWorld is the service under attack and the tokens of its
// callers.
type hostileWorld struct {
	addr                          string // host:port
	agentTokens                   []string
	ciTokens                      []string
	loopToken, batchToken         string
	giteaHook, gitlabHook         string // paths of the two forges' webhooks
	sessions, leases, assignments []string
	mu                            sync.Mutex
	calls                         map[string][]time.Duration
	failures                      map[string]int
	firstFailure                  map[string]string
	answers                       map[string]int64
	submitted                     atomic.Int64
	run                           string
	honestClient                  *http.Client
}

func (b *bench) hostile(ctx context.Context, duration time.Duration, agents, attackers int, attacks []string) (hostileResult, error) {
	dir, err := os.MkdirTemp("", "workqueue-bench-hostile-")
	if err != nil {
		return hostileResult{}, err
	}
	defer os.RemoveAll(dir)
	write := func(name, value string) (string, error) {
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, []byte(value+"\n"), 0o600)
	}
	forgeToken, err := write("forge.token", "unused")
	if err != nil {
		return hostileResult{}, err
	}
	hookSecret, err := write("hook.secret", "bench-hook-secret")
	if err != nil {
		return hostileResult{}, err
	}
	w := &hostileWorld{giteaHook: "/webhooks/" + benchForge, gitlabHook: "/webhooks/bench-lab",
		calls: map[string][]time.Duration{}, failures: map[string]int{}, firstFailure: map[string]string{}, answers: map[string]int64{},
		run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	cfg := config.Default()
	cfg.Database = b.url
	cfg.Listen = "127.0.0.1:0"
	cfg.HandledTypes = nil // queue only: no engine work, no forge call
	cfg.Log.Level = "error"
	cfg.Forges = []config.Forge{
		{Name: benchForge, Kind: wq.ForgeGitea, URL: "http://127.0.0.1:9", TokenFile: forgeToken, WebhookSecretFile: hookSecret},
		{Name: "bench-lab", Kind: wq.ForgeGitLab, URL: "http://127.0.0.1:9", TokenFile: forgeToken, WebhookSecretFile: hookSecret}}
	cfg.Projects = []config.Project{{Match: benchProject, Forge: benchForge}}
	token := func(name string, perms ...auth.Permission) (string, error) {
		tok, hash, err := auth.NewToken()
		if err != nil {
			return "", err
		}
		var ps []string
		for _, p := range perms {
			ps = append(ps, string(p))
		}
		cfg.Auth.Tokens = append(cfg.Auth.Tokens, config.Token{Name: name, SHA256: hash, Permissions: ps})
		return tok, nil
	}
	for i := range agents {
		tok, err := token(fmt.Sprint("agent-", i), auth.Agent)
		if err != nil {
			return hostileResult{}, err
		}
		w.agentTokens = append(w.agentTokens, tok)
	}
	// Honest CI is many jobs, each its own identity (a job's OIDC token
	// names its project and pipeline): five submit in turn, five times a
	// second together, each within the default hourly budget over the
	// whole run, while the write loop's one identity runs into it.
	for i := range ciJobs {
		tok, err := token(fmt.Sprint("ci-", i), auth.Submit)
		if err != nil {
			return hostileResult{}, err
		}
		w.ciTokens = append(w.ciTokens, tok)
	}
	if w.loopToken, err = token("looper", auth.Submit, auth.Agent); err != nil {
		return hostileResult{}, err
	}
	if w.batchToken, err = token("batcher", auth.Agent); err != nil {
		return hostileResult{}, err
	}
	if err := cfg.Validate(b.world.known()); err != nil {
		return hostileResult{}, fmt.Errorf("bench config: %w", err)
	}
	if err := b.seedHostileInventory(ctx, agents); err != nil {
		return hostileResult{}, err
	}
	m := newMainIn(b.world, cfg, b.log())
	if err := m.Run(ctx); err != nil {
		m.Close()
		return hostileResult{}, err
	}
	defer m.Close()
	w.addr = m.Addr()
	w.honestClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * agents}}
	defer w.honestClient.CloseIdleConnections()
	if err := w.startAgents(ctx); err != nil {
		return hostileResult{}, err
	}

	end, err := b.measure()
	if err != nil {
		return hostileResult{}, err
	}
	defer end()
	r := hostileResult{Benchmark: "hostile", Database: b.kind, DurationSeconds: duration.Seconds(), Agents: agents, Attackers: attackers}
	for _, attack := range attacks {
		fmt.Fprintf(b.progress, "%s for %s\n", attack, duration)
		phase, cancel := context.WithTimeout(ctx, duration)
		var wg sync.WaitGroup
		wg.Go(func() { w.honest(phase) })
		wg.Go(func() { w.attack(phase, attack, attackers) })
		wg.Wait()
		cancel()
		if ctx.Err() != nil {
			return hostileResult{}, ctx.Err()
		}
		r.Attacks = append(r.Attacks, w.take(attack))
	}
	r.PeakRSSBytes = end().peakRSS
	return r, nil
}

// seedHostileInventory puts one open issue per agent, and a few more, in
// the control plane's inventory, of a forge not configured here, so that
// each agent holds a lease and nothing calls a forge.
func (b *bench) seedHostileInventory(ctx context.Context, agents int) error {
	all, err := b.world.openStores(ctx, b.url)
	if err != nil {
		return err
	}
	defer all.queue.Close()
	if _, err := all.queue.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	now := time.Now()
	work := make([]controlplane.Work, 2*agents)
	for i := range work {
		work[i] = controlplane.Work{ID: fmt.Sprint("hostile-", now.UnixNano(), "-", i),
			WorkKey: controlplane.WorkKey{Forge: "bench-inventory", Repo: "org/hostile", Kind: controlplane.KindIssue, Number: now.Unix()*1000 + int64(i)},
			State:   controlplane.StateOpen, Title: "A piece of work", UpdatedAt: now}
	}
	return all.cp.UpsertWork(ctx, work, now)
}

// startAgents registers each agent's session and takes it a lease.
func (w *hostileWorld) startAgents(ctx context.Context) error {
	for i, tok := range w.agentTokens {
		c := w.client(tok)
		s, err := c.RegisterSession(ctx, cptype.RoleAuthor, fmt.Sprint("honest-", i), nil)
		if err != nil {
			return fmt.Errorf("agent %d: register: %w", i, err)
		}
		a, err := c.Allocate(ctx, s.ID, "", true)
		if err != nil {
			return fmt.Errorf("agent %d: allocate: %w", i, err)
		}
		if a.Lease == nil || a.Assignment == nil {
			return fmt.Errorf("agent %d: allocation %s took no lease", i, a.Outcome)
		}
		w.sessions, w.leases, w.assignments = append(w.sessions, s.ID), append(w.leases, a.Lease.ID), append(w.assignments, a.Assignment.ID)
	}
	return nil
}

func (w *hostileWorld) client(token string) *client.Client {
	return &client.Client{BaseURL: "http://" + w.addr, Token: token, HTTP: w.honestClient}
}

// honestPace is how often an honest agent heartbeats and asks the gate,
// and how often CI submits: busy, as a working agent is.
const honestPace = 200 * time.Millisecond

// ciJobs is how many CI identities share the honest submissions.
const ciJobs = 5

// honest runs the honest work until ctx ends: each agent heartbeats its
// session and its lease and asks the gate, CI submits.
func (w *hostileWorld) honest(ctx context.Context) {
	var wg sync.WaitGroup
	for i, tok := range w.agentTokens {
		c := w.client(tok)
		wg.Go(func() {
			paced(ctx, func() {
				w.timed(ctx, "session heartbeat", func(ctx context.Context) error {
					_, err := c.HeartbeatSession(ctx, w.sessions[i])
					return err
				})
				w.timed(ctx, "lease heartbeat", func(ctx context.Context) error {
					_, err := c.HeartbeatLease(ctx, w.leases[i], api.LeaseRequest{SessionID: w.sessions[i]})
					return err
				})
				w.timed(ctx, "gate", func(ctx context.Context) error {
					_, err := c.Gate(ctx, w.sessions[i], w.assignments[i], cptype.Action("comment"), "")
					return err
				})
			})
		})
	}
	var ci []*client.Client
	for _, tok := range w.ciTokens {
		ci = append(ci, w.client(tok))
	}
	wg.Go(func() {
		n := 0
		paced(ctx, func() {
			w.timed(ctx, "ci submission", func(ctx context.Context) error {
				_, err := ci[n%len(ci)].Submit(ctx, w.submission("ci"))
				return err
			})
			n++
		})
	})
	wg.Wait()
}

// paced calls step, then again every honestPace, until ctx ends.
func paced(ctx context.Context, step func()) {
	tick := time.NewTicker(honestPace)
	defer tick.Stop()
	for {
		step()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// submission is a small valid change on a branch of its own.
func (w *hostileWorld) submission(who string) []byte {
	n := w.submitted.Add(1)
	return fmt.Appendf(nil, `{"item_type":%q,"forge":%q,"project":%q,"source_branch":"workqueue/hostile-%s-%s-%d","target_branch":"main",`+
		`"title":"Hostile bench %d","file_actions":[{"action":"create","file_path":"bench.txt","content":"bench\n"}]}`,
		mr.ItemType, benchForge, benchProject, w.run, who, n, n)
}

// timed makes one honest call and records its latency or failure. A call
// cut by the phase's end is not counted.
func (w *hostileWorld) timed(ctx context.Context, call string, f func(context.Context) error) {
	if ctx.Err() != nil {
		return
	}
	// Each call gets the time it needs even if the phase ends meanwhile.
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	start := time.Now()
	err := f(callCtx)
	took := time.Since(start)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls[call] = append(w.calls[call], took)
	if err != nil {
		w.failures[call]++
		if w.firstFailure[call] == "" {
			w.firstFailure[call] = err.Error()
		}
	}
}

// answered counts one of the attack's answers.
func (w *hostileWorld) answered(what string) {
	w.mu.Lock()
	w.answers[what]++
	w.mu.Unlock()
}

// take returns the figures since the last take, and starts anew.
func (w *hostileWorld) take(attack string) hostileAttack {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := hostileAttack{Attack: attack, Answers: w.answers}
	for _, call := range []string{"session heartbeat", "lease heartbeat", "gate", "ci submission"} {
		lat := w.calls[call]
		slices.Sort(lat)
		c := honestCalls{Call: call, Count: len(lat), Failures: w.failures[call], FirstFailure: w.firstFailure[call]}
		if len(lat) > 0 {
			c.P50Millis, c.P99Millis, c.MaxMillis = millis(percentile(lat, 50)), millis(percentile(lat, 99)), millis(lat[len(lat)-1])
		}
		a.Honest = append(a.Honest, c)
	}
	w.calls, w.failures, w.firstFailure, w.answers = map[string][]time.Duration{}, map[string]int{}, map[string]string{}, map[string]int64{}
	return a
}

// attack runs one attack class with n connections until ctx ends.
func (w *hostileWorld) attack(ctx context.Context, attack string, n int) {
	var wg sync.WaitGroup
	for i := range n {
		switch attack {
		case "none":
			return
		case "slowloris":
			wg.Go(func() {
				w.slowSender(ctx, w.giteaHook, giteaHeaders()+"Content-Length: 1048576\r\n", time.Second, func() string { return " " })
			})
		case "huge-length":
			wg.Go(func() {
				path, headers := w.giteaHook, giteaHeaders()
				switch i % 3 {
				case 1:
					path, headers = "/ui/login", "Content-Type: application/x-www-form-urlencoded\r\n"
				case 2:
					path, headers = w.gitlabHook, "X-Gitlab-Event: Merge Request Hook\r\nX-Gitlab-Token: guessed\r\n"
				}
				w.slowSender(ctx, path, headers+"Content-Length: 1099511627776\r\n", time.Second, func() string { return " " })
			})
		case "chunked-dribble":
			wg.Go(func() {
				w.slowSender(ctx, w.giteaHook, giteaHeaders()+"Transfer-Encoding: chunked\r\n", 100*time.Millisecond, func() string { return "1\r\n \r\n" })
			})
		case "bad-credentials":
			wg.Go(func() { w.guess(ctx, i) })
		case "mcp-batch":
			if i < 2 { // two batches at a time: each is a thousand calls
				wg.Go(func() { w.batches(ctx) })
			}
		case "write-loop":
			if i < 16 {
				wg.Go(func() { w.loopWrites(ctx) })
			}
		}
	}
	wg.Wait()
}

// giteaHeaders are a Gitea delivery's headers with a signature of the
// right form, which only the body can refute.
func giteaHeaders() string {
	sig := make([]byte, 32)
	rand.Read(sig)
	return "X-Gitea-Event: pull_request\r\nX-Gitea-Delivery: hostile\r\nX-Gitea-Signature: " + hex.EncodeToString(sig) + "\r\n"
}

// slowSender posts to path with headers and then sends piece every
// interval, on a raw connection, until the server answers or cuts it,
// and then again, until ctx ends.
func (w *hostileWorld) slowSender(ctx context.Context, path, headers string, interval time.Duration, piece func() string) {
	for ctx.Err() == nil {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", w.addr)
		if err != nil {
			if ctx.Err() == nil {
				w.answered("error: dial")
				time.Sleep(10 * time.Millisecond) // the attack's own pace, not a wait in a test
			}
			continue
		}
		answer := make(chan string, 1)
		go func() {
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				answer <- "error: cut"
				return
			}
			if f := strings.Fields(line); len(f) >= 2 {
				answer <- f[1]
				return
			}
			answer <- "error: " + strings.TrimSpace(line)
		}()
		_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: "+w.addr+"\r\n"+headers+"\r\n")
		tick := time.NewTicker(interval)
	sending:
		for err == nil {
			select {
			case <-ctx.Done():
				break sending
			case a := <-answer:
				w.answered(a)
				answer = nil
				break sending
			case <-tick.C:
				_, err = io.WriteString(conn, piece())
			}
		}
		tick.Stop()
		conn.Close()
		if answer != nil && ctx.Err() == nil {
			w.answered(<-answer)
		}
		// A slow sender is slow to come back too: a flood of fast
		// requests is an attack of its own (bad-credentials), and
		// this process's own loop would take the cores the service
		// needs.
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

// guess sends guessed credentials as fast as it can, each request on a
// connection from another loopback address: a bearer token to the API,
// and a GitLab token with a body to its webhook.
func (w *hostileWorld) guess(ctx context.Context, i int) {
	for n := 0; ctx.Err() == nil; n++ {
		ip := net.IPv4(127, byte(1+i%250), byte(n/250%250), byte(1+n%250))
		c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).DialContext}}
		var req *http.Request
		if n%2 == 0 {
			req, _ = http.NewRequestWithContext(ctx, "GET", "http://"+w.addr+"/api/v1/sessions", nil)
			req.Header.Set("Authorization", "Bearer wq_"+hex.EncodeToString(ip.To4())+strconv.Itoa(n))
		} else {
			req, _ = http.NewRequestWithContext(ctx, "POST", "http://"+w.addr+w.gitlabHook, strings.NewReader(strings.Repeat(" ", 64<<10)))
			req.Header.Set("X-Gitlab-Event", "Merge Request Hook")
			req.Header.Set("X-Gitlab-Token", "guess-"+strconv.Itoa(n))
		}
		w.send(ctx, c, req)
	}
}

// send makes one of an attack's requests and counts its answer.
func (w *hostileWorld) send(ctx context.Context, c *http.Client, req *http.Request) {
	resp, err := c.Do(req)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		w.answered("error: transport")
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	w.answered(strconv.Itoa(resp.StatusCode))
}

// batches sends JSON-RPC batches of a thousand MCP tool calls with a
// valid agent token, one after another.
func (w *hostileWorld) batches(ctx context.Context) {
	var batch strings.Builder
	batch.WriteString("[")
	for i := range 1000 {
		if i > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_items","arguments":{}}}`, i)
	}
	batch.WriteString("]")
	c := &http.Client{Timeout: 5 * time.Minute}
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+w.addr+"/mcp", strings.NewReader(batch.String()))
		req.Header.Set("Authorization", "Bearer "+w.batchToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w.send(ctx, c, req)
	}
}

// loopWrites submits changes as fast as one connection can, with the
// looping identity's token.
func (w *hostileWorld) loopWrites(ctx context.Context) {
	c := &http.Client{Timeout: time.Minute}
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+w.addr+"/api/v1/items", strings.NewReader(string(w.submission("looper"))))
		req.Header.Set("Authorization", "Bearer "+w.loopToken)
		req.Header.Set("Content-Type", "application/json")
		w.send(ctx, c, req)
	}
}
