package push_test

import (
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/push"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// tarpit accepts connections and never answers: what one principal's push URL pointed at in
// issue 23's attack.
type tarpit struct {
	ln            net.Listener
	mu            sync.Mutex
	open, maxOpen int
	accepted      int
}

func newTarpit(t *testing.T) *tarpit {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tarpit{ln: ln}
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tp.mu.Lock()
			tp.accepted++
			tp.open++
			tp.maxOpen = max(tp.maxOpen, tp.open)
			conns = append(conns, c)
			tp.mu.Unlock()
			wg.Go(func() {
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil { // the request is read, and never answered
						break
					}
				}
				tp.mu.Lock()
				tp.open--
				tp.mu.Unlock()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		tp.mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		tp.mu.Unlock()
		wg.Wait()
	})
	return tp
}

func (tp *tarpit) stats() (accepted, open, maxOpen int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.accepted, tp.open, tp.maxOpen
}

// sqliteStore opens a store in a new SQLite file, and its signing key.
func sqliteStore(t *testing.T) (store.Store, *push.Key) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "a2a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, newKey(t, st)
}

// principalTask creates a working task of principal with push configs to urls.
func principalTask(t *testing.T, st store.Store, principal string, urls ...string) *store.Task {
	t.Helper()
	owner := store.Owner{Principal: principal}
	task := &store.Task{Owner: owner, Task: &a2a.Task{ID: a2a.NewTaskID(), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}
	if err := st.Create(t.Context(), task, nil); err != nil {
		t.Fatal(err)
	}
	for i, u := range urls {
		if err := st.PutPushConfig(t.Context(), owner, &a2a.PushConfig{TaskID: task.Task.ID, ID: fmt.Sprint("c", i), URL: u}, store.PushLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

// emitOne writes one status event of task and wakes d.
func emitOne(t *testing.T, st store.Store, d *push.Deliverer, task *store.Task, text string) {
	t.Helper()
	ev := a2a.NewStatusUpdateEvent(task.Task, a2a.TaskStateWorking, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(text)))
	if err := st.Update(t.Context(), task, []a2a.Event{ev}); err != nil {
		t.Fatal(err)
	}
	d.Wake()
}

// latency emits one event of task and returns how long until r accepted it (seq is the
// event's sequence number), or fails the test after bound.
func latency(t *testing.T, st store.Store, d *push.Deliverer, task *store.Task, r *receiver, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	emitOne(t, st, d, task, "ping")
	seq := task.LastSeq
	for {
		if got, _, _ := r.snapshot(); got[seq] > 0 {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("event %d of task %s not delivered within %v", seq, task.Task.ID, bound)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestTarpitIsolation is issue 23's attack: one principal's 40 push configs point at a
// receiver that accepts connections and never answers, and its task writes events (120
// deliveries that each hold a connection for the whole 10-second attempt timeout). Another
// principal's notification must still arrive in about its normal time, measured in this same
// test before the attack; so must the attacker's own notification to another, healthy
// receiver; and the tarpit never holds more than PerDestination connections.
//
// The bound is the normal latency plus 3 seconds: generous for a loaded 2-core machine
// (normal latency is milliseconds), and far under the 10 seconds every tarpit delivery holds
// its slot — before this fix the other principal waited for whole batches of them (over 90 s).
func TestTarpitIsolation(t *testing.T) {
	t.Parallel()
	st, key := sqliteStore(t)
	jwks := serveJWKS(t, key)
	d := push.New(st, key, &push.Options{Allow: loopback}) // the defaults otherwise: 10 s timeout, 64 workers, 4 per destination, 8 per principal
	t.Cleanup(func() { d.Close() })
	bobR, aliceR := newReceiver(t, jwks), newReceiver(t, jwks)
	bob := principalTask(t, st, "bob", bobR.url())

	var normal time.Duration
	for range 3 {
		normal = max(normal, latency(t, st, d, bob, bobR, 10*time.Second))
	}
	bound := normal + 3*time.Second

	tp := newTarpit(t)
	var urls []string
	for i := range 40 {
		urls = append(urls, fmt.Sprintf("http://%s/hook/%d", tp.ln.Addr(), i))
	}
	alice := principalTask(t, st, "alice", append(urls, aliceR.url())...)
	for i := range 3 {
		emitOne(t, st, d, alice, fmt.Sprint("flood ", i))
	}
	waitFor(t, "the tarpit to hold deliveries", func() bool { _, open, _ := tp.stats(); return open >= 4 })

	underAttack := latency(t, st, d, bob, bobR, bound)
	aliceOwn := latency(t, st, d, alice, aliceR, bound) // her healthy receiver, beside her tarpit
	t.Logf("bob's latency: %v normally, %v under attack (%.1fx); alice's healthy receiver: %v", normal, underAttack, float64(underAttack)/float64(normal), aliceOwn)
	if _, _, maxOpen := tp.stats(); maxOpen > 4 {
		t.Errorf("the tarpit held %d connections at once, want at most PerDestination 4", maxOpen)
	}
}

// TestWorkersBound: however many principals point at tarpits, no more than Workers
// deliveries are in flight (each is a goroutine and a connection).
func TestWorkersBound(t *testing.T) {
	t.Parallel()
	st, key := sqliteStore(t)
	d := push.New(st, key, &push.Options{Allow: loopback, Workers: 5, PollInterval: 10 * time.Millisecond})
	t.Cleanup(func() { d.Close() })
	tp := newTarpit(t)
	for p := range 10 {
		task := principalTask(t, st, fmt.Sprint("p", p), fmt.Sprintf("http://%s/hook", tp.ln.Addr()))
		emitOne(t, st, d, task, "x")
		emitOne(t, st, d, task, "y")
	}
	waitFor(t, "the workers to fill", func() bool { _, open, _ := tp.stats(); return open >= 5 })
	time.Sleep(100 * time.Millisecond) // let any excess show
	if _, _, maxOpen := tp.stats(); maxOpen > 5 {
		t.Errorf("%d deliveries in flight at once, want at most Workers 5", maxOpen)
	}
}
