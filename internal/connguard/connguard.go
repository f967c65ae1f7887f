// Package connguard keeps idle and slow peers from starving a server of connections: it bounds
// the connections of its listeners (in all, and per source address), makes room for a new one
// by closing an idle one when the bound is reached, bounds how long a write may stall, and how
// long a request body may take to arrive.
//
//	g := &connguard.Guard{Max: 4096, PerAddress: 256, WriteTimeout: 30 * time.Second}
//	srv := &http.Server{Handler: connguard.BodyTimeout(h, 30*time.Second),
//		ConnState: g.ConnState, ConnContext: connguard.ConnContext}
//	srv.Serve(g.Listen(ln))
//
// Concurrency model. A Guard is shared by its listeners' Accept loops, the connections'
// goroutines (Close, Write) and http.Server's ConnState hook. Guard.mu guards the table of
// live connections and the counts per address; it is held for map operations only, never
// while a connection is closed or written. Each conn's evictable time is an atomic, set by
// ConnState (HTTP keep-alive idle, a new connection) or by whoever owns a hijacked connection
// (SetEvictable), and read by Accept when it must make room.
package connguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultGrace is how long a connection must have been idle before it may be closed to make
// room, when Guard.Grace is zero: a client's next request right after the last is not cut.
const DefaultGrace = time.Second

// Guard bounds connections. Give its Listen the listeners it guards (several may share one
// Guard, and so its Max), and, for an http.Server, ConnState and ConnContext. The zero value
// bounds nothing. A Guard must not be copied after first use.
type Guard struct {
	// Max bounds the connections open at once over all of the guard's listeners. When a new
	// one would exceed it, the connection idle longest (past Grace) is closed to make room:
	// an HTTP connection between requests or that has sent no request yet (ConnState tells
	// the guard), or a hijacked one whose owner lets it be (SetEvictor: an unauthenticated
	// WebSocket); if none is, the new connection is closed at once. Connections of a server
	// that does not report ConnState (gRPC) count, but are never closed to make room.
	// Zero: no bound.
	Max int
	// PerAddress bounds the connections of one source address (an IPv4 address, an IPv6 /64);
	// past it a new connection is closed at once. Zero: no bound.
	PerAddress int
	// WriteTimeout bounds how long one write may wait for the peer to take the bytes (a peer
	// that stops reading): the connection's write deadline is kept between half of it and it
	// from now while writes go on. It applies to everything written on the connection: HTTP
	// responses, event streams, WebSocket messages. Zero: none.
	WriteTimeout time.Duration
	// Grace is how long a connection must have been idle to be closed to make room. Zero:
	// DefaultGrace.
	Grace time.Duration

	mu     sync.Mutex
	conns  map[*Conn]struct{}
	byAddr map[string]int

	refused, evicted atomic.Int64
}

// Stats counts what a Guard did, for tests and monitoring.
type Stats struct {
	Open    int   // connections open now
	Refused int64 // connections closed on arrival: over PerAddress, or over Max with none to evict
	Evicted int64 // idle connections closed to make room for a new one
}

// Stats returns the guard's counts.
func (g *Guard) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Open: len(g.conns), Refused: g.refused.Load(), Evicted: g.evicted.Load()}
}

// Listen returns ln with the guard's bounds applied to the connections it accepts.
func (g *Guard) Listen(ln net.Listener) net.Listener { return &listener{Listener: ln, g: g} }

type listener struct {
	net.Listener
	g *Guard
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.g.admit(c); gc != nil {
			return gc, nil
		}
	}
}

// addrKey is the count key of a remote address: the IP, or its /64 for IPv6.
func addrKey(a net.Addr) string {
	var ip netip.Addr
	if tcp, ok := a.(*net.TCPAddr); ok {
		ip, _ = netip.AddrFromSlice(tcp.IP)
	} else if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		ip = ap.Addr()
	}
	if !ip.IsValid() {
		return a.String()
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// admit takes c in, or closes it (returning nil) when it may not be. To make room under Max it
// closes the connection idle longest.
func (g *Guard) admit(c net.Conn) *Conn {
	key := addrKey(c.RemoteAddr())
	gc := &Conn{Conn: c, g: g, key: key} // evictable once ConnState says StateNew
	var evict *Conn
	g.mu.Lock()
	if g.conns == nil {
		g.conns, g.byAddr = map[*Conn]struct{}{}, map[string]int{}
	}
	ok := g.PerAddress <= 0 || g.byAddr[key] < g.PerAddress
	if ok && g.Max > 0 && len(g.conns) >= g.Max {
		if evict = g.idlestLocked(); evict != nil {
			g.dropLocked(evict)
		} else {
			ok = false
		}
	}
	if ok {
		g.conns[gc] = struct{}{}
		g.byAddr[key]++
	}
	g.mu.Unlock()
	if evict != nil {
		g.evicted.Add(1)
		evict.evict()
	}
	if !ok {
		g.refused.Add(1)
		_ = c.Close()
		return nil
	}
	return gc
}

// idlestLocked returns the connection idle longest, past Grace, or nil.
func (g *Guard) idlestLocked() *Conn {
	grace := g.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	limit := time.Now().Add(-grace).UnixNano()
	var best *Conn
	var bestSince int64
	for c := range g.conns {
		since := c.since()
		if since != 0 && since <= limit && (best == nil || since < bestSince) {
			best, bestSince = c, since
		}
	}
	return best
}

// dropLocked forgets c (once).
func (g *Guard) dropLocked(c *Conn) {
	if _, ok := g.conns[c]; !ok {
		return
	}
	delete(g.conns, c)
	if g.byAddr[c.key]--; g.byAddr[c.key] <= 0 {
		delete(g.byAddr, c.key)
	}
}

// ConnState is the http.Server hook that tells the guard which of its connections are idle:
// new ones until their first request, and those between requests.
func (g *Guard) ConnState(c net.Conn, s http.ConnState) {
	gc := unwrap(c)
	if gc == nil {
		return
	}
	switch s {
	case http.StateNew, http.StateIdle:
		gc.SetEvictable(true)
	case http.StateActive, http.StateHijacked:
		gc.SetEvictable(false)
	}
}

// unwrap finds the guard's Conn under c (a *tls.Conn over it, say).
func unwrap(c net.Conn) *Conn {
	for c != nil {
		if gc, ok := c.(*Conn); ok {
			return gc
		}
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = nc.NetConn()
	}
	return nil
}

type connKey struct{}

// ConnContext is the http.Server hook that makes a request's context know its connection, for
// SetEvictable.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if gc := unwrap(c); gc != nil {
		return context.WithValue(ctx, connKey{}, gc)
	}
	return ctx
}

// FromContext returns the guard's connection a request came on (see ConnContext), or nil.
func FromContext(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// Conn is a connection a Guard admitted.
type Conn struct {
	net.Conn
	g         *Guard
	key       string
	idleSince atomic.Int64 // unix nanoseconds since it may be evicted; 0: it may not
	evictor   atomic.Pointer[evictor]
	armed     atomic.Int64 // unix nanoseconds when the write deadline was last set; 0: not set
	closed    atomic.Bool
}

// SetEvictable says whether c may be closed to make room for a new connection (once idle past
// the guard's Grace): a WebSocket's owner marks it so while the peer has not authenticated.
// Nil c does nothing.
func (c *Conn) SetEvictable(ok bool) {
	if c == nil {
		return
	}
	if !ok {
		c.idleSince.Store(0)
	} else if c.idleSince.Load() == 0 {
		c.idleSince.Store(time.Now().UnixNano())
	}
}

// evictor is how a hijacked connection's owner lets it be evicted (SetEvictor).
type evictor struct {
	evictable func() bool
	close     func()
	since     int64
}

// SetEvictor hands the eviction of a hijacked connection to its owner: while evictable returns
// true, the connection may be closed to make room (the one held longest first, past Grace), by
// calling close, in a goroutine of its own, instead of closing the socket under the owner.
// evictable is called with the guard's lock held: it must be cheap and must not block. Nil c
// does nothing.
func (c *Conn) SetEvictor(evictable func() bool, close func()) {
	if c == nil {
		return
	}
	c.evictor.Store(&evictor{evictable: evictable, close: close, since: time.Now().UnixNano()})
}

// since returns since when c may be evicted (unix nanoseconds), or 0.
func (c *Conn) since() int64 {
	if e := c.evictor.Load(); e != nil {
		if e.evictable() {
			return e.since
		}
		return 0
	}
	return c.idleSince.Load()
}

// evict closes c to make room: through its owner's close, or at the socket.
func (c *Conn) evict() {
	if e := c.evictor.Load(); e != nil {
		go e.close()
		return
	}
	_ = c.Conn.Close()
}

// Close closes the connection and gives its place back.
func (c *Conn) Close() error {
	if !c.closed.Swap(true) {
		c.g.mu.Lock()
		c.g.dropLocked(c)
		c.g.mu.Unlock()
	}
	return c.Conn.Close()
}

// Write writes with the write deadline armed (see Guard.WriteTimeout).
func (c *Conn) Write(b []byte) (int, error) {
	c.arm()
	return c.Conn.Write(b)
}

// arm sets the write deadline to WriteTimeout from now, unless it was set less than half of
// it ago: a write then has between half of WriteTimeout and all of it.
func (c *Conn) arm() {
	wt := c.g.WriteTimeout
	if wt <= 0 {
		return
	}
	now := time.Now()
	if last := c.armed.Load(); last != 0 && now.UnixNano()-last < int64(wt/2) {
		return
	}
	c.armed.Store(now.UnixNano())
	_ = c.Conn.SetWriteDeadline(now.Add(wt))
}

// SetWriteDeadline sets the deadline for the caller; the next write arms the guard's again.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.armed.Store(0)
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline is SetReadDeadline and SetWriteDeadline.
func (c *Conn) SetDeadline(t time.Time) error {
	c.armed.Store(0)
	return c.Conn.SetDeadline(t)
}

// CloseWrite shuts down the writing side, when the connection can (net/http uses it).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("connguard: the connection cannot close its writing side alone")
}

// NetConn returns the connection under c.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// SyscallConn returns the socket, so that a WebSocket can wait for it without a goroutine
// (internal/ws); writes through it arm the write deadline like Write.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("connguard: the connection has no socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &rawConn{RawConn: raw, c: c}, nil
}

type rawConn struct {
	syscall.RawConn
	c *Conn
}

// Write arms the deadline first: the poller refuses a write at once when an old one passed.
func (r *rawConn) Write(f func(fd uintptr) bool) error {
	r.c.arm()
	return r.RawConn.Write(f)
}

// BodyTimeout bounds how long the body of a request to h may take to arrive: d after the
// request's headers were read, a body still arriving is cut (its read fails, and the
// connection is closed). The bound is lifted once the body has been read to its end, so that a
// long response (an event stream) is not cut. Requests without a body are not affected: the
// server's ReadHeaderTimeout bounds their headers. d <= 0 returns h.
func BodyTimeout(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(d)) != nil {
			h.ServeHTTP(w, r) // the writer cannot (a test recorder): no bound
			return
		}
		r.Body = &timedBody{ReadCloser: r.Body, rc: rc}
		h.ServeHTTP(w, r)
	})
}

// timedBody lifts the read deadline at the body's end.
type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
