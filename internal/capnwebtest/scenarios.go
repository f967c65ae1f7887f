package capnwebtest

// The client-side behaviour suite: each scenario drives a server offering the test API through
// its main stub, and checks what comes back. The same scenarios run against the Go server over
// every transport (capnweb tests) and against the JS reference server (interop tests).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/google/go-cmp/cmp"
)

// Scenario is one behaviour check against a test-API server.
type Scenario struct {
	Name string
	Run  func(t *testing.T, api *capnweb.Stub)
}

// Scenarios returns the suite.
func Scenarios() []Scenario {
	return []Scenario{
		{"Calls", scenarioCalls},
		{"Callbacks", scenarioCallbacks},
		{"ReturnedTarget", scenarioReturnedTarget},
		{"Map", scenarioMap},
		{"Errors", scenarioErrors},
		{"Values", scenarioValues},
		{"Streams", scenarioStreams},
		{"Disposal", scenarioDisposal},
	}
}

// Await awaits p into a T, failing the test on error; it releases p.
func Await[T any](t *testing.T, p *capnweb.Promise) T {
	t.Helper()
	defer p.Release()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var v T
	if err := p.Decode(ctx, &v); err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	return v
}

// AwaitErr awaits p, which must fail, and returns the error; it releases p.
func AwaitErr(t *testing.T, p *capnweb.Promise) error {
	t.Helper()
	defer p.Release()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := p.Await(ctx)
	if err == nil {
		t.Fatalf("Await() succeeded, want an error")
	}
	return err
}

type notifier struct{ capnweb.Target }

func (notifier) Notify(msg string) string { return "ack(" + msg + ")" }

type collect struct {
	mu     sync.Mutex
	chunks []any
	closed bool
}

func (c *collect) Write(_ context.Context, v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chunks = append(c.chunks, v)
	return nil
}
func (c *collect) Close(context.Context) error { c.closed = true; return nil }
func (c *collect) Abort(error)                 {}

func scenarioCalls(t *testing.T, api *capnweb.Stub) {

	if got := Await[float64](t, api.Call("add", 1, 2)); got != 3 {
		t.Errorf("add(1, 2) = %v, want 3", got)
	}
	// Pipelining: authenticate → getUser → greet, one await.
	if got := Await[string](t, api.Call("authenticate", "secret").Call("getUser").Call("greet", "Hi")); got != "Hi, alice!" {
		t.Errorf("pipelined greet = %q, want %q", got, "Hi, alice!")
	}
	// A chain of dependent calls, each taking the previous result as its argument, one await.
	var acc any = 0
	var chain []*capnweb.Promise
	for range 5 {
		p := api.Call("add", acc, 1)
		chain = append(chain, p)
		acc = p
	}
	if got := Await[float64](t, chain[len(chain)-1]); got != 5 {
		t.Errorf("add(add(add(add(add(0, 1), 1), 1), 1), 1) = %v, want 5", got)
	}
	for _, p := range chain[:len(chain)-1] {
		p.Release()
	}
	// A promise as an argument: greetName(getProfile().name).
	prof := api.Call("getProfile")
	if got := Await[string](t, api.Call("greetName", prof.Get("name"))); got != "Hello, bob" {
		t.Errorf("greetName(getProfile().name) = %q, want %q", got, "Hello, bob")
	}
	if got := Await[string](t, prof.Get("tags", 1)); got != "y" {
		t.Errorf("getProfile().tags[1] = %q, want y", got)
	}
	prof.Release()
	// A method read as a property is a function stub.
	add := Await[*capnweb.Stub](t, api.Get("add"))
	if got := Await[float64](t, add.Invoke(20, 22)); got != 42 {
		t.Errorf("(api.add)(20, 22) = %v, want 42", got)
	}
	add.Release()
}

func scenarioCallbacks(t *testing.T, api *capnweb.Stub) {

	cb := func(n float64) float64 { return n * 10 }
	if got := Await[float64](t, api.Call("callMeBack", cb, 4)); got != 41 {
		t.Errorf("callMeBack(n*10, 4) = %v, want 41", got)
	}
	if got := Await[string](t, api.Call("notifyTarget", &notifier{}, "yo")); got != "client said: ack(yo)" {
		t.Errorf("notifyTarget = %q", got)
	}
	// A callback the server keeps and calls later.
	var mu sync.Mutex
	var events []string
	done := make(chan struct{})
	sub := func(ev string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		if len(events) == 2 {
			close(done)
		}
	}
	if got := Await[string](t, api.Call("subscribe", sub)); got != "subscribed" {
		t.Errorf("subscribe = %q", got)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("subscription events did not arrive")
	}
	if diff := cmp.Diff([]string{"event-1", "event-2"}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// A callback that fails: the error reaches the server's await and comes back.
	fail := func() (float64, error) { return 0, capnweb.NewError("TypeError", "client refused") }
	err := AwaitErr(t, api.Call("callMeBack", fail, 1))
	var ce *capnweb.Error
	if !errors.As(err, &ce) || ce.Name != "TypeError" || ce.Message != "client refused" {
		t.Errorf("callMeBack(failing) error = %v, want TypeError: client refused", err)
	}
}

func scenarioReturnedTarget(t *testing.T, api *capnweb.Stub) {
	counter := Await[*capnweb.Stub](t, api.Call("makeCounter", 5))
	if got := Await[float64](t, counter.Call("increment", 2)); got != 7 {
		t.Errorf("increment(2) = %v, want 7", got)
	}
	if got := Await[float64](t, counter.Get("value")); got != 7 {
		t.Errorf("value = %v, want 7", got)
	}
	// The stub passed back to its owner arrives as the server's own object.
	if got := Await[float64](t, api.Call("incrementCounter", counter, 1)); got != 8 {
		t.Errorf("incrementCounter(counter, 1) = %v, want 8", got)
	}
	// Pipelined: a counter that does not exist yet, passed as an argument.
	c2 := api.Call("makeCounter", 100)
	inc := c2.Call("increment", 3)
	if got := Await[float64](t, api.Call("incrementCounter", c2, 1)); got != 104 {
		t.Errorf("incrementCounter(pipelined counter) = %v, want 104", got)
	}
	if got := Await[float64](t, inc); got != 103 {
		t.Errorf("pipelined increment(3) = %v, want 103 (E-order)", got)
	}
	c2.Release()
	counter.Release()
}

func scenarioMap(t *testing.T, api *capnweb.Stub) {
	names := api.Call("listIds").Map(func(m *capnweb.Mapper, id *capnweb.Promise) any {
		return m.Capture(api).Call("getUserName", id)
	})
	if diff := cmp.Diff([]string{"user1", "user2", "user3"}, Await[[]string](t, names)); diff != "" {
		t.Errorf("listIds().map(getUserName) (-want +got):\n%s", diff)
	}
	type greeting struct {
		N        string `json:"n"`
		Greeting string `json:"greeting"`
	}
	gs := api.Call("listUsers").Map(func(m *capnweb.Mapper, u *capnweb.Promise) any {
		return map[string]any{"n": u.Get("name"), "greeting": m.Capture(api).Call("greetName", u.Get("name"))}
	})
	want := []greeting{{"ann", "Hello, ann"}, {"ben", "Hello, ben"}}
	if diff := cmp.Diff(want, Await[[]greeting](t, gs)); diff != "" {
		t.Errorf("listUsers().map(...) (-want +got):\n%s", diff)
	}
	// A stub used directly inside the mapper, with the element as an argument, is captured:
	// the call runs on the server for each element, as with m.Capture.
	direct := api.Call("listIds").Map(func(m *capnweb.Mapper, id *capnweb.Promise) any {
		return map[string]any{"id": id, "name": api.Call("getUserName", id)}
	})
	type idName struct {
		ID   float64 `json:"id"`
		Name string  `json:"name"`
	}
	if diff := cmp.Diff([]idName{{1, "user1"}, {2, "user2"}, {3, "user3"}}, Await[[]idName](t, direct)); diff != "" {
		t.Errorf("listIds().map(id => ({id, name: api.getUserName(id)})) (-want +got):\n%s", diff)
	}
	// A mapper that calls the client's own callback: the server answers with references to
	// the callback's results, which the client resolves itself.
	cb := capnweb.NewStub(func(id float64) string { return fmt.Sprintf("cb%v", id) })
	viaCallback := api.Call("listIds").Map(func(_ *capnweb.Mapper, id *capnweb.Promise) any {
		return cb.Invoke(id)
	})
	if diff := cmp.Diff([]string{"cb1", "cb2", "cb3"}, Await[[]string](t, viaCallback)); diff != "" {
		t.Errorf("listIds().map(id => cb(id)) (-want +got):\n%s", diff)
	}
	cb.Release()
	null := api.Call("maybeNull").Map(func(m *capnweb.Mapper, x *capnweb.Promise) any {
		return m.Capture(api).Call("getUserName", x)
	})
	if got := Await[any](t, null); got != nil {
		t.Errorf("maybeNull().map(...) = %v, want nil", got)
	}
}

func scenarioErrors(t *testing.T, api *capnweb.Stub) {
	err := AwaitErr(t, api.Call("fail"))
	var ce *capnweb.Error
	if !errors.As(err, &ce) {
		t.Fatalf("fail() error = %T, want *capnweb.Error", err)
	}
	if ce.Name != "RangeError" || ce.Message != "something broke" || ce.Code() != "E_BROKE" || ce.Stack != "" {
		t.Errorf("fail() error = %+v, want RangeError 'something broke' code E_BROKE, no stack", ce)
	}
	// A rejected promise as an argument rejects the call with its error.
	err = AwaitErr(t, api.Call("add", api.Call("fail"), 1))
	if !errors.As(err, &ce) || ce.Message != "something broke" {
		t.Errorf("add(fail(), 1) error = %v, want something broke", err)
	}
	err = AwaitErr(t, api.Call("noSuchMethod"))
	if !errors.As(err, &ce) || ce.Name != "TypeError" {
		t.Errorf("noSuchMethod() error = %v, want a TypeError", err)
	}
	err = AwaitErr(t, api.Call("authenticate", "wrong").Call("getUser"))
	if !errors.As(err, &ce) || ce.Message != "bad token" {
		t.Errorf("authenticate(wrong).getUser() error = %v, want bad token", err)
	}
	// Object.prototype names are not reachable.
	err = AwaitErr(t, api.Call("constructor"))
	if !errors.As(err, &ce) || ce.Name != "TypeError" {
		t.Errorf("constructor() error = %v, want TypeError", err)
	}
	if got := Await[any](t, api.Get("__proto__")); got != capnweb.Undefined {
		t.Errorf("api.__proto__ = %v, want undefined", got)
	}
}

func scenarioValues(t *testing.T, api *capnweb.Stub) {
	u, _ := url.Parse("https://example.com/a?b=1")
	big1, _ := new(big.Int).SetString("12345678901234567890", 10)
	date := time.UnixMilli(1700000000000)
	in := map[string]any{
		"s": "str", "n": 1.5, "t": true, "nul": nil, "und": capnweb.Undefined,
		"inf": math.Inf(1), "ninf": math.Inf(-1),
		"big":   big1,
		"date":  date,
		"bad":   capnweb.InvalidDate{},
		"bytes": []byte{1, 2, 3, 255},
		"i16":   capnweb.TypedBytes{Type: "Int16Array", Data: []byte{1, 0, 254, 255}},
		"arr":   []any{1.0, []any{2.0, "three"}, []any{}},
		"err":   capnweb.NewError("TypeError", "inner").WithProp("code", 7.0),
		"url":   u,
		"hdr":   http.Header{"X-A": {"1"}},
		// Lone surrogates (JS strings may hold them) as WTF-8, in a value and in a key.
		"lone":                "a\xed\xa0\x80b\xed\xbf\xbf",
		"lone\xed\xb0\x80key": "\xed\xa0\xbd",
	}
	got := Await[map[string]any](t, api.Call("echo", in))
	opts := cmp.Options{
		cmp.Comparer(func(a, b *big.Int) bool { return a.Cmp(b) == 0 }),
		cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		cmp.Comparer(func(a, b *url.URL) bool { return a.String() == b.String() }),
	}
	if diff := cmp.Diff(in, got, opts); diff != "" {
		t.Errorf("echo round trip (-want +got):\n%s", diff)
	}
	// An object keeps its key order through an echo, and through a target that kept it.
	ordered := capnweb.Object{{Key: "b", Value: 1.0}, {Key: "a", Value: 2.0},
		{Key: "nested", Value: capnweb.Object{{Key: "z", Value: 1.0}, {Key: "y", Value: 2.0}}}}
	if diff := cmp.Diff(any(ordered), Await[any](t, api.Call("echo", ordered))); diff != "" {
		t.Errorf("echo(ordered object) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(any(ordered), Await[any](t, api.Call("makeBox", ordered).Call("get"))); diff != "" {
		t.Errorf("makeBox(ordered object).get() (-want +got):\n%s", diff)
	}
	nan := Await[float64](t, api.Call("echo", math.NaN()))
	if !math.IsNaN(nan) {
		t.Errorf("echo(NaN) = %v", nan)
	}
}

func scenarioStreams(t *testing.T, api *capnweb.Stub) {
	// Client → server: a ReadableStream argument.
	rs := capnweb.NewReadableStream(Seq(1, 2, 3))
	if got := Await[float64](t, api.Call("sumStream", rs)); got != 6 {
		t.Errorf("sumStream(1,2,3) = %v, want 6", got)
	}
	// Server → client: the server writes into our WritableStream.
	sink := &collect{}
	if got := Await[string](t, api.Call("writeTo", capnweb.NewWritableStream(sink))); got != "wrote" {
		t.Errorf("writeTo = %q", got)
	}
	if diff := cmp.Diff([]any{"chunk-a", "chunk-b"}, sink.chunks); diff != "" || !sink.closed {
		t.Errorf("sink got %v closed=%v (-want +got):\n%s", sink.chunks, sink.closed, diff)
	}
	// Server → client: a returned ReadableStream.
	stream := Await[*capnweb.ReadableStream](t, api.Call("makeStream"))
	var got []any
	for v, err := range stream.All(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if diff := cmp.Diff([]any{"s0", "s1", "s2"}, got); diff != "" {
		t.Errorf("makeStream chunks (-want +got):\n%s", diff)
	}
	// A long stream (~330 KB of messages) fills the flow-control window (256 KiB to start).
	many := capnweb.NewReadableStream(func(yield func(any, error) bool) {
		for i := range 6000 {
			if !yield(float64(i), nil) {
				return
			}
		}
	})
	if got := Await[float64](t, api.Call("sumStream", many)); got != 6000*5999/2 {
		t.Errorf("sumStream(0..5999) = %v, want %v", got, 6000*5999/2)
	}
}

// scenarioDisposal: a target a call returned is disposed by the server once the client has
// released every reference to it — the call's promise, and the stub it pulled — whether the
// client pipelined on it, pulled it, or never touched it; once.
func scenarioDisposal(t *testing.T, api *capnweb.Stub) {
	tok := fmt.Sprintf("go-%d", time.Now().UnixNano())
	pipelined := api.Call("makeDisposable", tok+"/pipelined")
	if got := Await[string](t, pipelined.Call("ping")); got != "pong "+tok+"/pipelined" {
		t.Errorf("makeDisposable().ping() = %q", got)
	}
	untouched := api.Call("makeDisposable", tok+"/untouched")
	pulled := api.Call("makeDisposable", tok+"/pulled")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var stub *capnweb.Stub
	if err := pulled.Decode(ctx, &stub); err != nil {
		t.Fatal(err)
	}
	if got := Await[string](t, stub.Call("ping")); got != "pong "+tok+"/pulled" {
		t.Errorf("(await makeDisposable()).ping() = %q", got)
	}
	for _, n := range []string{"pipelined", "untouched", "pulled"} {
		if got := Await[float64](t, api.Call("disposeCount", tok+"/"+n)); got != 0 {
			t.Errorf("%s disposed %v times while held", n, got)
		}
	}
	pipelined.Release()
	untouched.Release()
	pulled.Release()
	stub.Release()
	for _, n := range []string{"pipelined", "untouched", "pulled"} {
		WaitDisposed(t, api, tok+"/"+n)
	}
}

// WaitDisposed polls the server (up to a generous 5 s: releases and session ends are handled
// asynchronously) until the Disposable named token was disposed, and fails unless it was
// disposed exactly once.
func WaitDisposed(t *testing.T, api *capnweb.Stub, token string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := Await[float64](t, api.Call("disposeCount", token))
		if n > 0 || time.Now().After(deadline) {
			if n != 1 {
				t.Errorf("%s disposed %v times, want exactly once", token, n)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Maps returns v with every capnweb.Object in it, at any depth, made a map[string]any, for
// tests that read received values by key; other values are as they are.
func Maps(v any) any {
	switch x := v.(type) {
	case capnweb.Object:
		m := make(map[string]any, len(x))
		for _, p := range x {
			m[p.Key] = Maps(p.Value)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Maps(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Maps(e)
		}
		return out
	}
	return v
}
