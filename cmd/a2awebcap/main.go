// Command a2awebcap runs and talks to A2A agents.
//
//	a2awebcap serve [flags]
//
// serve runs an A2A 1.0 server (and 0.3 with -serve-0.3): the engine on the embedded SQLite
// store (a2awebcap.db in the data directory, docs/operations.md), an agent of the agent runtime (rule-based, or LLM-backed with -llm-url;
// -agent picks the built-in utility, notes or conformance agents instead), JSON-RPC, HTTP+JSON/REST
// A2A over Cap'n Web (WebSocket and HTTP batch, docs/capnweb-binding.md) and the agent card
// on one port, and gRPC on its own port when asked.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/llm"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/push"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
	"github.com/a2awebcap/a2awebcap/telemetry"
	"github.com/a2awebcap/a2awebcap/web"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

const usage = `a2awebcap — a server, library and CLI for A2A agents, with a Cap'n Web binding.

Usage:
  a2awebcap serve [flags]    run an A2A server (see "a2awebcap serve -h")
  a2awebcap sign-capability -key FILE DIR   sign a capability package

` + verbsUsage + `
` + agentsUsage + `
` + sessionUsage + `
` + operatorUsage + `
` + memoryUsage + `
With no flags, serve listens on 127.0.0.1:8080, keeps its tasks in ~/.local/share/a2awebcap
(-data-dir; $XDG_DATA_HOME/a2awebcap when that is set), and runs
an agent of the agent runtime (send it "help"; with -llm-url and -llm-model it also answers
with that language model). The agent card is at /.well-known/agent-card.json, a browser page
at /web/. Try, in another terminal:
  a2awebcap stream http://127.0.0.1:8080 remember the sky is blue
`

func main() {
	sandbox.WorkerMain() // a Starlark worker this program's sandbox started: serves it and exits
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sign-capability":
		err = signCapability(os.Args[2:])
		if errors.Is(err, flag.ErrHelp) {
			return
		}
	case "card", "send", "stream", "chat", "get", "list", "cancel", "subscribe", "version":
		os.Exit(clientMain(os.Args[1], os.Args[2:])) // cli.go: exit codes tell outcomes apart
	case "agents":
		if err = runAgentsVerb(os.Args[2:], os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
			return
		}
	case "session":
		if err = runSessionVerb(os.Args[2:], os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
			return
		}
	case "operator":
		if err = runOperatorVerb(os.Args[2:], os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
			return
		}
	case "memory":
		if err = runMemoryVerb(os.Args[2:], os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
			return
		}
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "a2awebcap: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2awebcap:", err)
		os.Exit(exitCode(err))
	}
}

type serveConfig struct {
	addr, grpcAddr, db, agent, name, baseURL, logLevel, capnwebJS string
	drain                                                         time.Duration
	serve03, noPush                                               bool
	push                                                          pushConfig
	auth                                                          authConfig
	tls                                                           tlsConfig
	quota                                                         quotaConfig
	limits                                                        limitsConfig
	extendedCard                                                  extendedCardConfig
	capnweb                                                       capnwebConfig
	rateLimit                                                     float64
	cardKey                                                       string
	llmURL, llmModel                                              string
	runtime                                                       runtimeConfig
	reflect                                                       reflectConfig
	cluster                                                       clusterConfig
	caps                                                          capabilityConfig
	sessions                                                      sessionConfig
	agents                                                        agentsConfig
	registry                                                      registryConfig
	ops                                                           opsConfig
}

func serve(args []string) error {
	c, err := parseServe(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	c.ops.banner = os.Stderr
	log := c.ops.newLogger(os.Stderr, level)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, c, log)
}

// parseServe reads serve's flags, and the environment variables that set their defaults.
func parseServe(args []string) (serveConfig, error) {
	var c serveConfig
	serve03, err := envBool("A2AWEBCAP_SERVE_03")
	if err != nil {
		return c, err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: a2awebcap serve [flags]

Runs an A2A server. Clients find it through its agent card:
  http://ADDR/.well-known/agent-card.json
which lists the Cap'n Web (/a2a/capnweb: WebSocket and HTTP batch), JSON-RPC (/a2a/jsonrpc),
HTTP+JSON (/a2a/rest) and, with -grpc-addr, gRPC interfaces. Tasks survive restarts: they are kept in the -db store. It speaks A2A 1.0, and
with -serve-0.3 also A2A 0.3 to clients that declare it.

Flags (each can also be set by the environment variable shown):
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.addr, "addr", envOr("A2AWEBCAP_ADDR", "127.0.0.1:8080"), "HTTP `address` to listen on (A2AWEBCAP_ADDR)")
	fs.StringVar(&c.grpcAddr, "grpc-addr", envOr("A2AWEBCAP_GRPC_ADDR", ""), "also serve gRPC on this `address`; empty: no gRPC (A2AWEBCAP_GRPC_ADDR)")
	fs.StringVar(&c.db, "db", envOr("A2AWEBCAP_DB", ""), "task store: a SQLite file `path`, a postgres:// URL, or \"memory\" to keep nothing; empty: a2awebcap.db in the data directory (-data-dir) (A2AWEBCAP_DB)")
	fs.StringVar(&c.agent, "agent", envOr("A2AWEBCAP_AGENT", "runtime"), "the agent to run: runtime (the agent runtime's assistant: notes with provenance, echo, time; rule-based, and LLM-backed with -llm-url; its memory kept beside the tasks), builtin (a small utility: echo, time, count, wait, ask), notes (the runtime's note taker), or conformance (the A2A conformance kit's scenarios) (A2AWEBCAP_AGENT)")
	fs.StringVar(&c.llmURL, "llm-url", envOr("A2AWEBCAP_LLM_URL", ""), "with -agent runtime: the `URL` of an OpenAI-compatible API (e.g. http://127.0.0.1:11434/v1 for Ollama) whose model answers what the rules do not; the API key, if any, is read from the environment variable A2AWEBCAP_LLM_API_KEY only; empty: no model (A2AWEBCAP_LLM_URL)")
	fs.StringVar(&c.llmModel, "llm-model", envOr("A2AWEBCAP_LLM_MODEL", ""), "the `model` name -llm-url serves (A2AWEBCAP_LLM_MODEL)")
	fs.StringVar(&c.name, "name", envOr("A2AWEBCAP_NAME", ""), "the agent's name on its card; empty: a default for the agent (A2AWEBCAP_NAME)")
	fs.StringVar(&c.baseURL, "base-url", envOr("A2AWEBCAP_BASE_URL", ""), "public `URL` (scheme://host:port) for the card's interfaces, behind a proxy; empty: taken from each request (A2AWEBCAP_BASE_URL)")
	fs.StringVar(&c.logLevel, "log-level", envOr("A2AWEBCAP_LOG_LEVEL", "info"), "debug, info, warn or error (A2AWEBCAP_LOG_LEVEL)")
	fs.StringVar(&c.capnwebJS, "capnweb-js", envOr("A2AWEBCAP_CAPNWEB_JS", ""), "serve this `file` as the capnweb ES module the web page at /web/ loads; empty: the copy of npm capnweb@"+web.CapnwebVersion+" built into the binary (A2AWEBCAP_CAPNWEB_JS)")
	fs.StringVar(&c.cardKey, "card-key", envOr("A2AWEBCAP_CARD_KEY", ""), "sign the agent card with this PEM private key `file` (EC P-256, Ed25519 or RSA) and publish its public key at "+cardJWKSPath+"; needs -base-url (A2AWEBCAP_CARD_KEY)")
	fs.Float64Var(&c.rateLimit, "rate-limit", 0, "requests per second each principal (each IP address, for anonymous callers) may make, in bursts of twice that; 0: no limit")
	fs.DurationVar(&c.drain, "drain", 10*time.Second, "on shutdown, how long running tasks and open streams get to finish (new requests are answered 503, gRPC UNAVAILABLE, meanwhile); what still runs then is marked failed, or in a cluster handed over to another replica")
	fs.BoolVar(&c.noPush, "no-push", false, "do not offer push notifications (the card says pushNotifications: false)")
	c.push.flags(fs)
	fs.BoolVar(&c.serve03, "serve-0.3", serve03, "also serve A2A 0.3 clients (through a2a-go's compatibility layer) on the same endpoints, 0.3 HTTP+JSON under /a2a/rest/v1, and list the 0.3 interfaces on the card (A2AWEBCAP_SERVE_03=true)")
	c.auth.flags(fs)
	c.tls.flags(fs)
	c.quota.flags(fs)
	c.limits.flags(fs)
	c.runtime.flags(fs)
	c.reflect.flags(fs)
	c.caps.flags(fs)
	c.sessions.flags(fs)
	c.extendedCard.flags(fs)
	c.capnweb.flags(fs)
	c.cluster.flags(fs)
	c.agents.flags(fs)
	c.registry.flags(fs)
	c.ops.flags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.db, err = c.ops.check(c.db); err != nil {
		return c, err
	}
	if err := c.agents.check(fs); err != nil {
		return c, err
	}
	if err := c.cluster.check(c.db); err != nil {
		return c, err
	}
	if c.runtime.envErr != nil {
		return c, c.runtime.envErr
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	switch {
	case (c.llmURL == "") != (c.llmModel == ""):
		return c, errors.New("-llm-url and -llm-model go together")
	case c.llmURL != "" && c.agent != "runtime":
		return c, fmt.Errorf("-llm-url needs -agent runtime, not %q", c.agent)
	}
	if c.llmURL != "" {
		if u, err := url.Parse(c.llmURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("-llm-url: %q is not an http(s) URL", c.llmURL)
		}
	}
	if err := c.push.parse(); err != nil {
		return c, err
	}
	if err := c.registry.check(c.baseURL); err != nil {
		return c, err
	}
	c.caps.a2a.self = c.baseURL
	return c, nil
}

func run(ctx context.Context, c serveConfig, log *slog.Logger) error {
	if err := c.ops.createDataDir(); err != nil {
		return err
	}
	st, err := openStore(ctx, c.db)
	if err != nil {
		return err
	}
	defer st.Close()
	ob, err := c.ops.observe(log)
	if err != nil {
		return err
	}
	defer ob.close()
	clusterParts, closeCluster, err := c.cluster.open(ctx, c.db, log)
	if err != nil {
		return err
	}
	defer closeCluster() // after the engine's Close and the agent's, below
	c.cluster.ownership = clusterParts.ownership()

	var exec a2asrv.AgentExecutor
	var agentCaps binding.AgentCapabilities
	var sessions session.Service         // the runtime's sessions extension, on every binding
	var operator binding.OperatorService // its operator extension, when there are operators
	var memory binding.MemoryService     // what it remembers about each caller (docs/sessions.md)
	card := agentCard(c)
	var multi *hosting.Agents // with -agents: the agents, each with its own card
	var cards []*a2a.AgentCard
	switch {
	case c.agents.path != "":
		agents, closeAgents, err := hostedAgents(ctx, c, log, ob.obs)
		if err != nil {
			return err
		}
		defer closeAgents()
		multi, exec = agents, agents.Executor()
		for _, a := range agents.List() {
			cards = append(cards, a.Card)
		}
	default:
		cards = []*a2a.AgentCard{card}
	}
	switch {
	case multi != nil:
	case c.agent == "builtin":
		exec = &agents.Builtin{}
	case c.agent == "conformance":
		exec = &agents.Conformance{}
	case c.agent == "notes", c.agent == "runtime":
		h, closeAgent, err := runtimeHost(ctx, c, os.Getenv("A2AWEBCAP_LLM_API_KEY"), log, ob.obs)
		if err != nil {
			return err
		}
		defer closeAgent()
		exec, agentCaps = agent.Executor(h), h.CallerCapabilities
		sessions, memory = h.Sessions(), h.Memory()
		if ops := c.sessions.operatorNames(); len(ops) > 0 {
			operator = h.Operator(ops)
		}
	default:
		return fmt.Errorf("-agent: unknown agent %q (want runtime, builtin, notes or conformance)", c.agent)
	}

	// Push notifications: the store enqueues them with the events, the deliverer sends them
	// signed with the key kept in the store, and receivers verify with the JWKS we publish.
	// With -no-push the card does not offer them and the engine answers
	// PushNotificationNotSupported, as the spec requires of such an agent.
	for _, cd := range cards {
		cd.Capabilities.PushNotifications = !c.noPush
	}
	var (
		pushKey *push.Key
		pusher  engine.Pusher
	)
	if !c.noPush {
		if pushKey, err = push.LoadKey(ctx, st); err != nil {
			return fmt.Errorf("push signing key: %w", err)
		}
		d := push.New(st, pushKey, c.push.options(log))
		defer d.Close() // after the engine: deliveries its last writes enqueued are kept for the next start
		pusher = d
	}
	// No scheme configured: no authentication, and the card declares none.
	c.auth.mtls = c.tls.clientCA != ""
	c.auth.refusedTTL = c.limits.introspectRefusedTTL()
	schemes, err := c.auth.schemes(ctx)
	if err != nil {
		return err
	}
	var authenticate binding.Authenticator
	var loginThrottle *binding.LoginThrottle
	if len(schemes) > 0 {
		for _, cd := range cards {
			auth.Declare(cd, schemes...)
		}
		authenticate = auth.Any(schemes...)
		loginThrottle = c.limits.loginThrottle()
	}
	// Authenticated callers get the extended card (the public one is final by now).
	extended, err := c.extendedCard.extended(card, authenticate != nil)
	if err != nil {
		return err
	}
	if multi != nil {
		if extended, err = extendedCards(c, multi, authenticate != nil); err != nil {
			return err
		}
	}

	eng := engine.New(exec, telemetry.Store(st, ob.obs), &engine.Options{Logger: log, NoPushNotifications: c.noPush, Push: pusher, PushConfigLimits: c.push.limits(), ExtendedCard: extended,
		Cluster: clusterParts.engine})
	ob.obs.RunningTasks(eng.Running)
	if n, err := eng.Recover(ctx); err != nil {
		return fmt.Errorf("recovering tasks: %w", err)
	} else if n > 0 {
		log.Warn("tasks left running by a stopped process were taken over: resumed, settled or failed", "count", n)
	}

	var rateLimit *binding.RateLimit
	if c.rateLimit > 0 {
		rateLimit = &binding.RateLimit{PerSecond: c.rateLimit, Burst: int(math.Ceil(2 * c.rateLimit))}
	}
	quotas, err := c.quota.quotas()
	if err != nil {
		return err
	}
	clusterParts.share(quotas, rateLimit)
	tlsCfg, fingerprint, err := c.tls.config(c.addr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	guard := c.limits.guard() // over HTTP and gRPC together
	ln = guard.Listen(ln)
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
		ln = tls.NewListener(ln, tlsCfg)
		if fingerprint != "" {
			log.Warn("serving with a self-signed development certificate", "sha256", fingerprint)
		}
	}
	var cardSign func(*a2a.AgentCard) error
	var cardKeys http.Handler
	if c.cardKey != "" {
		if cardSign, cardKeys, err = cardSigner(c.cardKey, strings.TrimSuffix(c.baseURL, "/")); err != nil {
			return err
		}
	}
	hopts := &binding.Options{
		CardSigner: cardSign,
		BaseURL:    c.baseURL, GRPCAddress: c.grpcAddr, Serve03: c.serve03, Authenticate: authenticate, RateLimit: rateLimit, Quotas: quotas,
		Capabilities: capabilityStore(st), LoginThrottle: loginThrottle, AgentCapabilities: agentCaps, Sessions: sessions, Operator: operator, Memory: memory,
		Capnweb:   &capnweb.HandlerOptions{Session: capnweb.Options{Logger: log}},
		Telemetry: ob.obs,
	}
	if err := c.limits.apply(hopts, c.addr); err != nil {
		return err
	}
	if err := c.capnweb.apply(hopts); err != nil {
		return err
	}
	c.limits.capnweb(hopts)
	var a2aHTTP http.Handler
	if multi != nil {
		a2aHTTP = binding.NewAgentsHandler(multi.Hosted(eng, c.sessions.operatorNames()), hopts)
	} else {
		a2aHTTP = binding.NewHTTPHandler(eng, card, hopts)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", readyz(eng))
	metricsURL := "/metrics"
	if c.ops.metricsAddr == "" {
		mux.Handle("GET /metrics", ob.metricsHandler(binding.NewServiceGuard(hopts), c.sessions.operatorNames()))
		if authenticate != nil {
			metricsURL += " (operators only)"
		}
	} else {
		m := http.NewServeMux()
		m.Handle("GET /metrics", ob.metricsHandler(nil, nil))
		stopMetrics, err := serveAside(c.ops.metricsAddr, m)
		if err != nil {
			return fmt.Errorf("-metrics-addr: %w", err)
		}
		defer stopMetrics()
		metricsURL = "http://" + c.ops.metricsAddr + "/metrics"
	}
	if c.ops.pprofAddr != "" {
		stopPprof, err := serveAside(c.ops.pprofAddr, pprofHandler())
		if err != nil {
			return fmt.Errorf("-pprof-addr: %w", err)
		}
		defer stopPprof()
	}
	if pushKey != nil {
		mux.Handle("GET "+push.JWKSPath, pushKey)
	}
	if cardKeys != nil {
		mux.Handle("GET "+cardJWKSPath, cardKeys)
	}
	mux.Handle("/", a2aHTTP)
	regHandler, closeRegistry, err := c.registry.start(ctx, c.db, hopts, log)
	if err != nil {
		return err
	}
	defer closeRegistry()
	if regHandler != nil {
		mux.Handle("/registry/", regHandler)
	}
	serveWeb(mux, c.capnwebJS, multi != nil, log)
	var gate drainGate
	srv := c.limits.httpServer(gate.wrap(auth.Middleware(mux)), guard)
	// Shutdown does not close hijacked (WebSocket) connections: the capnweb binding does.
	srv.RegisterOnShutdown(func() { _ = a2aHTTP.(io.Closer).Close() })

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	regCtx, stopRegistering := context.WithCancel(ctx)
	defer c.registry.registerSelf(regCtx, selfURLs(c.baseURL, multi), log)() // waits for it, after stopRegistering
	defer stopRegistering()
	var gln net.Listener
	if c.grpcAddr != "" {
		gln, err = net.Listen("tcp", c.grpcAddr)
		if err != nil {
			return fmt.Errorf("-grpc-addr: %w", err)
		}
		gln = guard.Listen(gln)
		gopts := &binding.GRPCOptions{Card: card, Serve03: c.serve03, Authenticate: authenticate, RateLimit: rateLimit, Quotas: quotas,
			LoginThrottle: loginThrottle, Sessions: sessions, Operator: operator, Memory: memory,
			ServerOptions: append(gate.grpcOptions(), c.limits.grpcOptions()...), Telemetry: ob.obs}
		if tlsCfg != nil {
			gopts.ServerOptions = append(gopts.ServerOptions, grpc.Creds(credentials.NewTLS(tlsCfg)))
		}
		var gs *grpc.Server
		if multi != nil {
			gs = binding.NewAgentsGRPCServer(multi.Hosted(eng, c.sessions.operatorNames()), gopts)
		} else {
			gs = binding.NewGRPCServer(eng, gopts)
		}
		go func() { errc <- gs.Serve(gln) }()
		defer gs.Stop()
	}
	c.announce(log, scheme, ln.Addr().String(), multi, schemes, hopts, metricsURL)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain", c.drain)
	sctx, cancel := context.WithTimeout(context.Background(), c.drain)
	defer cancel()
	// New requests are refused at once (503, gRPC UNAVAILABLE; /readyz: draining), and new
	// tasks; the running tasks get the drain time to finish, their streams with them. Then the
	// listeners close, and the streams still open get what is left of the drain time. What
	// still runs then the engine stops: marks it failed, or in a cluster hands it over to a
	// peer (engine.Close).
	gate.start()
	if err := eng.Drain(sctx); err != nil {
		log.Warn("tasks still running at the end of the drain time are stopped", "err", err)
	}
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(sctx) }()
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if err := eng.Close(cctx); err != nil {
		log.Warn("engine did not stop in time", "err", err)
	}
	if err := <-shutdown; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func openStore(ctx context.Context, db string) (store.Store, error) {
	switch {
	case db == "memory":
		return memory.New(), nil
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return openPostgres(ctx, db)
	default:
		st, err := sqlite.Open(ctx, db, nil)
		if err != nil {
			return nil, fmt.Errorf("opening SQLite store %s: %w", db, err)
		}
		return st, nil
	}
}

func agentCard(c serveConfig) *a2a.AgentCard {
	switch c.agent {
	case "conformance":
		name := c.name
		if name == "" {
			name = "a2awebcap conformance agent"
		}
		return agents.Card(name, "Implements the A2A conformance kit's scenarios.", "", (&agents.Conformance{}).Skills()...)
	case "runtime":
		how := "It runs on its rules alone, with no language model."
		if c.llmURL != "" {
			how = "What its rules do not handle it answers with a language model, which may call its tools but never writes its memory."
		}
		return agents.Card(runtimeName(c), "An agent of the a2aWebCap runtime, driven by its own rules: "+
			`"remember SUBJECT is VALUE", "actually SUBJECT is VALUE", "what do you know about X", "forget SUBJECT", "echo TEXT", "time", "who are you", "help". `+how, "",
			a2a.AgentSkill{ID: "notes", Name: "Notes", Description: "Remembers what you tell it, with where it came from; corrects, recalls and forgets on request.", Tags: []string{"memory", "notes"}},
			a2a.AgentSkill{ID: "utility", Name: "Echo and time", Description: "Echoes text; tells the time (UTC).", Tags: []string{"utility"}, Examples: []string{"echo hello", "time"}})
	case "notes":
		return agents.Card(cmp.Or(c.name, "notes"), "A note-taking agent of the a2aWebCap runtime, driven by its own rules: "+
			`"remember SUBJECT is VALUE", "actually SUBJECT is VALUE", "what do you know about X", "forget SUBJECT", "who are you".`, "",
			a2a.AgentSkill{ID: "notes", Name: "Notes", Description: "Remembers what you tell it, with where it came from; corrects, recalls and forgets on request.", Tags: []string{"memory", "notes"}})
	default:
		name := c.name
		if name == "" {
			name = "a2awebcap"
		}
		return agents.Card(name, "A small utility agent that needs no LLM: send it \"help\".", "", (&agents.Builtin{}).Skills()...)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// envBool reads a boolean environment variable in one of strconv.ParseBool's forms; unset or
// empty is false.
func envBool(key string) (bool, error) {
	v := os.Getenv(key)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", key, v)
	}
	return b, nil
}

// runtimeName is the runtime agent's name: its card's name and the name its memory is kept
// under.
func runtimeName(c serveConfig) string {
	if c.agent == "notes" {
		return "notes"
	}
	return cmp.Or(c.name, "a2awebcap")
}

// runtimeHost serves an agent of the runtime — notes, or runtime (the Assistant policy, with a
// clock and, when c.llmURL is set, a language model called with apiKey) — one instance per
// principal, their memory beside the tasks (the -db SQLite file or PostgreSQL database, or
// memory).
func runtimeHost(ctx context.Context, c serveConfig, apiKey string, log *slog.Logger, obs *telemetry.Observer) (*agent.Host, func(), error) {
	store, closeStore, err := runtimeStore(ctx, c.db)
	if err != nil {
		return nil, nil, fmt.Errorf("the %s agent's memory: %w", c.agent, err)
	}
	scfg, err := c.sessions.config()
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	prices, err := c.sessions.prices()
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	def := &agent.Definition{Name: runtimeName(c), Policy: agent.Notes(), Sessions: scfg, ModelName: c.llmModel,
		Audit: auditCapabilities(store, runtimeName(c), obs)}
	if err := c.caps.apply(ctx, def); err != nil {
		closeStore()
		return nil, nil, err
	}
	if err := c.reflect.apply(def); err != nil {
		closeStore()
		return nil, nil, err
	}
	if c.agent == "runtime" {
		def.Policy = agent.Assistant()
		def.Tools = map[string]agent.Tool{"clock": agent.Clock(nil)}
		def.ToolHelp = map[string]string{"clock": "the current time in UTC (RFC 3339); its input is ignored"}
		if c.llmURL != "" {
			def.Model = observedModel{m: llm.New(c.llmURL, c.llmModel, &llm.Options{APIKey: apiKey, Logger: log}), name: c.llmModel, obs: obs, prices: prices}
		}
	}
	idle := c.runtime.idle
	if idle == 0 {
		idle = -1 // -idle-evict 0: never
	}
	h, err := agent.NewHost(def, &agent.HostOptions{Store: store, Limiter: c.runtime.limiter(), IdleTimeout: idle, Prices: prices,
		ParkTimeout: c.runtime.question, Ownership: c.cluster.ownership})
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	return h, func() { _ = h.Close(); c.caps.sandbox.close(); closeStore() }, nil
}
