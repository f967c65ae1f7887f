package binding

// Issue 23's memory-exhaustion attacks on the capnweb binding, each on a server that requires
// an API key, with the attacker sending none and then the same after authenticating: values
// pushed and never released, pipelined calls never pulled, and an HTTP batch whose answer is
// forty times its request. Each test measures what the sessions count (Held, the pools) and the
// process's live heap, checks the abort message, and has a legitimate client served during the
// attack and after it.
//
// The budgets are set smaller than serve's defaults (a session 4 MiB, a principal 8 MiB, the
// server 24 MiB) so that the tests stay light; the mechanisms are the same.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/ws"
)

const (
	attackSessionBudget   = 4 << 20
	attackPrincipalBudget = 8 << 20
	attackTotalBudget     = 24 << 20
)

// apiKeys requires an X-API-Key header naming a known key, as `serve -api-key` does.
func apiKeys(keys map[string]string) Authenticator {
	return func(_ context.Context, h http.Header) (*a2asrv.User, error) {
		name, ok := keys[h.Get("X-API-Key")]
		if !ok {
			return nil, fmt.Errorf("%w: an API key is required", a2a.ErrUnauthenticated)
		}
		return a2asrv.NewAuthenticatedUser(name, nil), nil
	}
}

// attackServer is the stack under attack, with what the tests look at inside.
type attackServer struct {
	base     string // http://127.0.0.1:PORT
	wsURL    string
	budgets  *capnwebBudgets
	mu       sync.Mutex
	sessions map[string]*capnweb.Session // WebSocket sessions opened with ?attacker=NAME
}

func startAttackServer(t *testing.T) *attackServer {
	t.Helper()
	handler, _ := newEngineHandler(t)
	as := &attackServer{sessions: map[string]*capnweb.Session{}}
	h := NewHTTPHandler(handler, testCard(), &Options{
		Authenticate: apiKeys(map[string]string{"key-alice": "alice", "key-bob": "bob"}),
		Capnweb: &capnweb.HandlerOptions{
			Session: capnweb.Options{Limits: capnweb.Limits{MaxHeldBytes: attackSessionBudget}},
			OnSession: func(r *http.Request, s *capnweb.Session) {
				if name := r.URL.Query().Get("attacker"); name != "" {
					as.mu.Lock()
					as.sessions[name] = s
					as.mu.Unlock()
				}
			},
		},
		CapnwebBudget: &CapnwebBudget{Total: attackTotalBudget, PerPrincipal: attackPrincipalBudget},
	})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.(io.Closer).Close(); srv.Close() })
	as.base = srv.URL
	as.wsURL = "ws" + strings.TrimPrefix(srv.URL, "http") + DefaultCapnwebPath
	as.budgets = h.(*httpHandler).capnweb.budgets
	return as
}

// total is the server-wide pool.
func (as *attackServer) total() *capnweb.Pool { return as.budgets.principals.parent }

// session is the server's session of the attacker called name.
func (as *attackServer) session(t *testing.T, name string) *capnweb.Session {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		as.mu.Lock()
		s := as.sessions[name]
		as.mu.Unlock()
		if s != nil {
			return s
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the session of attacker %q did not start", name)
	return nil
}

// attacker is a raw WebSocket peer: it writes frames and records the server's abort. srv is
// the server's session of its connection.
type attacker struct {
	c     *ws.Conn
	srv   *capnweb.Session
	done  chan struct{}
	abort atomic.Pointer[string]
}

func dialAttacker(t *testing.T, as *attackServer, key string) *attacker {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("X-API-Key", key)
	}
	name := t.Name()
	c, err := ws.Dial(t.Context(), as.wsURL+"?attacker="+url.QueryEscape(name), &ws.DialOptions{Header: h})
	if err != nil {
		t.Fatal(err)
	}
	a := &attacker{c: c, srv: as.session(t, name), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			_, m, err := c.ReadMessage(64 << 20)
			if err != nil {
				return
			}
			if s := string(m); strings.HasPrefix(s, `["abort",`) {
				a.abort.Store(&s)
			}
		}
	}()
	t.Cleanup(func() { c.Close(ws.StatusNormal, ""); <-a.done })
	return a
}

// flood writes n copies of msg, chunk at a time, until the connection fails.
func (a *attacker) flood(msg []byte, n, chunk int) int {
	sent := 0
	batch := make([][]byte, 0, chunk)
	for sent < n {
		batch = batch[:0]
		for i := 0; i < chunk && sent+i < n; i++ {
			batch = append(batch, msg)
		}
		if a.c.WriteMessages(ws.Text, batch...) != nil {
			break
		}
		sent += len(batch)
	}
	return sent
}

// aborted waits for the server to end the connection and returns its abort message.
func (a *attacker) aborted(t *testing.T) string {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end the attacker's connection in 30 s")
	}
	if m := a.abort.Load(); m != nil {
		return *m
	}
	t.Fatal("the attacker's connection ended without an abort message")
	return ""
}

// heapWatch samples the live heap (as of the last collection) and what a session counts, and
// keeps their peaks.
type heapWatch struct {
	base     uint64
	peak     atomic.Uint64
	heldPeak atomic.Int64
	stop     chan struct{}
	done     chan struct{}
}

func watchHeap(held func() int64) *heapWatch {
	runtime.GC()
	w := &heapWatch{base: liveHeap(), stop: make(chan struct{}), done: make(chan struct{})}
	w.peak.Store(w.base)
	go func() {
		defer close(w.done)
		for {
			if h := liveHeap(); h > w.peak.Load() {
				w.peak.Store(h)
			}
			if held != nil {
				if h := held(); h > w.heldPeak.Load() {
					w.heldPeak.Store(h)
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return w
}

// growth stops the watch and returns the peak growth of the live heap over its start.
func (w *heapWatch) growth() int64 {
	close(w.stop)
	<-w.done
	runtime.GC()
	if h := liveHeap(); h > w.peak.Load() {
		w.peak.Store(h)
	}
	return int64(w.peak.Load()) - int64(w.base)
}

// liveHeap is the heap the last garbage collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// legit is a client that keeps working through an attack: it authenticates with its API key on
// each new connection and sends a message, over and over, until stopped; every call must
// succeed in time.
type legit struct {
	stop  chan struct{}
	done  chan struct{}
	calls atomic.Int64
	err   atomic.Pointer[error]
}

func startLegit(t *testing.T, as *attackServer) *legit {
	l := &legit{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			if err := legitCall(as); err != nil {
				l.err.CompareAndSwap(nil, &err)
			}
			l.calls.Add(1)
			select {
			case <-l.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return l
}

// legitCall connects without credentials, reads the card, authenticates and sends a message:
// what a stock client does.
func legitCall(as *attackServer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := capnweb.Dial(ctx, as.wsURL, nil, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Main().Call("getAgentCard").Await(ctx); err != nil {
		return fmt.Errorf("getAgentCard: %w", err)
	}
	sess := s.Main().Call("authenticate", map[string]any{"X-API-Key": "key-bob"})
	defer sess.Release()
	res, err := sess.Call("sendMessage", userMessageWire("hello")).Await(ctx)
	if err != nil {
		return fmt.Errorf("sendMessage: %w", err)
	}
	if res == nil {
		return errors.New("sendMessage: no result")
	}
	return nil
}

// finish stops the client and fails the test if any of its calls failed, or none was made.
func (l *legit) finish(t *testing.T, during string) {
	t.Helper()
	close(l.stop)
	<-l.done
	if e := l.err.Load(); e != nil {
		t.Errorf("a legitimate client failed %s: %v", during, *e)
	}
	if l.calls.Load() == 0 {
		t.Errorf("a legitimate client made no call %s", during)
	}
}

// Values pushed and never pulled nor released: 100 frames of 4 MiB each (400 MiB, as in the
// report that took the server from 27 to 626 MB).
func TestAttackPushFlood(t *testing.T) {
	as := startAttackServer(t)
	big := []byte(`["push","` + strings.Repeat("A", 4<<20) + `"]`)
	for _, tc := range []struct {
		name, key, want string
		bound           int64 // live heap growth allowed
	}{
		// The heap is the test process's, attacker included: a client masks each frame it
		// writes, in a copy, so a few of the 4 MiB frames written before the abort arrives are
		// the attacker's (up to 12 MiB, seen with -race).
		//
		// Before authentication a message may have 64 KiB: the frame is discarded unread.
		{"unauthenticated", "", "Incoming message exceeds maximum size of 65536 bytes", 16 << 20},
		// After it, the session budget (4 MiB) stops it; a message and its parse are transient.
		{"authenticated", "key-alice", "session memory budget exceeded", attackSessionBudget + 32<<20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLegit(t, as)
			a := dialAttacker(t, as, tc.key)
			w := watchHeap(a.srv.Held)
			sent := a.flood(big, 100, 1)
			msg := a.aborted(t)
			growth := w.growth()
			l.finish(t, "during the attack")
			t.Logf("%d frames of 4 MiB written; live heap grew by at most %.1f MiB; the session counted at most %.1f MiB; abort: %.200s",
				sent, mib(growth), mib(w.heldPeak.Load()), msg)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("abort message %.300s, want one saying %q", msg, tc.want)
			}
			if growth > tc.bound {
				t.Errorf("live heap grew by %.1f MiB during the attack, over the %.1f MiB bound", mib(growth), mib(tc.bound))
			}
			if h := w.heldPeak.Load(); h > attackSessionBudget {
				t.Errorf("the session counted %d bytes held, over its budget", h)
			}
			if err := legitCall(as); err != nil {
				t.Errorf("a legitimate client after the attack: %v", err)
			}
		})
	}
}

// Pipelined getAgentCard() calls never pulled: 60,000 of them (the report's 430–620 MB).
func TestAttackPipelinedCalls(t *testing.T) {
	as := startAttackServer(t)
	call := []byte(`["push",["pipeline",0,["getAgentCard"],[]]]`)
	for _, tc := range []struct {
		name, key string
		login     bool // authenticate() on the connection first
		want      string
		bound     int64
	}{
		{"unauthenticated", "", false, "export table is full (limit 64)", 4 << 20},
		{"authenticated by header", "key-alice", false, "session memory budget exceeded", attackSessionBudget + 16<<20},
		{"authenticated by authenticate()", "", true, "session memory budget exceeded", attackSessionBudget + 16<<20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLegit(t, as)
			a := dialAttacker(t, as, tc.key)
			s := a.srv
			if tc.login {
				login := [][]byte{[]byte(`["push",["pipeline",0,["authenticate"],[{"X-API-Key":"key-alice"}]]]`), []byte(`["pull",1]`)}
				if err := a.c.WriteMessages(ws.Text, login...); err != nil {
					t.Fatal(err)
				}
				// The limits are lifted once authenticate has run.
				for s.Stats().Exports < 2 {
					time.Sleep(time.Millisecond)
				}
			}
			w := watchHeap(s.Held)
			sent := a.flood(call, 60000, 1000)
			msg := a.aborted(t)
			growth := w.growth()
			l.finish(t, "during the attack")
			t.Logf("%d calls written; live heap grew by at most %.1f MiB; the session counted at most %.1f MiB; abort: %.200s",
				sent, mib(growth), mib(w.heldPeak.Load()), msg)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("abort message %.300s, want one saying %q", msg, tc.want)
			}
			if growth > tc.bound {
				t.Errorf("live heap grew by %.1f MiB during the attack, over the %.1f MiB bound", mib(growth), mib(tc.bound))
			}
			if h := w.heldPeak.Load(); h > attackSessionBudget {
				t.Errorf("the session counted %d bytes held, over its budget", h)
			}
			if err := legitCall(as); err != nil {
				t.Errorf("a legitimate client after the attack: %v", err)
			}
		})
	}
}

// One HTTP batch of 20,000 getAgentCard push+pull pairs (1.1 MB, answered with 48.5 MB in the
// report), and four at once (2.6 GB).
func TestAttackBatchAmplification(t *testing.T) {
	as := startAttackServer(t)
	var b strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&b, "[\"push\",[\"pipeline\",0,[\"getAgentCard\"],[]]]\n[\"pull\",%d]", i)
		if i < 20000 {
			b.WriteByte('\n')
		}
	}
	body := b.String()
	post := func(key string) (int, string, error) {
		req, err := http.NewRequest(http.MethodPost, as.base+DefaultCapnwebPath, strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "text/plain")
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out), err
	}
	for _, tc := range []struct {
		name, key  string
		wantStatus int
		want       string
		bound      int64
	}{
		// Before authentication a batch may hold 1 MiB: its 1.1 MB body is refused unread.
		{"unauthenticated", "", http.StatusRequestEntityTooLarge, "batch exceeds 1048576 bytes", 12 << 20},
		// After it, the batch's budget (here its session's, 4 MiB) and the principal's pool.
		{"authenticated", "key-alice", http.StatusOK, "memory budget", attackPrincipalBudget + 24<<20},
	} {
		for _, parallel := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d at once", tc.name, parallel), func(t *testing.T) {
				l := startLegit(t, as)
				w := watchHeap(as.total().Held)
				var wg sync.WaitGroup
				type result struct {
					status int
					body   string
					err    error
				}
				results := make([]result, parallel)
				for i := range parallel {
					wg.Go(func() {
						r := &results[i]
						r.status, r.body, r.err = post(tc.key)
					})
				}
				wg.Wait()
				growth := w.growth()
				l.finish(t, "during the attack")
				for _, r := range results {
					if r.err != nil {
						t.Fatal(r.err)
					}
					t.Logf("status %d, %d bytes answered: %.200s", r.status, len(r.body), r.body)
					if r.status != tc.wantStatus || !strings.Contains(r.body, tc.want) {
						t.Errorf("a 1.1 MB batch got status %d, body %.300s; want %d saying %q", r.status, r.body, tc.wantStatus, tc.want)
					}
					if len(r.body) > 4096 {
						t.Errorf("a 1.1 MB batch was answered with %d bytes", len(r.body))
					}
				}
				t.Logf("live heap grew by at most %.1f MiB; the server's pool counted at most %.1f MiB", mib(growth), mib(w.heldPeak.Load()))
				if growth > tc.bound {
					t.Errorf("live heap grew by %.1f MiB during the attack, over the %.1f MiB bound", mib(growth), mib(tc.bound))
				}
				if h := w.heldPeak.Load(); h > attackTotalBudget {
					t.Errorf("the server's pool counted %d bytes, over its %d", h, attackTotalBudget)
				}
				if err := legitCall(as); err != nil {
					t.Errorf("a legitimate client after the attack: %v", err)
				}
			})
		}
	}
	if h := as.total().Held(); h > 1<<20 {
		t.Errorf("after the batches, the server's pool still counts %d bytes", h)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
