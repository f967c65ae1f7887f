package main

// What serve tells its operator (docs/operations.md): where its data lives, its start banner,
// its log's format and request log, its audit stream, metrics, traces and pprof.

import (
	"cmp"
	"context"
	"flag"
	"net/http"
	"net/http/pprof"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"fmt"
	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/telemetry"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/hosting"
)

type opsConfig struct {
	dataDir      string // resolved: -data-dir, else XDG
	makeDataDir  bool   // the default store is in dataDir, which run creates
	logFormat    string // "text" or "json"
	logRequests  bool
	auditLog     string
	metricsAddr  string
	pprofAddr    string
	otlpEndpoint string
	// banner receives the readable start banner (text format); nil: none (tests).
	banner io.Writer
	// tp, when set, makes the spans instead of an OTLP exporter (tests).
	tp     trace.TracerProvider
	envErr error
}

func (o *opsConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.dataDir, "data-dir", envOr("A2AWEBCAP_DATA_DIR", ""), "the `directory` of the default store (a2awebcap.db), created when missing; empty: $XDG_DATA_HOME/a2awebcap, else ~/.local/share/a2awebcap; an explicit -db wins (A2AWEBCAP_DATA_DIR)")
	fs.StringVar(&o.logFormat, "log-format", envOr("A2AWEBCAP_LOG_FORMAT", "text"), "the log's `format`: text (a readable start banner, then key=value lines) or json (JSON lines; the banner is one line, msg \"serving\") (A2AWEBCAP_LOG_FORMAT)")
	logRequests, err := envBoolDefault("A2AWEBCAP_LOG_REQUESTS", true)
	if err != nil {
		o.envErr = err
	}
	fs.BoolVar(&o.logRequests, "log-requests", logRequests, "log every A2A call, on every binding: binding, method, principal, status, duration (A2AWEBCAP_LOG_REQUESTS)")
	fs.StringVar(&o.auditLog, "audit-log", envOr("A2AWEBCAP_AUDIT_LOG", ""), "append security events (failed logins, capability grants, approvals, revocations) to this `file` as JSON lines; empty: to the server's log, msg \"audit\" (A2AWEBCAP_AUDIT_LOG)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", envOr("A2AWEBCAP_METRICS_ADDR", ""), "serve /metrics (Prometheus) on this `address` only, to anyone reaching it (a port alone listens on 127.0.0.1); empty: on the main port, to anyone without authentication, else to -operators only (A2AWEBCAP_METRICS_ADDR)")
	fs.StringVar(&o.pprofAddr, "pprof-addr", envOr("A2AWEBCAP_PPROF_ADDR", ""), "serve Go's net/http/pprof on this `address` (a port alone listens on 127.0.0.1); empty: off (A2AWEBCAP_PPROF_ADDR)")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", envOr("OTEL_EXPORTER_OTLP_ENDPOINT", ""), "export OpenTelemetry traces over OTLP/HTTP to this `URL` (e.g. http://127.0.0.1:4318); empty: no export (OTEL_EXPORTER_OTLP_ENDPOINT)")
}

// check resolves the data directory (db is -db as given; "" asks for the default store) and
// returns the store to open.
func (o *opsConfig) check(db string) (string, error) {
	if o.envErr != nil {
		return "", o.envErr
	}
	switch o.logFormat {
	case "text", "json":
	default:
		return "", fmt.Errorf("-log-format: %q is not text or json", o.logFormat)
	}
	for _, a := range []*string{&o.metricsAddr, &o.pprofAddr} {
		*a = loopbackDefault(*a)
	}
	if db != "" {
		return db, nil
	}
	dir, err := dataDir(o.dataDir)
	if err != nil {
		return "", err
	}
	o.dataDir, o.makeDataDir = dir, true
	return filepath.Join(dir, "a2awebcap.db"), nil
}

// dataDir is the data directory: flag, else $XDG_DATA_HOME/a2awebcap, else
// ~/.local/share/a2awebcap.
func dataDir(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "a2awebcap"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: %w; set -data-dir or -db", err)
	}
	return filepath.Join(home, ".local", "share", "a2awebcap"), nil
}

// createDataDir makes the data directory when the default store lives there.
func (o *opsConfig) createDataDir() error {
	if !o.makeDataDir {
		return nil
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}

// loopbackDefault makes ":PORT" listen on 127.0.0.1.
func loopbackDefault(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// newLogger is the server's logger to w, in the configured format.
func (o *opsConfig) newLogger(w io.Writer, level slog.Level) *slog.Logger {
	ho := &slog.HandlerOptions{Level: level}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// envBoolDefault is envBool with a default for unset.
func envBoolDefault(key string, def bool) (bool, error) {
	if os.Getenv(key) == "" {
		return def, nil
	}
	return envBool(key)
}

// bannerInfo is what the start banner says.
type bannerInfo struct {
	base    string // scheme://host:port clients use
	grpc    string
	agents  []string // what runs: "a2awebcap (runtime)", …
	store   string
	metrics string
	auth    []string // scheme names; empty: none
	capnweb bool
	multi   []string // with -agents: their names
}

// writeBanner prints the banner for people.
func writeBanner(w io.Writer, b bannerInfo) {
	var sb strings.Builder
	line := func(k, v string) { fmt.Fprintf(&sb, "  %-11s %s\n", k, v) }
	sb.WriteString("a2awebcap serve: listening\n")
	line("web app", b.base+"/web/")
	ws := "ws" + strings.TrimPrefix(b.base, "http")
	if len(b.multi) == 0 {
		line("agent card", b.base+"/.well-known/agent-card.json")
		if b.capnweb {
			line("capnweb", ws+"/a2a/capnweb (WebSocket; HTTP batch: POST "+b.base+"/a2a/capnweb)")
		}
		line("JSON-RPC", b.base+"/a2a/jsonrpc")
		line("HTTP+JSON", b.base+"/a2a/rest")
	} else {
		for _, n := range b.multi {
			line("agent "+n, b.base+"/agents/"+n+"/.well-known/agent-card.json")
		}
	}
	if b.grpc != "" {
		line("gRPC", b.grpc)
	}
	for _, a := range b.agents {
		line("agent", a)
	}
	line("data", b.store)
	line("metrics", b.metrics)
	if len(b.auth) == 0 {
		line("auth", "none: anyone may call")
	} else {
		line("auth", strings.Join(b.auth, ", "))
	}
	_, _ = io.WriteString(w, sb.String())
}

// redactURL is u without user information and query, for the banner and logs.
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if at := strings.LastIndex(rest[:cmpIndex(rest, "/")], "@"); at >= 0 {
			u = u[:i+3] + rest[at+1:]
		}
	}
	return u
}

func cmpIndex(s, sub string) int {
	if i := strings.Index(s, sub); i >= 0 {
		return i
	}
	return len(s)
}

// announce says, once serve listens on addr, what it serves: the banner for people (text
// format) or one JSON log line (json format).
func (c *serveConfig) announce(log *slog.Logger, scheme, addr string, multi *hosting.Agents, schemes []auth.Scheme, hopts *binding.Options, metrics string) {
	base := strings.TrimSuffix(c.baseURL, "/")
	if base == "" {
		base = scheme + "://" + addr
	}
	if strings.HasPrefix(metrics, "/") {
		metrics = base + metrics
	}
	b := bannerInfo{base: base, grpc: c.grpcAddr, store: redactURL(c.db), capnweb: hopts.CapnwebPath != "-", metrics: metrics}
	if multi != nil {
		for _, a := range multi.List() {
			b.multi = append(b.multi, a.Name)
		}
		b.agents = []string{fmt.Sprintf("%d agents from %s", len(b.multi), c.agents.path)}
	} else {
		what := runtimeName(c.withDefaultName()) + " (" + c.agent
		if c.llmURL != "" {
			what += "; model " + c.llmModel + " at " + redactURL(c.llmURL)
		}
		b.agents = []string{what + ")"}
	}
	for _, s := range schemes {
		b.auth = append(b.auth, s.Name())
	}
	if c.ops.logFormat == "json" || c.ops.banner == nil {
		log.Info("serving", "web", base+"/web/", "card", base+"/.well-known/agent-card.json", "agents", b.multi,
			"agent", b.agents[0], "store", b.store, "grpc", c.grpcAddr, "auth", b.auth, "metrics", metrics)
		return
	}
	writeBanner(c.ops.banner, b)
}

// withDefaultName is c with the card's default name for the builtin and conformance agents.
func (c serveConfig) withDefaultName() serveConfig {
	switch {
	case c.name != "":
	case c.agent == "builtin":
		c.name = "a2awebcap"
	case c.agent == "conformance":
		c.name = "a2awebcap conformance agent"
	}
	return c
}

// observability is what serve's operator gets: the observer the bindings report to, the
// metrics registry behind /metrics, and what to close at the end.
type observability struct {
	obs     *telemetry.Observer
	reg     *prometheus.Registry
	closers []func()
}

func (ob *observability) close() {
	for i := len(ob.closers) - 1; i >= 0; i-- {
		ob.closers[i]()
	}
}

// observe makes the observer: request log to log (unless -log-requests=false), audit stream
// to -audit-log or log, metrics, and traces exported to -otlp-endpoint (or made by o.tp).
func (o *opsConfig) observe(log *slog.Logger) (*observability, error) {
	tp := o.tp
	ob := &observability{reg: prometheus.NewRegistry()}
	ob.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	topts := &telemetry.Options{Audit: log, Registerer: ob.reg, TracerProvider: tp}
	if o.logRequests {
		topts.Logger = log
	}
	if o.auditLog != "" {
		f, err := os.OpenFile(o.auditLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("-audit-log: %w", err)
		}
		ob.closers = append(ob.closers, func() { _ = f.Close() })
		topts.Audit = slog.New(slog.NewJSONHandler(f, nil))
	}
	// Package client injects the context's trace into the calls serve's agents make.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if tp == nil && o.otlpEndpoint != "" {
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(strings.TrimSuffix(o.otlpEndpoint, "/")+"/v1/traces"))
		if err != nil {
			ob.close()
			return nil, fmt.Errorf("-otlp-endpoint: %w", err)
		}
		name := cmp.Or(os.Getenv("OTEL_SERVICE_NAME"), "a2awebcap")
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))))
		ob.closers = append(ob.closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = sdk.Shutdown(ctx)
		})
		topts.TracerProvider = sdk
	}
	ob.obs = telemetry.New(topts)
	return ob, nil
}

// metricsHandler serves the registry; behind guard (nil: none), which authenticates as the
// bindings do (same login throttle), to operators only.
func (ob *observability) metricsHandler(guard *binding.ServiceGuard, operators []string) http.Handler {
	h := promhttp.HandlerFor(ob.reg, promhttp.HandlerOpts{})
	if guard == nil || !guard.Authenticated() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !guard.Allow(w, r) {
			return
		}
		u, err := guard.Authenticate(r.Context(), r.Header, r.RemoteAddr)
		switch {
		case err != nil:
			guard.WriteError(w, err)
		case u == nil:
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "credentials required", http.StatusUnauthorized)
		case !slices.Contains(operators, u.Name):
			http.Error(w, "only operators (-operators) may read the metrics", http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// serveAside serves h on addr (the metrics or pprof listener) until the returned function is
// called.
func serveAside(addr string, h http.Handler) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return func() { _ = srv.Close(); <-done }, nil
}

// pprofHandler is net/http/pprof's handlers, on a mux of their own.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// observedModel reports each call of the agent's model to the observer: duration, tokens, cost
// (with -prices) and outcome.
type observedModel struct {
	m      agent.Model
	name   string
	obs    *telemetry.Observer
	prices session.Prices
}

func (m observedModel) Complete(ctx context.Context, msgs []agent.ChatMessage, tools []agent.ToolSpec, onText func(string)) (agent.ChatMessage, error) {
	start := time.Now()
	ans, err := m.m.Complete(ctx, msgs, tools, onText)
	var in, out int64
	cost := -1.0
	if ans.Usage != nil {
		in, out = int64(ans.Usage.InputTokens), int64(ans.Usage.OutputTokens)
		if c, ok := m.prices.Cost(m.name, session.Usage{In: in, Out: out}); ok {
			cost = float64(c) / 1e6
		}
	}
	m.obs.ModelCall(m.name, time.Since(start), in, out, cost, err)
	return ans, err
}

// auditedCapabilities is a capability audit log that also copies its security records —
// installs, approvals and refusals, revocations, strategy changes, calls refused by their
// contract — to the operator's audit stream (without the call's arguments).
type auditedCapabilities struct {
	capability.Audit
	obs *telemetry.Observer
}

// auditCapabilities returns the audit log def would get (the store's, else one in memory),
// copying its security records to obs.
func auditCapabilities(store agent.Store, name string, obs *telemetry.Observer) capability.Audit {
	var a capability.Audit
	if as, ok := store.(interface{ Audit(string) capability.Audit }); ok {
		a = as.Audit(name)
	}
	if a == nil {
		a = capability.NewMemoryAudit(0)
	}
	if obs == nil {
		return a
	}
	return auditedCapabilities{Audit: a, obs: obs}
}

func (a auditedCapabilities) Append(ctx context.Context, r capability.Record) error {
	err := a.Audit.Append(ctx, r)
	switch r.Outcome {
	case capability.OutcomeOK, capability.OutcomeFailed, capability.OutcomeExhausted:
		return err // routine calls: the principal's own audit log has them
	}
	attrs := []slog.Attr{slog.String("principal", r.Principal), slog.String("capability", r.Capability), slog.String("outcome", string(r.Outcome))}
	for _, kv := range [][2]string{{"method", r.Method}, {"by", r.By}, {"pending", r.Pending}, {"reason", r.Reason}, {"session", r.Session}} {
		if kv[1] != "" {
			attrs = append(attrs, slog.String(kv[0], kv[1]))
		}
	}
	if r.Strategy.Kind != "" {
		attrs = append(attrs, slog.String("strategy", r.Strategy.String()))
	}
	a.obs.Audit("capability", attrs...)
	return err
}
