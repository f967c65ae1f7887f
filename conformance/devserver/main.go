// Command devserver serves one of a2aWebCap's agents with a2a-go's own default request handler
// and bindings, on loopback only, so that the A2A conformance kit can be pointed at it:
//
//	go run ./conformance/devserver                      # Conformance agent on 127.0.0.1:9999
//	conformance/run.sh /path/to/a2a-tck http://127.0.0.1:9999
//
// It exists to measure a2a-go (the reference the a2aWebCap engine is compared with), not to be
// deployed. It serves:
//
//	GET  /.well-known/agent-card.json   the agent card (declares the interfaces below)
//	POST /                              JSON-RPC binding
//	     /rest/...                      HTTP+JSON binding
//	     -grpc-addr (127.0.0.1:10000)   gRPC binding (empty -grpc-addr: none)
//
// With -user NAME, callers no authentication named get NAME (a2a-go's in-memory task store
// refuses ListTasks to nameless callers). With -push (the default) it delivers push notifications, but only to loopback webhooks (the
// kit's receiver runs on this machine); a config naming any other host is accepted and stored
// but never called.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"google.golang.org/grpc"

	"github.com/a2awebcap/a2awebcap/agents"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "HTTP listen address (JSON-RPC, HTTP+JSON, agent card); loopback only")
	grpcAddr := flag.String("grpc-addr", "127.0.0.1:10000", "gRPC listen address; empty for none; loopback only")
	agent := flag.String("agent", "conformance", "agent to serve: conformance or builtin")
	withPush := flag.Bool("push", true, "deliver push notifications (to loopback webhooks only)")
	user := flag.String("user", "", "name given to unauthenticated callers (a2a-go's in-memory store refuses ListTasks to nameless callers); empty: a2a-go's default")
	flag.Parse()

	if err := run(*addr, *grpcAddr, *agent, *withPush, *user); err != nil {
		log.Fatalf("devserver: %v", err)
	}
}

func run(addr, grpcAddr, agentName string, withPush bool, user string) error {
	for _, a := range []string{addr, grpcAddr} {
		if a != "" && !isLoopbackHostPort(a) {
			return fmt.Errorf("%s is not a loopback address: this development server listens on loopback only", a)
		}
	}

	var exec a2asrv.AgentExecutor
	var card *a2a.AgentCard
	base := "http://" + addr
	switch agentName {
	case "conformance":
		c := &agents.Conformance{}
		exec = c
		card = agents.Card("a2aWebCap conformance agent (a2a-go reference server)",
			"Plays the A2A TCK scenarios; served by a2a-go's default handler for comparison.", "", c.Skills()...)
	case "builtin":
		b := &agents.Builtin{}
		exec = b
		card = agents.Card("a2aWebCap built-in agent (a2a-go reference server)",
			"A small utility agent without a language model; served by a2a-go's default handler.", "", b.Skills()...)
	default:
		return fmt.Errorf("unknown agent %q (want conformance or builtin)", agentName)
	}
	card.SupportedInterfaces = []*a2a.AgentInterface{
		a2a.NewAgentInterface(base+"/", a2a.TransportProtocolJSONRPC),
		a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON),
	}
	if grpcAddr != "" {
		card.SupportedInterfaces = append(card.SupportedInterfaces, a2a.NewAgentInterface(grpcAddr, a2a.TransportProtocolGRPC))
	}
	card.Capabilities.PushNotifications = withPush

	opts := []a2asrv.RequestHandlerOption{a2asrv.WithCapabilityChecks(&card.Capabilities)}
	if withPush {
		sender := push.NewHTTPPushSender(&push.HTTPSenderConfig{Timeout: 5 * time.Second, AllowPrivateNetworks: true})
		opts = append(opts, a2asrv.WithPushNotifications(push.NewInMemoryStore(), loopbackOnly{sender}))
	}
	if user != "" {
		opts = append(opts, a2asrv.WithCallInterceptors(namedCaller{user}))
	}
	handler := a2asrv.NewHandler(exec, opts...)

	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	mux.Handle("/", a2asrv.NewJSONRPCHandler(handler))
	httpSrv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	errc := make(chan error, 2)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() { errc <- httpSrv.Serve(ln) }()

	var grpcSrv *grpc.Server
	if grpcAddr != "" {
		gln, err := net.Listen("tcp", grpcAddr)
		if err != nil {
			return err
		}
		grpcSrv = grpc.NewServer()
		a2agrpc.NewHandler(handler).RegisterWith(grpcSrv)
		go func() { errc <- grpcSrv.Serve(gln) }()
	}
	log.Printf("devserver: %s agent on %s (JSON-RPC /, HTTP+JSON /rest) and gRPC %q; push=%v user=%q",
		agentName, base, grpcAddr, withPush, user)

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if grpcSrv != nil {
		grpcSrv.Stop()
	}
	return httpSrv.Shutdown(shutdownCtx)
}

// namedCaller gives callers that no authentication named the name it holds.
type namedCaller struct{ name string }

func (n namedCaller) Before(ctx context.Context, callCtx *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	if callCtx.User == nil || callCtx.User.Name == "" {
		callCtx.User = &a2asrv.User{Name: n.name}
	}
	return ctx, nil, nil
}

func (namedCaller) After(context.Context, *a2asrv.CallContext, *a2asrv.Response) error { return nil }

// loopbackOnly delivers push notifications to loopback webhooks only and drops the others:
// the kit registers example.com URLs in some tests, and this server must not call out.
type loopbackOnly struct{ next push.Sender }

func (l loopbackOnly) SendPush(ctx context.Context, config *a2a.PushConfig, event a2a.Event) error {
	u, err := url.Parse(config.URL)
	if err != nil || !isLoopbackHost(u.Hostname()) {
		log.Printf("devserver: not delivering a push notification to non-loopback %q", config.URL)
		return nil
	}
	return l.next.SendPush(ctx, config, event)
}

func isLoopbackHostPort(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	return err == nil && isLoopbackHost(host)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
