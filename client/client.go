package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Binding names a protocol binding, as Options.Binding and Client.Binding spell it.
type Binding string

// The bindings a Client speaks. New prefers them in this order; BindingCapnwebBatch is used only
// when Options.Binding asks for it.
const (
	BindingCapnweb      Binding = "capnweb"       // capnweb over one WebSocket
	BindingCapnwebBatch Binding = "capnweb-batch" // capnweb, one HTTP batch per call
	BindingJSONRPC      Binding = "jsonrpc"       // JSON-RPC 2.0 over HTTP, SSE streams
	BindingREST         Binding = "rest"          // HTTP+JSON
	BindingGRPC         Binding = "grpc"
)

// preferred is the order in which New tries the bindings a card lists.
var preferred = []Binding{BindingCapnweb, BindingJSONRPC, BindingREST, BindingGRPC}

// known lists every Binding, for Options.Binding's check.
var known = append(slices.Clone(preferred), BindingCapnwebBatch)

// Protocol returns the protocolBinding under which agent cards list b.
func (b Binding) Protocol() a2a.TransportProtocol {
	switch b {
	case BindingCapnweb, BindingCapnwebBatch:
		return ProtocolCapnweb
	case BindingJSONRPC:
		return a2a.TransportProtocolJSONRPC
	case BindingREST:
		return a2a.TransportProtocolHTTPJSON
	case BindingGRPC:
		return a2a.TransportProtocolGRPC
	}
	return ""
}

// Options configure New and NewFromCard. Nil means every default.
type Options struct {
	// Binding forces one binding; connecting fails if the card does not list it.
	// Zero: the first binding in the order capnweb, jsonrpc, rest, grpc that the card lists and
	// that connects.
	Binding Binding
	// Header is sent with every request of every binding: as HTTP headers (the card, JSON-RPC,
	// HTTP+JSON, the capnweb WebSocket upgrade and batch POSTs) and as gRPC metadata. Put
	// credentials here (Authorization, X-API-Key). Zero: none.
	Header http.Header
	// HTTPClient makes the HTTP requests of every binding but gRPC. Nil: a client of the
	// Client's own, without an overall timeout (a timeout would cut long streams; calls are
	// bounded by their contexts), whose idle connections Destroy closes.
	HTTPClient *http.Client
	// Capnweb tunes the capnweb transport (reconnection, limits). Its Batch, Header
	// and HTTPClient are set from the fields above. Nil: defaults.
	Capnweb *CapnwebOptions
	// GRPCDialOptions are appended to the client's own gRPC dial options: TLS credentials, or
	// none for an agent served over plain http (see New), and Header as metadata. Zero: none.
	GRPCDialOptions []grpc.DialOption
	// Config is a2a-go's client configuration (default push config, accepted output modes,
	// tenant propagation). Its PreferredTransports reorders the bindings when Binding is zero;
	// empty means capnweb, JSON-RPC, HTTP+JSON, gRPC. Zero: a2a-go's defaults.
	Config a2aclient.Config
	// Interceptors run around every call, as a2aclient.WithCallInterceptors. Zero: none.
	Interceptors []a2aclient.CallInterceptor
	// VerifyCard checks the agent card before the client connects: the card New read, or the
	// one given to NewFromCard. If it returns an error, no connection is made and New or
	// NewFromCard returns that error wrapped. auth.VerifyCard with the agent's trusted keys
	// checks the card's signatures. Zero: the card is not checked.
	VerifyCard func(card *a2a.AgentCard) error
}

// Client is an a2a-go client connected over the binding it chose. Its methods are
// a2aclient.Client's; Destroy closes the connection.
type Client struct {
	*a2aclient.Client
	binding Binding
	iface   a2a.AgentInterface
	card    *a2a.AgentCard
	// transport is the connected transport (a2aclient wraps it).
	transport a2aclient.Transport
	own       *http.Transport // the HTTP transport made for this client, when Options had none
	hc        *http.Client    // Options.HTTPClient with Options.Header: the extensions' HTTP calls
}

// Destroy closes the connection (and the idle HTTP connections of a client made without
// Options.HTTPClient). It is idempotent.
func (c *Client) Destroy() error {
	err := c.Client.Destroy()
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
	return err
}

// Binding returns the binding the client connected with.
func (c *Client) Binding() Binding { return c.binding }

// Interface returns the card's interface the client connected to.
func (c *Client) Interface() a2a.AgentInterface { return c.iface }

// Card returns the agent card the client was made from. Do not modify it.
func (c *Client) Card() *a2a.AgentCard { return c.card }

// New reads the agent card at agentURL — the agent's base URL, whose card is at
// /.well-known/agent-card.json, or the URL of a .json card — and returns a client connected
// over the best binding the card and the client share (see NewFromCard). opts may be nil.
func New(ctx context.Context, agentURL string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	own := o.ownHTTPClient()
	u, err := url.Parse(agentURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: agent URL %q: want an http or https URL", agentURL)
	}
	base, path := agentURL, ""
	if strings.HasSuffix(u.Path, ".json") {
		path = u.Path
		u.Path, u.RawPath, u.RawQuery = "", "", ""
		base = u.String()
	}
	var ropts []agentcard.ResolveOption
	if path != "" {
		ropts = append(ropts, agentcard.WithPath(path))
	}
	card, err := agentcard.NewResolver(withHeader(o.HTTPClient, o.Header)).Resolve(ctx, base, ropts...)
	if err != nil {
		closeIdle(own)
		return nil, fmt.Errorf("client: reading the agent card of %s: %w", agentURL, err)
	}
	return newFromCard(ctx, card, &o, own)
}

// NewFromCard returns a client for the agent the card describes, connected over the first
// binding in the order capnweb (WebSocket), JSON-RPC, HTTP+JSON, gRPC (or
// Options.Config.PreferredTransports) that the card lists and that connects — or over Options.Binding only. Interfaces of other A2A versions than 1.x are
// ignored. gRPC uses TLS unless its URL, or else every other interface of the card, is plain
// http. opts may be nil.
func NewFromCard(ctx context.Context, card *a2a.AgentCard, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	return newFromCard(ctx, card, &o, o.ownHTTPClient())
}

// newFromCard is NewFromCard with o.HTTPClient set; own is its transport when the client made
// it, to be closed with the client.
func newFromCard(ctx context.Context, card *a2a.AgentCard, o *Options, own *http.Transport) (*Client, error) {
	if o.VerifyCard != nil {
		if err := o.VerifyCard(card); err != nil {
			closeIdle(own)
			return nil, fmt.Errorf("client: agent card of %q refused: %w", card.Name, err)
		}
	}
	bindings := preferred
	if o.Binding != "" {
		if !slices.Contains(known, o.Binding) {
			closeIdle(own)
			return nil, fmt.Errorf("client: unknown binding %q (want one of %v)", o.Binding, known)
		}
		bindings = []Binding{o.Binding}
	}
	cfg := o.Config
	if o.Binding != "" || len(cfg.PreferredTransports) == 0 {
		cfg.PreferredTransports = nil
		for _, b := range bindings {
			cfg.PreferredTransports = append(cfg.PreferredTransports, b.Protocol())
		}
	}
	var ch chosen
	fopts := []a2aclient.FactoryOption{
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithConfig(cfg),
		a2aclient.WithCallInterceptors(append([]a2aclient.CallInterceptor{traceInterceptor{}}, o.Interceptors...)...),
	}
	for _, b := range bindings {
		fopts = append(fopts, a2aclient.WithTransport(b.Protocol(), ch.record(b, o.factory(b, card))))
	}
	c, err := a2aclient.NewFromCard(ctx, card, fopts...)
	if err != nil {
		closeIdle(own)
		return nil, fmt.Errorf("client: %w", err)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return &Client{Client: c, binding: ch.binding, iface: ch.iface, card: card, transport: ch.transport, own: own,
		hc: withHeader(o.HTTPClient, o.Header)}, nil
}

// chosen records which binding's factory connected: a2aclient tries them in order and keeps
// the first that succeeds.
type chosen struct {
	mu        sync.Mutex
	binding   Binding
	iface     a2a.AgentInterface
	transport a2aclient.Transport
}

func (ch *chosen) record(b Binding, f a2aclient.TransportFactory) a2aclient.TransportFactory {
	return a2aclient.TransportFactoryFn(func(ctx context.Context, card *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
		t, err := f.Create(ctx, card, iface)
		if err == nil {
			ch.mu.Lock()
			ch.binding, ch.iface, ch.transport = b, *iface, t
			ch.mu.Unlock()
		}
		return t, err
	})
}

// factory returns the transport factory of binding b.
func (o *Options) factory(b Binding, card *a2a.AgentCard) a2aclient.TransportFactory {
	hc := withHeader(o.HTTPClient, o.Header)
	switch b {
	case BindingCapnweb, BindingCapnwebBatch:
		var co CapnwebOptions
		if o.Capnweb != nil {
			co = *o.Capnweb
		}
		co.Batch = b == BindingCapnwebBatch
		co.Header = o.Header
		co.HTTPClient = o.HTTPClient
		return capnwebFactory(&co)
	case BindingJSONRPC:
		jc := *hc
		jc.Transport = sseErrors{base: transportOf(hc)}
		return a2aclient.TransportFactoryFn(func(_ context.Context, _ *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
			return a2aclient.NewJSONRPCTransport(iface.URL, &jc), nil
		})
	case BindingREST:
		return a2aclient.TransportFactoryFn(func(_ context.Context, _ *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
			u, err := url.Parse(iface.URL)
			if err != nil {
				return nil, fmt.Errorf("HTTP+JSON interface URL %q: %w", iface.URL, err)
			}
			return a2aclient.NewRESTTransport(u, hc), nil
		})
	}
	return a2aclient.TransportFactoryFn(func(_ context.Context, _ *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
		target, plain := grpcTarget(iface.URL, card)
		dopts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}))}
		if plain {
			dopts[0] = grpc.WithTransportCredentials(insecure.NewCredentials())
		}
		if kv := headerPairs(o.Header); len(kv) > 0 {
			dopts = append(dopts,
				grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					return invoker(metadata.AppendToOutgoingContext(ctx, kv...), method, req, reply, cc, opts...)
				}),
				grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
					return streamer(metadata.AppendToOutgoingContext(ctx, kv...), desc, cc, method, opts...)
				}))
		}
		conn, err := grpc.NewClient(target, append(dopts, o.GRPCDialOptions...)...)
		if err != nil {
			return nil, err
		}
		return grpcTransport{Transport: a2agrpc.NewGRPCTransport(conn), conn: conn}, nil
	})
}

// grpcTransport is a2a-go's gRPC transport with its connection, which the extensions' calls
// share.
type grpcTransport struct {
	a2aclient.Transport
	conn *grpc.ClientConn
}

// grpcTarget returns the dial target of a gRPC interface URL (host:port, or a URL whose scheme
// says whether it is plain), and whether to dial without TLS: for an http:// URL, or a bare
// host:port on a card whose other interfaces are all plain http.
func grpcTarget(raw string, card *a2a.AgentCard) (target string, plain bool) {
	if rest, ok := strings.CutPrefix(raw, "http://"); ok {
		return rest, true
	}
	if rest, ok := strings.CutPrefix(raw, "https://"); ok {
		return rest, false
	}
	plain, found := true, false
	for _, in := range card.SupportedInterfaces {
		if in == nil {
			continue
		}
		if u, err := url.Parse(in.URL); err == nil && u.Host != "" {
			found = true
			plain = plain && (u.Scheme == "http" || u.Scheme == "ws")
		}
	}
	return raw, plain && found
}

// ownHTTPClient sets o.HTTPClient, when nil, to a client of its own without an overall
// timeout, and returns that client's transport.
func (o *Options) ownHTTPClient() *http.Transport {
	if o.HTTPClient != nil {
		return nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	o.HTTPClient = &http.Client{Transport: tr}
	return tr
}

func closeIdle(tr *http.Transport) {
	if tr != nil {
		tr.CloseIdleConnections()
	}
}

// withHeader returns a client that adds h to every request that does not set those names.
func withHeader(c *http.Client, h http.Header) *http.Client {
	if len(h) == 0 {
		return c
	}
	cp := *c
	cp.Transport = headerTransport{base: transportOf(c), header: h.Clone()}
	return &cp
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.header {
		if _, ok := r.Header[http.CanonicalHeaderKey(k)]; !ok {
			r.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	return t.base.RoundTrip(r)
}

// sseErrors turns a JSON-RPC error that a server sends as a plain JSON body in answer to a
// streaming request (a2aWebCap's binding does, for a stream that fails before its first event)
// into the one SSE event a2a-go's JSON-RPC client reads; without it that client sees an empty
// stream and no error.
type sseErrors struct{ base http.RoundTripper }

// maxErrorBody bounds the JSON body sseErrors rewrites.
const maxErrorBody = 1 << 20

func (t sseErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || r.Header.Get("Accept") != "text/event-stream" || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return nil, fmt.Errorf("JSON-RPC stream answered with invalid JSON: %w", err)
	}
	sse := append(append([]byte("data: "), compact.Bytes()...), "\n\n"...)
	resp.Body = io.NopCloser(bytes.NewReader(sse))
	resp.ContentLength = int64(len(sse))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.Header.Del("Content-Length")
	return resp, nil
}
