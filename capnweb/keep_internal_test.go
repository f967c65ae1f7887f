package capnweb

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The keeper's tests use short configured intervals and generous bounds: each waits for an
// event that must come within a few intervals, and fails only if it takes seconds.

type keepAPI struct {
	Target
	release chan struct{}
	started chan struct{} // gets a value as each Wait starts
	policy  *keepPolicy
}

func (*keepAPI) Add(a, b float64) float64 { return a + b }

// Wait blocks until the test releases it: a call of the peer running here.
func (a *keepAPI) Wait(ctx context.Context) (string, error) {
	Blocking(ctx)
	a.started <- struct{}{}
	select {
	case <-a.release:
		return "released", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// keepPolicy is a KeepPolicy the test steers.
type keepPolicy struct {
	idle      atomic.Int64 // a time.Duration
	evictable atomic.Bool
}

func (p *keepPolicy) RPCIdleTimeout() time.Duration { return time.Duration(p.idle.Load()) }
func (p *keepPolicy) RPCEvictable() bool            { return p.evictable.Load() }

type keepMain struct {
	*keepAPI
	*keepPolicy
}

// keepServer serves keepAPI (with policy, when not nil) under opts and returns its handler,
// its ws:// URL and where the server's sessions arrive.
func keepServer(t *testing.T, opts HandlerOptions, policy *keepPolicy) (*Handler, string, *keepAPI, <-chan *Session) {
	t.Helper()
	api := &keepAPI{release: make(chan struct{}), started: make(chan struct{}, 4)}
	server := make(chan *Session, 4)
	opts.OnSession = func(_ *http.Request, s *Session) { server <- s }
	h := NewHandler(func(*http.Request) (any, error) {
		if policy != nil {
			return &keepMain{api, policy}, nil
		}
		return api, nil
	}, &opts)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	return h, "ws" + strings.TrimPrefix(ts.URL, "http"), api, server
}

func ended(t *testing.T, s *Session, within time.Duration) error {
	t.Helper()
	select {
	case <-s.Done():
		return s.Err()
	case <-time.After(within):
		t.Fatalf("the session did not end within %v", within)
		return nil
	}
}

// A live peer answers pings by itself: with nothing to say for many ping intervals it stays
// connected; a peer that stops answering (gone, or its machine off the network) is dropped
// after about two intervals.
func TestKeeperPings(t *testing.T) {
	t.Parallel()
	// Pings every 500 ms: a live peer on a loaded machine (CI, -race, helpers' tests beside it)
	// answers within two of them; at 150 ms one was dropped in CI.
	h, url, _, server := keepServer(t, HandlerOptions{PingInterval: 500 * time.Millisecond}, nil)
	c, err := Dial(t.Context(), url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-server
	before := s.t.(*wsTransport).c.Frames()
	time.Sleep(5 * time.Second) // 10 ping intervals
	pongs := s.t.(*wsTransport).c.Frames() - before
	if _, err := c.Main().Call("add", 1, 2).Await(t.Context()); err != nil || s.Err() != nil {
		t.Fatalf("a live but quiet peer was dropped: %v, %v", err, s.Err())
	}
	if pongs < 3 {
		t.Errorf("%d frames came while the peer was quiet, want its pongs", pongs)
	}

	// A peer that completes the handshake, then never reads or answers. Its session cannot
	// start before the dial, so two ping intervals count from here.
	start := time.Now()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "ws://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v, %v", resp, err)
	}
	dead := <-server
	if err := ended(t, dead, 10*time.Second); err != errPeerGone {
		t.Errorf("the silent peer's session ended with %v, want errPeerGone", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the silent peer was dropped after %v, before two ping intervals", d)
	}
	eventually(t, "the dead peer's session is still tracked", func() bool { return h.Sessions() == 1 })
}

// IdleTimeout ends a session after no message either way for that long — pings do not count —
// but not while a call of the peer runs; the peer gets an abort saying why.
func TestKeeperIdleTimeout(t *testing.T) {
	t.Parallel()
	// Pings every 500 ms: a peer on a loaded machine (CI, -race) answers within two of them.
	_, url, api, server := keepServer(t, HandlerOptions{PingInterval: 500 * time.Millisecond, IdleTimeout: 2 * time.Second}, nil)
	c, err := Dial(t.Context(), url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-server
	// A call that runs for several idle timeouts keeps the session.
	p := c.Main().Call("wait")
	select {
	case <-api.started:
	case <-s.Done():
		t.Fatalf("the session ended before the call arrived: %v", s.Err())
	}
	time.Sleep(5 * time.Second)
	if s.Err() != nil {
		t.Fatalf("the session ended while a call ran: %v", s.Err())
	}
	close(api.release)
	if v, err := p.Await(t.Context()); err != nil || v != "released" {
		t.Fatalf("wait: %v, %v", v, err)
	}
	start := time.Now()
	err = ended(t, s, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "idle timeout") {
		t.Errorf("the idle session ended with %v, want an idle timeout", err)
	}
	// start is when the client saw the last message, a little after the server sent it: half
	// of IdleTimeout tells an idle timeout from an early end without racing that delay.
	if d := time.Since(start); d < time.Second {
		t.Errorf("the session ended %v after its last message, well before IdleTimeout (2 s)", d)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client's session did not end")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "idle timeout") {
		t.Errorf("the client was told %v, want the idle timeout", err)
	}
}

// A KeepPolicy sets the idle timeout as the session goes on, and whether connguard may evict it.
func TestKeeperPolicy(t *testing.T) {
	t.Parallel()
	policy := &keepPolicy{}
	policy.idle.Store(int64(100 * time.Millisecond))
	_, url, _, server := keepServer(t, HandlerOptions{IdleTimeout: -1}, policy)
	c, err := Dial(t.Context(), url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-server
	if err := ended(t, s, 10*time.Second); err == nil || !strings.Contains(err.Error(), "idle timeout") {
		t.Errorf("under the policy's 100ms: %v, want an idle timeout", err)
	}

	policy.idle.Store(-1) // no timeout, whatever the handler says
	c2, err := Dial(t.Context(), url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	s2 := <-server
	time.Sleep(400 * time.Millisecond)
	if s2.Err() != nil {
		t.Errorf("with the policy's -1 the session ended: %v", s2.Err())
	}
}
