// Command cluster is the benchmark harness of cluster mode (docs/cluster.md): clusters of 1,
// 2 and 3 replicas on the local PostgreSQL and NATS JetStream servers, measured in the same
// run, in rounds that alternate between them.
//
// Each replica is a process of its own (this binary re-executed with -role replica: the engine
// in cluster mode on store/postgres and the cluster package's fan-out, behind
// binding.NewHTTPHandler, as serve -cluster builds it; see replica.go). Each cluster has its own
// database and JetStream stream, and a round-robin TCP balancer in front. One load client, in
// this process, drives them over one binding:
//
//   - send: blocking SendMessage calls, each a task (working, an artifact, completed), from
//     -senders clients through the balancer: calls/s and latency;
//   - stream: SendStreamingMessage of -stream-n artifact updates, -streams clients through the
//     balancer: events/s;
//   - cross (2 replicas and more): tasks ticking a status update every -tick-ms, each followed
//     by a subscription on the replica running it and one on another replica: how much later
//     an event reaches the other replica's stream (its extra delay, from the agent's yield to
//     the client), and the time to the first event of each subscription.
//
// Everything shares the machine's cores — replicas, PostgreSQL, NATS and the load client —
// so more replicas add no processor: the ratios say what a replica costs, not what a replica
// on a machine of its own would add.
//
//	go run ./bench/cluster            # about 2 minutes
//	go run ./bench/cluster -quick     # about 40 s, noisier
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
	"github.com/a2awebcap/a2awebcap/internal/clustertest"
)

var workloadNames = []string{"send", "stream", "cross"}

// config is what the flags set.
type config struct {
	replicas []int
	only     map[string]bool
	binding  string
	pg, nats string
	jsonPath string
	warm     time.Duration
	dur      time.Duration // of each measurement, all rounds together
	rounds   int
	senders  int
	streams  int
	streamN  int
	tasks    int // cross: tasks
	ticks    int // cross: status updates per task
	tickMS   int // cross: between them
	pool     int // each replica's PostgreSQL connections; 0: the store's default
}

func (c *config) want(w string) bool { return c.only == nil || c.only[w] }

func main() {
	role := flag.String("role", "", "internal: run as a replica (replica) instead of the harness")
	port := flag.Int("port", 0, "internal (-role replica): the port to listen on")
	name := flag.String("name", "", "internal (-role replica): the replica's name")
	db := flag.String("db", "", "internal (-role replica): the PostgreSQL DSN")
	stream := flag.String("stream", "", "internal (-role replica): the JetStream stream")

	quick := flag.Bool("quick", false, "short run (~40 s): shorter measurements, fewer rounds")
	replicas := flag.String("replicas", "1,2,3", "the cluster sizes to compare")
	only := flag.String("only", "", "comma-separated workloads to run: "+strings.Join(workloadNames, ","))
	bindingName := flag.String("binding", "jsonrpc", "the binding of every client: jsonrpc, rest or capnweb")
	pg := flag.String("pg", envOr(clustertest.PostgresEnv, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "a PostgreSQL DSN whose user may create databases: each cluster gets one of its own, dropped at the end ("+clustertest.PostgresEnv+")")
	natsURL := flag.String("nats", envOr(clustertest.NATSEnv, clustertest.DefaultNATS), "the NATS server, with JetStream ("+clustertest.NATSEnv+")")
	jsonPath := flag.String("json", "", "also write the results as JSON to this file")
	dur := flag.Duration("time", 0, "length of each measurement, all rounds together (default 6s, 1.5s with -quick)")
	warm := flag.Duration("warm", 0, "warm-up of each cluster before each measurement (default 500ms, 200ms with -quick)")
	rounds := flag.Int("rounds", 0, "alternating rounds each measurement is split into (default 3, 2 with -quick)")
	senders := flag.Int("senders", 16, "send: concurrent clients")
	streams := flag.Int("streams", 16, "stream: concurrent streams")
	streamN := flag.Int("stream-n", 100, "stream: artifact updates per stream")
	tasks := flag.Int("tasks", 0, "cross: tasks, four at a time (default 60, 20 with -quick)")
	ticks := flag.Int("ticks", 10, "cross: status updates per task")
	tickMS := flag.Int("tick-ms", 40, "cross: milliseconds between them")
	pool := flag.Int("pool", 0, "each replica's PostgreSQL connections (pool_max_conns); 0: the store's default, as serve has it")
	flag.Parse()

	switch *role {
	case "":
	case "replica":
		serveReplica(*name, *db, *natsURL, *stream, *port)
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown -role %q\n", *role)
		os.Exit(2)
	}

	cfg := &config{binding: *bindingName, pg: *pg, nats: *natsURL, jsonPath: *jsonPath, senders: *senders, streams: *streams,
		streamN: *streamN, ticks: *ticks, tickMS: *tickMS, pool: *pool}
	cfg.dur, cfg.warm, cfg.rounds, cfg.tasks = 6*time.Second, 500*time.Millisecond, 3, 60
	if *quick {
		cfg.dur, cfg.warm, cfg.rounds, cfg.tasks = 1500*time.Millisecond, 200*time.Millisecond, 2, 20
	}
	for _, p := range []struct {
		set bool
		do  func()
	}{
		{*dur > 0, func() { cfg.dur = *dur }},
		{*warm > 0, func() { cfg.warm = *warm }},
		{*rounds > 0, func() { cfg.rounds = *rounds }},
		{*tasks > 0, func() { cfg.tasks = *tasks }},
	} {
		if p.set {
			p.do()
		}
	}
	if *only != "" {
		cfg.only = map[string]bool{}
		for _, w := range harness.MustParseList(*only, workloadNames, "workload") {
			cfg.only[w] = true
		}
	}
	for _, s := range strings.Split(*replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 9 {
			fmt.Fprintf(os.Stderr, "-replicas: %q is not a cluster size from 1 to 9\n", s)
			os.Exit(2)
		}
		cfg.replicas = append(cfg.replicas, n)
	}
	switch cfg.binding {
	case "jsonrpc", "rest", "capnweb":
	default:
		fmt.Fprintf(os.Stderr, "-binding: %q: want jsonrpc, rest or capnweb\n", cfg.binding)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "cluster bench:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
