// Command a2a is the benchmark harness for our A2A v1.0 server (engine + binding) against
// a2a-go v2's own server, over JSON-RPC and over our capnweb binding.
//
// In one run it starts three servers on 127.0.0.1, each in its own process (this binary
// re-executed with -role), all running the same echo executor:
//
//   - ours-sqlite: engine.New on store/sqlite (a file in a temp dir, the durable default),
//     served by binding.NewHTTPHandler;
//   - ours-memory: the same on store/memory, which also serves the capnweb binding;
//   - a2ago: a2asrv.NewHandler (a2a-go's in-memory task store) served by a2asrv.NewJSONRPCHandler.
//
// It drives them with one Go load client, in rounds that alternate between the contenders: raw
// JSON-RPC bodies over a tuned keep-alive http.Client for the JSON-RPC servers, and the capnweb
// Go client over one WebSocket for the capnweb binding of ours-memory (columns capnweb and
// capnweb-rs). It prints a table with the ratios against a2a-go and against our own JSON-RPC,
// and checks the performance targets. See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// workloadNames lists the workload groups in the order they run (-only selects among them).
var workloadNames = []string{"send", "stream", "pipeline", "client"}

// serverNames lists the server processes, in start order.
var serverNames = []string{"ours-sqlite", "ours-memory", "a2ago"}

// selectNames are what -servers selects: the server processes measured over JSON-RPC, and
// capnweb, the capnweb binding of the ours-memory process (which it starts).
var selectNames = []string{"ours-sqlite", "ours-memory", "capnweb", "a2ago"}

const reference = "a2ago"

var (
	rolePort    = flag.Int("port", 0, "internal (-role): port to listen on")
	roleDB      = flag.String("db", "", "internal (-role ours-sqlite): the SQLite file")
	profileFlag = flag.String("profile", "", "write CPU profiles of our servers and of the load client into this directory (ours-sqlite.pprof, ours-memory.pprof, client.pprof); with -role ours-*: the profile file that role writes on exit")
)

type config struct {
	quick      bool
	only       map[string]bool
	jsonPath   string
	profileDir string
	servers    []string
	warm       time.Duration // warm-up before each measurement
	dur        time.Duration // length of each measurement (all rounds together)
	maxCalls   int           // bound on the calls (or streams) of one measurement
	rounds     int           // alternating rounds a measurement is split into
	streamN    int           // artifact updates per token stream (16 in flight)
	burstN     int           // artifact updates of the long stream (1 in flight)
	match      string        // when set, only the measurements whose name contains it run
}

func (c *config) want(w string) bool { return c.only == nil || c.only[w] }

// measures reports whether the measurement key (e.g. "send-task/c16") runs under -match.
func (c *config) measures(key string) bool { return strings.Contains(key, c.match) }

// selected reports whether -servers selected name (one of selectNames).
func (c *config) selected(name string) bool { return slices.Contains(c.servers, name) }

// runs reports whether the server process name must run: selected itself, or serving the
// capnweb binding.
func (c *config) runs(name string) bool {
	return c.selected(name) || (name == "ours-memory" && c.selected("capnweb"))
}

func main() {
	role := flag.String("role", "", "internal: run as a server (ours-sqlite | ours-memory | a2ago) instead of the harness")
	quick := flag.Bool("quick", false, "short run (~40 s): shorter measurements, fewer rounds")
	only := flag.String("only", "", "comma-separated workloads to run: "+strings.Join(workloadNames, ","))
	jsonPath := flag.String("json", "", "also write the results as JSON to this file")
	servers := flag.String("servers", strings.Join(selectNames, ","), "servers to measure (capnweb: the capnweb binding of ours-memory)")
	dur := flag.Duration("time", 0, "length of each measurement (default 5s, 1s with -quick)")
	warm := flag.Duration("warm", 0, "warm-up before each measurement (default 500ms, 150ms with -quick)")
	rounds := flag.Int("rounds", 0, "alternating rounds each measurement is split into (default 4, 2 with -quick)")
	streamN := flag.Int("stream-n", 100, "artifact update events per token stream (16 streams in flight)")
	burstN := flag.Int("burst-n", 1000, "artifact update events of the long stream (one stream at a time)")
	match := flag.String("match", "", "run only the measurements whose name contains this (e.g. send-task/c16), to profile one")
	repeat := flag.Int("repeat", 1, "run everything selected this many times, each with fresh servers, then print how many runs passed each target")
	flag.Parse()

	switch *role {
	case "":
	case "ours-sqlite":
		serveOurs("sqlite", *roleDB, *profileFlag)
		return
	case "ours-memory":
		serveOurs("memory", "", *profileFlag)
		return
	case "a2ago":
		serveA2AGo(*profileFlag)
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown -role %q\n", *role)
		os.Exit(2)
	}

	cfg := &config{quick: *quick, jsonPath: *jsonPath, streamN: *streamN, burstN: *burstN, match: *match}
	cfg.dur, cfg.warm, cfg.maxCalls, cfg.rounds = 5*time.Second, 500*time.Millisecond, 1_000_000, 4
	if cfg.quick {
		cfg.dur, cfg.warm, cfg.maxCalls, cfg.rounds = 1*time.Second, 150*time.Millisecond, 200_000, 2
	}
	if *dur > 0 {
		cfg.dur = *dur
	}
	if *warm > 0 {
		cfg.warm = *warm
	}
	if *rounds > 0 {
		cfg.rounds = *rounds
	}
	if *profileFlag != "" {
		d, err := filepath.Abs(*profileFlag)
		if err == nil {
			err = os.MkdirAll(d, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "-profile:", err)
			os.Exit(2)
		}
		cfg.profileDir = d
	}
	if *only != "" {
		cfg.only = map[string]bool{}
		for _, w := range harness.MustParseList(*only, workloadNames, "workload") {
			cfg.only[w] = true
		}
	}
	cfg.servers = harness.MustParseList(*servers, selectNames, "server")
	if err := harness.CheckRepeat(*repeat, map[string]bool{"json": *jsonPath != "", "profile": *profileFlag != ""}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := harness.Repeat(ctx, *repeat, os.Stdout, func() ([]harness.Target, error) { return run(ctx, cfg) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run measures the selected workloads once, with servers of its own, prints the report and
// returns its targets.
func run(ctx context.Context, cfg *config) ([]harness.Target, error) {
	start := time.Now()
	env := probeEnv()
	srvs, err := startServers(ctx, cfg)
	defer srvs.stopAll()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "servers:")
	for _, name := range serverNames {
		if s := srvs.get(name); s != nil {
			fmt.Fprintf(os.Stderr, " %s=pid %d port %d;", name, s.PID, s.Port)
		}
	}
	fmt.Fprintln(os.Stderr)

	r := &runner{cfg: cfg, srvs: srvs, env: env}
	r.loadStart = harness.LoadAvg()
	stopProfile := func() {}
	if cfg.profileDir != "" {
		stopProfile = harness.StartCPUProfile(filepath.Join(cfg.profileDir, "client.pprof"))
	}
	harness.RunWorkloads(ctx, workloadNames, cfg.want, r.runWorkload)
	stopProfile()
	r.loadEnd = harness.LoadAvg()
	r.dbSize = srvs.dbSize()
	srvs.stopAll()
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "interrupted: partial results")
	}
	r.elapsed = time.Since(start)
	rep := r.report()
	rep.print(os.Stdout)
	if cfg.jsonPath != "" {
		if err := rep.writeJSON(cfg.jsonPath); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", cfg.jsonPath)
	}
	if cfg.profileDir != "" {
		for _, n := range []string{"ours-sqlite", "ours-memory", "client"} {
			if n == "client" || cfg.runs(n) {
				p := filepath.Join(cfg.profileDir, n+".pprof")
				fmt.Fprintf(os.Stderr, "%s CPU profile: %s (go tool pprof -top %s)\n", n, p, p)
			}
		}
	}
	return rep.Targets, ctx.Err()
}
