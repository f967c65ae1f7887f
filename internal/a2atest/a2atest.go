// Package a2atest starts real a2aWebCap servers for tests: the engine on a memory store behind
// every binding — JSON-RPC, HTTP+JSON and capnweb (WebSocket and HTTP batch) on one
// 127.0.0.1 port, gRPC on another — running an [Agent] the test steers. The client package,
// the CLI and the cross-binding behaviour suite share it.
//
//	srv := a2atest.Start(t, nil)
//	c, err := client.New(t.Context(), srv.URL, nil)
package a2atest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// Options configure Start. Nil means every default.
type Options struct {
	// Executor is the agent. Nil: a new *Agent, also in Server.Agent.
	Executor a2asrv.AgentExecutor
	// Card is the agent card; the bindings add their interfaces to it. Nil: Card().
	Card *a2a.AgentCard
	// HTTP configures the HTTP bindings; Start sets GRPCAddress. Nil: binding's defaults.
	HTTP *binding.Options
	// WrapHTTP, when set, wraps the HTTP handler (every binding but gRPC, and the card), for
	// example to check what clients send. Zero: none.
	WrapHTTP func(http.Handler) http.Handler
	// GRPC configures the gRPC binding; Start sets Card. Nil: binding's defaults.
	GRPC *binding.GRPCOptions
	// Engine configures the engine. Nil: defaults, logging discarded.
	Engine *engine.Options
	// Store keeps the tasks; the server closes it when it stops. Nil: a memory store.
	Store store.Store
	// Listener is the HTTP listener, for a test that restarts a server on the same address.
	// Nil: a new one on 127.0.0.1:0.
	Listener net.Listener
}

// Server is a running server. Test cleanup stops it.
type Server struct {
	// URL is the HTTP base URL (http://127.0.0.1:port): the agent card is at
	// URL + binding.WellKnownCardPath.
	URL string
	// GRPCAddr is the host:port of the gRPC binding.
	GRPCAddr string
	// Engine is the request handler behind every binding.
	Engine *engine.Engine
	// Agent is the agent, when Options.Executor was nil.
	Agent *Agent

	wg        sync.WaitGroup // the Serve goroutines
	close     func() error
	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	hijacked []net.Conn // WebSocket connections, closed or not
}

// Card returns the card Start serves by default: streaming, no push notifications, one skill.
func Card() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "a2atest",
		Description:        "the test agent of internal/a2atest",
		Version:            "1.0.0",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"test"}}},
	}
}

// Start starts a server on 127.0.0.1 (see New) and closes it in t.Cleanup.
func Start(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("a2atest: Server.Close() = %v", err)
		}
	})
	return s
}

// New starts a server on 127.0.0.1; Close stops it. Tests use Start; New is for examples
// and programs.
func New(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Server{}
	exec := o.Executor
	if exec == nil {
		s.Agent = NewAgent()
		exec = s.Agent
	}
	card := o.Card
	if card == nil {
		card = Card()
	}
	var eopts engine.Options
	if o.Engine != nil {
		eopts = *o.Engine
	}
	if eopts.Logger == nil {
		eopts.Logger = slog.New(slog.DiscardHandler)
	}
	st := o.Store
	if st == nil {
		st = memory.New()
	}
	s.Engine = engine.New(exec, st, &eopts)
	stopEngine := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := s.Engine.Close(ctx)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		return err
	}

	glis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = stopEngine()
		return nil, err
	}
	s.GRPCAddr = glis.Addr().String()
	var gopts binding.GRPCOptions
	if o.GRPC != nil {
		gopts = *o.GRPC
	}
	gopts.Card = card
	gsrv := binding.NewGRPCServer(s.Engine, &gopts)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = gsrv.Serve(glis)
	}()

	var hopts binding.Options
	if o.HTTP != nil {
		hopts = *o.HTTP
	}
	hopts.GRPCAddress = s.GRPCAddr
	hlis := o.Listener
	if hlis == nil {
		hlis, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		gsrv.Stop()
		s.wg.Wait()
		_ = stopEngine()
		return nil, err
	}
	s.URL = "http://" + hlis.Addr().String()
	if hopts.CardSigner != nil && hopts.BaseURL == "" { // a signed card needs a fixed origin
		hopts.BaseURL = s.URL
	}
	handler := binding.NewHTTPHandler(s.Engine, card, &hopts)
	var served http.Handler = handler
	if o.WrapHTTP != nil {
		served = o.WrapHTTP(handler)
	}
	hsrv := &http.Server{Handler: served, ReadHeaderTimeout: 10 * time.Second, ConnState: s.track}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = hsrv.Serve(hlis)
	}()

	s.close = func() error {
		_ = handler.(io.Closer).Close()
		_ = hsrv.Close()
		gsrv.Stop()
		s.wg.Wait()
		return stopEngine()
	}
	return s, nil
}

// Close stops the server: the capnweb sessions first (http.Server does not close hijacked
// connections), then the HTTP and gRPC servers, then the engine and its store. It is
// idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

// track keeps the set of hijacked connections (the WebSockets), which the server no longer
// tracks itself.
func (s *Server) track(c net.Conn, state http.ConnState) {
	if state != http.StateHijacked {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hijacked = append(s.hijacked, c)
}

// DropWebSockets closes the TCP connection under every WebSocket open on the HTTP server (the
// capnweb sessions), as a network failure would: no close frame is sent. Other connections
// and the server itself go on. It returns how many connections it closed.
func (s *Server) DropWebSockets() int {
	s.mu.Lock()
	conns := s.hijacked
	s.hijacked = nil
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return len(conns)
}
