package connguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These tests use real sockets on 127.0.0.0/8 (Linux answers all of it on the loopback
// interface, so connections can come from distinct addresses) with short configured timeouts;
// each bound they check is generous: an event that must come within milliseconds fails the test
// only if it takes seconds.

// serve runs an HTTP server for h under g on 127.0.0.1 and returns its address.
func serve(t *testing.T, g *Guard, h http.Handler, configure func(*http.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnState: g.ConnState, ConnContext: ConnContext, ReadHeaderTimeout: 10 * time.Second}
	if configure != nil {
		configure(srv)
	}
	go func() { _ = srv.Serve(g.Listen(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// dialFrom connects to addr from the local address ip.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c within d (a read sees EOF or a reset).
func closedByServer(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// get sends a GET on c and reads the response.
func get(t *testing.T, c net.Conn) int {
	t.Helper()
	if _, err := fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// One address gets PerAddress connections; more are closed on arrival; other addresses are not
// affected.
func TestPerAddress(t *testing.T) {
	t.Parallel()
	g := &Guard{PerAddress: 3}
	addr := serve(t, g, ok, nil)
	var conns []net.Conn
	for range 3 {
		conns = append(conns, dialFrom(t, "127.0.0.1", addr))
	}
	for _, c := range conns {
		if get(t, c) != 200 {
			t.Fatal("a connection within the bound was not served")
		}
	}
	if extra := dialFrom(t, "127.0.0.1", addr); !closedByServer(extra, 5*time.Second) {
		t.Error("a fourth connection from one address was kept")
	}
	if get(t, dialFrom(t, "127.0.0.2", addr)) != 200 {
		t.Error("another address was refused")
	}
	conns[0].Close()
	time.Sleep(50 * time.Millisecond) // the server sees the close
	if get(t, dialFrom(t, "127.0.0.1", addr)) != 200 {
		t.Error("a connection after one closed was refused")
	}
	if st := g.Stats(); st.Refused != 1 {
		t.Errorf("Stats() = %+v, want 1 refused", st)
	}
}

// The attack of issue 23, at a bound of 20 instead of a descriptor limit of 1,024: idle
// connections (that never send a request, or wait between requests) from many addresses fill
// the server, and a real request still gets in, at once: the connection idle longest makes
// room. Connections busy with a request are never closed for it; with only such, a new one is
// refused.
func TestMaxEvictsIdle(t *testing.T) {
	t.Parallel()
	g := &Guard{Max: 20, Grace: 50 * time.Millisecond}
	addr := serve(t, g, ok, nil)
	var idle []net.Conn
	for i := range 10 { // never send anything
		idle = append(idle, dialFrom(t, fmt.Sprintf("127.0.1.%d", i+1), addr))
	}
	for i := range 10 { // one request, then keep-alive idle
		c := dialFrom(t, fmt.Sprintf("127.0.2.%d", i+1), addr)
		if get(t, c) != 200 {
			t.Fatal("setup request failed")
		}
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond) // past Grace
	for i := range 5 {
		start := time.Now()
		if code := get(t, dialFrom(t, "127.0.0.2", addr)); code != 200 {
			t.Fatalf("legitimate request %d at the bound: %d", i, code)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("legitimate request %d took %v", i, d)
		}
	}
	if st := g.Stats(); st.Evicted < 5 || st.Open > 20 {
		t.Errorf("Stats() = %+v, want at least 5 evicted and at most 20 open", st)
	}
	closed := 0
	for _, c := range idle {
		if closedByServer(c, 10*time.Millisecond) {
			closed++
		}
	}
	if closed < 5 {
		t.Errorf("%d idle connections were closed to make room, want 5", closed)
	}

	// Only busy connections (each waiting for the answer to a request): a new one is refused.
	// (One still sending its headers counts as idle: it has made no request yet.)
	busy := &Guard{Max: 3, Grace: time.Millisecond}
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	addr = serve(t, busy, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }), nil)
	for i := range 3 {
		c := dialFrom(t, fmt.Sprintf("127.0.3.%d", i+1), addr)
		fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	time.Sleep(50 * time.Millisecond)
	if !closedByServer(dialFrom(t, "127.0.0.2", addr), 5*time.Second) {
		t.Error("a connection past the bound was kept, with no idle one to close")
	}
	if st := busy.Stats(); st.Refused != 1 || st.Evicted != 0 {
		t.Errorf("Stats() = %+v, want 1 refused and none evicted", st)
	}
}

// A hijacked connection is closed to make room only through its owner's close, and only while
// its owner says it may be.
func TestEvictor(t *testing.T) {
	t.Parallel()
	g := &Guard{Max: 1, Grace: time.Millisecond}
	var evictable atomic.Bool
	closed := make(chan struct{})
	hijacked := make(chan net.Conn, 1)
	addr := serve(t, g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hijack" {
			io.WriteString(w, "ok")
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		FromContext(r.Context()).SetEvictor(evictable.Load, func() { c.Close(); close(closed) })
		hijacked <- c
	}), nil)
	c := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprint(c, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
	<-hijacked
	time.Sleep(10 * time.Millisecond)
	if !closedByServer(dialFrom(t, "127.0.0.2", addr), 5*time.Second) {
		t.Fatal("a connection was let in while the hijacked one was not evictable")
	}
	evictable.Store(true)
	if get(t, dialFrom(t, "127.0.0.3", addr)) != 200 {
		t.Fatal("no room was made")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the owner's close was not called")
	}
}

// A write to a peer that stopped reading fails after WriteTimeout instead of waiting forever;
// writes that go on are not cut, however long the connection lives.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	g := &Guard{WriteTimeout: 200 * time.Millisecond}
	werr := make(chan error, 1)
	addr := serve(t, g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			// A stream that writes a little at a time, for longer than WriteTimeout.
			for range 10 {
				io.WriteString(w, "tick\n")
				http.NewResponseController(w).Flush()
				time.Sleep(60 * time.Millisecond)
			}
			return
		}
		chunk := make([]byte, 1<<20)
		for {
			if _, err := w.Write(chunk); err != nil {
				werr <- err
				return
			}
		}
	}), nil)
	c := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // and never read
	select {
	case err := <-werr:
		if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "timeout") {
			t.Logf("the write failed with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write to a peer that does not read was never cut")
	}

	c2 := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprint(c2, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || strings.Count(string(body), "tick") != 10 {
		t.Errorf("a slow stream that keeps writing was cut: %d ticks, %v", strings.Count(string(body), "tick"), err)
	}
}

// A body that trickles in (a byte every 100 ms) is cut at the body timeout; once a body is in,
// the response may take as long as it likes.
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	g := &Guard{}
	read := make(chan error, 1)
	addr := serve(t, g, BodyTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if r.URL.Path == "/stream" {
			for range 6 {
				io.WriteString(w, "tick\n")
				http.NewResponseController(w).Flush()
				time.Sleep(100 * time.Millisecond)
			}
			return
		}
		read <- err
	}), 300*time.Millisecond), nil)

	c := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	start := time.Now()
	go func() {
		for range 100 {
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	select {
	case err := <-read:
		if err == nil {
			t.Error("a trickling body was read to its end")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the trickling body was cut after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a trickling body was never cut")
	}

	c2 := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprint(c2, "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || strings.Count(string(body), "tick") != 6 {
		t.Errorf("a response longer than the body timeout was cut: %q, %v", body, err)
	}
}

// Connections of a server that does not report ConnState (gRPC) count toward Max but are never
// closed to make room: the guard cannot tell whether they are idle.
func TestNoConnStateNoEviction(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g := &Guard{Max: 1, Grace: time.Millisecond}
	gl := g.Listen(ln)
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := gl.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	first := dialFrom(t, "127.0.0.1", ln.Addr().String())
	(<-accepted).Write([]byte("hello"))
	time.Sleep(20 * time.Millisecond)
	if second := dialFrom(t, "127.0.0.2", ln.Addr().String()); !closedByServer(second, 5*time.Second) {
		t.Error("a second connection was let in past Max")
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(first, buf); err != nil {
		t.Errorf("the first connection was closed to make room: %v", err)
	}
}
