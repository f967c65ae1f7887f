package capnweb

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/a2awebcap/a2awebcap/internal/ws"
)

type idleAPI struct{ Target }

func (*idleAPI) Add(a, b float64) float64 { return a + b }

// shortIdle makes WebSocket sessions go idle after 20 ms for the test.
func shortIdle(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sessions only park where the socket can be watched (Linux)")
	}
	old := wsIdleAfter
	wsIdleAfter = 20 * time.Millisecond
	t.Cleanup(func() { wsIdleAfter = old })
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// idleServer serves idleAPI with a short idle time and dials it, offering clientMain; it
// returns the handler, the client session and where the server's session arrives.
func idleServer(t *testing.T, clientMain any) (*Handler, *Session, <-chan *Session) {
	t.Helper()
	shortIdle(t)
	server := make(chan *Session, 1)
	h := NewHandler(func(*http.Request) (any, error) { return &idleAPI{}, nil },
		&HandlerOptions{OnSession: func(_ *http.Request, s *Session) { server <- s }})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	c, err := Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), clientMain, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, c, server
}

// An idle WebSocket session's read loop parks (no goroutine), and the session goes on working as
// before; closing it still ends the server's session and untracks it.
func TestIdleSessionParksReadLoop(t *testing.T) {
	h, c, server := idleServer(t, nil)
	s := <-server
	call := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		v, err := c.Main().Call("add", 1, 2).Await(ctx)
		if err != nil || v != 3.0 {
			t.Fatalf("add after idling: %v, %v", v, err)
		}
	}
	for i := range 3 {
		call()
		eventually(t, fmt.Sprintf("the read loop did not park after idling (%d parks)", s.readParks.Load()),
			func() bool { return s.readParks.Load() > int32(i) })
	}
	call()
	if got := s.readResumes.Load(); got < 3 {
		t.Errorf("readResumes = %d after 3 parks and calls, want ≥ 3", got)
	}
	c.Close()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the server session did not end after the client closed")
	}
	eventually(t, "sessions still tracked", func() bool { return h.Sessions() == 0 })
}

// rawClient is a client end that speaks the protocol directly, so that it holds no goroutine.
type rawClient struct {
	c   *ws.Conn
	tcp net.Conn // under c: closing it makes the client vanish without a close frame
}

// call makes the call add(1, 2) as import id.
func (r rawClient) call(id int) error {
	push := []byte(`["push",["pipeline",0,["add"],[1,2]]]`)
	if err := r.c.WriteMessages(ws.Text, push, fmt.Appendf(nil, `["pull",%d]`, id)); err != nil {
		return err
	}
	_, got, err := r.c.ReadMessage(0)
	if err != nil {
		return err
	}
	if want := fmt.Sprintf(`["resolve",%d,3]`, id); string(got) != want {
		return fmt.Errorf("got %s, want %s", got, want)
	}
	return r.c.WriteMessages(ws.Text, fmt.Appendf(nil, `["release",%d,1]`, id))
}

// N idle sessions hold no goroutine on the server, answer calls afterwards, and end without
// leaving one behind whichever way they end: the client closes, the client vanishes (no close
// frame), or the server shuts down.
func TestIdleSessionsHoldNoGoroutines(t *testing.T) {
	shortIdle(t)
	const n = 30
	h := NewHandler(func(*http.Request) (any, error) { return &idleAPI{}, nil }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	dial := func() rawClient {
		var r rawClient
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			r.tcp = c
			return c, err
		}}}
		c, err := ws.Dial(t.Context(), url, &ws.DialOptions{HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		r.c = c
		t.Cleanup(func() { r.tcp.Close() })
		if err := r.call(1); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Warm up (the parker's goroutine starts with the first park), then count.
	warm := dial()
	eventually(t, "the warm-up session did not park", func() bool { return minParks(h) >= 1 })
	warm.c.Close(ws.StatusNormal, "")
	eventually(t, "the warm-up session did not end", func() bool { return h.Sessions() == 0 })
	base := settledGoroutines()

	conns := make([]rawClient, n)
	for i := range conns {
		conns[i] = dial()
	}
	eventually(t, "not every session parked", func() bool { return h.Sessions() == n && minParks(h) >= 1 })
	if got := settledGoroutines(); got > base {
		t.Errorf("%d idle sessions hold %d goroutines, want none", n, got-base)
	}
	for i, c := range conns {
		if err := c.call(2); err != nil {
			t.Fatalf("session %d: a call after parking: %v", i, err)
		}
	}
	eventually(t, "not every session parked again", func() bool { return minParks(h) >= 2 })
	eventually(t, "parked sessions kept their busy state (scratch, spare queue, watchdog)",
		func() bool { return busyKept(h) == 0 })

	for _, c := range conns[:n/3] {
		c.c.Close(ws.StatusNormal, "")
	}
	for _, c := range conns[n/3 : 2*n/3] {
		c.tcp.Close()
	}
	eventually(t, "closed and vanished clients left sessions behind",
		func() bool { return h.Sessions() == n-2*(n/3) })
	h.Close()
	if got := h.Sessions(); got != 0 {
		t.Errorf("Handler.Close left %d sessions", got)
	}
	eventually(t, "sessions left goroutines behind", func() bool { return runtime.NumGoroutine() <= base })
}

// busyKept returns how many of the handler's live sessions hold a busy state.
func busyKept(h *Handler) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for s := range h.sessions {
		if s.busy.Load() != nil {
			n++
		}
	}
	return n
}

// TestSessionStaysSmall guards the size of what every session, idle or not, allocates: the
// Session struct fits the 448-byte allocation class. Per-message state belongs in busyState.
func TestSessionStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 448 {
		t.Errorf("Session is %d bytes, over the 448-byte class: move what only a busy session needs to busyState", n)
	}
}

// minParks returns the fewest times one of the handler's live sessions has parked.
func minParks(h *Handler) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := -1
	for s := range h.sessions {
		if p := int(s.readParks.Load()); n < 0 || p < n {
			n = p
		}
	}
	return n
}

// settledGoroutines returns the goroutine count once it stopped changing (lingering writers and
// executors end shortly after their last message).
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

type pinger struct{ Target }

func (*pinger) Ping(s string) string { return "pong " + s }

// A server session whose read side is parked still calls the client, and the answer wakes it.
func TestParkedSessionCallsClient(t *testing.T) {
	_, c, server := idleServer(t, &pinger{})
	t.Cleanup(func() { c.Close() })
	s := <-server
	for i := range 2 {
		eventually(t, "the server session did not park", func() bool { return s.readParks.Load() > int32(i) })
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		v, err := s.Main().Call("ping", "parked").Await(ctx)
		cancel()
		if err != nil || v != "pong parked" {
			t.Fatalf("server → client call while parked = %v, %v, want \"pong parked\"", v, err)
		}
	}
}

// A client session polls its socket only when DialOptions.ReadSpin asks it to; a server's
// polls for DefaultReadSpin unless told otherwise.
func TestClientPollsOnlyWhenAsked(t *testing.T) {
	accepted := make(chan *Session, 2)
	h := NewHandler(func(*http.Request) (any, error) { return &idleAPI{}, nil },
		&HandlerOptions{OnSession: func(_ *http.Request, s *Session) { accepted <- s }})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	spinOf := func(s *Session) time.Duration { return s.t.(*wsTransport).c.SpinWait }
	for _, tc := range []struct {
		name string
		spin time.Duration
		want time.Duration
	}{
		{"default", 0, 0},
		{"asked", DefaultReadSpin, DefaultReadSpin},
		{"never", -1, 0},
	} {
		c, err := Dial(t.Context(), url, nil, &DialOptions{ReadSpin: tc.spin})
		if err != nil {
			t.Fatal(err)
		}
		if got := spinOf(c); got != tc.want {
			t.Errorf("%s: the client polls for %v, want %v", tc.name, got, tc.want)
		}
		if got := spinOf(<-accepted); got != DefaultReadSpin {
			t.Errorf("%s: the server polls for %v, want %v", tc.name, got, DefaultReadSpin)
		}
		c.Close()
	}
}
