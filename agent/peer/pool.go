package peer

// Connections to callees, kept per holder for a minute after a call so that the next call to
// the same agent does not dial again.
//
// Concurrency: pool.mu guards conns and each conn's users and idle timer; dialing, and closing
// a connection, happen outside it. A conn is shared by the calls in flight on it; the last one
// to let go arms its idle timer, which closes it unless a call took it again meanwhile.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"google.golang.org/grpc"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/netguard"
	"github.com/a2awebcap/a2awebcap/x402"
)

// Bounds of the connections and cards a holder keeps.
const (
	keepAlive = time.Minute
	maxCard   = 256 << 10
	cardTime  = 10 * time.Second
)

// conn is a client connected to one agent.
type conn struct {
	key     string
	cardURL string
	client  *client.Client
	users   int
	idle    *time.Timer
	closed  bool
}

// pool is one holder's connections.
type pool struct {
	s      *Settings
	guard  *netguard.Guard
	hc     *http.Client // dials through guard, follows no redirect
	tls    *tls.Config
	getenv func(string) string

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
}

func newPool(s *Settings, guard *netguard.Guard, tlsConf *tls.Config, getenv func(string) string) *pool {
	tr := guard.Transport()
	tr.TLSClientConfig = tlsConf
	tr.MaxIdleConnsPerHost = 4
	tr.IdleConnTimeout = keepAlive
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &pool{s: s, guard: guard, hc: hc, tls: tlsConf, getenv: getenv, conns: map[string]*conn{}}
}

// header is what to present to the agent whose card is at cardURL (secrets read now, from the
// environment).
func (p *pool) header(cardURL string) http.Header {
	// Every call speaks x402: a callee may ask for payment, which the payer pays or, without
	// one, the call reports (rather than the callee refusing a request that does not say so).
	h := http.Header{"A2A-Extensions": {x402.ExtensionURI}}
	c := p.s.credential(cardURL)
	if c == nil || c.Header == "" {
		return h
	}
	v := p.getenv(c.Env)
	if v == "" {
		return h
	}
	if c.Scheme != "" {
		v = c.Scheme + " " + v
	}
	h.Set(c.Header, v)
	return h
}

// get returns a connection to the agent whose card is at cardURL, checking the card's URL and
// the interface's against the call's contract.
func (p *pool) get(ctx context.Context, c *capability.Call, cardURL string) (*conn, error) {
	if err := c.Check(capability.Network, cardURL); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, capability.ErrRevoked
	}
	if cn := p.conns[cardURL]; cn != nil {
		cn.users++
		if cn.idle != nil {
			cn.idle.Stop()
			cn.idle = nil
		}
		p.mu.Unlock()
		if err := c.Check(capability.Network, checkURL(cn.client.Interface(), cn.client.Card())); err != nil {
			p.put(cn, false)
			return nil, err
		}
		return cn, nil
	}
	p.mu.Unlock()
	cl, err := p.dial(ctx, c, cardURL)
	if err != nil {
		return nil, err
	}
	cn := &conn{key: cardURL, cardURL: cardURL, client: cl, users: 1}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = cl.Destroy()
		return nil, capability.ErrRevoked
	}
	if old := p.conns[cardURL]; old == nil {
		p.conns[cardURL] = cn
	} else {
		cn.key = "" // another call dialed first: this one is the call's alone
	}
	p.mu.Unlock()
	return cn, nil
}

// put lets go of cn: broken drops it at once; else the last user arms its idle timer.
func (p *pool) put(cn *conn, broken bool) {
	p.mu.Lock()
	cn.users--
	drop := broken || cn.key == "" || p.closed
	if broken && cn.key != "" && p.conns[cn.key] == cn {
		delete(p.conns, cn.key)
		cn.key = ""
	}
	if cn.users > 0 {
		p.mu.Unlock()
		return
	}
	if drop {
		cn.closed = true
		p.mu.Unlock()
		_ = cn.client.Destroy()
		return
	}
	cn.idle = time.AfterFunc(keepAlive, func() {
		p.mu.Lock()
		if cn.users > 0 || cn.closed || p.conns[cn.key] != cn {
			p.mu.Unlock()
			return
		}
		delete(p.conns, cn.key)
		cn.closed = true
		p.mu.Unlock()
		_ = cn.client.Destroy()
	})
	p.mu.Unlock()
}

// close closes every idle connection and makes the rest close when their calls let go.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	var idle []*conn
	for k, cn := range p.conns {
		delete(p.conns, k)
		if cn.idle != nil {
			cn.idle.Stop()
		}
		if cn.users == 0 {
			cn.closed = true
			idle = append(idle, cn)
		} else {
			cn.key = ""
		}
	}
	p.mu.Unlock()
	for _, cn := range idle {
		_ = cn.client.Destroy()
	}
	p.hc.CloseIdleConnections()
}

// card fetches the agent card at cardURL through the guard.
func (p *pool) card(ctx context.Context, cardURL string) (*a2a.AgentCard, error) {
	ctx, cancel := context.WithTimeout(ctx, cardTime)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", capability.ErrBadArgs, err)
	}
	for k, v := range p.header(cardURL) {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("a2a: reading the card of %s: %w", cardURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("a2a: reading the card of %s: status %d", cardURL, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCard+1))
	if err != nil {
		return nil, fmt.Errorf("a2a: reading the card of %s: %w", cardURL, err)
	}
	if len(body) > maxCard {
		return nil, fmt.Errorf("a2a: the card of %s is larger than %d KiB", cardURL, maxCard>>10)
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("a2a: the card of %s is not an agent card: %v", cardURL, err)
	}
	return &card, nil
}

// dial reads the card at cardURL and connects over the best binding it lists among those the
// settings' contract allows; the interface chosen is checked against the call's contract.
func (p *pool) dial(ctx context.Context, c *capability.Call, cardURL string) (*client.Client, error) {
	card, err := p.card(ctx, cardURL)
	if err != nil {
		return nil, err
	}
	allowed := capability.Contract{Network: p.s.Allow}
	cp := *card
	cp.SupportedInterfaces = nil
	var refused *a2a.AgentInterface
	for _, in := range card.SupportedInterfaces {
		if in == nil {
			continue
		}
		if u := checkURL(*in, card); allowed.Allows(capability.Network, u) {
			if !strings.Contains(in.URL, "://") { // a bare gRPC host:port: say plain or TLS, as the whole card does
				x := *in
				x.URL = u
				in = &x
			}
			cp.SupportedInterfaces = append(cp.SupportedInterfaces, in)
		} else if refused == nil {
			refused = in
		}
	}
	if len(cp.SupportedInterfaces) == 0 {
		if refused != nil {
			return nil, c.Check(capability.Network, checkURL(*refused, card)) // recorded as a refusal
		}
		return nil, fmt.Errorf("a2a: the card of %s lists no interface", cardURL)
	}
	dialer := func(ctx context.Context, addr string) (net.Conn, error) { return p.guard.DialContext(ctx, "tcp", addr) }
	opts := &client.Options{Header: p.header(cardURL), HTTPClient: p.hc, Interceptors: []a2aclient.CallInterceptor{traceInterceptor{}},
		GRPCDialOptions: []grpc.DialOption{grpc.WithContextDialer(dialer)}}
	if cr := p.s.credential(cardURL); cr != nil && cr.CapnwebToken != nil && slices.ContainsFunc(cp.SupportedInterfaces, func(in *a2a.AgentInterface) bool {
		return in.ProtocolBinding == client.ProtocolCapnweb
	}) {
		// A saved session of someone who may call the agent: calls are made as that session,
		// over capnweb (the only binding that restores one).
		token := p.getenv(cr.CapnwebToken.Env)
		if token == "" {
			return nil, fmt.Errorf("a2a: the capnweb token for %s is not set (%s)", baseOf(cardURL), cr.CapnwebToken.Env)
		}
		opts.Binding, opts.Capnweb = client.BindingCapnweb, &client.CapnwebOptions{Restore: token}
	}
	cl, err := client.NewFromCard(ctx, &cp, opts)
	if err != nil {
		return nil, fmt.Errorf("a2a: connecting to %s: %w", baseOf(cardURL), err)
	}
	if err := c.Check(capability.Network, checkURL(cl.Interface(), cl.Card())); err != nil {
		_ = cl.Destroy()
		return nil, err
	}
	return cl, nil
}

// checkURL is the URL of an interface as the contract sees it: an http(s) URL (a WebSocket's
// ws(s) is its http(s); a gRPC host:port is http when the card's other interfaces are plain).
func checkURL(in a2a.AgentInterface, card *a2a.AgentCard) string {
	raw := in.URL
	switch {
	case strings.HasPrefix(raw, "ws://"):
		return "http://" + raw[len("ws://"):]
	case strings.HasPrefix(raw, "wss://"):
		return "https://" + raw[len("wss://"):]
	case strings.Contains(raw, "://"):
		return raw
	}
	plain := card != nil && slices.ContainsFunc(card.SupportedInterfaces, func(x *a2a.AgentInterface) bool {
		return x != nil && (strings.HasPrefix(x.URL, "http://") || strings.HasPrefix(x.URL, "ws://"))
	})
	if plain {
		return "http://" + raw
	}
	return "https://" + raw
}
