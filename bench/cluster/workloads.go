package main

// The workloads, the run that alternates them between the clusters, and the report.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/client"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// result is one measurement of one workload on one cluster.
type result struct {
	Workload string  `json:"workload"`
	Cluster  string  `json:"cluster"`
	Replicas int     `json:"replicas"`
	Err      string  `json:"error,omitempty"`
	Count    int     `json:"count"`   // calls completed, events received, or events timed
	Seconds  float64 `json:"seconds"` // measured time, all rounds together
	PerSec   float64 `json:"per_sec"`
	P50us    float64 `json:"p50_us,omitempty"`
	P99us    float64 `json:"p99_us,omitempty"`
	// cross: the delay of an event from the agent's yield to the client, on a stream read on
	// the replica running the task (same) and on another (other); and the time from
	// SubscribeToTask to its first event.
	SameP50us      float64 `json:"same_p50_us,omitempty"`
	OtherP50us     float64 `json:"other_p50_us,omitempty"`
	SameP90us      float64 `json:"same_p90_us,omitempty"`
	OtherP90us     float64 `json:"other_p90_us,omitempty"`
	ExtraP50us     float64 `json:"extra_p50_us,omitempty"`
	SameOpenP50us  float64 `json:"same_open_p50_us,omitempty"`
	OtherOpenP50us float64 `json:"other_open_p50_us,omitempty"`
}

// tally accumulates one workload's numbers on one cluster over the rounds.
type tally struct {
	mu       sync.Mutex
	count    int
	elapsed  time.Duration
	lats     []time.Duration
	same     []time.Duration
	other    []time.Duration
	sameOpen []time.Duration
	othOpen  []time.Duration
	err      error
}

func (t *tally) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
	}
}

func run(ctx context.Context, cfg *config) error {
	admin, err := pgx.Connect(ctx, cfg.pg)
	if err != nil {
		return fmt.Errorf("PostgreSQL at %s (set -pg): %w", cfg.pg, err)
	}
	defer admin.Close(context.Background())
	var clusters []*clusterUnderTest
	defer func() {
		for _, c := range clusters {
			c.stop(cfg, admin)
		}
	}()
	for _, n := range cfg.replicas {
		fmt.Fprintf(os.Stderr, "starting %s\n", label(n))
		c, err := startCluster(ctx, cfg, admin, n)
		if err != nil {
			return fmt.Errorf("%s: %w", label(n), err)
		}
		clusters = append(clusters, c)
	}
	load0 := harness.LoadAvg()
	var results []result
	harness.RunWorkloads(ctx, workloadNames, cfg.want, func(ctx context.Context, w string) {
		var measured []*clusterUnderTest
		for _, c := range clusters {
			if w != "cross" || c.n >= 2 {
				measured = append(measured, c)
			}
		}
		tallies := make([]*tally, len(measured))
		for i := range tallies {
			tallies[i] = &tally{}
		}
		harness.Rounds(cfg.rounds, len(measured), func(i int) {
			if ctx.Err() != nil {
				return
			}
			c, t := measured[i], tallies[i]
			if t.err == nil {
				t.fail(c.alive())
			}
			if t.err != nil {
				return
			}
			switch w {
			case "send":
				measureSend(ctx, cfg, c, t)
			case "stream":
				measureStream(ctx, cfg, c, t)
			case "cross":
				measureCross(ctx, cfg, c, t)
			}
		})
		for i, c := range measured {
			results = append(results, tallies[i].result(w, c))
		}
	})
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "interrupted: partial results")
	}
	report(cfg, clusters, results, load0)
	if cfg.jsonPath != "" {
		return harness.WriteJSON(cfg.jsonPath, map[string]any{"config": map[string]any{
			"binding": cfg.binding, "senders": cfg.senders, "streams": cfg.streams, "stream_n": cfg.streamN,
			"tasks": cfg.tasks, "ticks": cfg.ticks, "tick_ms": cfg.tickMS, "pool": cfg.pool, "seconds": cfg.dur.Seconds(), "rounds": cfg.rounds,
			"cpus": runtime.NumCPU(), "load_before": load0, "load_after": harness.LoadAvg()}, "results": results})
	}
	return nil
}

func (t *tally) result(w string, c *clusterUnderTest) result {
	r := result{Workload: w, Cluster: c.label, Replicas: c.n, Count: t.count, Seconds: t.elapsed.Seconds()}
	if t.err != nil {
		r.Err = t.err.Error()
		return r
	}
	us := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return harness.Micros(harness.Quantile(d, p))
	}
	switch w {
	case "send", "stream":
		r.PerSec = harness.Rate(t.count, t.elapsed)
		if len(t.lats) > 0 {
			r.P50us, r.P99us = us(t.lats, 0.5), us(t.lats, 0.99)
		}
	case "cross":
		r.Count = len(t.same) + len(t.other)
		r.SameP50us, r.OtherP50us = us(t.same, 0.5), us(t.other, 0.5)
		r.SameP90us, r.OtherP90us = us(t.same, 0.9), us(t.other, 0.9)
		r.ExtraP50us = r.OtherP50us - r.SameP50us
		r.SameOpenP50us, r.OtherOpenP50us = us(t.sameOpen, 0.5), us(t.othOpen, 0.5)
		if len(t.same) == 0 || len(t.other) == 0 {
			r.Err = "no event timed"
		}
	}
	return r
}

// slice is the time one round gives one cluster.
func (cfg *config) slice() time.Duration { return cfg.dur / time.Duration(cfg.rounds) }

// clientLoop runs one goroutine per client of c.viaLB[:n], each calling op until the warm-up
// and then the measured slice are over, and adds to t what completed within the slice: op
// returns how many units it completed (and their latency) and when.
func clientLoop(ctx context.Context, cfg *config, c *clusterUnderTest, t *tally, n int,
	op func(ctx context.Context, cl *client.Client, count func()) error) {
	start := time.Now().Add(cfg.warm)
	end := start.Add(cfg.slice())
	var counted atomic.Int64
	var wg sync.WaitGroup
	for _, cl := range c.viaLB[:n] {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				err := op(ctx, cl, func() {
					if now := time.Now(); now.After(start) && now.Before(end) {
						counted.Add(1)
					}
				})
				if err != nil {
					t.fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.mu.Lock()
	t.count += int(counted.Load())
	t.elapsed += cfg.slice()
	t.mu.Unlock()
}

// measureSend: blocking SendMessage calls, each creating and finishing a task.
func measureSend(ctx context.Context, cfg *config, c *clusterUnderTest, t *tally) {
	var mu sync.Mutex
	var lats []time.Duration
	start := time.Now().Add(cfg.warm)
	clientLoop(ctx, cfg, c, t, cfg.senders, func(ctx context.Context, cl *client.Client, count func()) error {
		t0 := time.Now()
		res, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("task bench"))})
		if err != nil {
			return fmt.Errorf("SendMessage: %w", err)
		}
		if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
			return fmt.Errorf("SendMessage answered %T, want a completed task", res)
		}
		count()
		if t0.After(start) {
			mu.Lock()
			lats = append(lats, time.Since(t0))
			mu.Unlock()
		}
		return nil
	})
	t.mu.Lock()
	t.lats = append(t.lats, lats...)
	t.mu.Unlock()
}

// measureStream: SendStreamingMessage of stream-n artifact updates; every event counts.
func measureStream(ctx context.Context, cfg *config, c *clusterUnderTest, t *tally) {
	msg := fmt.Sprint("stream ", cfg.streamN)
	clientLoop(ctx, cfg, c, t, cfg.streams, func(ctx context.Context, cl *client.Client, count func()) error {
		n := 0
		for ev, err := range cl.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(msg))}) {
			if err != nil {
				return fmt.Errorf("SendStreamingMessage: %w", err)
			}
			_ = ev
			n++
			count()
		}
		if want := cfg.streamN + 3; n != want { // the task, working, the updates, completed
			return fmt.Errorf("a stream of %d events, want %d", n, want)
		}
		return nil
	})
}

// measureCross: tasks started on one replica, four at a time, each followed by a subscription
// on that replica and one on another; this round's share of -tasks.
func measureCross(ctx context.Context, cfg *config, c *clusterUnderTest, t *tally) {
	tasks := max(1, cfg.tasks/cfg.rounds)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	base := len(t.same) // rotates who runs and who reads across rounds
	for k := range tasks {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			runner := (base + k) % c.n
			reader := (runner + 1 + (base+k)/c.n%(c.n-1)) % c.n
			if err := crossTask(ctx, cfg, c, t, runner, reader); err != nil {
				t.fail(err)
			}
		})
	}
	wg.Wait()
}

func crossTask(ctx context.Context, cfg *config, c *clusterUnderTest, t *tally, runner, reader int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := c.direct[runner].SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(fmt.Sprintf("tick %d %d", cfg.ticks, cfg.tickMS))),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		return fmt.Errorf("SendMessage: %w", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		return fmt.Errorf("SendMessage answered %T, want a task", res)
	}
	type seen struct {
		open   time.Duration
		delays []time.Duration
		err    error
	}
	follow := func(cl *client.Client) (s seen) {
		t0 := time.Now()
		var opened time.Time
		for ev, err := range cl.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
			now := time.Now()
			if err != nil {
				s.err = fmt.Errorf("SubscribeToTask: %w", err)
				return s
			}
			if opened.IsZero() {
				opened, s.open = now, now.Sub(t0)
				continue
			}
			// A tick made after the subscription opened: its whole way to the client.
			if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && su.Status.Message != nil && su.Status.Timestamp != nil && su.Status.Timestamp.After(opened) {
				s.delays = append(s.delays, now.Sub(*su.Status.Timestamp))
			}
		}
		return s
	}
	var same, other seen
	var wg sync.WaitGroup
	wg.Go(func() { same = follow(c.direct[runner]) })
	wg.Go(func() { other = follow(c.direct[reader]) })
	wg.Wait()
	if err := errors.Join(same.err, other.err); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.same, t.other = append(t.same, same.delays...), append(t.other, other.delays...)
	t.sameOpen, t.othOpen = append(t.sameOpen, same.open), append(t.othOpen, other.open)
	return nil
}

// report prints the table: a column per cluster, and the ratios of the larger ones to the
// first.
func report(cfg *config, clusters []*clusterUnderTest, results []result, load0 string) {
	fmt.Printf("\ncluster mode: %s over the %s binding, through a round-robin TCP balancer; PostgreSQL %s, NATS %s\n",
		joinLabels(clusters), cfg.binding, redact(cfg.pg), cfg.nats)
	pool := "the store's default"
	if cfg.pool > 0 {
		pool = fmt.Sprint(cfg.pool)
	}
	fmt.Printf("%d CPUs shared by every replica, PostgreSQL, NATS and this load client; load average %s before, %s after; PostgreSQL connections per replica: %s\n",
		runtime.NumCPU(), load0, harness.LoadAvg(), pool)
	fmt.Printf("send: %d clients, blocking SendMessage (a task: working, an artifact, completed); stream: %d clients, streams of %d artifact updates\n",
		cfg.senders, cfg.streams, cfg.streamN)
	fmt.Printf("cross: %d tasks of %d status updates %d ms apart, each read on its replica and on another; %v per measurement in %d alternating rounds\n\n",
		cfg.tasks, cfg.ticks, cfg.tickMS, cfg.dur, cfg.rounds)
	var servers []string
	for _, c := range clusters {
		servers = append(servers, c.label)
	}
	var ratios []harness.Ratio
	for _, c := range clusters[1:] {
		ratios = append(ratios, harness.Ratio{Header: fmt.Sprintf("%s/%s", c.label[:1], clusters[0].label[:1]), Num: c.label, Den: clusters[0].label})
	}
	tab := harness.Table[result]{
		Servers: servers,
		Ratios:  ratios,
		Key:     func(r *result) (string, string, bool) { return r.Workload, r.Cluster, r.Err != "" },
		Metrics: func(w string) []harness.Metric[result] {
			us := func(name string, get func(*result) float64) harness.Metric[result] {
				return harness.Metric[result]{Name: name, Get: get, Format: harness.FormatMicros}
			}
			switch w {
			case "send":
				return []harness.Metric[result]{
					{Name: "calls/s ↑", Get: func(r *result) float64 { return r.PerSec }, Format: harness.FormatCount},
					us("p50 µs ↓", func(r *result) float64 { return r.P50us }),
					us("p99 µs ↓", func(r *result) float64 { return r.P99us }),
				}
			case "stream":
				return []harness.Metric[result]{{Name: "events/s ↑", Get: func(r *result) float64 { return r.PerSec }, Format: harness.FormatCount}}
			default:
				return []harness.Metric[result]{
					us("event delay, same replica p50 µs ↓", func(r *result) float64 { return r.SameP50us }),
					us("event delay, other replica p50 µs ↓", func(r *result) float64 { return r.OtherP50us }),
					us("  extra on the other replica p50 µs", func(r *result) float64 { return r.ExtraP50us }),
					us("event delay, same replica p90 µs ↓", func(r *result) float64 { return r.SameP90us }),
					us("event delay, other replica p90 µs ↓", func(r *result) float64 { return r.OtherP90us }),
					us("subscribe→first event, same p50 µs ↓", func(r *result) float64 { return r.SameOpenP50us }),
					us("subscribe→first event, other p50 µs ↓", func(r *result) float64 { return r.OtherOpenP50us }),
				}
			}
		},
	}
	tab.Write(os.Stdout, results)
	for _, r := range results {
		if r.Err != "" {
			fmt.Printf("\n%s on %s failed: %s\n", r.Workload, r.Cluster, r.Err)
		}
	}
}

func joinLabels(cs []*clusterUnderTest) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += c.label
	}
	return s
}

// redact drops a password from a DSN for printing.
func redact(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return fmt.Sprintf("%s@%s:%d", cfg.User, cfg.Host, cfg.Port)
}
