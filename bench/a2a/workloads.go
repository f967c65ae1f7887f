package main

// The workloads. Each measures its contenders (a server reached through a binding) in
// alternating rounds (ours-sqlite, ours-memory, capnweb, a2ago, then ours-memory, capnweb, a2ago,
// ours-sqlite, ...), so that the ratios compare runs made under the same background load.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2awebcap/a2awebcap/capnweb"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// Result is one measurement of one workload against one server.
type Result struct {
	Workload     string  `json:"workload"` // e.g. "send-task/c16"
	Server       string  `json:"server"`   // the column: ours-sqlite | ours-memory | capnweb | capnweb-rs | a2ago
	Client       string  `json:"client"`   // raw (JSON-RPC bodies) | a2aclient | capnweb (the Go client)
	Calls        int     `json:"calls"`    // calls (streams, sequences) completed in the measured loops
	Events       int     `json:"events,omitempty"`
	Seconds      float64 `json:"seconds"`
	CallsPerSec  float64 `json:"calls_per_sec"`
	EventsPerSec float64 `json:"events_per_sec,omitempty"`
	P50us        float64 `json:"p50_us"` // per call; per whole stream or sequence
	P99us        float64 `json:"p99_us"`
	MeanUs       float64 `json:"mean_us"`
	TTFEP50us    float64 `json:"ttfe_p50_us,omitempty"` // streams: time to first event
	TTFEP99us    float64 `json:"ttfe_p99_us,omitempty"`
	// ServerCPUus is the server process's CPU time per call (per event for streams).
	ServerCPUus float64 `json:"server_cpu_us,omitempty"`
	// ClientCPUus is the load client's (this process's) CPU time per call or event: the client
	// shares the 2 cores with the server.
	ClientCPUus float64 `json:"client_cpu_us,omitempty"`
	// ServerReads and ServerWrites are the server process's read and write system calls per
	// call (per event for streams); ClientReads and ClientWrites the load client's. They show
	// how well each side coalesces what it sends and receives.
	ServerReads  float64 `json:"server_reads,omitempty"`
	ServerWrites float64 `json:"server_writes,omitempty"`
	ClientReads  float64 `json:"client_reads,omitempty"`
	ClientWrites float64 `json:"client_writes,omitempty"`
	RSSMiB       float64 `json:"server_rss_mib,omitempty"` // after the measurement
	Err          string  `json:"error,omitempty"`
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
		msg += fmt.Sprintf(" streams=%d %.0f events/s ttfe p50=%.0fµs p99=%.0fµs stream p50=%.1fms srvCPU=%.1fµs/event cliCPU=%.1fµs/event srvRW=%.2f/%.2f cliRW=%.2f/%.2f",
			res.Calls, res.EventsPerSec, res.TTFEP50us, res.TTFEP99us, res.P50us/1000, res.ServerCPUus, res.ClientCPUus,
			res.ServerReads, res.ServerWrites, res.ClientReads, res.ClientWrites)
	default:
		msg += fmt.Sprintf(" n=%d %.0f calls/s p50=%.0fµs p99=%.0fµs srvCPU=%.1fµs/call cliCPU=%.1fµs/call srvRW=%.2f/%.2f cliRW=%.2f/%.2f",
			res.Calls, res.CallsPerSec, res.P50us, res.P99us, res.ServerCPUus, res.ClientCPUus,
			res.ServerReads, res.ServerWrites, res.ClientReads, res.ClientWrites)
	}
	fmt.Fprintln(os.Stderr, msg)
}

// bindingKind is how the load client reaches a server.
type bindingKind int

const (
	viaJSONRPC   bindingKind = iota // raw JSON-RPC bodies (SSE for streams)
	viaCapnweb                      // the capnweb Go client; streams delivered to an observer
	viaCapnwebRS                    // the same; streams delivered as a ReadableStream
)

// contender is one column of the table: a server process reached through one binding.
type contender struct {
	name string // the column: ours-sqlite | ours-memory | capnweb | capnweb-rs | a2ago
	srv  *server
	via  bindingKind
}

// clientName is the Result.Client of the contender's measurements.
func (c *contender) clientName(jsonrpc string) string {
	if c.via == viaJSONRPC {
		return jsonrpc
	}
	return "capnweb"
}

// contenders returns the measured contenders among names (columnNames), in table order.
func (r *runner) contenders(names ...string) []*contender {
	var out []*contender
	for _, n := range columnNames {
		if !slices.Contains(names, n) {
			continue
		}
		c := &contender{name: n}
		switch n {
		case "capnweb", "capnweb-rs":
			if !r.cfg.selected("capnweb") {
				continue
			}
			c.srv, c.via = r.srvs.get("ours-memory"), viaCapnweb
			if n == "capnweb-rs" {
				c.via = viaCapnwebRS
			}
		default:
			if !r.cfg.selected(n) {
				continue
			}
			c.srv = r.srvs.get(n)
		}
		if c.srv != nil {
			out = append(out, c)
		}
	}
	return out
}

var sendConcurrency = []int{1, 16, 64}

// streamConcurrency is the number of streams in flight in the token-stream workload.
const streamConcurrency = 16

// streamWorkload is one streaming workload: "<cmd> n" (see echoExecutor) with inflight streams.
type streamWorkload struct {
	key         string
	cmd         string
	n, inflight int
}

// streamWorkloads are the token stream (-stream-n appends, 16 in flight), the long stream
// (-burst-n small events that do not grow the task, one at a time) and the time to first event
// (a one-event stream, one at a time, for many samples).
func (r *runner) streamWorkloads() []streamWorkload {
	return []streamWorkload{
		{fmt.Sprintf("stream%d/s%d", r.cfg.streamN, streamConcurrency), "stream", r.cfg.streamN, streamConcurrency},
		{fmt.Sprintf("burst%d/s1", r.cfg.burstN), "burst", r.cfg.burstN, 1},
		{"ttfe/s1", "stream", 1, 1},
	}
}

// The contenders of each kind of workload.
var (
	jsonrpcColumns = []string{"ours-sqlite", "ours-memory", "a2ago"}
	sendColumns    = []string{"ours-sqlite", "ours-memory", "capnweb", "a2ago"}
	streamColumns  = columnNames
)

func (r *runner) runWorkload(ctx context.Context, w string) {
	switch w {
	case "send":
		for _, kind := range []string{"reply", "task"} {
			for _, c := range sendConcurrency {
				r.compare(ctx, fmt.Sprintf("send-%s/c%d", kind, c), "raw", r.contenders(sendColumns...), c, false,
					func(ctx context.Context, c *contender, hc *http.Client) (callFunc, func(), error) {
						if c.via != viaJSONRPC {
							return capnwebSetup(ctx, c, func(main *capnweb.Stub) callFunc { return capnwebSendOp(main, kind) })
						}
						return sendOp(hc, c.srv.url, kind), nil, nil
					})
			}
		}
	case "stream":
		for _, st := range r.streamWorkloads() {
			r.compare(ctx, st.key, "raw", r.contenders(streamColumns...), st.inflight, true,
				func(ctx context.Context, c *contender, hc *http.Client) (callFunc, func(), error) {
					if c.via != viaJSONRPC {
						return capnwebSetup(ctx, c, func(main *capnweb.Stub) callFunc {
							return capnwebStreamOp(main, st.cmd, st.n, c.via == viaCapnwebRS)
						})
					}
					return streamOp(hc, c.srv.url, st.cmd, st.n), nil, nil
				})
		}
	case "pipeline":
		// Measured in the same alternating rounds: their ratio is a target, and two
		// measurements taken minutes apart on this shared machine differ by more than it asks.
		send := r.contenders(sendColumns...)
		r.compareAll(ctx, []workload{
			{"dep/1call", "raw", send, 1, false, func(ctx context.Context, c *contender, hc *http.Client) (callFunc, func(), error) {
				if c.via != viaJSONRPC {
					return capnwebSetup(ctx, c, func(main *capnweb.Stub) callFunc { return capnwebSendOp(main, "task") })
				}
				return sendOp(hc, c.srv.url, "task"), nil, nil
			}},
			{"dep/3call", "raw", send, 1, false, depSetup(true)},
			{"dep/3call-awaited", "raw", r.contenders("capnweb"), 1, false, depSetup(false)},
		})
	case "client":
		r.compare(ctx, "a2aclient-task/c16", "a2aclient", r.contenders(jsonrpcColumns...), 16, false, clientSetup)
	}
}

// setupFunc prepares a workload against one contender, given the HTTP client made for it: the
// function to loop and an optional cleanup.
type setupFunc func(ctx context.Context, c *contender, hc *http.Client) (callFunc, func(), error)

// depSetup is the setup of the dependent sequence: pipelined (one await) or each call awaited.
func depSetup(pipelined bool) setupFunc {
	return func(ctx context.Context, c *contender, hc *http.Client) (callFunc, func(), error) {
		if c.via != viaJSONRPC {
			return capnwebSetup(ctx, c, func(main *capnweb.Stub) callFunc { return capnwebDepOp(main, pipelined) })
		}
		return depOp(hc, c.srv.url), nil, nil
	}
}

// workload is one measurement of compareAll: key on each of contenders, with workers calls in
// flight; client names the JSON-RPC client in the results.
type workload struct {
	key        string
	client     string
	contenders []*contender
	workers    int
	stream     bool
	setup      setupFunc
}

// compare measures one workload on several contenders (compareAll).
func (r *runner) compare(ctx context.Context, key, client string, contenders []*contender, workers int, stream bool, setup setupFunc) {
	r.compareAll(ctx, []workload{{key, client, contenders, workers, stream, setup}})
}

// compareAll measures workloads on their contenders. Each pair gets a fresh HTTP client, a
// check of its answers and its warm-up first; then the measured time is split into rounds
// that alternate between all the pairs (the starting one rotates), so that a burst of
// background load on this shared machine hits all of them alike.
func (r *runner) compareAll(ctx context.Context, ws []workload) {
	type entry struct {
		w    *workload
		c    *contender
		f    callFunc
		acc  measurement
		done bool // failed: out of the remaining rounds
	}
	rounds := r.cfg.rounds
	var es []*entry
	for i := range ws {
		w := &ws[i]
		if ctx.Err() != nil || !r.cfg.measures(w.key) {
			continue
		}
		for _, c := range w.contenders {
			e := &entry{w: w, c: c}
			es = append(es, e)
			hc := newHTTPClient()
			defer hc.CloseIdleConnections()
			if err := c.srv.Alive(); err != nil {
				e.acc.err, e.done = err, true
				continue
			}
			vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := verifyContender(vctx, c, hc)
			cancel()
			if err != nil {
				e.acc.err, e.done = fmt.Errorf("check: %w", err), true
				continue
			}
			f, cleanup, err := w.setup(ctx, c, hc)
			if err != nil {
				e.acc.err, e.done = err, true
				continue
			}
			if cleanup != nil {
				defer cleanup()
			}
			e.f = f
			if m := loop(ctx, w.workers, r.cfg.warm, r.cfg.maxCalls, f); m.err != nil {
				e.acc.err, e.done = fmt.Errorf("warm-up: %w", m.err), true
			}
		}
	}
	if len(es) == 0 {
		return
	}
	harness.Rounds(rounds, len(es), func(i int) {
		e := es[i]
		if e.done || ctx.Err() != nil {
			return
		}
		var m measurement
		e.acc.client.Add(harness.UsageDuring(os.Getpid(), func() {
			e.acc.server.Add(harness.UsageDuring(e.c.srv.PID, func() {
				m = loop(ctx, e.w.workers, r.cfg.dur/time.Duration(rounds), r.cfg.maxCalls/rounds, e.f)
			}))
		}))
		e.acc.calls += m.calls
		e.acc.events += m.events
		e.acc.elapsed += m.elapsed
		e.acc.lat = append(e.acc.lat, m.lat...)
		e.acc.ttfe = append(e.acc.ttfe, m.ttfe...)
		if m.err != nil {
			e.acc.err, e.done = m.err, true
		}
	})
	for _, e := range es {
		slices.Sort(e.acc.lat)
		slices.Sort(e.acc.ttfe)
		rss, _ := harness.RSS(e.c.srv.PID)
		res := Result{Workload: e.w.key, Server: e.c.name, Client: e.c.clientName(e.w.client), RSSMiB: float64(rss) / (1 << 20)}
		fill(&res, e.acc, e.w.stream)
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
	if per <= 0 {
		return
	}
	if m.client.CPU >= 0 {
		res.ClientCPUus = us(m.client.CPU) / float64(per)
	}
	if m.server.CPU >= 0 {
		res.ServerCPUus = us(m.server.CPU) / float64(per)
	}
	if m.server.Reads >= 0 {
		res.ServerReads = float64(m.server.Reads) / float64(per)
		res.ServerWrites = float64(m.server.Writes) / float64(per)
	}
	if m.client.Reads >= 0 {
		res.ClientReads = float64(m.client.Reads) / float64(per)
		res.ClientWrites = float64(m.client.Writes) / float64(per)
	}
}

var us = harness.Micros

// clientSetup is the cross-check: the same completed-task SendMessage made through a2a-go's own
// client (a2aclient over JSON-RPC, on the same tuned http.Client), which decodes every answer.
func clientSetup(ctx context.Context, ct *contender, hc *http.Client) (callFunc, func(), error) {
	c, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{a2a.NewAgentInterface(ct.srv.url, a2a.TransportProtocolJSONRPC)},
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
