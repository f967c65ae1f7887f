package main

// The results table, the ratios, the targets and the JSON output.

import (
	"fmt"
	"io"
	"strings"
	"time"

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
	Results []Result          `json:"results"`
	Targets []harness.Target  `json:"targets"`
	Notes   []string          `json:"notes,omitempty"`
}

func (r *runner) report() *report {
	mode := "full"
	if r.cfg.quick {
		mode = "quick"
	}
	if r.cfg.profile != "" {
		mode += " (Go server CPU-profiled)"
	}
	rep := &report{
		Time:    time.Now().Format(time.RFC3339),
		Mode:    mode,
		Env:     r.env,
		Servers: map[string]string{},
		Load:    [2]string{r.loadStart, r.loadEnd},
		Elapsed: r.elapsed.Seconds(),
		Measure: fmt.Sprintf("warm-up %v, then %v or %d calls in %d rounds alternating between the servers", r.cfg.warm, r.cfg.dur, r.cfg.maxCalls, r.cfg.rounds),
		Results: r.results,
		Notes:   r.notes,
	}
	for _, name := range r.cfg.servers {
		if s := r.srvs.get(name); s != nil {
			rep.Servers[name] = s.desc
		}
	}
	rep.Targets = rep.targets()
	return rep
}

// find returns the result for a workload and server (Go client), or nil.
func (rep *report) find(workload, server string) *Result {
	for i := range rep.Results {
		x := &rep.Results[i]
		if x.Workload == workload && x.Server == server && x.Err == "" {
			return x
		}
	}
	return nil
}

// metric describes one line of the table: which number of a result, and which way is better.
type metric = harness.Metric[Result]

var (
	mRate = metric{Name: "calls/s ↑", Get: func(r *Result) float64 { return r.CallsPerSec }, Format: fmtCount}
	mP50  = metric{Name: "p50 µs ↓", Get: func(r *Result) float64 { return r.P50us }, Format: fmtUs}
	mP99  = metric{Name: "p99 µs ↓", Get: func(r *Result) float64 { return r.P99us }, Format: fmtUs}
	mCPU  = metric{Name: "srv CPU µs/call ↓", Get: func(r *Result) float64 { return r.ServerCPUus }, Format: fmtUs}
	mCli  = metric{Name: "cli CPU µs/call ↓", Get: func(r *Result) float64 { return r.ClientCPUus }, Format: fmtUs}
	mMBps = metric{Name: "MB/s ↑", Get: func(r *Result) float64 { return r.MBps }, Format: func(v float64) string { return fmt.Sprintf("%.1f", v) }}
	mKiB  = metric{Name: "KiB/session ↓", Get: func(r *Result) float64 { return r.BytesPerSession / 1024 }, Format: func(v float64) string { return fmt.Sprintf("%.2f", v) }}
)

var (
	fmtCount = harness.FormatCount
	fmtUs    = harness.FormatMicros
)

// resultTable is the table of the results: the three servers, and Go's ratios to Node and to
// the raw echo floor.
var resultTable = harness.Table[Result]{
	Servers: serverNames,
	Ratios:  []harness.Ratio{{Header: "go/node", Num: "go", Den: "node"}, {Header: "go/echo", Num: "go", Den: "echo"}},
	Key:     func(r *Result) (string, string, bool) { return r.Workload, r.Server, r.Err != "" },
	Metrics: metricsFor,
}

// metricsFor lists the table lines of a workload.
func metricsFor(workload string) []metric {
	switch {
	case strings.HasPrefix(workload, "seq/"):
		return []metric{mP50, mP99, mRate, mCPU}
	case strings.HasPrefix(workload, "inflight"):
		return []metric{mRate, mP50, mP99, mCPU, mCli}
	case strings.HasPrefix(workload, "chain/"):
		return []metric{{Name: "p50 µs/iter ↓", Get: mP50.Get, Format: fmtUs}, {Name: "p99 µs/iter ↓", Get: mP99.Get, Format: fmtUs}}
	case strings.HasPrefix(workload, "batch"):
		return []metric{mRate, {Name: "p50 µs/batch ↓", Get: mP50.Get, Format: fmtUs}, mCPU, mCli}
	case strings.HasPrefix(workload, "payload") && strings.HasSuffix(workload, "/seq"):
		return []metric{mP50, mP99, mMBps}
	case strings.HasPrefix(workload, "payload"):
		return []metric{mMBps, mP50, mCPU}
	case workload == "idle":
		return []metric{mKiB}
	case workload == "nodeclient/seq-add":
		return []metric{mP50, mP99}
	case strings.HasPrefix(workload, "nodeclient/"):
		return []metric{mRate, mP50}
	}
	return []metric{mRate, mP50}
}

func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\ncapnweb benchmark — %s — %s mode, %.0fs\n", rep.Time, rep.Mode, rep.Elapsed)
	fmt.Fprintf(w, "machine: %d CPUs %s, %s/%s, %s, node %s; loadavg start %s, end %s\n",
		rep.Env.CPUs, rep.Env.CPUModel, rep.Env.GOOS, rep.Env.GOARCH, rep.Env.GoVersion, harness.OrDash(rep.Env.NodeVer), rep.Load[0], rep.Load[1])
	fmt.Fprintf(w, "each measurement: %s; one WebSocket per measurement; client: Go unless noted\n", rep.Measure)
	for _, n := range serverNames {
		if d, ok := rep.Servers[n]; ok {
			fmt.Fprintf(w, "  %-4s = %s\n", n, d)
		}
	}
	fmt.Fprintln(w)

	resultTable.Write(w, rep.Results)

	fmt.Fprintln(w, "\nratios are go's value divided by the other's (for ↓ metrics, < 1 means Go is faster)")
	for _, res := range rep.Results {
		if res.Err != "" {
			fmt.Fprintf(w, "ERROR %s on %s: %s\n", res.Workload, res.Server, res.Err)
		}
	}

	fmt.Fprintln(w, "\ntargets (Go server):")
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "  %-4s %-46s %s\n", t.Status, t.Name, t.Detail)
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

func (rep *report) targets() []harness.Target {
	var out []harness.Target
	// check: get(a)/get(b) must be ≥ limit (atLeast) or ≤ limit; unit follows the two values.
	check := func(name string, a, b *Result, get func(*Result) float64, f func(float64) string, limit float64, atLeast bool, unit string) {
		out = append(out, harness.RatioTarget(name, a, b, get, limit, atLeast, f, unit))
	}
	rate := func(r *Result) float64 { return r.CallsPerSec }
	p50 := func(r *Result) float64 { return r.P50us }
	for _, op := range []string{"add", "echo", "counter"} {
		k := "inflight16/" + op
		g, n := rep.find(k, "go"), rep.find(k, "node")
		check(k+" ≥ 2× Node", g, n, rate, fmtCount, 2, true, "calls/s")
	}
	for _, op := range []string{"add", "echo", "counter"} {
		k := "inflight16/" + op
		g, e := rep.find(k, "go"), rep.find(k, "echo")
		check(k+" ≥ 60% of raw echo", g, e, rate, fmtCount, 0.6, true, "calls/s")
	}
	for _, op := range []string{"add", "echo", "counter"} {
		k := "seq/" + op
		g, n := rep.find(k, "go"), rep.find(k, "node")
		check(k+" p50 ≤ 0.6× Node", g, n, p50, fmtUs, 0.6, false, "µs")
	}
	{
		t := harness.NotMeasured("idle session ≤ 8 KiB", 8192)
		if g := rep.find("idle", "go"); g != nil {
			t.Value = g.BytesPerSession
			t.Status = harness.Verdict(g.BytesPerSession <= 8192)
			t.Detail = fmt.Sprintf("%.2f KiB per session", g.BytesPerSession/1024)
			if n := rep.find("idle", "node"); n != nil {
				t.Detail += fmt.Sprintf(" (node %.2f KiB", n.BytesPerSession/1024)
				if e := rep.find("idle", "echo"); e != nil {
					t.Detail += fmt.Sprintf(", raw echo %.2f KiB", e.BytesPerSession/1024)
				}
				t.Detail += ")"
			}
		}
		out = append(out, t)
	}
	{
		g, one := rep.find("chain/pipelined10", "go"), rep.find("chain/1call", "go")
		check("pipelined 10-chain ≤ 1.5× one round trip", g, one, p50, fmtUs, 1.5, false, "µs p50, chain vs 1 call")
	}
	{
		g, n := rep.find("batch100/add", "go"), rep.find("batch100/add", "node")
		check("batch of 100 ≥ 2× Node calls/s", g, n, rate, fmtCount, 2, true, "calls/s")
	}
	return out
}

func (rep *report) writeJSON(path string) error { return harness.WriteJSON(path, rep) }
