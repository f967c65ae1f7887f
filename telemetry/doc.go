// Package telemetry owns what a server tells its operator about the calls it serves: the
// request log, Prometheus metrics, OpenTelemetry server spans, and the audit stream of security
// events (docs/operations.md). An [Observer] is made once per server and handed to the
// bindings (binding.Options.Observer), which start a [Call] for every A2A call on every
// binding; the engine's store, the language model client and the authenticators report to it
// too. A nil *Observer observes nothing, so callers need not check.
//
//	reg := prometheus.NewRegistry()
//	obs := telemetry.New(&telemetry.Options{Logger: log, Registerer: reg, TracerProvider: tp})
//	ctx, call := obs.Start(ctx, "jsonrpc", "SendMessage", carrier)
//	defer call.End(err)
//
// Concurrency: an Observer is safe for concurrent use. Its metrics are client_golang's
// (lock-free counters); the audit throttle holds one mutex over a bounded map, never while
// logging. A Call belongs to the goroutine that serves the call.
package telemetry
