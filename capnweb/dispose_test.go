package capnweb_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
)

// disposals counts Dispose calls per target name.
type disposals struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *disposals) add(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[name]++
}

func (d *disposals) count(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[name]
}

// waitDisposed waits (up to a generous 5 s: releases travel and are handled asynchronously)
// until name was disposed, then fails if it was disposed more than once.
func (d *disposals) waitDisposed(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for d.count(name) == 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if n := d.count(name); n != 1 {
		t.Errorf("%s disposed %d times, want exactly once", name, n)
	}
}

// notDisposed fails if name was disposed, after letting in-flight messages land.
func (d *disposals) notDisposed(t *testing.T, name string) {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	if n := d.count(name); n != 0 {
		t.Errorf("%s disposed %d times while the peer still held it", name, n)
	}
}

// disposable is a target that records its disposal.
type disposable struct {
	capnweb.Target
	name string
	d    *disposals
}

func (x *disposable) Name() string { return x.name }
func (x *disposable) Dispose()     { x.d.add(x.name) }

// factory returns disposable targets in the shapes a method's result may hold them.
type factory struct {
	capnweb.Target
	d    *disposals
	mu   sync.Mutex
	kept *disposable
}

func (f *factory) mk(name string) *disposable { return &disposable{name: name, d: f.d} }

func (f *factory) Make(name string) *disposable { return f.mk(name) }

func (f *factory) MakeIn(name string) map[string]any {
	return map[string]any{"inner": f.mk(name), "n": 1}
}

type holding struct {
	Inner *disposable `json:"inner"`
	Note  string      `json:"note"`
}

func (f *factory) MakeStruct(name string) holding { return holding{Inner: f.mk(name), Note: "x"} }

func (f *factory) MakeList(a, b string) []*disposable { return []*disposable{f.mk(a), f.mk(b)} }

// Keep returns the same target every time (one the server keeps).
func (f *factory) Keep() *disposable {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kept == nil {
		f.kept = f.mk("kept")
	}
	return f.kept
}

// awaitKeep is capnwebtest.Await without releasing p.
func awaitKeep[T any](t *testing.T, p *capnweb.Promise) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var v T
	if err := p.Decode(ctx, &v); err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	return v
}

func disposeEnv(t *testing.T) (*capnweb.Session, *capnweb.Session, *disposals) {
	t.Helper()
	d := &disposals{}
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, &factory{d: d}, nil)
	cli := capnweb.NewSession(b, nil, nil)
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return srv, cli, d
}

// TestDisposeOnRelease: a target a call returned is disposed once the peer lets go of every
// reference to it — the call's promise and any stub it pulled — whether it was pulled,
// only pipelined on, or never touched, and wherever in the result it sits. JS disposes it
// then too (the result payload owns the targets in it).
func TestDisposeOnRelease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// use calls the factory and uses the result; it returns what it holds, which the test
		// releases after checking the target was not disposed meanwhile.
		use func(t *testing.T, api *capnweb.Stub) []interface{ Release() }
	}{
		{"pipelined only", func(t *testing.T, api *capnweb.Stub) []interface{ Release() } {
			p := api.Call("make", "pipelined only")
			if got := capnwebtest.Await[string](t, p.Call("name")); got != "pipelined only" {
				t.Errorf("make().name() = %q", got)
			}
			return []interface{ Release() }{p}
		}},
		{"never touched", func(t *testing.T, api *capnweb.Stub) []interface{ Release() } {
			p := api.Call("make", "never touched")
			capnwebtest.Await[float64](t, api.Call("makeIn", "other").Get("n")) // the call ran
			return []interface{ Release() }{p}
		}},
		{"pulled and pipelined", func(t *testing.T, api *capnweb.Stub) []interface{ Release() } {
			p := api.Call("make", "pulled and pipelined")
			st := awaitKeep[*capnweb.Stub](t, p)
			capnwebtest.Await[string](t, p.Call("name"))
			capnwebtest.Await[string](t, st.Call("name"))
			return []interface{ Release() }{st, p}
		}},
		{"in an object", func(t *testing.T, api *capnweb.Stub) []interface{ Release() } {
			p := api.Call("makeIn", "in an object")
			inner := p.Get("inner")
			capnwebtest.Await[string](t, inner.Call("name"))
			return []interface{ Release() }{inner, p}
		}},
		{"in a struct", func(t *testing.T, api *capnweb.Stub) []interface{ Release() } {
			p := api.Call("makeStruct", "in a struct")
			inner := p.Get("inner")
			capnwebtest.Await[string](t, inner.Call("name"))
			return []interface{ Release() }{inner, p}
		}},
		{"in a list, mapped", func(t *testing.T, api *capnweb.Stub) []interface{ Release() } {
			p := api.Call("makeList", "in a list, mapped", "second")
			names := p.Map(func(m *capnweb.Mapper, x *capnweb.Promise) any { return x.Call("name") })
			if got := capnwebtest.Await[[]string](t, names); len(got) != 2 || got[0] != "in a list, mapped" {
				t.Errorf("makeList().map(name) = %q", got)
			}
			return []interface{ Release() }{names, p}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, cli, d := disposeEnv(t)
			held := tt.use(t, cli.Main())
			d.notDisposed(t, tt.name)
			for _, h := range held {
				h.Release()
			}
			d.waitDisposed(t, tt.name)
			checkClean(t, cli)
			checkClean(t, srv)
			if n := srv.HeldTargets(); n != 0 {
				t.Errorf("server holds %d target references after the peer released everything", n)
			}
		})
	}
}

// TestDisposeOnSessionEnd: a target the session still holds when it ends is disposed then,
// exactly once, however it was held.
func TestDisposeOnSessionEnd(t *testing.T) {
	t.Parallel()
	_, cli, d := disposeEnv(t)
	api := cli.Main()
	// The promises are kept (a forgotten one would be released when collected): only the
	// session's end lets go of them.
	untouched := api.Call("make", "untouched")
	pipelined := api.Call("make", "pipelined")
	capnwebtest.Await[string](t, pipelined.Call("name"))
	pulled := api.Call("make", "pulled")
	awaitKeep[*capnweb.Stub](t, pulled)
	nested := api.Call("makeIn", "nested")
	capnwebtest.Await[string](t, nested.Get("inner").Call("name"))
	inStruct := api.Call("makeStruct", "in a struct")
	capnwebtest.Await[string](t, inStruct.Get("inner").Call("name"))
	names := []string{"untouched", "pipelined", "pulled", "nested", "in a struct"}
	for _, n := range names {
		d.notDisposed(t, n)
	}
	cli.Close()
	for _, n := range names {
		d.waitDisposed(t, n)
	}
	runtime.KeepAlive([]*capnweb.Promise{untouched, pipelined, pulled, nested, inStruct})
}

// TestDisposeKeptTarget: a target returned by several calls is disposed once, when the last
// of them (and every stub to it) is released.
func TestDisposeKeptTarget(t *testing.T) {
	t.Parallel()
	_, cli, d := disposeEnv(t)
	api := cli.Main()
	p1 := api.Call("keep")
	p2 := api.Call("keep")
	st := awaitKeep[*capnweb.Stub](t, p2)
	capnwebtest.Await[string](t, p1.Call("name"))
	p1.Release()
	p2.Release()
	d.notDisposed(t, "kept")
	st.Release()
	d.waitDisposed(t, "kept")
	d.notDisposed(t, "never") // and nothing more after
	cli.Close()
	time.Sleep(20 * time.Millisecond)
	if n := d.count("kept"); n != 1 {
		t.Errorf("kept disposed %d times after the session ended, want once", n)
	}
}

// TestDisposeAtBatchEnd: a target a batch's call returned, only pipelined on, is disposed when
// the batch (its session) ends.
func TestDisposeAtBatchEnd(t *testing.T) {
	t.Parallel()
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	tok := fmt.Sprintf("batch-end-%d", time.Now().UnixNano())
	s := capnweb.NewBatchSession(ts.URL, nil, nil)
	d := s.Main().Call("makeDisposable", tok)
	if got := capnwebtest.Await[string](t, d.Call("ping")); got != "pong "+tok {
		t.Errorf("makeDisposable().ping() = %q", got)
	}
	d.Release()
	s.Close()
	// The server ends a batch's session before it answers: the disposal is done by now.
	check := capnweb.NewBatchSession(ts.URL, nil, nil)
	defer check.Close()
	if n := capnwebtest.Await[float64](t, check.Main().Call("disposeCount", tok)); n != 1 {
		t.Errorf("disposed %v times after the batch ended, want once", n)
	}
}
