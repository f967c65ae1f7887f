package main

// In-process microbenchmarks:
//
//	go test -run '^$' -bench . -benchmem ./bench/capnweb/
//
// RoundTrip*: one add(1,2) call and await, over capnweb.Pipe, over a loopback WebSocket
// (capnweb.NewHandler + capnweb.Dial), and the raw coder/websocket push/pull/echo floor.
// The Parallel variants keep 16 calls in flight on the one session.
// ChainPipe: the pipelined 10-call chain (chain/pipelined10) over capnweb.Pipe.
// Batch100: an HTTP batch of 100 add calls (batch100/add) over loopback HTTP.
// EncodeCall / ServerHandle / DecodeValue: the codec paths of a typical call message, isolated
// from the network (the codec itself is unexported, so these go through the public API).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/coder/websocket"
)

// typicalArg is the argument of a typical call: a small object with a nested array.
func typicalArg() map[string]any {
	return map[string]any{"id": 123, "name": "alice", "tags": []any{"x", "y"}, "score": 4.5, "active": true}
}

type typicalStruct struct {
	ID     int      `json:"id"`
	Name   string   `json:"name"`
	Tags   []string `json:"tags"`
	Score  float64  `json:"score"`
	Active bool     `json:"active"`
}

func pipeSessions(b *testing.B) *capnweb.Session {
	a, z := capnweb.Pipe()
	srv := capnweb.NewSession(z, &capnwebtest.API{}, nil)
	cli := capnweb.NewSession(a, nil, nil)
	b.Cleanup(func() { cli.Close(); srv.Close() })
	return cli
}

func wsSession(b *testing.B) *capnweb.Session {
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	ts := httptest.NewServer(h)
	cli, err := capnweb.Dial(context.Background(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close(); h.Close(); ts.Close() })
	return cli
}

func addOnce(ctx context.Context, st *capnweb.Stub) error {
	return call(ctx, st, "add", func(v any) bool { return v == 3.0 }, 1, 2)
}

func benchSeq(b *testing.B, cli *capnweb.Session) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := addOnce(ctx, cli.Main()); err != nil {
			b.Fatal(err)
		}
	}
}

// benchInflight keeps 16 calls in flight on the session.
func benchInflight(b *testing.B, f func(context.Context) error) {
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := f(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkRoundTripPipe(b *testing.B) { benchSeq(b, pipeSessions(b)) }

// BenchmarkChainPipe: the pipelined 10-call chain of the harness's chain/pipelined10 (each
// add takes the previous call's promise), over capnweb.Pipe; compare with RoundTripPipe.
func BenchmarkChainPipe(b *testing.B) {
	cli := pipeSessions(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := addChain(ctx, cli.Main()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatch100: an HTTP batch of 100 add calls (the harness's batch100/add), client and
// server in this process over loopback HTTP; ns/op is per batch.
func BenchmarkBatch100(b *testing.B) {
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	ts := httptest.NewServer(h)
	b.Cleanup(func() { h.Close(); ts.Close() })
	opts := &capnweb.DialOptions{HTTPClient: ts.Client()}
	ctx := context.Background()
	ps := make([]*capnweb.Promise, 100)
	b.ReportAllocs()
	for b.Loop() {
		bs := capnweb.NewBatchSession(ts.URL, nil, opts)
		main := bs.Main()
		for i := range ps {
			ps[i] = main.Call("add", i, 1)
		}
		for i, p := range ps {
			v, err := p.Await(ctx)
			p.Release()
			if err != nil || v != float64(i+1) {
				b.Fatalf("add %d: %v, %v", i, v, err)
			}
		}
		bs.Close()
	}
}

func BenchmarkRoundTripPipeParallel(b *testing.B) {
	cli := pipeSessions(b)
	benchInflight(b, func(ctx context.Context) error { return addOnce(ctx, cli.Main()) })
}

func BenchmarkRoundTripWebSocket(b *testing.B) { benchSeq(b, wsSession(b)) }

func BenchmarkRoundTripWebSocketParallel(b *testing.B) {
	cli := wsSession(b)
	benchInflight(b, func(ctx context.Context) error { return addOnce(ctx, cli.Main()) })
}

func rawEcho(b *testing.B) callFunc {
	ts := httptest.NewServer(http.HandlerFunc(echoHandler))
	rc, err := dialRaw(context.Background(), "ws"+strings.TrimPrefix(ts.URL, "http"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rc.close(); ts.Close() })
	f, _ := rc.op("add")
	return f
}

func BenchmarkRoundTripRawWebSocket(b *testing.B) {
	f := rawEcho(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := f(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoundTripRawWebSocketParallel(b *testing.B) { benchInflight(b, rawEcho(b)) }

// ---- codec paths ----

// sinkTransport discards what is sent (recording the first message) and blocks on Receive.
type sinkTransport struct {
	mu     sync.Mutex
	first  []byte
	closed chan struct{}
	once   sync.Once
}

func newSink() *sinkTransport { return &sinkTransport{closed: make(chan struct{})} }

func (t *sinkTransport) Send(_ context.Context, m []byte) error {
	t.mu.Lock()
	if t.first == nil {
		t.first = append([]byte(nil), m...)
	}
	t.mu.Unlock()
	return nil
}

func (t *sinkTransport) Receive(ctx context.Context) ([]byte, error) {
	select {
	case <-t.closed:
		return nil, errors.New("closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *sinkTransport) Close(error) error { t.once.Do(func() { close(t.closed) }); return nil }

// BenchmarkEncodeCall: the client side of a call — encode ["push",...] with a typical argument,
// make the import entry, then Release it (which queues ["release",id,1]). Nothing is received.
func BenchmarkEncodeCall(b *testing.B) {
	s := capnweb.NewSession(newSink(), nil, nil)
	defer s.Close()
	arg := typicalArg()
	b.ReportAllocs()
	for b.Loop() {
		s.Main().Call("echo", arg).Release()
	}
}

// typicalPush is the push message the Go client sends for echo(typicalArg()).
func typicalPush(b *testing.B) []byte {
	t := newSink()
	s := capnweb.NewSession(t, nil, nil)
	s.Main().Call("echo", typicalArg()).Release()
	s.Close()
	if t.first == nil {
		b.Fatal("no message recorded")
	}
	return t.first
}

// BenchmarkServerHandle: the server side of one call, without a network — parse the push of
// echo(typical object), evaluate it, call API.Echo, encode ["resolve",id,...] for the pull,
// then handle the release.
func BenchmarkServerHandle(b *testing.B) {
	push := typicalPush(b)
	b.Logf("message: %s", push)
	t, s := apiFeed(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(push)))
	id := 0
	for b.Loop() {
		id++
		if _, err := t.Call(s, push, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeValue: capnweb.Decode of a received typical object into a struct.
func BenchmarkDecodeValue(b *testing.B) {
	v := map[string]any{"id": 123.0, "name": "alice", "tags": []any{"x", "y"}, "score": 4.5, "active": true}
	b.ReportAllocs()
	for b.Loop() {
		var dst typicalStruct
		if err := capnweb.Decode(v, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONBaseline: encoding/json marshal + unmarshal of the same push message, for scale.
func BenchmarkJSONBaseline(b *testing.B) {
	push := typicalPush(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(push)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(push, &v); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIdleSessionBreakdown explains the idle-session figure of the harness: it serves 200
// WebSocket sessions in-process (each made one call, then idles), forces a GC, and logs the live
// heap, the goroutine stacks and the goroutines per session, for the capnweb handler and for the
// raw echo floor. The client ends (raw coder/websocket, no reader goroutine) are in the same
// process and identical for both, so the difference between the two is capnweb's own cost.
// Run with -v to see the numbers; set IDLE_HEAPPROFILE_DIR to also write heap profiles of the
// open sessions (then also pass -memprofilerate 1 for exact numbers).
func TestIdleSessionBreakdown(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 200
	capnwebH := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	defer capnwebH.Close()
	for _, tc := range []struct {
		name string
		h    http.Handler
		// exchange makes one call on a fresh connection.
		exchange func(ctx context.Context, c *websocket.Conn) error
	}{
		{"capnweb", capnwebH, func(ctx context.Context, c *websocket.Conn) error {
			for _, m := range []string{`["push",["pipeline",0,["add"],[1,2]]]`, `["pull",1]`} {
				if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
					return err
				}
			}
			_, got, err := c.Read(ctx)
			if err != nil {
				return err
			}
			if string(got) != `["resolve",1,3]` {
				return fmt.Errorf("got %s", got)
			}
			return c.Write(ctx, websocket.MessageText, []byte(`["release",1,1]`))
		}},
		{"echo", http.HandlerFunc(echoHandler), func(ctx context.Context, c *websocket.Conn) error {
			for _, m := range []string{`["push",["pipeline",0,["add"],[1,2]]]`, `["pull",1]`} {
				if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
					return err
				}
			}
			_, _, err := c.Read(ctx)
			return err
		}},
	} {
		ts := httptest.NewServer(tc.h)
		url := "ws" + strings.TrimPrefix(ts.URL, "http")
		ctx := context.Background()
		measure := func() (heap, stack uint64, gs int) {
			time.Sleep(200 * time.Millisecond)
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()
		}
		h0, s0, g0 := measure()
		conns := make([]*websocket.Conn, 0, n)
		for range n {
			c, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			if err := tc.exchange(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		h1, s1, g1 := measure()
		if dir := os.Getenv("IDLE_HEAPPROFILE_DIR"); dir != "" {
			f, err := os.Create(filepath.Join(dir, "idle-"+tc.name+".heap"))
			if err != nil {
				t.Fatal(err)
			}
			pprof.WriteHeapProfile(f)
			f.Close()
		}
		buf := make([]byte, 8<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		creators := map[string]int{}
		for _, g := range strings.Split(stacks, "\n\n") {
			if i := strings.Index(g, "created by "); i >= 0 {
				line := g[i+len("created by "):]
				if j := strings.IndexAny(line, " \n"); j >= 0 {
					line = line[:j]
				}
				top := strings.SplitN(strings.SplitN(g, "\n", 3)[1], "(", 2)[0]
				creators[line+" → "+top]++
			}
		}
		t.Logf("%s: per session (server + client end): live heap %.0f B, goroutine stacks %.0f B, goroutines %.2f",
			tc.name, float64(h1-h0)/n, float64(s1-s0)/n, float64(g1-g0)/n)
		for k, v := range creators {
			if v >= n {
				t.Logf("    %4d goroutines: %s", v, k)
			}
		}
		for _, c := range conns {
			c.CloseNow()
		}
		ts.Close()
	}
}

// BenchmarkServerChain: the server's side of chain/pipelined10 alone, fed as bytes, each
// group of messages at once as from one read of the socket: ten pushes of add, each taking the
// previous one's promise, and one pull of the last; then the releases. Compare with
// BenchmarkServerAdd, one add.
func BenchmarkServerChain(b *testing.B) {
	t, s := apiFeed(b)
	b.ReportAllocs()
	id := 0
	calls := make([][]byte, 0, chainLen+1)
	releases := make([][]byte, 0, chainLen)
	for b.Loop() {
		first := id + 1
		calls, releases = calls[:0], releases[:0]
		for i := range chainLen {
			id++
			arg := "0"
			if i > 0 {
				arg = `["pipeline",` + strconv.Itoa(id-1) + `]`
			}
			calls = append(calls, []byte(`["push",["pipeline",0,["add"],[`+arg+`,1]]]`))
		}
		calls = append(calls, []byte(`["pull",`+strconv.Itoa(id)+`]`))
		for r := first; r <= id; r++ {
			releases = append(releases, []byte(`["release",`+strconv.Itoa(r)+`,1]`))
		}
		t.Bursts <- slices.Clone(calls)
		select {
		case <-t.Answers:
		case <-s.Done():
			b.Fatal(s.Err())
		}
		t.Bursts <- slices.Clone(releases)
	}
}

// BenchmarkServerAdd: one add, fed as bytes (push, pull, release).
func BenchmarkServerAdd(b *testing.B) {
	t, s := apiFeed(b)
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		if _, err := t.Call(s, []byte(`["push",["pipeline",0,["add"],[1,2]]]`), id); err != nil {
			b.Fatal(err)
		}
	}
}

// apiFeed serves the test API to a session on a Feed, closed when b ends.
func apiFeed(b *testing.B) (*capnwebtest.Feed, *capnweb.Session) {
	t := capnwebtest.NewFeed()
	s := capnweb.NewSession(t, &capnwebtest.API{}, nil)
	b.Cleanup(func() { s.Close() })
	return t, s
}

// ---- the client alone ----

// answerTransport is the client's side of a connection whose server answers in the transport
// itself: each ["pull",N] sent is answered with ["resolve",N,3] on the next Receive, at once.
// What a session on it costs is the client's own work per call.
type answerTransport struct {
	in     chan []byte
	closed chan struct{}
	once   sync.Once
}

func newAnswerTransport() *answerTransport {
	return &answerTransport{in: make(chan []byte, 1024), closed: make(chan struct{})}
}

func (t *answerTransport) Send(_ context.Context, m []byte) error {
	if id, ok := strings.CutPrefix(string(m), `["pull",`); ok {
		t.in <- []byte(`["resolve",` + strings.TrimSuffix(id, "]") + `,3]`)
	}
	return nil
}

// SendBatch makes the transport a batch sender, as the WebSocket one is.
func (t *answerTransport) SendBatch(ctx context.Context, msgs [][]byte) error {
	for _, m := range msgs {
		t.Send(ctx, m)
	}
	return nil
}

func (t *answerTransport) Receive(ctx context.Context) ([]byte, error) {
	select {
	case m := <-t.in:
		return m, nil
	case <-t.closed:
		return nil, errors.New("closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *answerTransport) Close(error) error { t.once.Do(func() { close(t.closed) }); return nil }

func answeredClient(b *testing.B) *capnweb.Session {
	cli := capnweb.NewSession(newAnswerTransport(), nil, nil)
	b.Cleanup(func() { cli.Close() })
	return cli
}

// BenchmarkClientAdd: the client's side of one add call (Call, Await, Release), answered at
// once by the transport: no server, no socket.
func BenchmarkClientAdd(b *testing.B) { benchSeq(b, answeredClient(b)) }

// BenchmarkClientAddParallel: as ClientAdd, 16 calls in flight.
func BenchmarkClientAddParallel(b *testing.B) {
	cli := answeredClient(b)
	benchInflight(b, func(ctx context.Context) error { return addOnce(ctx, cli.Main()) })
}

// BenchmarkServerBatch100: the server's side of batch100/add alone: the handler answers a
// batch of 100 add calls (as the Go client writes it) from memory, with no client and no socket.
func BenchmarkServerBatch100(b *testing.B) {
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &capnwebtest.API{}, nil }, nil)
	b.Cleanup(func() { h.Close() })
	var body strings.Builder
	for i := range 100 {
		if i > 0 {
			body.WriteByte('\n')
		}
		fmt.Fprintf(&body, `["push",["pipeline",0,["add"],[%d,1]]]`+"\n"+`["pull",%d]`, i, i+1)
	}
	req := body.String()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(req)))
		if w.Code != http.StatusOK || strings.Count(w.Body.String(), `"resolve"`) != 100 {
			b.Fatalf("%d %s", w.Code, w.Body.String())
		}
	}
}

// BenchmarkClientChain: the client's side of chain/pipelined10 (ten add calls, each taking the
// previous one's promise, one await, ten releases), answered at once by the transport.
func BenchmarkClientChain(b *testing.B) {
	main, ctx := answeredClient(b).Main(), b.Context()
	ps := make([]*capnweb.Promise, 0, chainLen)
	b.ReportAllocs()
	for b.Loop() {
		ps = ps[:0]
		var prev any = 0.0
		for range chainLen {
			p := main.Call("add", prev, 1)
			ps = append(ps, p)
			prev = p
		}
		if _, err := ps[chainLen-1].Await(ctx); err != nil {
			b.Fatal(err)
		}
		for _, p := range ps {
			p.Release()
		}
	}
}
