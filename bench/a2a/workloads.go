package main

// The workloads. Each measures the servers in alternating rounds (ours-sqlite, ours-memory,
// a2ago, then ours-memory, a2ago, ours-sqlite, ...), so that the ratios compare runs made under
// the same background load.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// Result is one measurement of one workload against one server.
type Result struct {
	Workload     string  `json:"workload"` // e.g. "send-task/c16"
	Server       string  `json:"server"`   // ours-sqlite | ours-memory | a2ago
	Client       string  `json:"client"`   // raw (JSON-RPC bodies) | a2aclient
	Calls        int     `json:"calls"`    // calls (or streams) completed in the measured loops
	Events       int     `json:"events,omitempty"`
	Seconds      float64 `json:"seconds"`
	CallsPerSec  float64 `json:"calls_per_sec"`
	EventsPerSec float64 `json:"events_per_sec,omitempty"`
	P50us        float64 `json:"p50_us"` // per call; per whole stream for streams
	P99us        float64 `json:"p99_us"`
	MeanUs       float64 `json:"mean_us"`
	TTFEP50us    float64 `json:"ttfe_p50_us,omitempty"` // streams: time to first event
	TTFEP99us    float64 `json:"ttfe_p99_us,omitempty"`
	// ServerCPUus is the server process's CPU time per call (per event for streams).
	ServerCPUus float64 `json:"server_cpu_us,omitempty"`
	RSSMiB      float64 `json:"server_rss_mib,omitempty"` // after the measurement
	Err         string  `json:"error,omitempty"`
}

type runner struct {
	cfg       *config
	srvs      *serverSet
	env       *benchEnv
	results   []Result
	loadStart string
	loadEnd   string
	elapsed   time.Duration
	dbSize    int64
}

func (r *runner) add(res Result) {
	r.results = append(r.results, res)
	msg := fmt.Sprintf("   %-22s %-11s", res.Workload, res.Server)
	switch {
	case res.Err != "":
		msg += " ERROR " + res.Err
	case res.EventsPerSec > 0:
		msg += fmt.Sprintf(" streams=%d %.0f events/s ttfe p50=%.0fµs p99=%.0fµs stream p50=%.1fms srvCPU=%.1fµs/event",
			res.Calls, res.EventsPerSec, res.TTFEP50us, res.TTFEP99us, res.P50us/1000, res.ServerCPUus)
	default:
		msg += fmt.Sprintf(" n=%d %.0f calls/s p50=%.0fµs p99=%.0fµs srvCPU=%.1fµs/call",
			res.Calls, res.CallsPerSec, res.P50us, res.P99us, res.ServerCPUus)
	}
	fmt.Fprintln(os.Stderr, msg)
}

// servers returns the running servers, in table order.
func (r *runner) servers() []*server {
	var out []*server
	for _, n := range serverNames {
		if s := r.srvs.get(n); s != nil {
			out = append(out, s)
		}
	}
	return out
}

var sendConcurrency = []int{1, 16, 64}

// streamConcurrency is the number of streams in flight in the streaming workload.
const streamConcurrency = 16

func (r *runner) runWorkload(ctx context.Context, w string) {
	all := r.servers()
	switch w {
	case "send":
		for _, kind := range []string{"reply", "task"} {
			for _, c := range sendConcurrency {
				r.compare(ctx, fmt.Sprintf("send-%s/c%d", kind, c), "raw", all, c, false,
					func(ctx context.Context, s *server, hc *http.Client) (callFunc, func(), error) {
						return sendOp(hc, s.url, kind), nil, nil
					})
			}
		}
	case "stream":
		n := r.cfg.streamN
		r.compare(ctx, fmt.Sprintf("stream%d/s%d", n, streamConcurrency), "raw", all, streamConcurrency, true,
			func(ctx context.Context, s *server, hc *http.Client) (callFunc, func(), error) {
				return streamOp(hc, s.url, n), nil, nil
			})
	case "client":
		r.compare(ctx, "a2aclient-task/c16", "a2aclient", all, 16, false, clientSetup)
	}
}

// setupFunc prepares a workload against one server, given the HTTP client made for it: the
// function to loop and an optional cleanup.
type setupFunc func(ctx context.Context, s *server, hc *http.Client) (callFunc, func(), error)

// compare measures one workload on several servers. Each server gets a fresh HTTP client, a
// check of its answers and its warm-up first; then the measured time is split into rounds that
// alternate between the servers (the starting server rotates), so that a burst of background
// load on this shared machine hits all of them alike.
func (r *runner) compare(ctx context.Context, key, client string, servers []*server, workers int, stream bool, setup setupFunc) {
	if ctx.Err() != nil || len(servers) == 0 {
		return
	}
	type contender struct {
		s    *server
		f    callFunc
		acc  measurement
		done bool // failed: out of the remaining rounds
	}
	rounds := r.cfg.rounds
	var cs []*contender
	for _, s := range servers {
		c := &contender{s: s}
		cs = append(cs, c)
		hc := newHTTPClient()
		defer hc.CloseIdleConnections()
		if err := s.Alive(); err != nil {
			c.acc.err, c.done = err, true
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := verify(vctx, hc, s.url)
		cancel()
		if err != nil {
			c.acc.err, c.done = fmt.Errorf("check: %w", err), true
			continue
		}
		f, cleanup, err := setup(ctx, s, hc)
		if err != nil {
			c.acc.err, c.done = err, true
			continue
		}
		if cleanup != nil {
			defer cleanup()
		}
		c.f = f
		if w := loop(ctx, workers, r.cfg.warm, r.cfg.maxCalls, f); w.err != nil {
			c.acc.err, c.done = fmt.Errorf("warm-up: %w", w.err), true
		}
	}
	harness.Rounds(rounds, len(cs), func(i int) {
		c := cs[i]
		if c.done || ctx.Err() != nil {
			return
		}
		var m measurement
		harness.AddCPU(&c.acc.serverCPU, harness.CPUDuring(c.s.PID, func() {
			m = loop(ctx, workers, r.cfg.dur/time.Duration(rounds), r.cfg.maxCalls/rounds, c.f)
		}))
		c.acc.calls += m.calls
		c.acc.events += m.events
		c.acc.elapsed += m.elapsed
		c.acc.lat = append(c.acc.lat, m.lat...)
		c.acc.ttfe = append(c.acc.ttfe, m.ttfe...)
		if m.err != nil {
			c.acc.err, c.done = m.err, true
		}
	})
	for _, c := range cs {
		slices.Sort(c.acc.lat)
		slices.Sort(c.acc.ttfe)
		rss, _ := harness.RSS(c.s.PID)
		res := Result{Workload: key, Server: c.s.Name, Client: client, RSSMiB: float64(rss) / (1 << 20)}
		fill(&res, c.acc, stream)
		r.add(res)
	}
}

// fill turns a measurement into a result.
func fill(res *Result, m measurement, stream bool) {
	if m.err != nil {
		res.Err = m.err.Error()
	}
	res.Calls = m.calls
	res.Seconds = m.elapsed.Seconds()
	res.CallsPerSec = m.rate()
	res.P50us = us(harness.Quantile(m.lat, 0.50))
	res.P99us = us(harness.Quantile(m.lat, 0.99))
	if len(m.lat) > 0 {
		res.MeanUs = us(harness.Mean(m.lat))
	}
	per := m.calls
	if stream {
		res.Events = m.events
		res.EventsPerSec = m.eventRate()
		res.TTFEP50us = us(harness.Quantile(m.ttfe, 0.50))
		res.TTFEP99us = us(harness.Quantile(m.ttfe, 0.99))
		per = m.events
	}
	if m.serverCPU >= 0 && per > 0 {
		res.ServerCPUus = us(m.serverCPU) / float64(per)
	}
}

var us = harness.Micros

// clientSetup is the cross-check: the same completed-task SendMessage made through a2a-go's own
// client (a2aclient over JSON-RPC, on the same tuned http.Client), which decodes every answer.
func clientSetup(ctx context.Context, s *server, hc *http.Client) (callFunc, func(), error) {
	c, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{a2a.NewAgentInterface(s.url, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		return nil, nil, err
	}
	f := func(ctx context.Context, w *worker) (int, time.Duration, error) {
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(taskText))})
		if err != nil {
			return 0, 0, err
		}
		t, ok := res.(*a2a.Task)
		if !ok || t.Status.State != a2a.TaskStateCompleted || len(t.Artifacts) != 1 {
			return 0, 0, fmt.Errorf("a2aclient: want a completed task with one artifact, got %T", res)
		}
		return 1, 0, nil
	}
	return f, func() { c.Destroy() }, nil
}
