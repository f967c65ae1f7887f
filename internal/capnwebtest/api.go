// Package capnwebtest is the golden test API (the one the JS reference server in interop/
// exposes), implemented in Go: the main object of the Go interop and benchmark servers.
package capnwebtest

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// API is the main object. Subscriptions run in goroutines tracked by Wait.
type API struct {
	capnweb.Target
	wg sync.WaitGroup
}

// Wait waits for background callbacks started by Subscribe.
func (a *API) Wait() { a.wg.Wait() }

// Profile is what GetProfile returns.
type Profile struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// User is a target returned by Authed.GetUser.
type User struct {
	capnweb.Target
	name string
}

func (u *User) Greet(greeting string) string { return fmt.Sprintf("%s, %s!", greeting, u.name) }

// Authed is what Authenticate returns.
type Authed struct{ capnweb.Target }

func (Authed) GetUser() *User { return &User{name: "alice"} }

// Counter is a target with a getter.
type Counter struct {
	capnweb.Target
	mu       sync.Mutex
	n        float64
	Disposed chan struct{}
}

func (c *Counter) RPCProperties() []string { return []string{"value"} }

func (c *Counter) Increment(by float64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += by
	return c.n
}

func (c *Counter) Value() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *Counter) Dispose() {
	if c.Disposed != nil {
		close(c.Disposed)
	}
}

// Disposable is a target that counts its disposals in a process-wide table, by token, so that
// a later session can ask whether the session that held it disposed it (DisposeCount).
type Disposable struct {
	capnweb.Target
	token string
}

func (d *Disposable) Ping() string { return "pong " + d.token }

func (d *Disposable) Dispose() {
	disposals.Lock()
	defer disposals.Unlock()
	if disposals.n == nil {
		disposals.n = map[string]int{}
	}
	disposals.n[d.token]++
}

var disposals struct {
	sync.Mutex
	n map[string]int
}

// Box keeps a value and gives it back.
type Box struct {
	capnweb.Target
	value any
}

func (b *Box) Get() any { return b.value }

// MakeBox returns a Box keeping value (whose stubs it does not keep: values only).
func (a *API) MakeBox(value any) *Box { return &Box{value: value} }

// MakeDisposable returns a new Disposable named token.
func (a *API) MakeDisposable(token string) *Disposable { return &Disposable{token: token} }

// DisposeCount says how many times the Disposable named token was disposed.
func (a *API) DisposeCount(token string) float64 {
	disposals.Lock()
	defer disposals.Unlock()
	return float64(disposals.n[token])
}

func (a *API) Add(x, y float64) float64 { return x + y }

func (a *API) Authenticate(token string) (*Authed, error) {
	if token != "secret" {
		return nil, capnweb.NewError("Error", "bad token")
	}
	return &Authed{}, nil
}

func (a *API) GetProfile() Profile { return Profile{Name: "bob", Tags: []string{"x", "y"}} }

func (a *API) GreetName(name string) string { return "Hello, " + name }

func (a *API) CallMeBack(ctx context.Context, cb *capnweb.Stub, n float64) (float64, error) {
	p := cb.Invoke(n)
	defer p.Release()
	var r float64
	if err := p.Decode(ctx, &r); err != nil {
		return 0, err
	}
	return r + 1, nil
}

func (a *API) NotifyTarget(ctx context.Context, t *capnweb.Stub, msg string) (string, error) {
	p := t.Call("notify", msg)
	defer p.Release()
	var r string
	if err := p.Decode(ctx, &r); err != nil {
		return "", err
	}
	return "client said: " + r, nil
}

// Subscribe keeps the callback and calls it twice after returning.
func (a *API) Subscribe(ctx context.Context, cb *capnweb.Stub) string {
	kept := cb.Dup()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer kept.Release()
		for _, ev := range []string{"event-1", "event-2"} {
			p := kept.Invoke(ev)
			_, err := p.Await(ctx)
			p.Release()
			if err != nil {
				return
			}
		}
	}()
	return "subscribed"
}

func (a *API) MakeCounter(n float64) *Counter { return &Counter{n: n} }

func (a *API) IncrementCounter(ctx context.Context, c *capnweb.Stub, by float64) (any, error) {
	p := c.Call("increment", by)
	defer p.Release()
	return p.Await(ctx)
}

func (a *API) ListIds() []float64 { return []float64{1, 2, 3} }

func (a *API) GetUserName(id float64) string { return fmt.Sprintf("user%v", id) }

func (a *API) ListUsers() []map[string]any {
	return []map[string]any{{"name": "ann"}, {"name": "ben"}}
}

func (a *API) MaybeNull() any { return nil }

func (a *API) Fail() error {
	return capnweb.NewError("RangeError", "something broke").WithProp("code", "E_BROKE")
}

func (a *API) Echo(v any) any { return v }

func (a *API) SumStream(ctx context.Context, rs *capnweb.ReadableStream) (float64, error) {
	sum := 0.0
	for v, err := range rs.All(ctx) {
		if err != nil {
			return 0, err
		}
		f, _ := v.(float64)
		sum += f
	}
	return sum, nil
}

func (a *API) WriteTo(ctx context.Context, w *capnweb.WritableStream) (string, error) {
	for _, c := range []string{"chunk-a", "chunk-b"} {
		if err := w.Write(ctx, c); err != nil {
			return "", err
		}
	}
	if err := w.Close(ctx); err != nil {
		return "", err
	}
	return "wrote", nil
}

func (a *API) MakeStream() *capnweb.ReadableStream {
	return capnweb.NewReadableStream(func(yield func(any, error) bool) {
		for _, s := range []string{"s0", "s1", "s2"} {
			if !yield(s, nil) {
				return
			}
		}
	})
}

// PokeCallback calls the callback without waiting for its answer (in a batch, the answer can
// never come back).
func (a *API) PokeCallback(cb *capnweb.Stub) string {
	cb.Invoke("poke").Release()
	return "poked"
}

func (a *API) SumBytes(b []byte) float64 { return float64(len(b)) }

// CountBytes reads a stream of byte chunks and returns how many bytes it carried (Go tests only).
func (a *API) CountBytes(ctx context.Context, rs *capnweb.ReadableStream) (float64, error) {
	b, err := rs.Collect(ctx)
	return float64(len(b)), err
}

func (a *API) Delay(ctx context.Context, ms float64) error {
	select {
	case <-time.After(time.Duration(ms * float64(time.Millisecond))):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Seq is a helper for tests that need a ReadableStream of numbers.
func Seq(nums ...float64) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for _, n := range nums {
			if !yield(n, nil) {
				return
			}
		}
	}
}
