package main

// The workloads. Each measures the servers in alternating rounds (go, node, echo, node, echo,
// go, ...), so that the ratios compare runs made under the same background load.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// Result is one measurement of one workload against one server.
type Result struct {
	Workload    string  `json:"workload"` // e.g. "inflight16/add"
	Server      string  `json:"server"`   // go | node | echo
	Client      string  `json:"client"`   // go | node (the load client)
	Calls       int     `json:"calls"`    // RPC calls completed in the measured loop
	Seconds     float64 `json:"seconds"`
	CallsPerSec float64 `json:"calls_per_sec,omitempty"`
	P50us       float64 `json:"p50_us,omitempty"` // per iteration: a call, a batch or a chain
	P99us       float64 `json:"p99_us,omitempty"`
	MeanUs      float64 `json:"mean_us,omitempty"`
	MBps        float64 `json:"mb_per_sec,omitempty"`
	// ServerCPUus is the server process's CPU time per RPC call in the measured loop.
	ServerCPUus float64 `json:"server_cpu_us_per_call,omitempty"`
	// ClientCPUus is the load client's (this process's) CPU time per RPC call in the same loop:
	// client and server share the machine's cores, so a dear client caps every server alike.
	ClientCPUus float64 `json:"client_cpu_us_per_call,omitempty"`
	// ServerReads and ServerWrites are the server process's read and write system calls per
	// iteration (a call, a batch or a chain): how well messages share reads and writes.
	ServerReads     float64 `json:"server_reads_per_iter,omitempty"`
	ServerWrites    float64 `json:"server_writes_per_iter,omitempty"`
	BytesPerSession float64 `json:"bytes_per_session,omitempty"`
	Note            string  `json:"note,omitempty"`
	Err             string  `json:"error,omitempty"`
}

type runner struct {
	cfg       *config
	srvs      *serverSet
	env       *benchEnv
	results   []Result
	notes     []string
	loadStart string
	loadEnd   string
	elapsed   time.Duration
}

func (r *runner) add(res Result) {
	if res.Client == "" {
		res.Client = "go"
	}
	r.results = append(r.results, res)
	msg := fmt.Sprintf("   %-22s %-5s", res.Workload, res.Server)
	switch {
	case res.Err != "":
		msg += " ERROR " + res.Err
	case res.BytesPerSession != 0:
		msg += fmt.Sprintf(" %.1f KiB/session", res.BytesPerSession/1024)
	default:
		msg += fmt.Sprintf(" n=%d %.0f calls/s p50=%.1fµs p99=%.1fµs", res.Calls, res.CallsPerSec, res.P50us, res.P99us)
		if res.MBps > 0 {
			msg += fmt.Sprintf(" %.1f MB/s", res.MBps)
		}
		if res.ServerCPUus > 0 {
			msg += fmt.Sprintf(" srvCPU=%.1fµs/call", res.ServerCPUus)
		}
		if res.ClientCPUus > 0 {
			msg += fmt.Sprintf(" cliCPU=%.1fµs/call", res.ClientCPUus)
		}
		if res.ServerReads > 0 {
			msg += fmt.Sprintf(" srv r/w=%.2f/%.2f per iter", res.ServerReads, res.ServerWrites)
		}
	}
	fmt.Fprintln(os.Stderr, msg)
}

func (r *runner) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(r.notes, n) {
		r.notes = append(r.notes, n)
		fmt.Fprintln(os.Stderr, "   note:", n)
	}
}

// servers returns the running servers among names, in order.
func (r *runner) servers(names ...string) []*server {
	var out []*server
	for _, n := range names {
		if s := r.srvs.get(n); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (r *runner) runWorkload(ctx context.Context, w string) {
	all := r.servers(serverNames...)
	rpc := r.servers("go", "node")
	switch w {
	case "seq":
		for _, op := range []string{"echo", "add", "counter"} {
			r.compareOp(ctx, "seq/"+op, all, op, 1, 0)
		}
	case "inflight":
		for _, n := range []int{16, 256} {
			for _, op := range []string{"echo", "add", "counter"} {
				r.compareOp(ctx, fmt.Sprintf("inflight%d/%s", n, op), all, op, n, 0)
			}
		}
	case "chain":
		r.chains(ctx, rpc)
	case "batch":
		r.batches(ctx, rpc)
	case "payload":
		for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
			label, op := sizeLabel(size), fmt.Sprintf("echo:%d", size)
			r.compareOp(ctx, "payload"+label+"/seq", all, op, 1, size)
			r.compareOp(ctx, "payload"+label+"/inflight8", all, op, 8, size)
		}
	case "idle":
		for _, s := range all {
			r.idle(ctx, s)
		}
	case "nodeclient":
		r.nodeClient(ctx)
	}
}

func sizeLabel(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// fill turns a measurement into a result; perIter is the number of RPC calls one iteration
// makes, payload the bytes echoed per call (0: none).
func fill(res *Result, m measurement, perIter, payload int) {
	if m.err != nil {
		res.Err = m.err.Error()
	}
	res.Calls = m.calls * perIter
	res.Seconds = m.elapsed.Seconds()
	res.CallsPerSec = m.rate() * float64(perIter)
	res.P50us = us(m.pct(0.50))
	res.P99us = us(m.pct(0.99))
	res.MeanUs = us(m.mean())
	if payload > 0 {
		res.MBps = m.rate() * float64(payload) / 1e6
	}
	if m.server.CPU >= 0 && res.Calls > 0 {
		res.ServerCPUus = us(m.server.CPU) / float64(res.Calls)
	}
	if m.client.CPU >= 0 && res.Calls > 0 {
		res.ClientCPUus = us(m.client.CPU) / float64(res.Calls)
	}
	if m.server.Reads >= 0 && m.calls > 0 {
		res.ServerReads = float64(m.server.Reads) / float64(m.calls)
		res.ServerWrites = float64(m.server.Writes) / float64(m.calls)
	}
}

var us = harness.Micros

// setupFunc prepares a workload against one server: the function to loop and a cleanup.
type setupFunc func(ctx context.Context, s *server) (callFunc, func(), error)

// workload is one measurement of compareAll: key on each of servers, with workers calls in
// flight; perIter is the RPC calls per iteration, payload the bytes echoed per call.
type workload struct {
	key     string
	servers []*server
	workers int
	perIter int
	payload int
	note    string
	setup   setupFunc
}

// compare measures one workload on several servers (compareAll).
func (r *runner) compare(ctx context.Context, key string, servers []*server, workers, perIter, payload int, note string, setup setupFunc) {
	r.compareAll(ctx, []workload{{key, servers, workers, perIter, payload, note, setup}})
}

// compareAll measures workloads on their servers. Each pair gets its connection and its
// warm-up first; then the measured time is split into rounds that alternate between all the
// pairs (the starting one rotates), so that a burst of background load on this shared machine
// hits all of them alike.
func (r *runner) compareAll(ctx context.Context, ws []workload) {
	if ctx.Err() != nil {
		return
	}
	type contender struct {
		w        *workload
		s        *server
		f        callFunc
		acc      measurement
		maxCalls int
		done     bool // failed: out of the remaining rounds
	}
	rounds := r.cfg.rounds
	var cs []*contender
	for i := range ws {
		w := &ws[i]
		maxCalls := r.cfg.maxCalls
		if w.payload >= 64<<10 {
			maxCalls = min(maxCalls, (4<<30)/w.payload) // at most 4 GB per measurement
		}
		for _, s := range w.servers {
			c := &contender{w: w, s: s, maxCalls: maxCalls}
			cs = append(cs, c)
			f, cleanup, err := w.setup(ctx, s)
			if err != nil {
				c.acc.err, c.done = err, true
				continue
			}
			c.f = f
			defer cleanup()
			if m := loop(ctx, w.workers, r.cfg.warm, maxCalls, f); m.err != nil {
				c.acc.err, c.done = fmt.Errorf("warm-up: %w", m.err), true
			}
		}
	}
	harness.Rounds(rounds, len(cs), func(i int) {
		c := cs[i]
		if c.done || ctx.Err() != nil {
			return
		}
		var m measurement
		c.acc.client.Add(harness.UsageDuring(os.Getpid(), func() {
			c.acc.server.Add(harness.UsageDuring(c.s.PID, func() {
				m = loop(ctx, c.w.workers, r.cfg.dur/time.Duration(rounds), c.maxCalls/rounds, c.f)
			}))
		}))
		c.acc.calls += m.calls
		c.acc.elapsed += m.elapsed
		c.acc.lat = append(c.acc.lat, m.lat...)
		if m.err != nil {
			c.acc.err, c.done = m.err, true
		}
	})
	for _, c := range cs {
		slices.Sort(c.acc.lat)
		res := Result{Workload: c.w.key, Server: c.s.Name, Note: c.w.note}
		fill(&res, c.acc, c.w.perIter, c.w.payload)
		r.add(res)
	}
}

// compareOp runs a named client op (see client.op) with inflight concurrent callers on one
// fresh WebSocket per server.
func (r *runner) compareOp(ctx context.Context, key string, servers []*server, op string, inflight, payload int) {
	r.compare(ctx, key, servers, inflight, 1, payload, "", func(ctx context.Context, s *server) (callFunc, func(), error) {
		c, err := connect(ctx, s)
		if err != nil {
			return nil, nil, err
		}
		f, err := c.op(op)
		if err != nil {
			c.close()
			return nil, nil, err
		}
		return f, c.close, nil
	})
}

// ---- chains ----

const chainLen = 10

// maxChainImports: a chain session is replaced (between iterations) when its import table has
// grown past this, which only happens if promises passed as arguments are never released (see
// the leak check in chains).
const maxChainImports = 20000

// chainSession is a capnweb client whose session is replaced if its import table leaks.
type chainSession struct {
	ctx context.Context
	url string
	mu  sync.Mutex
	cur *capnwebClient
}

func (c *chainSession) main() *capnweb.Stub {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.cur.s.Stats(); st.Imports > maxChainImports {
		if nc, err := dialCapnweb(c.ctx, c.url); err == nil {
			go c.cur.close()
			c.cur = nc
		}
	}
	return c.cur.s.Main()
}

func (c *chainSession) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur.close()
}

// addChain makes chainLen dependent add calls, add(add(add(0,1),1)...): each takes the previous
// promise as its argument. All are sent without waiting; then one await; then every promise is
// released.
func addChain(ctx context.Context, main *capnweb.Stub) error {
	ps := make([]*capnweb.Promise, 0, chainLen)
	var prev any = 0.0
	for range chainLen {
		p := main.Call("add", prev, 1)
		ps = append(ps, p)
		prev = p
	}
	v, err := ps[chainLen-1].Await(ctx)
	for _, p := range ps {
		p.Release()
	}
	if err == nil && v != float64(chainLen) {
		err = fmt.Errorf("chain: got %v, want %d", v, chainLen)
	}
	return err
}

// seqChain makes the same dependent calls, each awaited before the next is sent.
func seqChain(ctx context.Context, main *capnweb.Stub) error {
	acc := 0.0
	for range chainLen {
		p := main.Call("add", acc, 1)
		v, err := p.Await(ctx)
		p.Release()
		if err != nil {
			return err
		}
		acc, _ = v.(float64)
	}
	if acc != chainLen {
		return fmt.Errorf("chain: got %v, want %d", acc, chainLen)
	}
	return nil
}

// authChain is authenticate("secret").getUser().greet("hi"), pipelined through returned targets.
func authChain(ctx context.Context, main *capnweb.Stub) error {
	a := main.Call("authenticate", "secret")
	u := a.Call("getUser")
	g := u.Call("greet", "hi")
	v, err := g.Await(ctx)
	g.Release()
	u.Release()
	a.Release()
	if err == nil && v != "hi, alice!" {
		err = fmt.Errorf("auth chain: got %v", v)
	}
	return err
}

func (r *runner) chains(ctx context.Context, servers []*server) {
	// Leak check: after one pipelined chain with every promise released, the client's import
	// table should hold only the main entry.
	for _, s := range servers {
		probe, err := dialCapnweb(ctx, s.wsURL)
		if err != nil {
			continue
		}
		if err := addChain(ctx, probe.s.Main()); err == nil {
			time.Sleep(50 * time.Millisecond)
			if st := probe.s.Stats(); st.Imports > 1 {
				r.note("capnweb Go client leak (server %s): after one %d-call pipelined chain with every promise Released, the client session still holds %d import entries (want 1, main): no [\"release\"] was sent for promises passed as arguments. The harness replaces its chain sessions before the import table nears MaxImports.",
					s.Name, chainLen, st.Imports)
			}
		}
		probe.close()
	}
	one := func(ctx context.Context, main *capnweb.Stub) error {
		return call(ctx, main, "add", func(v any) bool { return v == 3.0 }, 1, 2)
	}
	// Measured in the same alternating rounds: the chain target divides one by another, and
	// measured seconds apart on this shared machine one round trip alone varied by 1.7x.
	var ws []workload
	for _, x := range []struct {
		key     string
		f       func(context.Context, *capnweb.Stub) error
		perIter int
	}{
		{"chain/1call", one, 1},
		{"chain/pipelined10", addChain, chainLen},
		{"chain/sequential10", seqChain, chainLen},
		{"chain/pipelined3-auth", authChain, 3},
	} {
		ws = append(ws, workload{x.key, servers, 1, x.perIter, 0, "latency per chain", func(ctx context.Context, s *server) (callFunc, func(), error) {
			c, err := dialCapnweb(ctx, s.wsURL)
			if err != nil {
				return nil, nil, err
			}
			cs := &chainSession{ctx: ctx, url: s.wsURL, cur: c}
			return func(ctx context.Context) error { return x.f(ctx, cs.main()) }, cs.close, nil
		}})
	}
	r.compareAll(ctx, ws)
}

// ---- HTTP batch ----

// batchWorkers is the number of batches in flight at once (each on its own HTTP connection).
const batchWorkers = 4

func (r *runner) batches(ctx context.Context, servers []*server) {
	for _, k := range []int{1, 100} {
		note := fmt.Sprintf("%d batches in flight; latency per batch", batchWorkers)
		r.compare(ctx, fmt.Sprintf("batch%d/add", k), servers, batchWorkers, k, 0, note, func(ctx context.Context, s *server) (callFunc, func(), error) {
			// Buffers that hold a whole batch (100 calls are about 6 KB): the request then
			// leaves in one write, where the default 4 KiB one splits it in two.
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: batchWorkers * 2, DisableCompression: true,
				WriteBufferSize: 16 << 10, ReadBufferSize: 16 << 10}}
			opts := &capnweb.DialOptions{HTTPClient: hc}
			f := func(ctx context.Context) error {
				bs := capnweb.NewBatchSession(s.httpURL, nil, opts)
				defer bs.Close()
				main := bs.Main()
				ps := make([]*capnweb.Promise, k)
				for i := range ps {
					ps[i] = main.Call("add", i, 1)
				}
				var firstErr error
				for i, p := range ps {
					v, err := p.Await(ctx)
					p.Release()
					if err == nil && v != float64(i+1) {
						err = fmt.Errorf("batch add: got %v, want %d", v, i+1)
					}
					if err != nil && firstErr == nil {
						firstErr = err
					}
				}
				return firstErr
			}
			return f, hc.CloseIdleConnections, nil
		})
	}
}

// ---- idle sessions ----

// idle starts a fresh process of the server (so earlier workloads have not grown its heap),
// warms it with a few sessions, then opens N WebSocket sessions that each make one call and stay
// idle, and divides the RSS growth by N.
func (r *runner) idle(ctx context.Context, main *server) {
	res := Result{Workload: "idle", Server: main.Name, Note: fmt.Sprintf("fresh process; %d sessions, one call each, then idle", r.cfg.idleN)}
	s, err := startServer(ctx, main.Name, main.freshArgv)
	if err != nil {
		res.Err = err.Error()
		r.add(res)
		return
	}
	defer s.Stop()
	var clients []client
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	open := func(n int) error {
		for range n {
			c, err := connect(ctx, s)
			if err != nil {
				return err
			}
			clients = append(clients, c)
			f, err := c.op("add")
			if err != nil {
				return err
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = f(cctx)
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
	// Warm-up: 20 sessions opened and closed.
	if err := open(20); err != nil {
		res.Err = err.Error()
		r.add(res)
		return
	}
	for _, c := range clients {
		c.close()
	}
	clients = nil
	sleepCtx(ctx, r.cfg.settle)
	before := medianRSS(ctx, s.PID)
	if err := open(r.cfg.idleN); err != nil {
		res.Err = err.Error()
		r.add(res)
		return
	}
	sleepCtx(ctx, r.cfg.settle)
	after := medianRSS(ctx, s.PID)
	if before <= 0 || after <= 0 {
		res.Err = "cannot read RSS"
	}
	res.Calls = r.cfg.idleN
	res.BytesPerSession = float64(after-before) / float64(r.cfg.idleN)
	if res.BytesPerSession == 0 {
		res.BytesPerSession = 0.001 // keep "measured, zero" distinct from "not measured"
	}
	r.add(res)
}

func medianRSS(ctx context.Context, pid int) int64 {
	var xs []int64
	for range 5 {
		if v, err := harness.RSS(pid); err == nil {
			xs = append(xs, v)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// ---- Node load client (second opinion) ----

type nodeClientOut struct {
	SeqCalls  int     `json:"seq_calls"`
	SeqSec    float64 `json:"seq_seconds"`
	SeqP50us  float64 `json:"seq_p50_us"`
	SeqP99us  float64 `json:"seq_p99_us"`
	ThrCalls  int     `json:"thr_calls"`
	ThrSec    float64 `json:"thr_seconds"`
	ThrRate   float64 `json:"thr_calls_per_sec"`
	ThrP50us  float64 `json:"thr_p50_us"`
	ThrP99us  float64 `json:"thr_p99_us"`
	InFlight  int     `json:"inflight"`
	ErrString string  `json:"error"`
}

func (r *runner) nodeClient(ctx context.Context) {
	if r.env.Node == "" {
		r.note("node not found: Node load client skipped")
		return
	}
	script := filepath.Join(r.env.Root, "bench", "capnweb", "node-client.mjs")
	for _, s := range r.servers("go", "node") {
		if ctx.Err() != nil {
			return
		}
		args := []string{script, "--url", s.wsURL,
			"--warm-ms", fmt.Sprint(r.cfg.warm.Milliseconds()),
			"--ms", fmt.Sprint(r.cfg.dur.Milliseconds()),
			"--max", fmt.Sprint(r.cfg.maxCalls),
			"--inflight", "16"}
		cctx, cancel := context.WithTimeout(ctx, 2*(r.cfg.warm+r.cfg.dur)+60*time.Second)
		cmd := exec.CommandContext(cctx, r.env.Node, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cpu0, _ := harness.CPUTime(s.PID)
		out, err := cmd.Output()
		cpu1, _ := harness.CPUTime(s.PID)
		cancel()
		seq := Result{Workload: "nodeclient/seq-add", Server: s.Name, Client: "node"}
		thr := Result{Workload: "nodeclient/inflight16-add", Server: s.Name, Client: "node"}
		var o nodeClientOut
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "{") {
				if jerr := json.Unmarshal([]byte(line), &o); jerr != nil && err == nil {
					err = jerr
				}
			}
		}
		if o.ErrString != "" {
			err = fmt.Errorf("%s", strings.SplitN(strings.TrimSpace(o.ErrString), "\n", 2)[0])
		}
		if err != nil {
			msg := err.Error()
			if e := strings.TrimSpace(stderr.String()); e != "" {
				msg += ": " + lastLine(e)
			}
			seq.Err, thr.Err = msg, msg
			r.add(seq)
			r.add(thr)
			continue
		}
		seq.Calls, seq.Seconds, seq.P50us, seq.P99us = o.SeqCalls, o.SeqSec, o.SeqP50us, o.SeqP99us
		if o.SeqSec > 0 {
			seq.CallsPerSec = float64(o.SeqCalls) / o.SeqSec
		}
		thr.Calls, thr.Seconds, thr.CallsPerSec, thr.P50us, thr.P99us = o.ThrCalls, o.ThrSec, o.ThrRate, o.ThrP50us, o.ThrP99us
		if n := o.SeqCalls + o.ThrCalls; n > 0 && cpu1 > cpu0 {
			// Includes the warm-ups; an approximation.
			thr.Note = fmt.Sprintf("server CPU ≈ %.1fµs/call incl. warm-up", us(cpu1-cpu0)/float64(n))
		}
		r.add(seq)
		r.add(thr)
	}
}

func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	return lines[len(lines)-1]
}
