package main

// The load client: capnweb sessions for the capnweb servers, raw coder/websocket frames for the
// echo floor, and the bounded measurement loops.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/coder/websocket"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// callFunc makes one call (or one batch, or one chain) and checks its answer.
type callFunc func(ctx context.Context) error

// measurement is what one bounded loop observed.
type measurement struct {
	calls   int             // completed callFunc invocations
	elapsed time.Duration   // from the first start to the last completion
	lat     []time.Duration // per invocation, sorted
	server  harness.Usage   // what the server process used during the loop (-1: unknown)
	client  harness.Usage   // what this process (the load client) used during the loop
	err     error
}

func (m *measurement) rate() float64 { return harness.Rate(m.calls, m.elapsed) }

func (m *measurement) pct(p float64) time.Duration { return harness.QuantileLow(m.lat, p) }

func (m *measurement) mean() time.Duration { return harness.Mean(m.lat) }

// loop runs workers goroutines calling f until dur has passed or maxCalls invocations have
// started, whichever comes first. It is bounded by dur plus a 30 s grace for a call that hangs;
// the first error stops it.
func loop(parent context.Context, workers int, dur time.Duration, maxCalls int, f callFunc) measurement {
	ctx, cancel := context.WithTimeout(parent, dur+30*time.Second)
	defer cancel()
	var (
		started  atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
		lats     = make([][]time.Duration, workers)
	)
	start := time.Now()
	deadline := start.Add(dur)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			for ctx.Err() == nil && started.Add(1) <= int64(maxCalls) {
				t0 := time.Now()
				if err := f(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					break
				}
				t1 := time.Now()
				local = append(local, t1.Sub(t0))
				if t1.After(deadline) {
					break
				}
			}
			lats[w] = local
		}()
	}
	wg.Wait()
	m := measurement{elapsed: time.Since(start), err: firstErr}
	if firstErr == nil && parent.Err() != nil {
		m.err = parent.Err()
	}
	for _, l := range lats {
		m.lat = append(m.lat, l...)
	}
	m.calls = len(m.lat)
	slices.Sort(m.lat)
	return m
}

// client is a connection to one server that can make the benchmark calls.
type client interface {
	// op returns the call function for a named operation: "echo" (a small string), "add",
	// "counter" (increment on one counter made at connect time), "echo:<n>" (an n-byte string).
	op(name string) (callFunc, error)
	close()
}

const smallString = "hello, world"

func payloadString(n int) string { return strings.Repeat("x", n) }

// ---- capnweb ----

type capnwebClient struct {
	s       *capnweb.Session
	counter *capnweb.Stub
}

func dialCapnweb(ctx context.Context, url string) (*capnwebClient, error) {
	// The load client does not poll its socket for answers (ReadSpin): a polling thread takes
	// one of the two cores the server under test may need, and a single-threaded server (Node)
	// needs it most. Servers are measured as they are; the client stays out of their way.
	s, err := capnweb.Dial(ctx, url, nil, &capnweb.DialOptions{ReadSpin: -1})
	if err != nil {
		return nil, err
	}
	return &capnwebClient{s: s}, nil
}

func (c *capnwebClient) close() {
	if c.counter != nil {
		c.counter.Release()
	}
	c.s.Close()
}

// call makes one call on the main object and checks the result with want.
func call(ctx context.Context, st *capnweb.Stub, method string, want func(any) bool, args ...any) error {
	p := st.Call(method, args...)
	v, err := p.Await(ctx)
	p.Release()
	if err != nil {
		return err
	}
	if !want(v) {
		return fmt.Errorf("%s: unexpected result %.80v", method, v)
	}
	return nil
}

func (c *capnwebClient) op(name string) (callFunc, error) {
	main := c.s.Main()
	switch {
	case name == "echo":
		return func(ctx context.Context) error {
			return call(ctx, main, "echo", func(v any) bool { return v == smallString }, smallString)
		}, nil
	case name == "add":
		return func(ctx context.Context) error {
			return call(ctx, main, "add", func(v any) bool { return v == 3.0 }, 1, 2)
		}, nil
	case name == "counter":
		if c.counter == nil {
			p := main.Call("makeCounter", 0)
			c.counter = p.Stub()
			p.Release()
		}
		cs := c.counter
		return func(ctx context.Context) error {
			return call(ctx, cs, "increment", func(v any) bool { _, ok := v.(float64); return ok }, 1)
		}, nil
	case strings.HasPrefix(name, "echo:"):
		n, err := strconv.Atoi(name[len("echo:"):])
		if err != nil {
			return nil, err
		}
		s := payloadString(n)
		return func(ctx context.Context) error {
			return call(ctx, main, "echo", func(v any) bool { x, ok := v.(string); return ok && len(x) == n }, s)
		}, nil
	}
	return nil, fmt.Errorf("unknown op %q", name)
}

// ---- raw WebSocket (the floor) ----

// rawClient sends, per call, a capnweb push frame and a pull frame, and reads one reply (the
// echo server echoes the push and drops the pull). Replies come back in order; a FIFO of waiters
// matches them to calls, as capnweb's import table would.
type rawClient struct {
	c       *websocket.Conn
	mu      sync.Mutex
	next    int64
	waiters chan rawWaiter
	done    chan struct{}
	err     error
}

type rawWaiter struct {
	ch   chan error
	size int
}

func dialRaw(ctx context.Context, url string) (*rawClient, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20)
	r := &rawClient{c: c, waiters: make(chan rawWaiter, 4096), done: make(chan struct{})}
	go r.readLoop()
	return r, nil
}

func (r *rawClient) readLoop() {
	defer close(r.done)
	for {
		_, data, err := r.c.Read(context.Background())
		if err != nil {
			r.err = err
			return
		}
		select {
		case w := <-r.waiters:
			if len(data) != w.size {
				w.ch <- fmt.Errorf("raw echo: got %d bytes, want %d", len(data), w.size)
			} else {
				w.ch <- nil
			}
		default:
			r.err = errors.New("raw echo: unsolicited frame")
			r.c.CloseNow()
			return
		}
	}
}

func (r *rawClient) close() { r.c.Close(websocket.StatusNormalClosure, "") }

func (r *rawClient) call(ctx context.Context, push []byte) error {
	w := rawWaiter{ch: make(chan error, 1), size: len(push)}
	r.mu.Lock()
	r.next++
	pull := strconv.AppendInt([]byte(`["pull",`), r.next, 10)
	pull = append(pull, ']')
	r.waiters <- w
	err := r.c.Write(context.Background(), websocket.MessageText, push)
	if err == nil {
		err = r.c.Write(context.Background(), websocket.MessageText, pull)
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-w.ch:
		return err
	case <-r.done:
		return fmt.Errorf("raw echo: connection ended: %w", r.err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pushFrame is the frame capnweb sends for a call on import id.
func pushFrame(id int, method string, argsJSON string) []byte {
	return []byte(fmt.Sprintf(`["push",["pipeline",%d,[%q],%s]]`, id, method, argsJSON))
}

func (r *rawClient) op(name string) (callFunc, error) {
	var push []byte
	switch {
	case name == "echo":
		push = pushFrame(0, "echo", `["`+smallString+`"]`)
	case name == "add":
		push = pushFrame(0, "add", `[1,2]`)
	case name == "counter":
		push = pushFrame(1, "increment", `[1]`)
	case strings.HasPrefix(name, "echo:"):
		n, err := strconv.Atoi(name[len("echo:"):])
		if err != nil {
			return nil, err
		}
		push = pushFrame(0, "echo", `["`+payloadString(n)+`"]`)
	default:
		return nil, fmt.Errorf("unknown op %q", name)
	}
	return func(ctx context.Context) error { return r.call(ctx, push) }, nil
}

// connect opens a client to a server: raw frames for the echo floor, capnweb otherwise.
func connect(ctx context.Context, s *server) (client, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if s.Name == "echo" {
		return dialRaw(dctx, s.wsURL)
	}
	return dialCapnweb(dctx, s.wsURL)
}
