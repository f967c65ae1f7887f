package main

import (
	"context"
	"net/http"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// drainGate refuses new requests while serve drains (docs/cluster.md, "Shutting down"): the
// listeners stay open, so that clients and load balancers get a clear answer — 503 on HTTP
// (every binding over it: JSON-RPC, HTTP+JSON, the capnweb WebSocket upgrade), UNAVAILABLE on
// gRPC — and /readyz says "draining", while the requests already running (the streams of the
// tasks that finish meanwhile) go on. Health checks and metrics still answer.
type drainGate struct{ on atomic.Bool }

// drainMessage is what a refused request is told.
const drainMessage = "draining: this server is shutting down; send the request again, to another replica"

// start makes the gate refuse new requests from now on.
func (g *drainGate) start() { g.on.Store(true) }

// refuses reports whether a request for path is refused now.
func (g *drainGate) refuses(path string) bool {
	return g.on.Load() && path != "/healthz" && path != "/readyz" && path != "/metrics"
}

// wrap refuses h's new requests while draining: 503, with Retry-After, and the connection
// closed after the answer.
func (g *drainGate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.refuses(r.URL.Path) {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			http.Error(w, drainMessage, http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// grpcOptions refuse new gRPC calls while draining, with UNAVAILABLE.
func (g *drainGate) grpcOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if g.on.Load() {
				return nil, status.Error(codes.Unavailable, drainMessage)
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if g.on.Load() {
				return status.Error(codes.Unavailable, drainMessage)
			}
			return h(srv, ss)
		}),
	}
}
