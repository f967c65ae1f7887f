package capnweb

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

type idleAPI struct{ Target }

func (*idleAPI) Add(a, b float64) float64 { return a + b }

// An idle WebSocket session's read loop moves to a fresh goroutine, and the session goes on
// working as before; closing it still ends the server's session and untracks it.
func TestIdleSessionMovesReadLoop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the read loop only moves where the socket can be watched (Linux)")
	}
	old := wsIdleAfter
	wsIdleAfter = 20 * time.Millisecond
	t.Cleanup(func() { wsIdleAfter = old })

	server := make(chan *Session, 1)
	h := NewHandler(func(*http.Request) (any, error) { return &idleAPI{}, nil },
		&HandlerOptions{OnSession: func(_ *http.Request, s *Session) { server <- s }})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	c, err := Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
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
		deadline := time.Now().Add(10 * time.Second)
		for s.readResumes.Load() <= int32(i) {
			if time.Now().After(deadline) {
				t.Fatalf("the read loop did not move after idling (%d moves)", s.readResumes.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	call()
	c.Close()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the server session did not end after the client closed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.Sessions() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still tracked", h.Sessions())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
