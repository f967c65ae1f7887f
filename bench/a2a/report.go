package main

// The results table, the ratios, the targets and the JSON output.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

type report struct {
	Time    string            `json:"time"`
	Mode    string            `json:"mode"`
	Env     *benchEnv         `json:"env"`
	Servers map[string]string `json:"servers"`
	Load    [2]string         `json:"loadavg_start_end"`
	Elapsed float64           `json:"elapsed_seconds"`
	Measure string            `json:"per_measurement"`
	DBBytes int64             `json:"sqlite_bytes_at_end,omitempty"`
	Results []Result          `json:"results"`
	Targets []harness.Target  `json:"targets"`

	streams []streamWorkload // the stream workloads, for the targets
}

func (r *runner) report() *report {
	mode := "full"
	if r.cfg.quick {
		mode = "quick"
	}
	if r.cfg.profileDir != "" {
		mode += " (our servers CPU-profiled)"
	}
	rep := &report{
		Time:    time.Now().Format(time.RFC3339),
		Mode:    mode,
		Env:     r.env,
		Servers: map[string]string{},
		Load:    [2]string{r.loadStart, r.loadEnd},
		Elapsed: r.elapsed.Seconds(),
		Measure: fmt.Sprintf("warm-up %v, then %v (or %d calls) in %d rounds alternating between the servers", r.cfg.warm, r.cfg.dur, r.cfg.maxCalls, r.cfg.rounds),
		DBBytes: r.dbSize,
		Results: r.results,
		streams: r.streamWorkloads(),
	}
	for _, name := range serverNames {
		if s := r.srvs.get(name); s != nil && r.cfg.selected(name) {
			rep.Servers[name] = s.desc
		}
	}
	if r.cfg.selected("capnweb") {
		rep.Servers["capnweb"] = "ours-memory's process through its capnweb binding (WebSocket at " + binding.DefaultCapnwebPath + "); streams to an observer function"
		rep.Servers["capnweb-rs"] = "the same; streams as the ReadableStream the call returns"
	}
	rep.Targets = rep.targets()
	return rep
}

// find returns the successful result for a workload and server, or nil.
func (rep *report) find(workload, server string) *Result {
	if x := rep.findAny(workload, server); x != nil && x.Err == "" {
		return x
	}
	return nil
}

// findAny is find, but returns failed results too.
func (rep *report) findAny(workload, server string) *Result {
	for i := range rep.Results {
		x := &rep.Results[i]
		if x.Workload == workload && x.Server == server {
			return x
		}
	}
	return nil
}

// metric describes one line of the table: which number of a result, and which way is better.
type metric = harness.Metric[Result]

var (
	mRate    = metric{Name: "calls/s ↑", Get: func(r *Result) float64 { return r.CallsPerSec }, Format: fmtCount}
	mP50     = metric{Name: "p50 µs ↓", Get: func(r *Result) float64 { return r.P50us }, Format: fmtUs}
	mP99     = metric{Name: "p99 µs ↓", Get: func(r *Result) float64 { return r.P99us }, Format: fmtUs}
	mCPU     = metric{Name: "srv CPU µs/call ↓", Get: func(r *Result) float64 { return r.ServerCPUus }, Format: fmtUs}
	mEvents  = metric{Name: "events/s ↑", Get: func(r *Result) float64 { return r.EventsPerSec }, Format: fmtCount}
	mTTFE50  = metric{Name: "1st event p50 µs ↓", Get: func(r *Result) float64 { return r.TTFEP50us }, Format: fmtUs}
	mTTFE99  = metric{Name: "1st event p99 µs ↓", Get: func(r *Result) float64 { return r.TTFEP99us }, Format: fmtUs}
	mStream  = metric{Name: "stream p50 ms ↓", Get: func(r *Result) float64 { return r.P50us / 1000 }, Format: func(v float64) string { return fmt.Sprintf("%.1f", v) }}
	mCPUEv   = metric{Name: "srv CPU µs/event ↓", Get: func(r *Result) float64 { return r.ServerCPUus }, Format: fmtUs}
	mStreams = metric{Name: "streams/s ↑", Get: func(r *Result) float64 { return r.CallsPerSec }, Format: fmtCount}
	mRSS     = metric{Name: "srv RSS MiB (after)", Get: func(r *Result) float64 { return r.RSSMiB }, Format: func(v float64) string { return fmt.Sprintf("%.0f", v) }}
	mSeqs    = metric{Name: "sequences/s ↑", Get: func(r *Result) float64 { return r.CallsPerSec }, Format: fmtCount}
	mCPUSeq  = metric{Name: "srv CPU µs/seq ↓", Get: func(r *Result) float64 { return r.ServerCPUus }, Format: fmtUs}
	mCli     = metric{Name: "cli CPU µs/call ↓", Get: func(r *Result) float64 { return r.ClientCPUus }, Format: fmtUs}
	mCliEv   = metric{Name: "cli CPU µs/event ↓", Get: func(r *Result) float64 { return r.ClientCPUus }, Format: fmtUs}
)

var (
	fmtCount = harness.FormatCount
	fmtUs    = harness.FormatMicros
)

// columnNames lists the table's columns, each a server reached through a binding (contender).
var columnNames = []string{"ours-sqlite", "ours-memory", "capnweb", "capnweb-rs", "a2ago"}

// resultTable is the table of the results: the contenders, ours' ratios to a2a-go's, and
// capnweb's to our own JSON-RPC (the same server process).
var resultTable = harness.Table[Result]{
	Servers: columnNames,
	Ratios: []harness.Ratio{
		{Header: "sqlite/a2ago", Num: "ours-sqlite", Den: reference},
		{Header: "memory/a2ago", Num: "ours-memory", Den: reference},
		{Header: "capnweb/memory", Num: "capnweb", Den: "ours-memory"},
		{Header: "capnweb/a2ago", Num: "capnweb", Den: reference},
		{Header: "rs/a2ago", Num: "capnweb-rs", Den: reference},
	},
	Key:     func(r *Result) (string, string, bool) { return r.Workload, r.Server, r.Err != "" },
	Metrics: metricsFor,
}

// metricsFor lists the table lines of a workload.
func metricsFor(workload string) []metric {
	switch {
	case strings.HasPrefix(workload, "ttfe"):
		return []metric{mTTFE50, mTTFE99, mStream, mStreams}
	case strings.HasPrefix(workload, "stream"), strings.HasPrefix(workload, "burst"):
		return []metric{mEvents, mTTFE50, mTTFE99, mStreams, mStream, mCPUEv, mCliEv, mRSS}
	case strings.HasPrefix(workload, "dep/3call"):
		return []metric{mP50, mP99, mSeqs, mCPUSeq}
	case strings.HasPrefix(workload, "dep/"):
		return []metric{mP50, mP99, mRate, mCPU}
	}
	return []metric{mRate, mP50, mP99, mCPU, mCli}
}

func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nA2A server benchmark — %s — %s mode, %.0fs\n", rep.Time, rep.Mode, rep.Elapsed)
	fmt.Fprintf(w, "machine: %d CPUs %s, %s/%s, %s, a2a-go %s, temp fs %s; loadavg start %s, end %s\n",
		rep.Env.CPUs, rep.Env.CPUModel, rep.Env.GOOS, rep.Env.GOARCH, rep.Env.GoVersion, harness.OrDash(rep.Env.A2AGo),
		harness.OrDash(rep.Env.TempFS), rep.Load[0], rep.Load[1])
	fmt.Fprintf(w, "each measurement: %s\n", rep.Measure)
	fmt.Fprintln(w, "client: one Go process (the servers are other processes on the same 2 cores): raw JSON-RPC bodies (keep-alive http.Client, one connection per worker);")
	fmt.Fprintln(w, "  capnweb columns: the capnweb Go client, one WebSocket per measurement shared by all in-flight calls; a2aclient-* rows use a2a-go's a2aclient")
	for _, n := range columnNames {
		if d, ok := rep.Servers[n]; ok {
			fmt.Fprintf(w, "  %-11s = %s\n", n, d)
		}
	}
	if rep.DBBytes > 0 {
		fmt.Fprintf(w, "  SQLite file + WAL at the end: %.0f MiB\n", float64(rep.DBBytes)/(1<<20))
	}
	fmt.Fprintln(w)

	resultTable.Write(w, rep.Results)

	fmt.Fprintln(w, "\nratios are the first column's value divided by the second's (↑: > 1 means the first is better; ↓: < 1 means the first is better)")
	for _, res := range rep.Results {
		if res.Err != "" {
			fmt.Fprintf(w, "ERROR %s on %s: %s\n", res.Workload, res.Server, res.Err)
		}
	}

	fmt.Fprintln(w, "\ntargets:")
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "  %-4s %-50s %s\n", t.Status, t.Name, t.Detail)
	}
}

func (rep *report) targets() []harness.Target {
	var out []harness.Target
	// ratio: get(a)/get(b) must be ≥ limit (atLeast) or ≤ limit.
	ratio := func(name string, a, b *Result, get func(*Result) float64, f func(float64) string, unit string, limit float64, atLeast bool) {
		out = append(out, harness.RatioTarget(name, a, b, get, limit, atLeast, f, unit))
	}
	// below: get(a) must be < limit.
	below := func(name string, a *Result, get func(*Result) float64, limit float64, unit string) {
		t := harness.NotMeasured(name, limit)
		if a != nil && get(a) > 0 {
			t.Value = get(a)
			t.Status = harness.Verdict(t.Value < limit)
			t.Detail = fmt.Sprintf("%s %s (need < %s)", fmtUs(t.Value), unit, fmtUs(limit))
		}
		out = append(out, t)
	}
	rate := func(r *Result) float64 { return r.CallsPerSec }
	events := func(r *Result) float64 { return r.EventsPerSec }
	p50 := func(r *Result) float64 { return r.P50us }

	const tput = "send-task/c16"
	ratio("sqlite: "+tput+" ≥ 1.5× a2a-go", rep.find(tput, "ours-sqlite"), rep.find(tput, reference), rate, fmtCount, "calls/s", 1.5, true)
	ratio("memory: "+tput+" ≥ 3× a2a-go", rep.find(tput, "ours-memory"), rep.find(tput, reference), rate, fmtCount, "calls/s", 3, true)
	cw, jr := rep.find(tput, "capnweb"), rep.find(tput, "ours-memory")
	cwTarget := harness.RatioTarget("capnweb: "+tput+" ≥ 2× our JSON-RPC", cw, jr, rate, 2, true, fmtCount, "calls/s")
	cwTarget.Detail += cpuPerCall(cw, jr)
	out = append(out, cwTarget)

	// The token stream (16 in flight) and the long stream, named after -stream-n and -burst-n.
	tokens, long := rep.streams[0].key, rep.streams[1].key
	for _, ours := range []string{"ours-sqlite", "ours-memory"} {
		short := strings.TrimPrefix(ours, "ours-")
		a, b := rep.find(tokens, ours), rep.find(tokens, reference)
		ratio(short+": "+tokens+" events/s ≥ 3× a2a-go", a, b, events, fmtCount, "events/s", 3, true)
		below(short+": "+tokens+" 1st event p50 < 5 ms", a, func(r *Result) float64 { return r.TTFEP50us }, 5000, "µs")
		below(short+": "+tokens+" 1st event p99 < 5 ms", a, func(r *Result) float64 { return r.TTFEP99us }, 5000, "µs")
	}
	for _, sk := range []string{long, tokens} {
		for _, cw := range []string{"capnweb", "capnweb-rs"} {
			ratio(cw+": "+sk+" events/s ≥ 5× a2a-go", rep.find(sk, cw), rep.find(sk, reference), events, fmtCount, "events/s", 5, true)
		}
	}
	ratio("capnweb: dep/3call pipelined p50 ≤ 1.5× dep/1call", rep.find("dep/3call", "capnweb"), rep.find("dep/1call", "capnweb"), p50, fmtUs, "µs", 1.5, false)

	for _, kind := range []string{"reply", "task"} {
		for _, c := range sendConcurrency {
			k := fmt.Sprintf("send-%s/c%d", kind, c)
			for _, ours := range []string{"ours-sqlite", "ours-memory"} {
				ratio(strings.TrimPrefix(ours, "ours-")+": "+k+" p50 ≤ a2a-go's", rep.find(k, ours), rep.find(k, reference), p50, fmtUs, "µs", 1, false)
			}
		}
	}
	return out
}

// cpuPerCall is a note for a throughput ratio between a and b: the CPU each spent per call,
// server and load client together. Client and server share the machine's cores, so the
// throughputs follow it: it tells a change in the work per call from one in scheduling.
func cpuPerCall(a, b *Result) string {
	if a == nil || b == nil || a.ServerCPUus <= 0 || b.ServerCPUus <= 0 {
		return ""
	}
	ca, cb := a.ServerCPUus+a.ClientCPUus, b.ServerCPUus+b.ClientCPUus
	return fmt.Sprintf("; CPU per call, server + client: %.0f vs %.0f µs (%.2f×)", ca, cb, cb/ca)
}

func (rep *report) writeJSON(path string) error { return harness.WriteJSON(path, rep) }
