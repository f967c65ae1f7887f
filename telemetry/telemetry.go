package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options configure an [Observer]; nil means all zero values.
type Options struct {
	// Logger receives the request log: one info record "request" per call. nil: no request
	// log.
	Logger *slog.Logger
	// Audit receives security events: info records "audit". nil: none.
	Audit *slog.Logger
	// Registerer is where the metrics are registered. nil: no metrics.
	Registerer prometheus.Registerer
	// TracerProvider makes the server spans. nil: no spans (the caller's trace context is still
	// carried into the call's context, so calls the server makes continue it).
	TracerProvider trace.TracerProvider
	// Propagator reads the caller's trace context. nil: W3C trace context and baggage.
	Propagator propagation.TextMapPropagator
	// AuthFailureInterval is how often one remote address's failed logins are logged: the
	// first, then at most one a interval with the count held back. Zero: a minute.
	AuthFailureInterval time.Duration
}

// Observer observes a server's calls. Make one with [New].
type Observer struct {
	log, audit *slog.Logger
	tracer     trace.Tracer
	prop       propagation.TextMapPropagator
	m          *metrics // nil: no metrics

	authEvery time.Duration
	authMu    sync.Mutex
	authSeen  map[string]*authLog // by remote address; bounded by maxAuthKeys
}

type authLog struct {
	last       time.Time
	suppressed int
}

// maxAuthKeys bounds the failed-login throttle's memory; past it, the oldest half is dropped.
const maxAuthKeys = 4096

// New returns an Observer. It panics if the metrics cannot be registered (registered twice).
func New(opts *Options) *Observer {
	var o Options
	if opts != nil {
		o = *opts
	}
	ob := &Observer{log: o.Logger, audit: o.Audit, prop: o.Propagator, authEvery: o.AuthFailureInterval, authSeen: map[string]*authLog{}}
	if ob.prop == nil {
		ob.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if ob.authEvery == 0 {
		ob.authEvery = time.Minute
	}
	if o.TracerProvider != nil {
		ob.tracer = o.TracerProvider.Tracer("github.com/a2awebcap/a2awebcap/telemetry")
	}
	if o.Registerer != nil {
		ob.m = newMetrics(o.Registerer)
	}
	return ob
}

// Call is one call being observed, from [Observer.Start] to [Call.End].
type Call struct {
	o                     *Observer
	binding, method, task string
	principal             string
	start                 time.Time
	span                  trace.Span
	stream                bool
	ended                 bool
}

// Start begins observing a call of method (an A2A or extension operation name) on binding ("jsonrpc",
// "rest", "grpc", "capnweb") by principal ("" for anonymous). carrier holds the call's service
// parameters (headers, metadata), from which the caller's trace context is read; nil: none.
// The returned context carries the call's span (or the caller's span context, without a
// TracerProvider).
func (o *Observer) Start(ctx context.Context, binding, method, principal string, carrier propagation.TextMapCarrier) (context.Context, *Call) {
	return o.start(ctx, time.Now(), binding, method, principal, carrier)
}

// Refused observes a call that the server refused before it reached the handler (an
// unsupported version, a failed login, a rate limit or quota, an oversized request…): one
// request-log line, metrics and a span, as for a call [Start] and [Call.End] observe, from
// start (when the call arrived) to now. method is "unknown" when the refusal came before the
// server could read it; principal is "" when it came before authentication.
func (o *Observer) Refused(ctx context.Context, binding, method, principal string, carrier propagation.TextMapCarrier, start time.Time, err error) {
	_, c := o.start(ctx, start, binding, method, principal, carrier)
	c.End(err)
}

func (o *Observer) start(ctx context.Context, start time.Time, binding, method, principal string, carrier propagation.TextMapCarrier) (context.Context, *Call) {
	if o == nil {
		return ctx, nil
	}
	if carrier != nil {
		ctx = o.prop.Extract(ctx, carrier)
	}
	c := &Call{o: o, binding: binding, method: method, principal: principal, start: start}
	if o.tracer != nil {
		ctx, c.span = o.tracer.Start(ctx, "a2a."+method, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
			trace.WithAttributes(attribute.String("a2a.binding", binding), attribute.String("a2a.method", method)))
	}
	return ctx, c
}

// Stream marks c as a stream: it counts as an open stream until it ends.
func (c *Call) Stream() {
	if c == nil || c.stream {
		return
	}
	c.stream = true
	if c.o.m != nil {
		c.o.m.streams.WithLabelValues(c.binding).Inc()
	}
}

// SetTask names the task the call concerns.
func (c *Call) SetTask(id string) {
	if c == nil || id == "" {
		return
	}
	c.task = id
	if c.span != nil {
		c.span.SetAttributes(attribute.String("a2a.task_id", id))
	}
}

// End ends the call with its outcome: nil is "ok", else the A2A error's reason. It is
// idempotent.
func (c *Call) End(err error) {
	if c == nil || c.ended {
		return
	}
	c.ended = true
	d := time.Since(c.start)
	status := Status(err)
	o := c.o
	if o.m != nil {
		o.m.requests.WithLabelValues(c.binding, c.method, status).Inc()
		o.m.duration.WithLabelValues(c.binding, c.method).Observe(d.Seconds())
		if c.stream {
			o.m.streams.WithLabelValues(c.binding).Dec()
		}
	}
	var traceID string
	if c.span != nil {
		c.span.SetAttributes(attribute.String("a2a.status", status))
		if err != nil {
			c.span.SetStatus(codes.Error, status)
		}
		traceID = c.span.SpanContext().TraceID().String()
		c.span.End()
	}
	if o.log != nil {
		attrs := []slog.Attr{slog.String("binding", c.binding), slog.String("method", c.method),
			slog.String("principal", principalOr(c.principal)), slog.String("status", status), slog.Duration("duration", d)}
		if c.task != "" {
			attrs = append(attrs, slog.String("task", c.task))
		}
		if traceID != "" {
			attrs = append(attrs, slog.String("trace_id", traceID))
		}
		o.log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
	}
}

func principalOr(p string) string {
	if p == "" {
		return "-"
	}
	return p
}

// Status is an outcome as the request log and metrics name it: "ok", the A2A error's reason
// (TASK_NOT_FOUND, UNAUTHENTICATED, …), CANCELED for a context ended by the caller, or
// INTERNAL.
func Status(err error) string {
	if err == nil {
		return "ok"
	}
	var r interface{ Reason() string }
	if errors.As(err, &r) && r.Reason() != "" {
		return r.Reason()
	}
	for _, e := range reasons {
		if errors.Is(err, e.err) {
			return e.reason
		}
	}
	if errors.Is(err, context.Canceled) {
		return "CANCELED"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// reasons are the A2A sentinels and their reasons (A2A 1.0 §5.4, as the bindings send them).
var reasons = []struct {
	err    error
	reason string
}{
	{a2a.ErrTaskNotFound, "TASK_NOT_FOUND"},
	{a2a.ErrTaskNotCancelable, "TASK_NOT_CANCELABLE"},
	{a2a.ErrPushNotificationNotSupported, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	{a2a.ErrUnsupportedOperation, "UNSUPPORTED_OPERATION"},
	{a2a.ErrUnsupportedContentType, "CONTENT_TYPE_NOT_SUPPORTED"},
	{a2a.ErrInvalidAgentResponse, "INVALID_AGENT_RESPONSE"},
	{a2a.ErrExtendedCardNotConfigured, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	{a2a.ErrExtensionSupportRequired, "EXTENSION_SUPPORT_REQUIRED"},
	{a2a.ErrVersionNotSupported, "VERSION_NOT_SUPPORTED"},
	{a2a.ErrUnauthenticated, "UNAUTHENTICATED"},
	{a2a.ErrUnauthorized, "UNAUTHORIZED"},
	{a2a.ErrInvalidParams, "INVALID_PARAMS"},
	{a2a.ErrInvalidRequest, "INVALID_REQUEST"},
	{a2a.ErrMethodNotFound, "METHOD_NOT_FOUND"},
	{a2a.ErrParseError, "PARSE_ERROR"},
	{a2a.ErrServerError, "SERVER_ERROR"},
	{a2a.ErrInternalError, "INTERNAL"},
}

// AuthFailure records a refused login on binding from remote (an address, "host:port"; the
// port is dropped), for the audit stream and the metrics. reason is the refusal's text as the
// caller saw it — never the credentials. A remote address's failures are logged at most once
// an interval (Options.AuthFailureInterval), the next line saying how many were held back.
func (o *Observer) AuthFailure(binding, remote, reason string) {
	if o == nil {
		return
	}
	if o.m != nil {
		o.m.authFailures.WithLabelValues(binding).Inc()
	}
	if o.audit == nil {
		return
	}
	host := remote
	if i := strings.LastIndexByte(remote, ':'); i > 0 && !strings.HasSuffix(remote, "]") {
		host = strings.Trim(remote[:i], "[]")
	}
	now := time.Now()
	o.authMu.Lock()
	l := o.authSeen[host]
	if l == nil {
		if len(o.authSeen) >= maxAuthKeys {
			o.pruneLocked(now)
		}
		l = &authLog{}
		o.authSeen[host] = l
	}
	if !l.last.IsZero() && now.Sub(l.last) < o.authEvery {
		l.suppressed++
		o.authMu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	o.authMu.Unlock()
	attrs := []slog.Attr{slog.String("event", "auth-failure"), slog.String("binding", binding), slog.String("remote", host), slog.String("reason", reason)}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	o.audit.LogAttrs(context.Background(), slog.LevelWarn, "audit", attrs...)
}

// pruneLocked drops the addresses not seen for an interval, or, if that frees too little, all.
func (o *Observer) pruneLocked(now time.Time) {
	for k, l := range o.authSeen {
		if now.Sub(l.last) >= o.authEvery {
			delete(o.authSeen, k)
		}
	}
	if len(o.authSeen) >= maxAuthKeys/2 {
		clear(o.authSeen)
	}
}

// Audit records a security event other than a failed login (a capability installed, approved,
// refused, revoked…) on the audit stream: event names it, attrs say what it concerns.
func (o *Observer) Audit(event string, attrs ...slog.Attr) {
	if o == nil || o.audit == nil {
		return
	}
	o.audit.LogAttrs(context.Background(), slog.LevelInfo, "audit", append([]slog.Attr{slog.String("event", event)}, attrs...)...)
}

// ModelCall records one call of a language model: its duration, the tokens it used as the
// endpoint reported them, its cost (negative: unknown) and its error.
func (o *Observer) ModelCall(model string, d time.Duration, in, out int64, cost float64, err error) {
	if o == nil || o.m == nil {
		return
	}
	status := "ok"
	if err != nil {
		status = "error"
	}
	o.m.modelRequests.WithLabelValues(model, status).Inc()
	o.m.modelDuration.WithLabelValues(model).Observe(d.Seconds())
	if in > 0 {
		o.m.modelTokens.WithLabelValues(model, "input").Add(float64(in))
	}
	if out > 0 {
		o.m.modelTokens.WithLabelValues(model, "output").Add(float64(out))
	}
	if cost > 0 {
		o.m.modelCost.WithLabelValues(model).Add(cost)
	}
}

// StoreOp records one operation of the task store.
func (o *Observer) StoreOp(op string, d time.Duration) {
	if o == nil || o.m == nil {
		return
	}
	o.m.store.WithLabelValues(op).Observe(d.Seconds())
}

// RunningTasks reports the number of running tasks as the a2awebcap_running_tasks gauge,
// asking n at each scrape.
func (o *Observer) RunningTasks(n func() int) {
	if o == nil || o.m == nil {
		return
	}
	o.m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "a2awebcap_running_tasks",
		Help: "Tasks whose executor runs in this process."}, func() float64 { return float64(n()) }))
}
