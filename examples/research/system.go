package main

// The system: the library site, and one server that hosts both agents (package hosting) on one
// engine, an agent registry beside them (package registry), at which the researcher registers
// itself, and an x402 facilitator through which research is paid (pay.go). Everything listens
// on 127.0.0.1.

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/netguard"
	"github.com/a2awebcap/a2awebcap/registry"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// The addresses the definitions in agents/ name: the server's and the library's. The example
// listens there when it can; when it listens elsewhere (a port taken, a test), it rewrites
// them in the definitions it reads.
const (
	DefaultServerAddr  = "127.0.0.1:8390"
	DefaultLibraryAddr = "127.0.0.1:8391"
)

//go:embed agents/*.json
var definitions embed.FS

// Options configure Start. Zero values mean the defaults each field documents.
type Options struct {
	// ServerAddr and LibraryAddr are where to listen: "" means the defaults above, and if
	// such a default is taken, any free port of 127.0.0.1. ("127.0.0.1:0" is any free port.)
	ServerAddr, LibraryAddr string
	// Logger receives the server's logs. Nil: discarded.
	Logger *slog.Logger
	// Getenv reads the environment (the writer's key, WriterKeyEnv). Nil: os.Getenv.
	Getenv func(string) string
}

// System is the example running.
type System struct {
	// URL is the server's origin: agent NAME is at URL/agents/NAME/, the registry at
	// URL/registry/agents.
	URL string
	// Library is the library site's origin.
	Library string
	// Agents are the hosted agents.
	Agents *hosting.Agents
	// Facilitator is the x402 facilitator research is paid through (served at URL/x402), its
	// ledger the accounts of the researcher (Researcher), the writer (Writer) and the user (User).
	Facilitator              *x402.LocalFacilitator
	Researcher, Writer, User evm.Address

	wallets *wallets

	closeOnce sync.Once
	closers   []func() // run in reverse order
}

// AgentURL is the base URL of the agent named name, with its final slash.
func (s *System) AgentURL(name string) string { return s.URL + binding.AgentsPath + name + "/" }

// Close stops everything Start started, the last started first. It is idempotent.
func (s *System) Close() {
	s.closeOnce.Do(func() {
		for i := len(s.closers) - 1; i >= 0; i-- {
			s.closers[i]()
		}
	})
}

// loopback is what the example's fetches, registry checks and agent calls may reach although
// it is not public: this host. (By default all three dial public addresses only.)
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// Start starts the library site, the server with the registry and both agents, and registers
// the researcher with the registry. On error, what it started is stopped.
func Start(ctx context.Context, o Options) (sys *System, err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &System{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	libLis, err := listen(o.LibraryAddr, DefaultLibraryAddr)
	if err != nil {
		return nil, fmt.Errorf("library: %w", err)
	}
	s.Library = "http://" + libLis.Addr().String()
	s.serve(libLis, libraryHandler())
	srvLis, err := listen(o.ServerAddr, DefaultServerAddr)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.URL = "http://" + srvLis.Addr().String()

	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if s.wallets, err = newWallets(getenv); err != nil {
		return nil, err
	}
	s.Writer, s.User = s.wallets.writer.Address(), s.wallets.user.Address()
	s.Facilitator = x402.NewLocalFacilitator(&x402.LocalOptions{Assets: []x402.Asset{Asset}, Ledger: true})
	s.Facilitator.Fund(Asset, s.Writer, funds)
	s.Facilitator.Fund(Asset, s.User, funds)

	defs, err := s.definitions()
	if err != nil {
		return nil, err
	}
	guard := netguard.New(&netguard.Options{Allow: loopback})
	for _, d := range defs {
		if d.Payments != nil {
			if s.Researcher, err = evm.ParseAddress(d.Payments.PayTo); err != nil {
				return nil, err
			}
		}
	}
	// The researcher's definition prices its tasks and names no facilitator: the server's,
	// which the example serves at /x402, as serve -x402-facilitator names one.
	hopts := &hosting.Options{FetchOptions: &capability.FetchOptions{Dial: guard.DialContext, Timeout: 30 * time.Second},
		Facilitator: s.URL + "/x402"}
	configurePeers(hopts, s, func(name string) string {
		if name == WriterKeyEnv {
			return s.wallets.writerHex
		}
		return getenv(name)
	})
	agents, err := hosting.New(defs, hopts)
	if err != nil {
		return nil, err
	}
	s.Agents = agents
	s.closers = append(s.closers, func() { _ = agents.Close() })

	// The researcher's tasks go through the merchant hosting made of its payments, which asks
	// for the payment, has the facilitator verify and settle it, and only then lets it work.
	st := memory.New()
	eng := engine.New(agents.Executor(), st, &engine.Options{Logger: log})
	s.closers = append(s.closers, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Close(cctx)
		_ = st.Close()
	})

	rst, err := registry.OpenSQLite(ctx, ":memory:")
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	reg := registry.New(rst, &registry.Options{Guard: guard, Logger: log})
	regHandler := reg.Handler(nil)
	s.closers = append(s.closers, func() {
		_ = regHandler.(interface{ Close() error }).Close()
		_ = reg.Close()
		_ = rst.Close()
	})

	agentsHandler := binding.NewAgentsHandler(agents.Hosted(eng, nil), &binding.Options{BaseURL: s.URL})
	s.closers = append(s.closers, func() { _ = agentsHandler.(interface{ Close() error }).Close() })
	mux := http.NewServeMux()
	mux.Handle("/registry/", regHandler)
	mux.Handle("/x402/", http.StripPrefix("/x402", s.Facilitator))
	mux.Handle("/", agentsHandler)
	s.serve(srvLis, mux)

	// The researcher lists itself, as serve -register-with does: the registry fetches its
	// card from its URL, and the writer finds it there by skill.
	if _, err := registry.NewClient(s.URL, nil).Register(ctx, s.AgentURL("researcher")); err != nil {
		return nil, fmt.Errorf("registering the researcher: %w", err)
	}
	return s, nil
}

// definitions reads agents/*.json, the addresses they name rewritten to where the example
// listens.
func (s *System) definitions() ([]*hosting.Definition, error) {
	names, err := fs.Glob(definitions, "agents/*.json")
	if err != nil {
		return nil, err
	}
	var defs []*hosting.Definition
	for _, name := range names {
		b, err := definitions.ReadFile(name)
		if err != nil {
			return nil, err
		}
		b = bytes.ReplaceAll(b, []byte("http://"+DefaultServerAddr), []byte(s.URL))
		b = bytes.ReplaceAll(b, []byte("http://"+DefaultLibraryAddr), []byte(s.Library))
		d, err := hosting.ParseDefinitions(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(name), err)
		}
		defs = append(defs, d...)
	}
	return defs, nil
}

// serve serves h on l until Close.
func (s *System) serve(l net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	s.closers = append(s.closers, func() {
		_ = srv.Close()
		<-done
	})
}

// listen listens on addr; with addr "", on def, or if def is taken, on any free port.
func listen(addr, def string) (net.Listener, error) {
	if addr != "" {
		return net.Listen("tcp", addr)
	}
	l, err := net.Listen("tcp", def)
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, err
	}
	return net.Listen("tcp", "127.0.0.1:0")
}
