package client

// Trace context: every call carries the caller's span (the context's) as W3C traceparent and
// tracestate service parameters — HTTP headers on JSON-RPC and HTTP+JSON, gRPC metadata, the
// capnweb call's params argument — so a server that reads them (serve does, on every binding)
// continues the trace, and one agent calling another makes one trace. The propagator is OTel's
// global one (otel.SetTextMapPropagator; serve sets W3C trace context and baggage); with
// OTel's default, nothing is added.

import (
	"context"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"go.opentelemetry.io/otel"
)

// traceInterceptor injects the context's trace into each call's service parameters.
type traceInterceptor struct {
	a2aclient.PassthroughInterceptor
}

func (traceInterceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	if req.ServiceParams == nil {
		req.ServiceParams = a2aclient.ServiceParams{}
	}
	otel.GetTextMapPropagator().Inject(ctx, paramsCarrier(req.ServiceParams))
	return ctx, nil, nil
}

// paramsCarrier is service parameters as an OTel carrier (keys lower-case, as a2aclient keeps
// them).
type paramsCarrier a2aclient.ServiceParams

func (c paramsCarrier) Get(key string) string {
	if vs := c[strings.ToLower(key)]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func (c paramsCarrier) Set(key, value string) { c[strings.ToLower(key)] = []string{value} }

func (c paramsCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
