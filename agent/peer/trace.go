package peer

// Trace context: a call made for a request that carried a W3C traceparent carries the same
// trace ID with a new parent span ID (and the request's tracestate), on every binding, as a
// service parameter of each request of the call. Where this process records the request's span
// (serve with tracing on), that span is the parent, so the callee's spans are its children.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2awebcap/a2awebcap/agent"
)

type traceKey struct{}

// withTrace returns ctx carrying the trace context the call's requests send: the turn's
// trace ID under a new span ID, or none when the turn's request had no valid traceparent.
func withTrace(ctx context.Context) context.Context {
	if sc := agent.TurnSpan(ctx); sc.IsValid() {
		// This process records the request's span (serve with tracing): the callee's span is
		// its child, a link a tracing backend can follow.
		tp := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
		return context.WithValue(ctx, traceKey{}, [2]string{tp, sc.TraceState().String()})
	}
	parent, state := agent.TurnTraceContext(ctx)
	child, ok := childTraceparent(parent)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, [2]string{child, state})
}

// childTraceparent is a traceparent (version 00) of the same trace as parent, with a new
// parent span ID and the same flags.
func childTraceparent(parent string) (string, bool) {
	f := strings.Split(strings.TrimSpace(parent), "-")
	if len(f) < 4 || len(f[0]) != 2 || f[0] == "ff" || len(f[1]) != 32 || len(f[2]) != 16 || len(f[3]) != 2 ||
		!isHex(f[0]+f[1]+f[2]+f[3]) || f[1] == strings.Repeat("0", 32) || f[2] == strings.Repeat("0", 16) {
		return "", false
	}
	var span [8]byte
	for span == [8]byte{} {
		_, _ = rand.Read(span[:])
	}
	return "00-" + strings.ToLower(f[1]) + "-" + hex.EncodeToString(span[:]) + "-" + strings.ToLower(f[3]), true
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

// traceInterceptor puts the call's trace context in every request's service parameters.
type traceInterceptor struct{}

func (traceInterceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	tc, ok := ctx.Value(traceKey{}).([2]string)
	if !ok {
		return ctx, nil, nil
	}
	if req.ServiceParams == nil {
		req.ServiceParams = a2aclient.ServiceParams{}
	}
	req.ServiceParams["traceparent"] = []string{tc[0]}
	if tc[1] != "" {
		req.ServiceParams["tracestate"] = []string{tc[1]}
	}
	return ctx, nil, nil
}

func (traceInterceptor) After(context.Context, *a2aclient.Response) error { return nil }
