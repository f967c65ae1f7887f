package capnweb_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/google/go-cmp/cmp"
)

// The transport matrix: every behaviour test runs over each of these.
type mode string

const (
	pipeMode mode = "pipe"
	wsMode   mode = "websocket"
)

var modes = []mode{pipeMode, wsMode}

// env is a Go client session connected to a Go server session offering the test API.
type env struct {
	client *capnweb.Session
	server func() *capnweb.Session // the server's session (pipe mode only)
	api    *capnwebtest.API
}

func newEnv(t *testing.T, m mode, clientMain any) *env {
	t.Helper()
	api := &capnwebtest.API{}
	e := &env{api: api}
	switch m {
	case pipeMode:
		a, b := capnweb.Pipe()
		srv := capnweb.NewSession(a, api, nil)
		e.client = capnweb.NewSession(b, clientMain, nil)
		e.server = func() *capnweb.Session { return srv }
		t.Cleanup(func() { srv.Close() })
	case wsMode:
		h := capnweb.NewHandler(func(*http.Request) (any, error) { return api, nil }, nil)
		ts := httptest.NewServer(h)
		t.Cleanup(func() { h.Close(); ts.Close() })
		s, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http")+"/", clientMain, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.client = s
	}
	t.Cleanup(func() { e.client.Close(); api.Wait() })
	return e
}

// checkClean fails if the client's tables hold more than the main entries once references are
// released (the peer's release messages may take a moment to arrive).
func checkClean(t *testing.T, s *capnweb.Session) {
	t.Helper()
	want := capnweb.Stats{Imports: 1, Exports: 1}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := s.Stats()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			imp, exp := s.TableIDs()
			t.Errorf("Session.Stats() = %+v, want %+v (an entry leaked: imports %v, exports %v)", got, want, imp, exp)
			return
		}
		// Promises the test dropped without Release (pipelined intermediates) are released
		// when collected.
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// TestScenarios runs the client-side behaviour suite against the Go server over each
// transport, and checks that no table entry is left behind.
func TestScenarios(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		for _, sc := range capnwebtest.Scenarios() {
			t.Run(string(m)+"/"+sc.Name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, m, nil)
				sc.Run(t, e.client.Main())
				e.api.Wait()
				checkClean(t, e.client)
			})
		}
	}
}

func TestDisposeHook(t *testing.T) {
	t.Parallel()
	a, b := capnweb.Pipe()
	c := &capnwebtest.Counter{Disposed: make(chan struct{})}
	srv := capnweb.NewSession(a, &holder{c: c}, nil)
	defer srv.Close()
	cli := capnweb.NewSession(b, nil, nil)
	defer cli.Close()
	st := capnwebtest.Await[*capnweb.Stub](t, cli.Main().Call("get"))
	st2 := capnwebtest.Await[*capnweb.Stub](t, cli.Main().Call("get"))
	st.Release()
	select {
	case <-c.Disposed:
		t.Fatal("Dispose ran while the peer still held a reference")
	case <-time.After(50 * time.Millisecond):
	}
	st2.Release()
	select {
	case <-c.Disposed:
	case <-time.After(5 * time.Second):
		t.Fatal("Dispose did not run after the peer released its last reference")
	}
}

type holder struct {
	capnweb.Target
	c *capnwebtest.Counter
}

func (h *holder) Get() *capnwebtest.Counter { return h.c }

// A plain Go error never reaches the wire with its text.
func TestErrorRedaction(t *testing.T) {
	t.Parallel()
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, &leaky{}, nil)
	defer srv.Close()
	cli := capnweb.NewSession(b, nil, nil)
	defer cli.Close()
	err := capnwebtest.AwaitErr(t, cli.Main().Call("query"))
	if strings.Contains(err.Error(), "password") || !strings.Contains(err.Error(), "internal error") {
		t.Errorf("query() error = %q, want the generic internal error", err)
	}
	err = capnwebtest.AwaitErr(t, cli.Main().Call("panics"))
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("panics() error = %q leaks the panic value", err)
	}
	if got := capnwebtest.Await[float64](t, cli.Main().Call("ok")); got != 1 {
		t.Errorf("ok() after a panic = %v, want 1 (session still up)", got)
	}
}

// An argument that does not convert fails the call with a TypeError naming it, an ArgError
// that Options.SendError may map; the session goes on.
func TestArgError(t *testing.T) {
	t.Parallel()
	for _, mapped := range []bool{false, true} {
		a, b := capnweb.Pipe()
		var opts *capnweb.Options
		if mapped {
			opts = &capnweb.Options{SendError: func(err error) *capnweb.Error {
				var ae *capnweb.ArgError
				if errors.As(err, &ae) {
					return capnweb.NewError("RangeError", fmt.Sprintf("bad argument #%d", ae.Arg)).WithProp("code", 22)
				}
				return nil
			}}
		}
		srv := capnweb.NewSession(a, &leaky{}, opts)
		cli := capnweb.NewSession(b, nil, nil)
		err := capnwebtest.AwaitErr(t, cli.Main().Call("twice", "two"))
		var ce *capnweb.Error
		switch {
		case !errors.As(err, &ce):
			t.Errorf("twice(\"two\") error = %v, want a *capnweb.Error", err)
		case !mapped && (ce.Name != "TypeError" || !strings.HasPrefix(ce.Message, "argument 1: ")):
			t.Errorf("twice(\"two\") error = %s: %s, want a TypeError about argument 1", ce.Name, ce.Message)
		case mapped && (ce.Name != "RangeError" || ce.Message != "bad argument #1" || ce.Props["code"] != 22.0):
			t.Errorf("twice(\"two\") with SendError = %s: %s %v, want the mapped error", ce.Name, ce.Message, ce.Props)
		}
		if got := capnwebtest.Await[float64](t, cli.Main().Call("twice", 2)); got != 4 {
			t.Errorf("twice(2) after the failure = %v, want 4", got)
		}
		cli.Close()
		srv.Close()
	}
	// A Go caller of a local stub gets the ArgError, which is also the TypeError.
	st := capnweb.NewStub(&leaky{})
	defer st.Release()
	err := capnwebtest.AwaitErr(t, st.Call("twice", "two"))
	var ae *capnweb.ArgError
	var ce *capnweb.Error
	if !errors.As(err, &ae) || ae.Arg != 1 || !errors.As(err, &ce) || ce.Name != "TypeError" {
		t.Errorf("local twice(\"two\") error = %v, want an ArgError for argument 1 that is also a TypeError", err)
	}
}

type leaky struct{ capnweb.Target }

func (leaky) Twice(n float64) float64 { return 2 * n }

func (leaky) Query() error { return errors.New("dial db: password=hunter2 refused") }
func (leaky) Panics() int  { panic("secret state") }
func (leaky) Ok() int      { return 1 }

func TestBatch(t *testing.T) {
	t.Parallel()
	api := &capnwebtest.API{}
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return api, nil }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })

	s := capnweb.NewBatchSession(ts.URL, nil, nil)
	defer s.Close()
	main := s.Main()
	sum := main.Call("add", 1, 2)
	greet := main.Call("authenticate", "secret").Call("getUser").Call("greet", "Hi")
	counter := main.Call("makeCounter", 2)
	inc := counter.Call("increment", 3)
	inc2 := main.Call("incrementCounter", counter, 4)
	pokes := make(chan string, 1)
	poked := main.Call("pokeCallback", func(s string) { pokes <- s })
	if got := capnwebtest.Await[float64](t, sum); got != 3 {
		t.Errorf("add = %v", got)
	}
	if got := capnwebtest.Await[string](t, greet); got != "Hi, alice!" {
		t.Errorf("greet = %q", got)
	}
	if a, b := capnwebtest.Await[float64](t, inc), capnwebtest.Await[float64](t, inc2); a != 5 || b != 9 {
		t.Errorf("counter in one batch = %v, %v; want 5, 9 (E-order)", a, b)
	}
	if got := capnwebtest.Await[string](t, poked); got != "poked" {
		t.Errorf("pokeCallback = %q", got)
	}
	select { // the server's call arrives in the batch response; our callback runs on its own
	case got := <-pokes:
		if got != "poke" {
			t.Errorf("callback called with %q, want poke", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the server's call to our callback did not arrive in the batch response")
	}
	counter.Release()
	// After the batch, the session is over.
	if err := capnwebtest.AwaitErr(t, main.Call("add", 1, 1)); err == nil {
		t.Error("a call after the batch ended succeeded")
	}
}

// A batch server never waits for a client callback: awaiting one fails at once.
func TestBatchServerDoesNotAwaitCallbacks(t *testing.T) {
	t.Parallel()
	api := &capnwebtest.API{}
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return api, nil }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	s := capnweb.NewBatchSession(ts.URL, nil, nil)
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	p := s.Main().Call("callMeBack", func(n float64) float64 { return n }, 1)
	defer p.Release()
	if _, err := p.Await(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("callMeBack in a batch: err = %v (ctx %v), want a prompt error", err, ctx.Err())
	}
}

func TestBatchHTTP(t *testing.T) {
	t.Parallel()
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	tests := []struct {
		name, method, body string
		wantCode           int
		wantBody           string
	}{
		{"simple", "POST", `["push",["pipeline",0,["add"],[1,2]]]` + "\n" + `["pull",1]`, 200, `["resolve",1,3]`},
		{"empty", "POST", "", 200, ""},
		{"no pull", "POST", `["push",["pipeline",0,["add"],[1,2]]]`, 200, ""},
		{"two results, no trailing newline", "POST", `["push",["pipeline",0,["getProfile"],[]]]` + "\n" + `["push",["pipeline",0,["greetName"],[["pipeline",1,["name"]]]]]` + "\n" + `["pull",1]` + "\n" + `["pull",2]`, 200, `["resolve",1,{"name":"bob","tags":[["x","y"]]}]` + "\n" + `["resolve",2,"Hello, bob"]`},
		{"returned stub", "POST", `["push",["pipeline",0,["makeCounter"],[1]]]` + "\n" + `["pull",1]`, 200, `["resolve",1,["export",-1]]`},
		{"get", "GET", "", 405, "This endpoint only accepts POST requests."},
		{"trailing newline", "POST", `["push",["pipeline",0,["add"],[1,2]]]` + "\n" + `["pull",1]` + "\n", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, ts.URL, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			got := string(body)
			if resp.StatusCode != tt.wantCode {
				t.Errorf("%s status = %d, want %d (body %q)", tt.name, resp.StatusCode, tt.wantCode, got)
			}
			if tt.wantCode == 200 || tt.wantBody != "" {
				// Results are sent as they settle: compare the lines as a set.
				sortLines := func(s string) string {
					l := strings.Split(s, "\n")
					slices.Sort(l)
					return strings.Join(l, "\n")
				}
				if strings.HasSuffix(got, "\n") || sortLines(got) != sortLines(tt.wantBody) {
					t.Errorf("%s body = %q, want %q", tt.name, got, tt.wantBody)
				}
			}
		})
	}
}

// Shutting the handler down closes every WebSocket session and leaks no goroutine, batches'
// included.
func TestShutdownClosesSessions(t *testing.T) {
	before := runtime.NumGoroutine()
	api := &capnwebtest.API{}
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return api, nil }, nil)
	ts := httptest.NewServer(h)
	var clients []*capnweb.Session
	for range 5 {
		s, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, s)
		capnwebtest.Await[float64](t, s.Main().Call("add", 1, 1))
	}
	if got := h.Sessions(); got != 5 {
		t.Errorf("Handler.Sessions() = %d, want 5", got)
	}
	// Batches too: their read loops run on the handler's reused goroutines, which Close ends.
	for range 3 {
		b := capnweb.NewBatchSession(ts.URL, nil, nil)
		capnwebtest.Await[float64](t, b.Main().Call("add", 2, 2))
		b.Close()
	}
	h.Close()
	for _, c := range clients {
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("client session still open after Handler.Close")
		}
		c.Close()
	}
	ts.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after shutdown\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// Crossing a limit aborts that session only.
func TestLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits capnweb.Limits
		call   func(api *capnweb.Stub) *capnweb.Promise
		want   string
	}{
		{"message size", capnweb.Limits{MaxMessageSize: 1024}, func(api *capnweb.Stub) *capnweb.Promise {
			return api.Call("echo", strings.Repeat("x", 2048))
		}, "exceeds"},
		{"depth", capnweb.Limits{MaxDepth: 16}, func(api *capnweb.Stub) *capnweb.Promise {
			var v any = 1.0
			for range 40 {
				v = map[string]any{"a": v}
			}
			return api.Call("echo", v)
		}, "depth"},
		{"bigint digits", capnweb.Limits{MaxBigIntDigits: 10}, func(api *capnweb.Stub) *capnweb.Promise {
			n, _ := new(big.Int).SetString(strings.Repeat("9", 50), 10)
			return api.Call("echo", n)
		}, "bigint"},
		{"pending calls", capnweb.Limits{MaxPendingCalls: 4}, func(api *capnweb.Stub) *capnweb.Promise {
			for range 10 {
				api.Call("delay", 1000)
			}
			return api.Call("delay", 1000)
		}, "pending calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil },
				&capnweb.HandlerOptions{Session: capnweb.Options{Limits: tt.limits}})
			ts := httptest.NewServer(h)
			t.Cleanup(func() { h.Close(); ts.Close() })
			wsURL := "ws" + strings.TrimPrefix(ts.URL, "http")
			good, err := capnweb.Dial(t.Context(), wsURL, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer good.Close()
			bad, err := capnweb.Dial(t.Context(), wsURL, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer bad.Close()
			err = capnwebtest.AwaitErr(t, tt.call(bad.Main()))
			if !strings.Contains(strings.ToLower(err.Error()), tt.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tt.want)
			}
			select {
			case <-bad.Done():
			case <-time.After(5 * time.Second):
				t.Error("the offending session is still open")
			}
			if got := capnwebtest.Await[float64](t, good.Main().Call("add", 2, 2)); got != 4 {
				t.Errorf("another session's add = %v, want 4", got)
			}
		})
	}
}

// The protocol is symmetric: the server calls the client's main object.
func TestSymmetricMain(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil },
		&capnweb.HandlerOptions{OnSession: func(_ *http.Request, s *capnweb.Session) {
			go func() {
				p := s.Main().Call("notify", "from server")
				defer p.Release()
				v, err := p.Await(s.Context())
				if err != nil {
					got <- "error: " + err.Error()
					return
				}
				got <- v.(string)
			}()
		}})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	s, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), &clientMain{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case v := <-got:
		if v != "client got: from server" {
			t.Errorf("server's call to the client's main = %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's call to the client's main object did not return")
	}
}

type clientMain struct{ capnweb.Target }

func (clientMain) Notify(s string) string { return "client got: " + s }

// Fetch API values and Blobs travel Go to Go (bodies through pipes).
func TestFetchValues(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, m, nil)
			api := e.client.Main()
			req := &capnweb.Request{URL: "https://x.test/p", Method: "POST",
				Headers: http.Header{"Content-Type": {"text/plain"}}, Body: "hello",
				Init: map[string]any{"redirect": "manual"}}
			got := capnwebtest.Await[*capnweb.Request](t, api.Call("echo", req))
			if diff := cmp.Diff(req, got); diff != "" {
				t.Errorf("echo(Request) (-want +got):\n%s", diff)
			}
			resp := &capnweb.Response{Status: 404, StatusText: "Not Found", Body: []byte{1, 2, 3},
				Headers: http.Header{"X-A": {"1"}}}
			gotResp := capnwebtest.Await[*capnweb.Response](t, api.Call("echo", resp))
			if diff := cmp.Diff(resp, gotResp); diff != "" {
				t.Errorf("echo(Response) (-want +got):\n%s", diff)
			}
			blob := capnweb.Blob{Type: "text/plain", Data: []byte("blob body")}
			gotBlob := capnwebtest.Await[capnweb.Blob](t, api.Call("echo", blob))
			if diff := cmp.Diff(blob, gotBlob); diff != "" {
				t.Errorf("echo(Blob) (-want +got):\n%s", diff)
			}
			checkClean(t, e.client)
		})
	}
}

// A peer that fills a table past its limit is aborted.
func TestTableLimits(t *testing.T) {
	t.Parallel()
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, &capnwebtest.API{}, &capnweb.Options{Limits: capnweb.Limits{MaxExports: 8}})
	defer srv.Close()
	cli := capnweb.NewSession(b, nil, nil)
	defer cli.Close()
	var ps []*capnweb.Promise
	for range 20 {
		ps = append(ps, cli.Main().Call("add", 1, 1)) // never released: the server's table grows
	}
	err := capnwebtest.AwaitErr(t, ps[len(ps)-1])
	if !strings.Contains(err.Error(), "export table is full") {
		t.Errorf("error = %v, want the export table limit", err)
	}
	<-srv.Done()
	for _, p := range ps {
		p.Release()
	}
}

// A promise that is only awaited (p.Call(...).Await) must not be collected, and its import
// released, while its result is on the way: the result would then never arrive.
func TestAwaitKeepsPromiseAlive(t *testing.T) {
	t.Parallel()
	a, b := capnweb.Pipe()
	gate := make(chan struct{})
	srv := capnweb.NewSession(a, &slowTarget{gate: gate}, nil)
	defer srv.Close()
	cli := capnweb.NewSession(b, nil, nil)
	defer cli.Close()
	done := make(chan error, 1)
	go func() {
		_, err := cli.Main().Call("wait").Await(t.Context())
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // let Await start waiting
	for range 3 {
		runtime.GC() // runs the cleanups of unreachable promises
	}
	time.Sleep(10 * time.Millisecond) // and lets their releases reach the server
	close(gate)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Await never returned: the promise was released while awaited")
	}
}

type slowTarget struct {
	capnweb.Target
	gate chan struct{}
}

func (s *slowTarget) Wait(ctx context.Context) (string, error) {
	select {
	case <-s.gate:
		return "done", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// gate's wait blocks until open is called, calling Blocking first when blocking is set.
type gate struct {
	capnweb.Target
	blocking bool
	ch       chan struct{}
}

func (g *gate) Wait(ctx context.Context) {
	if g.blocking {
		capnweb.Blocking(ctx)
	}
	<-g.ch
}

func (g *gate) Open() { close(g.ch) }

// TestBlocking checks that a call that blocks after Blocking lets the next call start at once,
// and that without it the next call starts when the executor hands off (after a millisecond).
func TestBlocking(t *testing.T) {
	t.Parallel()
	for _, blocking := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			a, b := capnweb.Pipe()
			srv := capnweb.NewSession(a, &gate{blocking: blocking, ch: make(chan struct{})}, nil)
			client := capnweb.NewSession(b, nil, nil)
			defer srv.Close()
			defer client.Close()
			start := time.Now()
			wait := client.Main().Call("wait")
			defer wait.Release()
			capnwebtest.Await[any](t, client.Main().Call("open"))
			opened := time.Since(start)
			capnwebtest.Await[any](t, wait)
			if blocking && opened != 0 {
				t.Errorf("with Blocking, open() started after %v, want at once", opened)
			}
			if !blocking && opened < time.Millisecond {
				t.Errorf("without Blocking, open() started after %v, want the executor's handoff (1ms)", opened)
			}
		})
	}
}

// mutator changes the map it is given.
type mutator struct{ capnweb.Target }

func (mutator) Scribble(m map[string]any) string {
	m["scribbled"] = true
	return "ok"
}

// echoStub returns the stub it is given.
type echoStub struct{ capnweb.Target }

func (echoStub) Back(s *capnweb.Stub) *capnweb.Stub { return s.Dup() }

// TestCallArgumentsStayTheCallers checks that the caller keeps what it passed: a call that goes
// to the peer encodes the arguments without copying them, and one that turns out to be local (a
// promise that resolved to the caller's own object) gets a copy it may change.
func TestCallArgumentsStayTheCallers(t *testing.T) {
	t.Parallel()
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, &echoStub{}, nil)
	client := capnweb.NewSession(b, nil, nil)
	defer srv.Close()
	defer client.Close()

	arg := map[string]any{"k": "v"}
	local := capnweb.NewStub(&mutator{})
	defer local.Release()
	back := client.Main().Call("back", local) // a promise, resolving to our own mutator
	defer back.Release()
	capnwebtest.Await[any](t, back.Call("scribble", arg))
	if _, ok := arg["scribbled"]; ok {
		t.Errorf("a local call through a resolved promise changed the caller's argument: %v", arg)
	}
	direct := local.Call("scribble", arg)
	defer direct.Release()
	capnwebtest.Await[any](t, direct)
	if _, ok := arg["scribbled"]; ok {
		t.Errorf("a local call changed the caller's argument: %v", arg)
	}
}

// slowAdder's Slow blocks (after saying so) until its gate opens; Add does not.
type slowAdder struct {
	capnweb.Target
	gate chan struct{}
}

func (s *slowAdder) Slow(ctx context.Context, n float64) float64 {
	capnweb.Blocking(ctx)
	<-s.gate
	return n
}

func (s *slowAdder) Add(a, b float64) float64 { return a + b }

// TestDependentsOfBlockedCalls checks the calls pipelined on calls that blocked: many blocked
// calls return at once, each goroutine finishing one tries to run what its result made ready
// (and to send the answers), while the read loop goes on with calls of its own. Every result
// must arrive, right, and the tables must empty.
func TestDependentsOfBlockedCalls(t *testing.T) {
	t.Parallel()
	a, b := capnweb.Pipe()
	gate := make(chan struct{})
	srv := capnweb.NewSession(a, &slowAdder{gate: gate}, nil)
	client := capnweb.NewSession(b, nil, nil)
	defer srv.Close()
	defer client.Close()
	const n = 50
	var ends, fast []*capnweb.Promise
	for i := range n {
		p := client.Main().Call("slow", i)
		q := client.Main().Call("add", p, 1)
		ends = append(ends, client.Main().Call("add", q, 1))
		p.Release()
		q.Release()
	}
	for i := range n {
		fast = append(fast, client.Main().Call("add", i, 0))
	}
	for i, p := range fast { // not held up by the blocked calls
		if v := capnwebtest.Await[float64](t, p); v != float64(i) {
			t.Errorf("add(%d, 0) = %v", i, v)
		}
		p.Release()
	}
	close(gate)
	for i, p := range ends {
		if v := capnwebtest.Await[float64](t, p); v != float64(i+2) {
			t.Errorf("chain %d = %v, want %d", i, v, i+2)
		}
		p.Release()
	}
	checkClean(t, srv)
	checkClean(t, client)
}
