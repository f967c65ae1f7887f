// Command capnweb is the benchmark harness for the Go Cap'n Web implementation.
//
// In one run it starts three servers on 127.0.0.1, each in its own process:
//
//   - go:   the Go capnweb server (interop/goserver, built here; or this binary re-executed as a
//     server with -profile, to write a CPU profile);
//   - node: the reference Node capnweb server (interop/server.mjs, npm capnweb);
//   - echo: a raw coder/websocket echo server (this binary re-executed), the floor.
//
// It drives all three with the same Go load client (the capnweb Go client for the capnweb
// servers, raw coder/websocket frames shaped like capnweb's push+pull for the floor), prints a
// table with ratios vs Node and vs the floor, and checks the performance targets.
// See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// workloadNames lists the workload groups in the order they run (-only selects among them).
var workloadNames = []string{"seq", "inflight", "chain", "batch", "payload", "idle", "nodeclient"}

// serverNames lists the servers, in table order.
var serverNames = []string{"go", "node", "echo"}

type config struct {
	quick    bool
	only     map[string]bool
	jsonPath string
	profile  string
	readSpin time.Duration // the Go server's HandlerOptions.ReadSpin; 0: the library's default
	servers  []string
	warm     time.Duration // warm-up before each measurement
	dur      time.Duration // length of each measurement
	maxCalls int           // bound on the calls of one measurement
	rounds   int           // alternating rounds a measurement is split into
	idleN    int           // sessions opened for the idle-memory measurement
	settle   time.Duration // wait before reading RSS
}

func (c *config) want(w string) bool { return c.only == nil || c.only[w] }

func (c *config) hasServer(s string) bool { return slices.Contains(c.servers, s) }

func main() {
	role := flag.String("role", "", "internal: run as a server (echo | goserver) instead of the harness")
	cpuprofile := flag.String("cpuprofile", "", "internal (-role goserver): write a CPU profile here on exit")

	quick := flag.Bool("quick", false, "short run (~30 s): shorter measurements")
	only := flag.String("only", "", "comma-separated workloads to run: "+strings.Join(workloadNames, ","))
	jsonPath := flag.String("json", "", "also write the results as JSON to this file")
	profile := flag.String("profile", "", "write a CPU profile of the Go server to this file (the Go server then runs as this binary re-executed, same handler and API as interop/goserver)")
	clientProfile := flag.String("clientprofile", "", "write a CPU profile of the load client (this process, all servers' workloads) to this file")
	servers := flag.String("servers", strings.Join(serverNames, ","), "servers to start and measure")
	dur := flag.Duration("time", 0, "length of each measurement (default 2s, 250ms with -quick)")
	warm := flag.Duration("warm", 0, "warm-up before each measurement (default 500ms, 100ms with -quick)")
	idleN := flag.Int("idle", 2000, "idle sessions opened per server for the memory measurement")
	rounds := flag.Int("rounds", 0, "alternating rounds each measurement is split into (default 4, 1 with -quick)")
	repeat := flag.Int("repeat", 1, "run everything selected this many times, each with fresh servers, then print how many runs passed each target")
	readSpin := flag.Duration("readspin", 0, "the Go server's HandlerOptions.ReadSpin: how long its sessions poll the socket before they sleep (0: the library's default; negative: never)")
	flag.Parse()

	switch *role {
	case "":
	case "echo":
		serveEcho()
		return
	case "goserver":
		serveGo(*cpuprofile, *readSpin)
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown -role %q\n", *role)
		os.Exit(2)
	}

	cfg := &config{quick: *quick, jsonPath: *jsonPath, profile: *profile, readSpin: *readSpin, idleN: *idleN}
	cfg.dur, cfg.warm, cfg.maxCalls, cfg.settle, cfg.rounds = 2*time.Second, 500*time.Millisecond, 2_000_000, 1500*time.Millisecond, 4
	if cfg.quick {
		cfg.dur, cfg.warm, cfg.maxCalls, cfg.settle, cfg.rounds = 250*time.Millisecond, 100*time.Millisecond, 200_000, 500*time.Millisecond, 1
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
	if *only != "" {
		cfg.only = map[string]bool{}
		for _, w := range harness.MustParseList(*only, workloadNames, "workload") {
			cfg.only[w] = true
		}
	}
	cfg.servers = harness.MustParseList(*servers, serverNames, "server")
	oneRunOnly := map[string]bool{"json": *jsonPath != "", "profile": *profile != "", "clientprofile": *clientProfile != ""}
	if err := harness.CheckRepeat(*repeat, oneRunOnly); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile := harness.StartCPUProfile(*clientProfile)
	_, err := harness.Repeat(ctx, *repeat, os.Stdout, func() ([]harness.Target, error) { return run(ctx, cfg) })
	stopProfile()
	if *clientProfile != "" {
		fmt.Fprintf(os.Stderr, "load client CPU profile: %s (go tool pprof -top %s)\n", *clientProfile, *clientProfile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run measures the selected workloads once, with servers of its own, prints the report and
// returns its targets.
func run(ctx context.Context, cfg *config) ([]harness.Target, error) {
	start := time.Now()
	env, err := probeEnv()
	if err != nil {
		return nil, err
	}
	srvs, err := startServers(ctx, cfg, env)
	defer srvs.stopAll()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "servers:")
	for _, name := range cfg.servers {
		s := srvs.get(name)
		fmt.Fprintf(os.Stderr, " %s=pid %d port %d;", name, s.PID, s.Port)
	}
	fmt.Fprintln(os.Stderr)

	r := &runner{cfg: cfg, srvs: srvs, env: env}
	r.loadStart = harness.LoadAvg()
	harness.RunWorkloads(ctx, workloadNames, cfg.want, r.runWorkload)
	r.loadEnd = harness.LoadAvg()
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
	if cfg.profile != "" {
		fmt.Fprintf(os.Stderr, "Go server CPU profile: %s (go tool pprof -top %s)\n", cfg.profile, cfg.profile)
	}
	return rep.Targets, ctx.Err()
}
