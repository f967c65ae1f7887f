// Package agentstest starts, for tests, a server hosting several agents of the runtime as
// `a2awebcap serve -agents` does (package hosting): one engine on a memory task store, every
// agent under /agents/NAME/ on one 127.0.0.1 port (JSON-RPC, HTTP+JSON, capnweb) and on one
// gRPC port by tenant.
package agentstest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// Options configure Start. Nil means defaults.
type Options struct {
	// Hosting configures the agents (their store, capabilities). Nil: defaults.
	Hosting *hosting.Options
	// HTTP and GRPC configure the bindings (authentication, limits). Nil: defaults.
	HTTP *binding.Options
	GRPC *binding.GRPCOptions
	// Store is the task store. Nil: a memory store.
	Store store.Store
	// Listener is the HTTP listener, for a test that must know the address before the agents
	// are made (an agent calling another of the same server). Nil: a new one on 127.0.0.1:0.
	Listener net.Listener
}

// Server is a running multi-agent server.
type Server struct {
	// URL is the HTTP origin: agent NAME is at URL + "/agents/NAME".
	URL      string
	GRPCAddr string
	Agents   *hosting.Agents
	Engine   *engine.Engine

	wg    sync.WaitGroup
	close func()
}

// AgentURL is the base URL of the agent named name (with its trailing slash).
func (s *Server) AgentURL(name string) string { return s.URL + "/agents/" + name + "/" }

// Start makes the agents of defs and serves them until the test ends.
func Start(t testing.TB, defs []*hosting.Definition, opts *Options) *Server {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	agents, err := hosting.New(defs, o.Hosting)
	if err != nil {
		t.Fatal(err)
	}
	st := o.Store
	if st == nil {
		st = memory.New()
	}
	s := &Server{Agents: agents}
	s.Engine = engine.New(agents.Executor(), st, &engine.Options{Logger: slog.New(slog.DiscardHandler)})
	glis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.GRPCAddr = glis.Addr().String()
	var gopts binding.GRPCOptions
	if o.GRPC != nil {
		gopts = *o.GRPC
	}
	gsrv := binding.NewAgentsGRPCServer(agents.Hosted(s.Engine, nil), &gopts)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); _ = gsrv.Serve(glis) }()
	hlis := o.Listener
	if hlis == nil {
		if hlis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	s.URL = "http://" + hlis.Addr().String()
	var hopts binding.Options
	if o.HTTP != nil {
		hopts = *o.HTTP
	}
	hopts.GRPCAddress = s.GRPCAddr
	handler := binding.NewAgentsHandler(agents.Hosted(s.Engine, nil), &hopts)
	hsrv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); _ = hsrv.Serve(hlis) }()
	s.close = func() {
		_ = handler.(io.Closer).Close()
		_ = hsrv.Close()
		gsrv.Stop()
		s.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Engine.Close(ctx)
		_ = agents.Close()
		_ = st.Close()
	}
	t.Cleanup(s.close)
	return s
}
