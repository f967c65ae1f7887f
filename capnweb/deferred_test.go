package capnweb_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

// jobs answers its calls with Deferreds that the test resolves.
type jobs struct {
	capnweb.Target
	queued chan *capnweb.Deferred
	mu     sync.Mutex
	kept   *capnweb.Deferred
}

func newJobs() *jobs { return &jobs{queued: make(chan *capnweb.Deferred, 16)} }

// Later returns a Deferred the test resolves (take it from queued).
func (j *jobs) Later(ctx context.Context) *capnweb.Deferred {
	d := capnweb.NewDeferred(ctx)
	j.queued <- d
	return d
}

// Now resolves its Deferred before returning it.
func (j *jobs) Now(ctx context.Context, v float64) *capnweb.Deferred {
	d := capnweb.NewDeferred(ctx)
	d.Resolve(v, nil)
	return d
}

// Keep returns a Deferred and keeps it; Again returns the kept one a second time.
func (j *jobs) Keep(ctx context.Context) *capnweb.Deferred {
	d := capnweb.NewDeferred(ctx)
	j.mu.Lock()
	j.kept = d
	j.mu.Unlock()
	d.Resolve("kept", nil)
	return d
}

func (j *jobs) Again() *capnweb.Deferred {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.kept
}

func (j *jobs) Fast() string { return "fast" }

func (j *jobs) Echo(v any) any { return v }

// take returns the next Deferred a Later call made.
func (j *jobs) take(t *testing.T) *capnweb.Deferred {
	t.Helper()
	select {
	case d := <-j.queued:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no call to later arrived")
		return nil
	}
}

func jobsPair(t *testing.T, m mode, j *jobs, opts *capnweb.Options) *capnweb.Session {
	t.Helper()
	switch m {
	case pipeMode:
		a, b := capnweb.Pipe()
		srv := capnweb.NewSession(a, j, opts)
		t.Cleanup(func() { srv.Close() })
		c := capnweb.NewSession(b, nil, nil)
		t.Cleanup(func() { c.Close() })
		return c
	default:
		var ho *capnweb.HandlerOptions
		if opts != nil {
			ho = &capnweb.HandlerOptions{Session: *opts}
		}
		h := capnweb.NewHandler(func(*http.Request) (any, error) { return j, nil }, ho)
		ts := httptest.NewServer(h)
		t.Cleanup(func() { h.Close(); ts.Close() })
		if m == "batch" {
			return capnweb.NewBatchSession(ts.URL, nil, nil)
		}
		c, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// A Deferred lets the calls behind it run while it waits, settles its call from the goroutine
// that resolves it (with a value, a target that pipelined calls then reach, or an error), and
// may be resolved before its method returns.
func TestDeferred(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			j := newJobs()
			main := jobsPair(t, m, j, nil).Main()

			later := main.Call("later")
			defer later.Release()
			d := j.take(t)
			// The session is not held up: a call sent after it is answered first.
			if got := capnwebtest.Await[string](t, main.Call("fast")); got != "fast" {
				t.Errorf("fast = %q", got)
			}
			go d.Resolve(map[string]any{"answer": 42.0}, nil)
			if got := capnwebtest.Await[map[string]any](t, later); got["answer"] != 42.0 {
				t.Errorf("later = %v, want {answer: 42}", got)
			}

			// A pipelined call on a pending Deferred's result waits for it.
			counter := main.Call("later")
			inc := counter.Call("increment", 5)
			d = j.take(t)
			time.AfterFunc(10*time.Millisecond, func() { d.Resolve(&capnwebtest.Counter{}, nil) })
			if got := capnwebtest.Await[float64](t, inc); got != 5 {
				t.Errorf("increment on the resolved counter = %v, want 5", got)
			}
			counter.Release()

			// A call whose argument is a pending Deferred's result runs once it resolves.
			arg := main.Call("later")
			echoed := main.Call("echo", arg)
			d = j.take(t)
			time.AfterFunc(10*time.Millisecond, func() { d.Resolve("argument", nil) })
			if got := capnwebtest.Await[string](t, echoed); got != "argument" {
				t.Errorf("echo(later()) = %q, want the resolved argument", got)
			}
			arg.Release()

			// An error reaches the caller as the method's own would, properties included.
			failed := main.Call("later")
			go j.take(t).Resolve(nil, &capnweb.Error{Name: "RangeError", Message: "no such job", Props: map[string]any{"code": 7.0}})
			err := capnwebtest.AwaitErr(t, failed)
			var ce *capnweb.Error
			if !errors.As(err, &ce) || ce.Name != "RangeError" || ce.Message != "no such job" || ce.Props["code"] != 7.0 {
				t.Errorf("later = %v, want RangeError: no such job (code 7)", err)
			}
			failed.Release()

			if got := capnwebtest.Await[float64](t, main.Call("now", 3)); got != 3 {
				t.Errorf("now = %v, want 3 (resolved before the method returned)", got)
			}

			// A second Resolve changes nothing.
			twice := main.Call("later")
			d = j.take(t)
			d.Resolve("first", nil)
			d.Resolve("second", nil)
			if got := capnwebtest.Await[string](t, twice); got != "first" {
				t.Errorf("resolved twice = %q, want the first", got)
			}
			twice.Release()

			// Returned by two calls: the second call fails.
			if got := capnwebtest.Await[string](t, main.Call("keep")); got != "kept" {
				t.Errorf("keep = %q", got)
			}
			if err := capnwebtest.AwaitErr(t, main.Call("again")); !strings.Contains(err.Error(), "internal error") {
				t.Errorf("again = %v, want an internal error", err)
			}
		})
	}
}

// In an HTTP batch, the response waits for the Deferred.
func TestDeferredBatch(t *testing.T) {
	t.Parallel()
	j := newJobs()
	s := jobsPair(t, "batch", j, nil)
	defer s.Close()
	later := s.Main().Call("later")
	fast := s.Main().Call("fast")
	go func() {
		d := j.take(t)
		time.Sleep(5 * time.Millisecond)
		d.Resolve("done", nil)
	}()
	if got := capnwebtest.Await[string](t, later); got != "done" {
		t.Errorf("later = %q", got)
	}
	if got := capnwebtest.Await[string](t, fast); got != "fast" {
		t.Errorf("fast = %q", got)
	}
}

// A Deferred counts toward MaxPendingCalls until it is resolved.
func TestDeferredPendingLimit(t *testing.T) {
	t.Parallel()
	opts := &capnweb.Options{Limits: capnweb.Limits{MaxPendingCalls: 2}}

	j := newJobs()
	main := jobsPair(t, wsMode, j, opts).Main()
	for i := range 5 { // resolved ones give their slot back
		p := main.Call("later")
		j.take(t).Resolve(float64(i), nil)
		if got := capnwebtest.Await[float64](t, p); got != float64(i) {
			t.Fatalf("later #%d = %v", i, got)
		}
		p.Release()
	}

	j = newJobs()
	s := jobsPair(t, wsMode, j, opts)
	a, b := s.Main().Call("later"), s.Main().Call("later")
	j.take(t)
	j.take(t)
	err := capnwebtest.AwaitErr(t, s.Main().Call("fast"))
	if !strings.Contains(err.Error(), "pending calls") {
		t.Errorf("a third call with two Deferreds pending: %v, want the pending-calls limit", err)
	}
	a.Release()
	b.Release()
}

// Resolving a Deferred after its session ended does nothing harmful.
func TestDeferredAfterClose(t *testing.T) {
	t.Parallel()
	j := newJobs()
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, j, nil)
	c := capnweb.NewSession(b, nil, nil)
	p := c.Main().Call("later")
	d := j.take(t)
	c.Close()
	srv.Close()
	select {
	case <-srv.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server session did not end")
	}
	d.Resolve("late", nil)
	if _, err := p.Await(t.Context()); err == nil {
		t.Error("the call of a closed session succeeded")
	}
}
