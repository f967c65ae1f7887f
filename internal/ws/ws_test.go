package ws

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// echoServer accepts WebSockets and echoes each message; got receives the error that ended
// each connection's read loop.
func echoServer(t *testing.T, opts *AcceptOptions, limit int) (*httptest.Server, chan error) {
	t.Helper()
	got := make(chan error, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, opts)
		if err != nil {
			return
		}
		for {
			typ, msg, err := c.ReadMessage(limit)
			if errors.Is(err, ErrTooBig) {
				if err := c.WriteMessages(Text, []byte("too big")); err != nil {
					got <- err
					return
				}
				continue
			}
			if err != nil {
				got <- err
				return
			}
			if err := c.WriteMessages(typ, msg); err != nil {
				got <- err
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// acceptServer serves WebSockets and hands each accepted server end to the test.
func acceptServer(t *testing.T) (*httptest.Server, <-chan *Conn) {
	t.Helper()
	accepted := make(chan *Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := Accept(w, r, nil); err == nil {
			accepted <- c
		}
	}))
	t.Cleanup(srv.Close)
	return srv, accepted
}

// rawPair connects a client to a server end whose socket is reached directly (Linux, plain TCP),
// or skips the test with why.
func rawPair(t *testing.T, why string) (client, server *Conn) {
	t.Helper()
	srv, accepted := acceptServer(t)
	client = dial(t, wsURL(srv))
	server = <-accepted
	t.Cleanup(server.shutdown)
	if server.raw == nil {
		t.Skip(why)
	}
	return client, server
}

func wsURL(s *httptest.Server) string { return "ws" + strings.TrimPrefix(s.URL, "http") }

func dial(t *testing.T, url string) *Conn {
	t.Helper()
	c, err := Dial(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.shutdown() })
	return c
}

func TestEchoSizes(t *testing.T) {
	srv, _ := echoServer(t, nil, 0)
	c := dial(t, wsURL(srv))
	for _, n := range []int{0, 1, 125, 126, 127, 65535, 65536, 1 << 20} {
		msg := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		if err := c.WriteMessages(Text, msg); err != nil {
			t.Fatal(err)
		}
		typ, got, err := c.ReadMessage(0)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if typ != Text || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: got type %d, %d bytes", n, typ, len(got))
		}
	}
}

func TestBatchIsOneWrite(t *testing.T) {
	srv, _ := echoServer(t, nil, 0)
	c := dial(t, wsURL(srv))
	var msgs [][]byte
	for i := range 50 {
		msgs = append(msgs, []byte(strings.Repeat("x", i*40)))
	}
	cw := &countingWriter{ReadWriteCloser: c.rwc}
	c.rwc = cw
	if err := c.WriteMessages(Binary, msgs...); err != nil {
		t.Fatal(err)
	}
	if cw.writes != 1 {
		t.Errorf("%d writes for a batch of %d messages, want 1", cw.writes, len(msgs))
	}
	for i, want := range msgs {
		typ, got, err := c.ReadMessage(0)
		if err != nil || typ != Binary || !bytes.Equal(got, want) {
			t.Fatalf("message %d: type %d, %d bytes, %v", i, typ, len(got), err)
		}
	}
}

type countingWriter struct {
	io.ReadWriteCloser
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.ReadWriteCloser.Write(p)
}

func TestTooBigKeepsConnection(t *testing.T) {
	srv, _ := echoServer(t, nil, 1000)
	c := dial(t, wsURL(srv))
	if err := c.WriteMessages(Text, bytes.Repeat([]byte("a"), 5000), []byte("small")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"too big", "small"} {
		_, got, err := c.ReadMessage(0)
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
}

// rawClient opens a TCP connection, does the handshake by hand and returns it, to send frames
// a well-behaved client never would.
func rawClient(t *testing.T, srv *httptest.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("handshake: %s %v", resp.Status, resp.Header)
	}
	return conn, br
}

// frame builds a client frame: fin, opcode, masked with a fixed key.
func frame(fin bool, op byte, payload []byte, masked bool) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	c := &Conn{client: masked}
	b := c.appendFrame(nil, op, payload)
	b[0] = b0
	return b
}

// readFrame reads one server frame: opcode and payload.
func readFrame(t *testing.T, br *bufio.Reader) (byte, []byte) {
	t.Helper()
	c := &Conn{br: br, client: true}
	h, err := c.readHeader()
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	p, err := c.readPayload(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h.op, p
}

func TestFragmentsAndPing(t *testing.T) {
	srv, _ := echoServer(t, nil, 0)
	conn, br := rawClient(t, srv)
	conn.Write(frame(false, opText, []byte("hel"), true))
	conn.Write(frame(true, opPing, []byte("p1"), true))
	conn.Write(frame(false, opContinuation, []byte("lo "), true))
	conn.Write(frame(true, opContinuation, []byte("wörld"), true))
	op, p := readFrame(t, br)
	if op != opPong || string(p) != "p1" {
		t.Fatalf("got op %d %q, want the pong", op, p)
	}
	op, p = readFrame(t, br)
	if op != opText || string(p) != "hello wörld" {
		t.Fatalf("got op %d %q", op, p)
	}
}

func TestProtocolViolations(t *testing.T) {
	cases := []struct {
		name  string
		send  []byte
		code  int
		error string
	}{
		{"unmasked", frame(true, opText, []byte("hi"), false), StatusProtocolError, "unmasked"},
		{"reserved bits", func() []byte { f := frame(true, opText, []byte("hi"), true); f[0] |= 0x40; return f }(), StatusProtocolError, "reserved"},
		{"long control", frame(true, opPing, bytes.Repeat([]byte("p"), 126), true), StatusProtocolError, "125"},
		{"fragmented control", frame(false, opPing, []byte("p"), true), StatusProtocolError, "fragmented control"},
		{"bad utf8", frame(true, opText, []byte{0xff, 0xfe}, true), StatusInvalidPayload, "UTF-8"},
		{"orphan continuation", frame(true, opContinuation, []byte("x"), true), StatusProtocolError, "continuation"},
		{"unknown opcode", frame(true, 3, []byte("x"), true), StatusProtocolError, "opcode"},
		{"interleaved message", append(frame(false, opText, []byte("a"), true), frame(true, opText, []byte("b"), true)...), StatusProtocolError, "inside"},
		{"bad close code", frame(true, opClose, []byte{0x03, 0xe7}, true), StatusProtocolError, "close code 999"},
		{"one-byte close", frame(true, opClose, []byte{3}, true), StatusProtocolError, "one-byte"},
		{"huge length", []byte{0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0}, StatusProtocolError, "significant bit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := echoServer(t, nil, 0)
			conn, br := rawClient(t, srv)
			conn.Write(tc.send)
			op, p := readFrame(t, br)
			if op != opClose || len(p) < 2 || int(binary.BigEndian.Uint16(p)) != tc.code {
				t.Fatalf("got op %d %q, want close %d", op, p, tc.code)
			}
			err := <-got
			var pe *ProtocolError
			if !errors.As(err, &pe) || !strings.Contains(pe.Error(), tc.error) {
				t.Fatalf("server read error %v, want a protocol error about %q", err, tc.error)
			}
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("the server kept the connection open after failing it")
			}
		})
	}
}

func TestCloseHandshake(t *testing.T) {
	reason := strings.Repeat("é", 100) // 200 bytes: truncated to 122 (no split rune)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, nil)
		if err != nil {
			return
		}
		go func() {
			for {
				if _, _, err := c.ReadMessage(0); err != nil {
					return
				}
			}
		}()
		c.Close(3000, reason)
	}))
	defer srv.Close()
	c := dial(t, wsURL(srv))
	_, _, err := c.ReadMessage(0)
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != 3000 || ce.Reason != strings.Repeat("é", 61) {
		t.Fatalf("got %v, want close 3000 with the reason truncated to 122 bytes", err)
	}
	if err := c.WriteMessages(Text, []byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v, want ErrClosed", err)
	}
}

func TestCloseWithoutReader(t *testing.T) {
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, nil)
		if err != nil {
			return
		}
		done <- c.Close(StatusNormal, "bye")
	}))
	defer srv.Close()
	c := dial(t, wsURL(srv))
	c.WriteMessages(Text, []byte("unread")) // the server's Close reads past it
	_, _, err := c.ReadMessage(0)
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != StatusNormal || ce.Reason != "bye" {
		t.Fatalf("got %v", err)
	}
	select {
	case <-done:
	case <-time.After(closeGrace / 2):
		t.Fatal("Close waited for its grace period although the peer answered")
	}
}

// A reader that returns a message while Close waits, and then stops reading (its session
// ended), leaves the peer's close frame to Close: Close does not wait out its grace period.
func TestCloseTakesOverFromStoppedReader(t *testing.T) {
	srv, accepted := acceptServer(t)
	c := dial(t, wsURL(srv))
	s := <-accepted
	got := make(chan []byte, 1)
	go func() { // reads one message, then no more
		_, msg, _ := s.ReadMessage(0)
		got <- msg
	}()
	time.Sleep(10 * time.Millisecond) // the reader waits in ReadMessage
	closed := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		s.Close(3000, "bye")
		closed <- time.Since(start)
	}()
	time.Sleep(10 * time.Millisecond) // Close waits for the reader
	c.WriteMessages(Text, []byte("last"))
	if msg := <-got; string(msg) != "last" {
		t.Fatalf("reader got %q", msg)
	}
	if _, _, err := c.ReadMessage(0); err == nil { // answers the server's close
		t.Fatal("client read a message after the close")
	}
	select {
	case d := <-closed:
		if d >= closeGrace {
			t.Errorf("Close took %v: it waited out its grace period although the peer answered", d)
		}
	case <-time.After(closeGrace + time.Second):
		t.Fatal("Close did not return")
	}
}

func TestHandshakeErrors(t *testing.T) {
	srv, _ := echoServer(t, &AcceptOptions{OriginPatterns: []string{"*.example.com", "https://app.test"}}, 0)
	cases := []struct {
		name   string
		method string
		header map[string]string
		status int
	}{
		{"not an upgrade", "GET", map[string]string{"Connection": "keep-alive"}, http.StatusUpgradeRequired},
		{"post", "POST", nil, http.StatusMethodNotAllowed},
		{"version", "GET", map[string]string{"Sec-WebSocket-Version": "8"}, http.StatusBadRequest},
		{"bad key", "GET", map[string]string{"Sec-WebSocket-Key": "short"}, http.StatusBadRequest},
		{"foreign origin", "GET", map[string]string{"Origin": "https://evil.test"}, http.StatusForbidden},
		{"scheme-bound pattern, other scheme", "GET", map[string]string{"Origin": "http://app.test"}, http.StatusForbidden},
		{"allowed pattern", "GET", map[string]string{"Origin": "https://a.example.com"}, http.StatusSwitchingProtocols},
		{"scheme-bound pattern", "GET", map[string]string{"Origin": "https://app.test"}, http.StatusSwitchingProtocols},
		{"same origin", "GET", map[string]string{"Origin": srv.URL}, http.StatusSwitchingProtocols},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL, nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

func TestDialErrors(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no sockets here", http.StatusNotFound)
	}))
	defer plain.Close()
	if _, err := Dial(t.Context(), wsURL(plain), nil); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "no sockets here") {
		t.Fatalf("got %v, want the 404 and its body", err)
	}
	if _, err := Dial(t.Context(), "ftp://x", nil); err == nil || !strings.Contains(err.Error(), "scheme") {
		t.Fatalf("got %v", err)
	}
	wrongKey := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Sec-WebSocket-Accept", "bm9wZQ==")
		w.WriteHeader(http.StatusSwitchingProtocols)
	}))
	defer wrongKey.Close()
	if _, err := Dial(t.Context(), wsURL(wrongKey), nil); err == nil || !strings.Contains(err.Error(), "Accept") {
		t.Fatalf("got %v, want a Sec-WebSocket-Accept mismatch", err)
	}
}

// The dial context and the HTTP client's timeout bound the handshake, not the connection.
func TestDialContextOnlyBoundsHandshake(t *testing.T) {
	srv, _ := echoServer(t, nil, 0)
	ctx, cancel := context.WithCancel(t.Context())
	hc := &http.Client{Timeout: 20 * time.Millisecond}
	c, err := Dial(ctx, wsURL(srv), &DialOptions{HTTPClient: hc, Header: http.Header{"X-Test": {"1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.shutdown()
	cancel()
	time.Sleep(3 * hc.Timeout)
	if err := c.WriteMessages(Text, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if _, got, err := c.ReadMessage(0); err != nil || string(got) != "still here" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestMask(t *testing.T) {
	key := [4]byte{1, 2, 3, 4}
	for n := range 40 {
		b := bytes.Repeat([]byte{0xAA}, n)
		mask(key, b)
		for i := range b {
			if b[i] != 0xAA^key[i%4] {
				t.Fatalf("n=%d i=%d: %x", n, i, b[i])
			}
		}
	}
}

// FuzzReadMessage feeds arbitrary bytes to a server-side reader: it must return a message or an
// error, never panic or allocate past its limit.
func FuzzReadMessage(f *testing.F) {
	f.Add(frame(true, opText, []byte("hello"), true))
	f.Add(append(frame(false, opText, []byte("a"), true), frame(true, opContinuation, []byte("b"), true)...))
	f.Add(frame(true, opPing, []byte("p"), true))
	f.Add(frame(true, opClose, []byte{3, 232, 'x'}, true))
	f.Add([]byte{0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newConn(&fuzzConn{r: bytes.NewReader(data)}, nil, false)
		for range 10 {
			_, msg, err := c.ReadMessage(4096)
			if err != nil && !errors.Is(err, ErrTooBig) {
				return
			}
			if len(msg) > 4096 {
				t.Fatalf("message of %d bytes passed a 4096-byte limit", len(msg))
			}
		}
	})
}

type fuzzConn struct {
	r *bytes.Reader
}

func (c *fuzzConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fuzzConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *fuzzConn) Close() error                { return nil }

// With IdleAfter, ReadMessage gives up after that long with ErrIdle, and the connection goes on
// working; WaitReadable returns once something arrives.
func TestIdleAndWaitReadable(t *testing.T) {
	c, s := rawPair(t, "no socket readiness on this platform")
	s.IdleAfter = 10 * time.Millisecond
	if _, _, err := s.ReadMessage(0); err != ErrIdle {
		t.Fatalf("got %v, want ErrIdle", err)
	}
	if s.br != nil {
		t.Error("an idle connection still holds its read buffer")
	}
	go c.WriteMessages(Text, []byte("after idle"))
	s.WaitReadable()
	s.IdleAfter = 0
	if _, got, err := s.ReadMessage(0); err != nil || string(got) != "after idle" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// A peer that stops reading cannot hold Close: a write blocked on it, and Close itself, end
// after closeGrace.
func TestCloseStuckPeer(t *testing.T) {
	old := closeGrace
	closeGrace = 200 * time.Millisecond
	t.Cleanup(func() { closeGrace = old })
	srv, accepted := acceptServer(t)
	_ = dial(t, wsURL(srv)) // never reads
	s := <-accepted
	writeErr := make(chan error, 1)
	go func() {
		big := bytes.Repeat([]byte("x"), 1<<20)
		for {
			if err := s.WriteMessages(Binary, big); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond) // let the socket buffers fill (not needed for correctness)
	closed := make(chan struct{})
	go func() { s.Close(StatusNormal, ""); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a peer that does not read")
	}
	select {
	case <-writeErr:
	case <-time.After(10 * time.Second):
		t.Fatal("a write blocked on a peer that does not read was not ended by Close")
	}
}

// A reader that returns with a message and then stops reading (its session ended) must not
// leave Close waiting for a close frame nobody will read.
func TestCloseAfterReaderStopped(t *testing.T) {
	old := closeGrace
	closeGrace = 100 * time.Millisecond
	t.Cleanup(func() { closeGrace = old })
	srv, accepted := acceptServer(t)
	conn, br := rawClient(t, srv)
	s := <-accepted
	read := make(chan struct{})
	go func() { s.ReadMessage(0); close(read) }() // one message, then it stops reading
	for s.rmu.TryLock() {                         // until the reader holds the lock
		s.rmu.Unlock()
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() { s.Close(StatusNormal, ""); close(done) }()
	if op, _ := readFrame(t, br); op != opClose {
		t.Fatalf("got opcode %d, want the close frame", op)
	}
	conn.Write(frame(true, opText, []byte("last"), true)) // the reader returns with it; no close answer
	<-read
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited forever for a reader that had stopped")
	}
}

// TryWriteMessages never waits: on a peer that is not reading it takes a message larger than the
// socket buffers and finishes it in the background, refuses the next one while that is under
// way, and a WriteMessages after it arrives after it, whole.
func TestTryWriteDoesNotWait(t *testing.T) {
	c, s := rawPair(t, "no non-blocking writes on this platform")
	big := bytes.Repeat([]byte("b"), 8<<20) // more than loopback's socket buffers hold
	took, err := s.TryWriteMessages(Binary, big)
	if !took || err != nil {
		t.Fatalf("TryWriteMessages(8 MiB) = %v, %v; want taken", took, err)
	}
	if took, err := s.TryWriteMessages(Text, []byte("second")); took || err != nil {
		t.Errorf("TryWriteMessages while the first is still being written = %v, %v; want not taken", took, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WriteMessages(Text, []byte("third")) }()
	typ, got, err := c.ReadMessage(16 << 20)
	if err != nil || typ != Binary || !bytes.Equal(got, big) {
		t.Fatalf("first message: %v, %d bytes, %v", typ, len(got), err)
	}
	if _, got, err := c.ReadMessage(0); err != nil || string(got) != "third" {
		t.Fatalf("second message: %q, %v; want third", got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took, err := s.TryWriteMessages(Text, []byte("fourth")); !took || err != nil {
		t.Fatalf("TryWriteMessages once idle = %v, %v", took, err)
	}
	if _, got, err := c.ReadMessage(0); err != nil || string(got) != "fourth" {
		t.Fatalf("got %q, %v; want fourth", got, err)
	}
}

// A background write of TryWriteMessages goes before the close frame.
func TestTryWriteThenClose(t *testing.T) {
	c, s := rawPair(t, "no non-blocking writes on this platform")
	big := bytes.Repeat([]byte("c"), 8<<20)
	if took, err := s.TryWriteMessages(Binary, big); !took || err != nil {
		t.Fatalf("TryWriteMessages = %v, %v", took, err)
	}
	go s.Close(StatusNormal, "bye")
	if _, got, err := c.ReadMessage(16 << 20); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("got %d bytes, %v; want the whole message before the close", len(got), err)
	}
	var ce *CloseError
	if _, _, err := c.ReadMessage(0); !errors.As(err, &ce) || ce.Reason != "bye" {
		t.Fatalf("got %v, want the close frame", err)
	}
}

// spuriousRaw is a socket whose poller wakes its reader once for nothing: the second call of a
// Read callback comes at once, whatever the socket holds (as a stale readiness event does).
type spuriousRaw struct{ syscall.RawConn }

func (r spuriousRaw) Read(f func(fd uintptr) bool) error {
	var once bool
	return r.RawConn.Read(func(fd uintptr) bool {
		if f(fd) {
			return true
		}
		if !once {
			once = true
			return f(fd) // the wake-up for nothing
		}
		return false
	})
}

// A reader woken for nothing still goes idle after IdleAfter, instead of blocking in a read
// with no deadline (an idle session would then keep its goroutine and buffer for good).
func TestIdleAfterSpuriousWake(t *testing.T) {
	c, s := rawPair(t, "the socket cannot be watched on this platform")
	s.raw = spuriousRaw{s.raw}
	s.IdleAfter = 20 * time.Millisecond
	got := make(chan error, 1)
	go func() {
		_, _, err := s.ReadMessage(0)
		got <- err
	}()
	select {
	case err := <-got:
		if err != ErrIdle {
			t.Fatalf("ReadMessage = %v, want ErrIdle", err)
		}
	case <-time.After(5 * time.Second):
		c.WriteMessages(Text, []byte("unblock"))
		t.Fatal("ReadMessage blocked past IdleAfter after a spurious wake-up")
	}
	c.WriteMessages(Text, []byte("after"))
	if _, msg, err := s.ReadMessage(0); err != nil || string(msg) != "after" {
		t.Fatalf("ReadMessage after idling = %q, %v", msg, err)
	}
}

// The reader reads what the socket holds without waiting before it waits; a message whose
// bytes arrive in pieces, the first before it waits and the rest after, is still read whole,
// and so are messages already there, and the connection still goes idle with nothing to read.
func TestReadNowThenWait(t *testing.T) {
	c, s := rawPair(t, "the socket cannot be watched on this platform")
	s.IdleAfter = time.Second
	f := frame(true, opText, []byte(strings.Repeat("piece", 1000)), true)
	sock := c.rwc // the client's end, written raw
	got := make(chan string, 1)
	go func() {
		_, msg, err := s.ReadMessage(0)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(msg)
	}()
	sock.Write(f[:3]) // less than the header
	time.Sleep(20 * time.Millisecond)
	sock.Write(f[3:100])
	time.Sleep(20 * time.Millisecond)
	sock.Write(f[100:])
	if msg := <-got; msg != strings.Repeat("piece", 1000) {
		t.Fatalf("split message read as %.40q (%d bytes)", msg, len(msg))
	}
	// Two messages that are both there before the reader looks.
	sock.Write(append(frame(true, opText, []byte("one"), true), frame(true, opText, []byte("two"), true)...))
	time.Sleep(20 * time.Millisecond)
	for _, want := range []string{"one", "two"} {
		if _, msg, err := s.ReadMessage(0); err != nil || string(msg) != want {
			t.Fatalf("ReadMessage = %q, %v, want %q", msg, err, want)
		}
	}
	s.IdleAfter = 10 * time.Millisecond
	if _, _, err := s.ReadMessage(0); err != ErrIdle {
		t.Fatalf("ReadMessage with nothing sent = %v, want ErrIdle", err)
	}
	if s.br != nil {
		t.Error("an idle connection still holds its read buffer")
	}
}

// With SpinWait, a reader polls for a message that comes soon instead of sleeping; a poll that
// comes up empty turns polling off, and a message that comes soon after a wait began turns it
// back on. Nothing polls while the polling readers are at their limit.
func TestSpinWait(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("readers poll only with GOMAXPROCS 2 or more")
	}
	c, s := rawPair(t, "the socket cannot be watched on this platform")
	s.SpinWait = 100 * time.Millisecond
	step := func(after time.Duration, hits int, off bool) {
		t.Helper()
		go func() {
			time.Sleep(after)
			c.WriteMessages(Text, []byte("m"))
		}()
		if _, msg, err := s.ReadMessage(0); err != nil || string(msg) != "m" {
			t.Fatalf("ReadMessage = %q, %v", msg, err)
		}
		if s.spinHits != hits || s.spinOff != off {
			t.Fatalf("after a message %v into the wait: %d polls found one, polling off %v; want %d, %v",
				after, s.spinHits, s.spinOff, hits, off)
		}
	}
	step(10*time.Millisecond, 1, false) // caught by polling
	step(300*time.Millisecond, 1, true) // polling gave up: off
	step(10*time.Millisecond, 1, false) // slept, but it came soon: back on
	step(10*time.Millisecond, 2, false) // caught by polling again
	spinners.n.Add(1 << 20)             // every polling slot taken
	defer spinners.n.Add(-1 << 20)
	step(10*time.Millisecond, 2, false) // slept
}

// Dial opens a plain ws:// connection itself, with the transport's dialer, so that the Conn owns
// the socket (and can poll it and write without waiting), as a server's Conn does; the request
// carries the caller's headers. Through a client with a cookie jar or a RoundTripper of its own,
// the HTTP client makes the request and the Conn works through its response body.
func TestDialOwnsSocket(t *testing.T) {
	gotHeader := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader <- r.Header.Get("X-Test")
		c, err := Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.shutdown()
		if typ, msg, err := c.ReadMessage(0); err == nil {
			c.WriteMessages(typ, msg)
		}
	}))
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	for _, tc := range []struct {
		name   string
		client *http.Client
		direct bool
	}{
		{"default client", nil, canReadNow},
		{"own transport", &http.Client{Transport: &http.Transport{}}, canReadNow},
		{"cookie jar", &http.Client{Jar: jar}, false},
		{"own round tripper", &http.Client{Transport: roundTripper{http.DefaultTransport}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(t.Context(), wsURL(srv), &DialOptions{HTTPClient: tc.client, Header: http.Header{"X-Test": {tc.name}}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.shutdown()
			if h := <-gotHeader; h != tc.name {
				t.Errorf("the server got X-Test %q, want %q", h, tc.name)
			}
			if direct := c.raw != nil; direct != tc.direct {
				t.Errorf("the Conn owns its socket: %v, want %v", direct, tc.direct)
			}
			if err := c.WriteMessages(Text, []byte("hi")); err != nil {
				t.Fatal(err)
			}
			if _, got, err := c.ReadMessage(0); err != nil || string(got) != "hi" {
				t.Fatalf("echo: %q, %v", got, err)
			}
		})
	}
}

type roundTripper struct{ http.RoundTripper }

// A message the server sends right behind its 101, in the same write, is read: the buffer that
// read the handshake answer is the Conn's.
func TestDialKeepsWhatFollowsTheHandshake(t *testing.T) {
	addr := tcpServer(t, func(conn net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			return
		}
		frame := []byte{0x81, 5, 'h', 'e', 'l', 'l', 'o'} // FIN, text, unmasked, "hello"
		fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n%s",
			acceptKey(req.Header.Get("Sec-WebSocket-Key")), frame)
		io.Copy(io.Discard, conn) // until the client goes
	})
	c, err := Dial(t.Context(), "ws://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.shutdown()
	if typ, got, err := c.ReadMessage(0); err != nil || typ != Text || string(got) != "hello" {
		t.Fatalf("ReadMessage = %v %q, %v; want the message sent with the 101", typ, got, err)
	}
}

// Ending the dial context ends a handshake the server never answers, with the context's error;
// a proxy the transport names for the URL is not bypassed.
func TestDialDirectHandshakeBounds(t *testing.T) {
	addr := tcpServer(t, func(conn net.Conn) { io.Copy(io.Discard, conn) }) // never answers
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, "ws://"+addr+"/", nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Dial to a silent server = %v after %v; want the context's deadline, soon", err, time.Since(start))
	}

	noProxy := errors.New("proxy refused")
	hc := &http.Client{Transport: &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return nil, noProxy }}}
	if _, err := Dial(t.Context(), "ws://"+addr+"/", &DialOptions{HTTPClient: hc}); !errors.Is(err, noProxy) {
		t.Fatalf("Dial through a transport whose proxy fails = %v; want that failure", err)
	}
}

// tcpServer serves each connection to a fresh listener on loopback with serve (which need not
// close it), until the test ends, and returns the listener's address.
func tcpServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				serve(conn)
			}()
		}
	}()
	return ln.Addr().String()
}

// A refusal whose body has no length and never ends is reported with what came of it by the
// dial context's end, not waited for.
func TestDialDirectRefusalWithEndlessBody(t *testing.T) {
	addr := tcpServer(t, func(conn net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\n\r\nnot for you")
		io.Copy(io.Discard, conn) // keeps the connection open
	})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, "ws://"+addr+"/", nil)
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden") || !strings.Contains(err.Error(), "not for you") {
		t.Fatalf("Dial = %v; want the 403 and its body", err)
	}
}
