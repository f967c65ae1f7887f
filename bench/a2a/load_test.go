package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// testContenders serves ours-memory's stack (engine, memory store, echoExecutor,
// binding.NewHTTPHandler) on an httptest server and returns it as the JSON-RPC contender and the
// two capnweb ones.
func testContenders(t *testing.T) []*contender {
	t.Helper()
	st := memory.New()
	eng := engine.New(echoExecutor{}, st, &engine.Options{Logger: slog.New(slog.DiscardHandler), NoPushNotifications: true})
	ts := httptest.NewServer(binding.NewHTTPHandler(eng, benchCard(), nil))
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eng.Close(ctx)
		st.Close()
	})
	srv := &server{url: ts.URL + jsonrpcPath, wsURL: "ws" + strings.TrimPrefix(ts.URL, "http") + binding.DefaultCapnwebPath}
	return []*contender{{name: "ours-memory", srv: srv}, {name: "capnweb", srv: srv, via: viaCapnweb}, {name: "capnweb-rs", srv: srv, via: viaCapnwebRS}}
}

// TestOps runs every call function of the load client once against each binding, with its
// checks: the harness measures only what passes them.
func TestOps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	hc := newHTTPClient()
	t.Cleanup(hc.CloseIdleConnections)
	for _, c := range testContenders(t) {
		t.Run(c.name, func(t *testing.T) {
			if err := verifyContender(ctx, c, hc); err != nil {
				t.Fatalf("verifyContender() = %v", err)
			}
			type op struct {
				name       string
				f          func(main *capnweb.Stub) callFunc // capnweb
				jsonrpc    callFunc
				wantEvents int
			}
			ops := []op{
				{"send reply", func(m *capnweb.Stub) callFunc { return capnwebSendOp(m, "reply") }, sendOp(hc, c.srv.url, "reply"), 1},
				{"send task", func(m *capnweb.Stub) callFunc { return capnwebSendOp(m, "task") }, sendOp(hc, c.srv.url, "task"), 1},
				{"stream", func(m *capnweb.Stub) callFunc { return capnwebStreamOp(m, "stream", 5, c.via == viaCapnwebRS) }, streamOp(hc, c.srv.url, "stream", 5), 7},
				{"burst", func(m *capnweb.Stub) callFunc { return capnwebStreamOp(m, "burst", 5, c.via == viaCapnwebRS) }, streamOp(hc, c.srv.url, "burst", 5), 7},
				{"dep pipelined", func(m *capnweb.Stub) callFunc { return capnwebDepOp(m, true) }, depOp(hc, c.srv.url), 1},
				{"dep awaited", func(m *capnweb.Stub) callFunc { return capnwebDepOp(m, false) }, depOp(hc, c.srv.url), 1},
			}
			for _, o := range ops {
				f, cleanup := o.jsonrpc, func() {}
				if c.via != viaJSONRPC {
					var err error
					if f, cleanup, err = capnwebSetup(ctx, c, o.f); err != nil {
						t.Fatal(err)
					}
				}
				for range 2 {
					n, ttfe, err := f(ctx, &worker{})
					if err != nil || n != o.wantEvents {
						t.Errorf("%s: %d events, %v; want %d events", o.name, n, err, o.wantEvents)
					}
					if o.wantEvents > 1 && ttfe <= 0 {
						t.Errorf("%s: no time to first event", o.name)
					}
				}
				cleanup()
			}
		})
	}
}
