package capnweb_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

// collected counts the sessions handed to watch that the garbage collector has freed.
type collected struct {
	watched atomic.Int64
	freed   atomic.Int64
}

func (c *collected) watch(s *capnweb.Session) {
	c.watched.Add(1)
	runtime.AddCleanup(s, func(int) { c.freed.Add(1) }, 0)
}

// wait fails unless every watched session is freed within a few seconds.
func (c *collected) wait(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.freed.Load() < c.watched.Load() && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if freed, watched := c.freed.Load(), c.watched.Load(); freed < watched {
		t.Errorf("%s: %d of %d closed sessions are still reachable: sessions leak", what, watched-freed, watched)
	}
}

// A session that has ended, and that nothing of the program's refers to, is garbage: nothing
// of the library's (its main stub's cleanup, a timer, a pool) keeps it, on any transport.
func TestSessionsAreCollected(t *testing.T) {
	const n = 20
	ctx := context.Background()
	call := func(s *capnweb.Session) {
		p := s.Main().Call("add", 1, 2)
		if v, err := p.Await(ctx); err != nil || v != 3.0 {
			t.Errorf("add(1, 2) = %v, %v", v, err)
		}
		p.Release()
	}

	t.Run("pipe", func(t *testing.T) {
		var c collected
		for i := range n {
			a, z := capnweb.Pipe()
			srv := capnweb.NewSession(z, &capnwebtest.API{}, nil)
			cli := capnweb.NewSession(a, nil, nil)
			if i%2 == 0 { // half of them never carry a call
				call(cli)
			}
			cli.Close()
			srv.Close()
			c.watch(srv)
			c.watch(cli)
		}
		c.wait(t, "pipe")
	})

	t.Run("websocket", func(t *testing.T) {
		var c collected
		h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil },
			&capnweb.HandlerOptions{OnSession: func(_ *http.Request, s *capnweb.Session) { c.watch(s) }})
		ts := httptest.NewServer(h)
		defer ts.Close()
		defer h.Close()
		for range n {
			cli, err := capnweb.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http"), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			call(cli)
			cli.Close()
			c.watch(cli)
		}
		for deadline := time.Now().Add(5 * time.Second); h.Sessions() > 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		c.wait(t, "websocket")
	})

	t.Run("batch", func(t *testing.T) {
		var c collected
		h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
		ts := httptest.NewServer(h)
		defer ts.Close()
		defer h.Close()
		opts := &capnweb.DialOptions{HTTPClient: ts.Client()}
		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		before := heap()
		for range 50 * n {
			bs := capnweb.NewBatchSession(ts.URL, nil, opts)
			call(bs)
			bs.Close()
			c.watch(bs)
		}
		c.wait(t, "batch client")
		// The handler's batch sessions are not handed out; a leak of theirs shows in the heap
		// (each held about 4 KB).
		if grew := int64(heap()) - int64(before); grew > 1<<20 {
			t.Errorf("heap grew %d KB over %d batches: batch sessions leak", grew>>10, 50*n)
		}
	})
}

// A promise the program forgets to release is released all the same: on a long-lived session
// when the garbage collector finds it, on a batch session when the batch ends. Each one here
// holds a counter the server exports, until the promise is released.
func TestForgottenPromisesAreReleased(t *testing.T) {
	ctx := context.Background()
	forget := func(t *testing.T, s *capnweb.Session) {
		t.Helper()
		// All calls are made before the first Await, which posts a batch; no promise is released.
		var incs []*capnweb.Promise
		for i := range 10 {
			incs = append(incs, s.Main().Call("makeCounter", i).Call("increment", 1))
		}
		for i, p := range incs {
			if v, err := p.Await(ctx); err != nil || v != float64(i+1) {
				t.Fatalf("counter %d: %v, %v", i, v, err)
			}
		}
	}

	t.Run("pipe", func(t *testing.T) {
		a, z := capnweb.Pipe()
		srv := capnweb.NewSession(z, &capnwebtest.API{}, nil)
		defer srv.Close()
		cli := capnweb.NewSession(a, nil, nil)
		defer cli.Close()
		forget(t, cli)
		exported := func() int { _, exports := srv.TableIDs(); return len(exports) - 1 } // not main
		for deadline := time.Now().Add(5 * time.Second); exported() > 0 && time.Now().Before(deadline); {
			runtime.GC()
			time.Sleep(5 * time.Millisecond)
		}
		if n := exported(); n > 0 {
			t.Errorf("the server still exports %d counters whose promises the client forgot", n)
		}
	})

	t.Run("batch", func(t *testing.T) {
		h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
		ts := httptest.NewServer(h)
		defer ts.Close()
		defer h.Close()
		bs := capnweb.NewBatchSession(ts.URL, nil, &capnweb.DialOptions{HTTPClient: ts.Client()})
		defer bs.Close()
		forget(t, bs)
		select {
		case <-bs.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the batch session did not end with its response")
		}
		if imports, exports := bs.TableIDs(); len(imports)+len(exports) > 0 {
			t.Errorf("the ended batch still holds imports %v, exports %v", imports, exports)
		}
	})
}
