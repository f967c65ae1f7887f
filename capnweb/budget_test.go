package capnweb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/a2awebcap/a2awebcap/internal/ws"
)

// budgetAPI is the test API plus what the budget tests need: large results, long arrays to
// map over, and a login that lifts the session's limits.
type budgetAPI struct {
	*capnwebtest.API
	pool *capnweb.Pool // the pool Login moves the session to
}

func newBudgetAPI() *budgetAPI { return &budgetAPI{API: &capnwebtest.API{}} }

func (*budgetAPI) Blob(n float64) string     { return strings.Repeat("x", int(n)) }
func (*budgetAPI) Range(n float64) []float64 { r := make([]float64, int(n)); return fillRange(r) }
func (*budgetAPI) Double(x float64) float64  { return 2 * x }
func (a *budgetAPI) Login(ctx context.Context) error {
	return capnweb.SetLimits(ctx, capnweb.Limits{}, a.pool)
}

func fillRange(r []float64) []float64 {
	for i := range r {
		r[i] = float64(i)
	}
	return r
}

// rawPeer is a peer that speaks the protocol as bytes to a server session over Pipe.
type rawPeer struct {
	t      *testing.T
	client capnweb.Transport
	srv    *capnweb.Session
	msgs   chan []byte // what the server sent, but answers to pulls go to answers
	pushes int         // pushes and streams sent: the ID of the last
	mu     sync.Mutex
	abort  string // the server's abort message, once it came
}

func newRawPeer(t *testing.T, main any, opts *capnweb.Options) *rawPeer {
	t.Helper()
	a, b := capnweb.Pipe()
	p := &rawPeer{t: t, client: b, srv: capnweb.NewSession(a, main, opts), msgs: make(chan []byte, 1<<16)}
	go func() {
		for {
			m, err := b.Receive(context.Background())
			if err != nil {
				close(p.msgs)
				return
			}
			if strings.HasPrefix(string(m), `["abort",`) {
				p.mu.Lock()
				p.abort = string(m)
				p.mu.Unlock()
			}
			select {
			case p.msgs <- m:
			default: // a test that does not read its answers does not stall the server
			}
		}
	}()
	t.Cleanup(func() { p.srv.Close() })
	return p
}

// send sends one message, a push or a stream unless it is a release; it reports false once the
// session has ended. Every 32 messages it waits for the server to have handled them (sync), so
// that the messages sent are those the server took.
func (p *rawPeer) send(msg string) bool {
	select {
	case <-p.srv.Done():
		return false
	default:
	}
	if !strings.HasPrefix(msg, `["release",`) {
		p.pushes++
	}
	if p.client.Send(p.t.Context(), []byte(msg)) != nil {
		return false
	}
	if p.pushes%32 == 0 {
		return p.sync()
	}
	return true
}

// sync sends a stream call, which is answered without a pull, and waits for its answer: the
// server has then handled everything sent before it. It reports false if the session ended.
func (p *rawPeer) sync() bool {
	p.pushes++
	want := fmt.Sprintf(`["resolve",%d,`, p.pushes)
	if p.client.Send(p.t.Context(), []byte(`["stream",["pipeline",0,["add"],[0,0]]]`)) != nil {
		return false
	}
	for {
		select {
		case m, ok := <-p.msgs:
			if !ok {
				return false
			}
			if strings.HasPrefix(string(m), want) {
				return true
			}
		case <-p.srv.Done():
			return false
		case <-time.After(10 * time.Second):
			p.t.Fatalf("the server did not answer a stream call in 10 s (holds %d bytes)", p.srv.Held())
		}
	}
}

// aborted waits for the server session to end and returns its abort message.
func (p *rawPeer) aborted() string {
	p.t.Helper()
	select {
	case <-p.srv.Done():
	case <-time.After(10 * time.Second):
		p.t.Fatalf("the server session is still open (holds %d bytes)", p.srv.Held())
	}
	for range 100 { // the abort message follows the end closely
		p.mu.Lock()
		a := p.abort
		p.mu.Unlock()
		if a != "" {
			return a
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("the session ended (%v) without an abort message", p.srv.Err())
	return ""
}

// waitHeld waits until cond holds for the session's Held, and fails with what it saw if it
// does not within a few seconds (releases travel, and forgotten promises are collected).
func waitHeld(t *testing.T, what string, s *capnweb.Session, cond func(int64) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(s.Held()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: Held() = %d", what, s.Held())
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// Every behaviour scenario, run to its end, leaves both sessions holding nothing for their
// peers: each charge is given back where its memory is let go.
func TestHeldReturnsToZero(t *testing.T) {
	t.Parallel()
	for _, sc := range capnwebtest.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, pipeMode, nil)
			sc.Run(t, e.client.Main())
			e.api.Wait()
			checkClean(t, e.client)
			waitHeld(t, "client, after the scenario", e.client, func(n int64) bool { return n == 0 })
			waitHeld(t, "server, after the scenario", e.server(), func(n int64) bool { return n == 0 })
		})
	}
}

// Issue 23: values pushed and never pulled nor released fill a budget and abort the session
// with a message saying so; other sessions go on.
func TestBudgetPushedValues(t *testing.T) {
	t.Parallel()
	const limit = 2 << 20
	api := newBudgetAPI()
	p := newRawPeer(t, api, &capnweb.Options{Limits: capnweb.Limits{MaxHeldBytes: limit}})
	big := `["push","` + strings.Repeat("x", 256<<10) + `"]`
	sent := 0
	for range 100 {
		if !p.send(big) {
			break
		}
		sent++
		if h := p.srv.Held(); h > limit {
			t.Fatalf("after %d pushes the session holds %d bytes, over its %d", sent, h, limit)
		}
	}
	if msg := p.aborted(); !strings.Contains(msg, "session memory budget exceeded") {
		t.Errorf("abort message = %.300s, want the session memory budget", msg)
	}
	if sent > 32+8 {
		t.Errorf("the session took %d pushes of 256 KiB on a budget of 2 MiB", sent)
	}
	other := newEnv(t, pipeMode, nil)
	if got := capnwebtest.Await[float64](t, other.client.Main().Call("add", 1, 2)); got != 3 {
		t.Errorf("another session's add(1, 2) = %v", got)
	}
}

// Issue 23: results of pipelined calls never pulled fill a budget too.
func TestBudgetUnpulledResults(t *testing.T) {
	t.Parallel()
	const limit = 2 << 20
	p := newRawPeer(t, newBudgetAPI(), &capnweb.Options{Limits: capnweb.Limits{MaxHeldBytes: limit}})
	n := 0
	for ; n < 60000 && p.send(`["push",["pipeline",0,["blob"],[2000]]]`); n++ {
	}
	if msg := p.aborted(); !strings.Contains(msg, "session memory budget exceeded") {
		t.Errorf("abort message = %.300s, want the session memory budget", msg)
	}
	// Each result holds 2 KB: the session cannot have kept more than 2 MiB of them.
	if n > limit/2000+32 {
		t.Errorf("the session took %d calls of 2 KB results on a budget of %d bytes", n, limit)
	}
}

// A client that pulls and releases what it asks for is never stopped by its budget, however
// much it asks for in all.
func TestBudgetHealthyClient(t *testing.T) {
	t.Parallel()
	const limit = 256 << 10
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, newBudgetAPI(), &capnweb.Options{Limits: capnweb.Limits{MaxHeldBytes: limit}})
	defer srv.Close()
	cli := capnweb.NewSession(b, nil, nil)
	defer cli.Close()
	total := 0
	for range 20 { // 20 rounds of 40 calls of 4 KB in flight: 3.2 MB through a 256 KiB budget
		var ps []*capnweb.Promise
		for range 40 {
			ps = append(ps, cli.Main().Call("blob", 4000))
		}
		for _, p := range ps {
			total += len(capnwebtest.Await[string](t, p))
			p.Release()
		}
	}
	if total != 20*40*4000 {
		t.Errorf("received %d bytes, want %d", total, 20*40*4000)
	}
	if err := srv.Err(); err != nil {
		t.Fatalf("the server session ended: %v", err)
	}
	waitHeld(t, "server after the calls", srv, func(n int64) bool { return n == 0 })
}

// Issue 24: the npm client never releases the intermediates of authenticate().getUser().greet():
// for each chain it pushes the three calls, pulls the last and releases only that one (the
// frames interop's TestInteropBudgets sees it send). A long-lived client that runs 34,000 such
// chains (68,000 unreleased exports, more than the old table limit of 65,536) is served; each
// costs its table entries, its messages and its result.
func TestLeakedIntermediatesNotAborted(t *testing.T) {
	t.Parallel()
	const chains = 34000
	p := newRawPeer(t, newBudgetAPI(), nil)
	for i := range chains {
		id := p.pushes + 1
		for _, m := range []string{
			`["push",["pipeline",0,["authenticate"],["secret"]]]`,
			fmt.Sprintf(`["push",["pipeline",%d,["getUser"],[]]]`, id),
			fmt.Sprintf(`["push",["pipeline",%d,["greet"],["Hi"]]]`, id+1),
			fmt.Sprintf(`["pull",%d]`, id+2),
			fmt.Sprintf(`["release",%d,1]`, id+2),
		} {
			p.client.Send(t.Context(), []byte(m))
		}
		p.pushes += 3
		if i%16 == 15 && !p.sync() {
			t.Fatalf("the session ended after %d chains: %v", i, p.srv.Err())
		}
	}
	if !p.sync() {
		t.Fatalf("the server session ended after chains of a client that leaks intermediates: %v", p.srv.Err())
	}
	st := p.srv.Stats()
	if st.Exports < 2*chains {
		t.Errorf("server exports = %d, want the %d leaked intermediates", st.Exports, 2*chains)
	}
	// Each leaked export costs its entry, its message and its result (a target reference).
	h := p.srv.Held()
	t.Logf("%d leaked exports: %d bytes counted, %d each", st.Exports, h, h/int64(st.Exports))
	if h > int64(2*chains*600) {
		t.Errorf("server holds %d bytes for %d leaked exports: %d each", h, 2*chains, h/int64(2*chains))
	}
}

// Issue 24: a .map() with more calls than the old limit of 4,096 pending calls — over 5,000
// elements with one call each, and over 2,500 with two — is served: calls queued behind others
// do not count as running. (interop's TestInteropBudgets maps 10,000 with the npm client.)
func TestMapOverManyElements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ elems, perElem int }{{5000, 1}, {2500, 2}} {
		t.Run(fmt.Sprintf("%d elements, %d calls each", tc.elems, tc.perElem), func(t *testing.T) {
			t.Parallel()
			for _, m := range modes {
				a, b := capnweb.Pipe()
				var cli *capnweb.Session
				switch m {
				case pipeMode:
					srv := capnweb.NewSession(a, newBudgetAPI(), nil)
					defer srv.Close()
					cli = capnweb.NewSession(b, nil, nil)
				case wsMode:
					h := capnweb.NewHandler(func(*http.Request) (any, error) { return newBudgetAPI(), nil }, nil)
					ts := httptest.NewServer(h)
					defer func() { h.Close(); ts.Close() }()
					var err error
					if cli, err = capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil, nil); err != nil {
						t.Fatal(err)
					}
				}
				api := cli.Main()
				out := api.Call("range", tc.elems).Map(func(mp *capnweb.Mapper, x *capnweb.Promise) any {
					d := mp.Capture(api).Call("double", x)
					if tc.perElem == 2 {
						d = mp.Capture(api).Call("double", d)
					}
					return d
				})
				var got []float64 // no deadline but the test's: under -race on a busy machine this takes seconds
				if err := out.Decode(t.Context(), &got); err != nil {
					t.Fatalf("%s: map: %v", m, err)
				}
				out.Release()
				last := tc.elems - 1
				if len(got) != tc.elems || got[last] != float64(last*2*tc.perElem) {
					t.Errorf("%s: map over %d elements: %d results, last %v", m, tc.elems, len(got), got[len(got)-1:])
				}
				cli.Close()
			}
		})
	}
}

// Sessions sharing a pool are bounded together: the one whose charge would overfill it is
// aborted, naming the pool; the other goes on; the pool gets every byte back.
func TestPoolSharedBySessions(t *testing.T) {
	t.Parallel()
	server := capnweb.NewPool("server", 4<<20, nil)
	principal := capnweb.NewPool("principal alice", 2<<20, server)
	opts := &capnweb.Options{Pool: principal, Limits: capnweb.Limits{MaxHeldBytes: 16 << 20}}
	a := newRawPeer(t, newBudgetAPI(), opts)
	b := newRawPeer(t, newBudgetAPI(), opts)
	chunk := `["push","` + strings.Repeat("y", 256<<10) + `"]`
	for range 4 { // a holds 1 MiB
		a.send(chunk)
	}
	waitHeld(t, "a, after four pushes", a.srv, func(n int64) bool { return n > 1<<20 })
	for i := 0; i < 12 && b.send(chunk); i++ {
	}
	if msg := b.aborted(); !strings.Contains(msg, `memory budget \"principal alice\" exhausted`) {
		t.Errorf("abort message = %.300s, want the principal's pool", msg)
	}
	if h := principal.Held(); h > principal.Limit() {
		t.Errorf("the pool counts %d bytes, over its limit %d", h, principal.Limit())
	}
	if !a.send(`["push",["pipeline",0,["add"],[1,2]]]`) || a.srv.Err() != nil {
		t.Fatalf("a, within the pool, was stopped: %v", a.srv.Err())
	}
	a.srv.Close()
	b.srv.Close()
	if h, s := principal.Held(), server.Held(); h != 0 || s != 0 {
		t.Errorf("after the sessions ended, the pools count %d and %d bytes, want 0", h, s)
	}
}

// SetLimits, from a method, lifts a session's limits from the next message on (its message size
// included, which the WebSocket transport enforces), and moves what it holds to another pool.
func TestSetLimits(t *testing.T) {
	t.Parallel()
	anon := capnweb.NewPool("anonymous", 1<<20, nil)
	users := capnweb.NewPool("users", 64<<20, nil)
	tight := capnweb.Options{Pool: anon, Limits: capnweb.Limits{MaxMessageSize: 1 << 10, MaxExports: 8, MaxHeldBytes: 64 << 10}}
	api := newBudgetAPI()
	api.pool = users
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return api, nil },
		&capnweb.HandlerOptions{SessionOptions: func(*http.Request, any) *capnweb.Options { return &tight }})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close(); api.Wait() })
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	dial := func() *capnweb.Session {
		s, err := capnweb.Dial(t.Context(), url, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	before := dial()
	err := capnwebtest.AwaitErr(t, before.Main().Call("echo", strings.Repeat("z", 2048)))
	if !strings.Contains(err.Error(), "exceeds maximum size of 1024 bytes") {
		t.Errorf("a 2 KiB message before login: %v, want the 1 KiB message limit", err)
	}

	after := dial()
	// A call that stays running holds its bytes in the anonymous pool, then in the users' one.
	slow := after.Main().Call("delay", 60000)
	defer slow.Release()
	if !goldenWaitFor(5*time.Second, func() bool { return anon.Held() > 0 }) {
		t.Fatalf("a running call: the anonymous pool counts %d bytes", anon.Held())
	}
	if _, err := after.Main().Call("login").Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a, u := anon.Held(), users.Held(); a != 0 || u == 0 {
		t.Errorf("after login, the anonymous pool counts %d bytes and the users' %d: the session's bytes did not move", a, u)
	}
	big := strings.Repeat("z", 64<<10)
	var ps []*capnweb.Promise // more than 8 exports, 64 KiB messages, over 64 KiB held
	for range 16 {
		ps = append(ps, after.Main().Call("echo", big))
	}
	for _, p := range ps {
		if got := capnwebtest.Await[string](t, p); len(got) != len(big) {
			t.Fatalf("echo after login: %d bytes", len(got))
		}
		p.Release()
	}
}

// An HTTP batch may make the server hold (and answer) BatchBase bytes plus BatchPerByte times
// its request: over that, its answer is the abort message alone, which the stock clients read.
func TestBatchBudget(t *testing.T) {
	t.Parallel()
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return newBudgetAPI(), nil },
		&capnweb.HandlerOptions{BatchBase: 256 << 10, BatchPerByte: 4})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	post := func(calls int, size int) (int, string) {
		var lines []string
		for i := 1; i <= calls; i++ {
			lines = append(lines, fmt.Sprintf(`["push",["pipeline",0,["blob"],[%d]]]`, size), fmt.Sprintf(`["pull",%d]`, i))
		}
		resp, err := http.Post(ts.URL, "text/plain", strings.NewReader(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// 100 calls (5 KB of request) for 100 KB of answer: within 256 KiB + 4 × 5 KB.
	if code, body := post(100, 1000); code != 200 || strings.Count(body, "\n") != 99 || strings.Contains(body, "abort") {
		t.Errorf("a batch within its budget: %d %.200s", code, body)
	}
	// 2,000 calls (100 KB of request) for 20 MB of answer.
	code, body := post(2000, 10000)
	var msg []any
	if code != 200 || json.Unmarshal([]byte(body), &msg) != nil || len(msg) != 2 || msg[0] != "abort" {
		t.Fatalf("a batch over its budget: status %d, body %.300s; want 200 and one abort message", code, body)
	}
	if !strings.Contains(body, "session memory budget exceeded") {
		t.Errorf("abort message = %.300s", body)
	}

	// The Go batch client reports it as the calls' error.
	s := capnweb.NewBatchSession(ts.URL, nil, nil)
	defer s.Close()
	var ps []*capnweb.Promise
	for range 2000 {
		ps = append(ps, s.Main().Call("blob", 10000))
	}
	if err := capnwebtest.AwaitErr(t, ps[0]); !strings.Contains(err.Error(), "memory budget") {
		t.Errorf("Go batch client: %v, want the budget's abort", err)
	}
}

// The budget's estimates are near what the memory weighs: a session holding many pushed
// values or unpulled results counts within a factor of two of the heap they take. (It measures
// the heap after a GC: not in parallel with other tests. Goroutines of earlier tests that let go
// of memory meanwhile skew one measurement, so each is tried up to three times.)
func TestChargeCosts(t *testing.T) {
	const n = 10000
	for _, tc := range []struct{ name, msg string }{
		{"pushed number", `["push",1]`},
		{"pushed 1 KB string", `["push","` + strings.Repeat("s", 1000) + `"]`},
		{"unpulled add", `["push",["pipeline",0,["add"],[1,2]]]`},
		{"unpulled 2 KB result", `["push",["pipeline",0,["blob"],[2000]]]`},
		{"unpulled tree", `["push",["pipeline",0,["getProfile"],[]]]`},
		{"unpulled object", `["push",["pipeline",0,["echo"],[{"name":"bob","tags":[["x","y"]],"n":1}]]]`},
	} {
		var ratio float64
		var held, heap int64
		for range 3 {
			p := newRawPeer(t, newBudgetAPI(), &capnweb.Options{Limits: capnweb.Limits{MaxHeldBytes: -1}})
			p.sync()
			held0, heap0 := p.srv.Held(), liveHeap()
			for range n {
				p.send(tc.msg)
			}
			p.sync()
			held, heap = p.srv.Held()-held0, liveHeap()-heap0
			p.srv.Close()
			if ratio = float64(held) / float64(heap); ratio >= 0.5 && ratio <= 2 {
				break
			}
		}
		t.Logf("%s: %d bytes counted, %d on the heap, per entry: %d and %d (ratio %.2f)", tc.name, held, heap, held/n, heap/n, ratio)
		if ratio < 0.5 || ratio > 2 {
			t.Errorf("%s: the budget counts %d bytes per entry, the heap grew by %d: ratio %.2f, want 0.5 to 2", tc.name, held/n, heap/n, ratio)
		}
	}
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// A peer that asks for answers and never reads them cannot make them pile up in the server:
// answers not yet written count toward the budget, and the session ends at it.
func TestBudgetSlowReader(t *testing.T) {
	t.Parallel()
	const limit = 4 << 20
	sessions := make(chan *capnweb.Session, 1)
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return newBudgetAPI(), nil },
		&capnweb.HandlerOptions{
			Session:   capnweb.Options{Limits: capnweb.Limits{MaxHeldBytes: limit}},
			OnSession: func(_ *http.Request, s *capnweb.Session) { sessions <- s },
		})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	c, err := ws.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ws.StatusNormal, "")
	srv := <-sessions
	// 64 MB of answers asked for, 100 KB at a time, each released at once and none read; the
	// loopback socket's buffers take a few MB of them.
	for i := 1; i <= 640; i++ {
		push := fmt.Appendf(nil, `["push",["pipeline",0,["blob"],[100000]]]`)
		pull := fmt.Appendf(nil, `["pull",%d]`, i)
		release := fmt.Appendf(nil, `["release",%d,1]`, i) // only the answers are held
		if c.WriteMessages(ws.Text, push, pull, release) != nil {
			break
		}
		if h := srv.Held(); h > limit {
			t.Fatalf("the server holds %d bytes for a peer that does not read, over its %d", h, limit)
		}
		select {
		case <-srv.Done():
			i = 1 << 30
		default:
		}
	}
	select {
	case <-srv.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("the session of a peer that reads nothing is still open, holding %d bytes", srv.Held())
	}
	if err := srv.Err(); err == nil || !strings.Contains(err.Error(), "session memory budget exceeded") {
		t.Errorf("session ended with %v, want its memory budget", err)
	}
}
