// Package harness holds what the benchmark harnesses under bench/ (bench/a2a, bench/capnweb)
// share: starting server subprocesses and stopping them (process.go), the server side of that
// handshake (serve.go), CPU profiles of a role (profile.go), /proc readers for a process's CPU
// time and RSS and the load average (proc.go), latency statistics (stats.go), the alternating
// measurement rounds (rounds.go), command-line lists and the workload loop (options.go), and the
// report's comparison table, its number formats and targets (table.go, report.go), and repeated
// runs with how often each target passed (repeat.go).
//
// It is a toolbox, not a framework: each harness keeps its own workloads, its own result type,
// its own targets and its own report header, and calls in here for the parts that are the same.
package harness
