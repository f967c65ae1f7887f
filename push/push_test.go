package push_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/push"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// fakeResolver resolves names from a table.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := f[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var names = fakeResolver{
	"public.example":    {netip.MustParseAddr("93.184.216.34")},
	"private.example":   {netip.MustParseAddr("192.168.1.10")},
	"mixed.example":     {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")},
	"meta.example":      {netip.MustParseAddr("169.254.169.254")},
	"v6local.example":   {netip.MustParseAddr("fd00::1")},
	"loop.example":      {netip.MustParseAddr("127.0.0.1")},
	"nat64.example":     {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
	"sixtofour.example": {netip.MustParseAddr("2002:c0a8:101::1")},
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	key := newKey(t, st)
	strict := push.New(st, key, &push.Options{Resolver: names})
	t.Cleanup(func() { strict.Close() })
	allowing := push.New(st, key, &push.Options{Resolver: names, Allow: loopback, AllowHosts: []string{"private.example"}})
	t.Cleanup(func() { allowing.Close() })
	tests := []struct {
		url         string
		d           *push.Deliverer
		ok, blocked bool
	}{
		{"https://public.example/hook", strict, true, false},
		{"http://93.184.216.34:8080/x", strict, true, false},
		{"http://127.0.0.1/", strict, false, true},
		{"http://[::1]/", strict, false, true},
		{"http://10.0.0.1/", strict, false, true},
		{"http://172.16.5.4/", strict, false, true},
		{"http://192.168.0.1/", strict, false, true},
		{"http://169.254.169.254/latest/meta-data", strict, false, true},
		{"http://[fe80::1]/", strict, false, true},
		{"http://[fc00::1]/", strict, false, true},
		{"http://0.0.0.0/", strict, false, true},
		{"http://224.0.0.1/", strict, false, true},
		{"http://[::ffff:10.0.0.1]/", strict, false, true},
		{"http://100.64.0.1/", strict, false, true},
		// IPv6 forms that embed a refused IPv4 address (issue 23).
		{"http://[64:ff9b::a9fe:a9fe]/latest/meta-data", strict, false, true}, // NAT64: 169.254.169.254
		{"http://[64:ff9b::7f00:1]/", strict, false, true},
		{"http://[64:ff9b:1::808:808]/", strict, false, true},                   // local-use NAT64
		{"http://[2002:a9fe:a9fe::1]/", strict, false, true},                    // 6to4 of 169.254.169.254
		{"http://[2001:0:5db8:d822:8000:63bf:f5ff:fffe]/", strict, false, true}, // Teredo client 10.0.0.1
		{"http://[::169.254.169.254]/", strict, false, true},                    // IPv4-compatible
		{"http://[::127.0.0.1]/", strict, false, true},
		{"http://[::ffff:169.254.169.254]/", strict, false, true}, // IPv4-mapped
		{"https://nat64.example/", strict, false, true},
		{"https://sixtofour.example/", strict, false, true},
		{"http://[64:ff9b::5db8:d822]/", strict, true, false}, // NAT64 of a public address
		{"http://[2001:db8::1]/", strict, false, true},        // documentation
		{"http://198.18.0.1/", strict, false, true},           // benchmarking
		{"http://192.88.99.1/", strict, false, true},          // 6to4 relay anycast
		{"https://private.example/", strict, false, true},
		{"https://mixed.example/", strict, false, true},
		{"https://meta.example/", strict, false, true},
		{"https://v6local.example/", strict, false, true},
		{"https://loop.example/", strict, false, true},
		{"ftp://public.example/", strict, false, false},
		{"https:///nohost", strict, false, false},
		{"https://user:pw@public.example/", strict, false, false},
		{"https://unknown.example/", strict, true, false}, // checked again when dialing
		{"http://127.0.0.1:9/", allowing, true, false},
		{"https://loop.example/", allowing, true, false},
		{"https://private.example/", allowing, true, false},
		{"http://10.0.0.1/", allowing, false, true},
	}
	for _, tc := range tests {
		err := tc.d.CheckURL(t.Context(), tc.url)
		if (err == nil) != tc.ok || errors.Is(err, push.ErrBlocked) != tc.blocked {
			t.Errorf("CheckURL(%q) = %v; want ok %v, blocked %v", tc.url, err, tc.ok, tc.blocked)
		}
	}
}

// serveJWKS publishes key's JWKS on a test server and returns its URL.
func serveJWKS(t *testing.T, key *push.Key) string {
	jwks := httptest.NewServer(key)
	t.Cleanup(jwks.Close)
	return jwks.URL + push.JWKSPath
}

func newKey(t *testing.T, st store.Store) *push.Key {
	t.Helper()
	k, err := push.LoadKey(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// receiver is a real push receiver on loopback that verifies every delivery and records it.
type receiver struct {
	t      *testing.T
	v      *push.Verifier
	addr   string
	mu     sync.Mutex
	srv    *http.Server
	got    map[int64]int // seq -> deliveries accepted (repeats included)
	hits   int
	bad    int
	auth   []string
	tokens []string
	fail   func(hit int) int // status to answer instead, or 0
	closed bool
}

func newReceiver(t *testing.T, jwksURL string) *receiver {
	r := &receiver{t: t, v: push.NewVerifier(jwksURL, nil), got: map[int64]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(r.stop)
	return r
}

func (r *receiver) url() string { return "http://" + r.addr + "/hook" }

func (r *receiver) serve(ln net.Listener) {
	h := push.NewReceiver(r.v, func(ctx context.Context, n *push.Notification) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got[n.Seq]++
		return nil
	})
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		r.mu.Lock()
		r.hits++
		hit := r.hits
		r.auth = append(r.auth, q.Header.Get("Authorization"))
		r.tokens = append(r.tokens, q.Header.Get(push.TokenHeader))
		fail := r.fail
		r.mu.Unlock()
		if fail != nil {
			if code := fail(hit); code != 0 {
				if code/100 == 3 {
					w.Header().Set("Location", "http://10.0.0.1/stolen")
				}
				w.WriteHeader(code)
				return
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, q)
		if rec.Code == http.StatusUnauthorized {
			r.mu.Lock()
			r.bad++
			r.mu.Unlock()
		}
		w.WriteHeader(rec.Code)
	})}
	go r.srv.Serve(ln)
}

func (r *receiver) stop() {
	r.mu.Lock()
	srv := r.srv
	r.closed = true
	r.mu.Unlock()
	srv.Close()
}

// restart listens again on the same address.
func (r *receiver) restart() {
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ln, err = net.Listen("tcp", r.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.serve(ln)
}

func (r *receiver) snapshot() (got map[int64]int, hits, bad int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	got = map[int64]int{}
	for k, v := range r.got {
		got[k] = v
	}
	return got, r.hits, r.bad
}

// waitFor polls cond until it holds, or fails the test after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// fixture is a store with a task, a key served as a JWKS, and a deliverer.
type fixture struct {
	st   store.Store
	key  *push.Key
	jwks string
	task *store.Task
	d    *push.Deliverer
}

func newFixture(t *testing.T, opts *push.Options) *fixture {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, key: newKey(t, st)}
	f.jwks = serveJWKS(t, f.key)
	f.task = &store.Task{Task: &a2a.Task{ID: a2a.NewTaskID(), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}
	if err := st.Create(t.Context(), f.task, nil); err != nil {
		t.Fatal(err)
	}
	o := push.Options{Allow: loopback, MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond, Timeout: 5 * time.Second}
	if opts != nil {
		o = *opts
	}
	f.d = push.New(st, f.key, &o)
	t.Cleanup(func() { f.d.Close() })
	return f
}

func (f *fixture) config(t *testing.T, cfg *a2a.PushConfig) {
	t.Helper()
	cfg.TaskID = f.task.Task.ID
	if err := f.st.PutPushConfig(t.Context(), store.Owner{}, cfg, store.PushLimits{}); err != nil {
		t.Fatal(err)
	}
}

// emit writes n status events.
func (f *fixture) emit(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		ev := a2a.NewStatusUpdateEvent(f.task.Task, a2a.TaskStateWorking, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(fmt.Sprint(i))))
		if err := f.st.Update(t.Context(), f.task, []a2a.Event{ev}); err != nil {
			t.Fatal(err)
		}
		f.d.Wake()
	}
}

// outboxEmpty reports whether nothing is left to deliver (claiming with a short lease).
func (f *fixture) outboxEmpty(t *testing.T) bool {
	ds, err := f.st.ClaimDeliveries(context.Background(), store.ClaimQuery{Limit: 100, Lease: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return len(ds) == 0
}

func TestDeliverSignedWithAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	r := newReceiver(t, f.jwks)
	f.config(t, &a2a.PushConfig{ID: "c1", URL: r.url(), Token: "tok-123", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "s3cret"}})
	f.emit(t, 3)
	waitFor(t, "three deliveries", func() bool { got, _, _ := r.snapshot(); return len(got) == 3 })
	got, _, bad := r.snapshot()
	if bad != 0 {
		t.Errorf("%d deliveries failed verification", bad)
	}
	for seq := int64(1); seq <= 3; seq++ {
		if got[seq] != 1 {
			t.Errorf("event %d accepted %d times, want 1", seq, got[seq])
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.auth {
		if r.auth[i] != "Bearer s3cret" || r.tokens[i] != "tok-123" {
			t.Errorf("delivery %d: Authorization %q, %s %q; want Bearer s3cret, tok-123", i, r.auth[i], push.TokenHeader, r.tokens[i])
		}
	}
}

// TestReceiverRestart: a receiver that goes away in the middle of the deliveries and comes
// back on the same address gets every event, at least once, each verified.
func TestReceiverRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	r := newReceiver(t, f.jwks)
	f.config(t, &a2a.PushConfig{ID: "c1", URL: r.url()})
	const n = 20
	f.emit(t, 5)
	waitFor(t, "a first delivery", func() bool { got, _, _ := r.snapshot(); return len(got) > 0 })
	r.stop()
	f.emit(t, n-5)
	time.Sleep(50 * time.Millisecond) // let some attempts fail against the closed port
	r.restart()
	waitFor(t, "every event", func() bool { got, _, _ := r.snapshot(); return len(got) == n })
	if _, _, bad := r.snapshot(); bad != 0 {
		t.Errorf("%d deliveries failed verification", bad)
	}
	waitFor(t, "an empty outbox", func() bool { return f.outboxEmpty(t) })
}

func TestRetryBackoff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	r := newReceiver(t, f.jwks)
	r.fail = func(hit int) int {
		if hit <= 3 {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	f.config(t, &a2a.PushConfig{ID: "c1", URL: r.url()})
	f.emit(t, 1)
	waitFor(t, "the delivery after three failures", func() bool { got, _, _ := r.snapshot(); return got[1] == 1 })
	if _, hits, _ := r.snapshot(); hits != 4 {
		t.Errorf("%d attempts, want 4", hits)
	}
}

func TestGiveUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &push.Options{Allow: loopback, MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, PollInterval: 5 * time.Millisecond})
	r := newReceiver(t, f.jwks)
	r.fail = func(int) int { return http.StatusInternalServerError }
	f.config(t, &a2a.PushConfig{ID: "c1", URL: r.url()})
	f.emit(t, 1)
	waitFor(t, "the delivery to be dropped", func() bool { _, hits, _ := r.snapshot(); return hits >= 3 && f.outboxEmpty(t) })
	time.Sleep(50 * time.Millisecond)
	if _, hits, _ := r.snapshot(); hits != 3 {
		t.Errorf("%d attempts, want MaxAttempts 3", hits)
	}
}

// TestRedirectNotFollowed: a receiver that redirects (here to a private address) fails the
// attempt; the redirect is never followed.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &push.Options{Allow: loopback, MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond,
		Resolver: fakeResolver{}})
	r := newReceiver(t, f.jwks)
	r.fail = func(int) int { return http.StatusFound }
	f.config(t, &a2a.PushConfig{ID: "c1", URL: r.url()})
	f.emit(t, 1)
	waitFor(t, "the delivery to be dropped", func() bool { _, hits, _ := r.snapshot(); return hits >= 2 && f.outboxEmpty(t) })
	if got, _, _ := r.snapshot(); len(got) != 0 {
		t.Errorf("accepted %v, want nothing", got)
	}
}

// TestBlockedAtDial: configs written past CheckURL (or whose host now resolves elsewhere) are
// refused when dialing, and dropped.
func TestBlockedAtDial(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, "http://unused.invalid/")
	_, port, _ := net.SplitHostPort(r.addr)
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/hook",         // loopback, not allow-listed here
		"http://loop.example:" + port + "/hook",      // a name resolving to loopback
		"http://10.0.0.1:" + port + "/hook",          // private
		"http://169.254.169.254/latest/meta-data",    // metadata service
		"http://private.example/hook",                // a name resolving to a private address
		"http://[64:ff9b::7f00:1]:" + port + "/hook", // NAT64 form of loopback
		"http://nat64.example/hook",                  // a name resolving to NAT64 metadata
	} {
		t.Run(u, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &push.Options{Resolver: names, PollInterval: 5 * time.Millisecond, MinBackoff: time.Millisecond})
			f.config(t, &a2a.PushConfig{ID: "c1", URL: u})
			f.emit(t, 1)
			waitFor(t, "the delivery to be dropped", func() bool { return f.outboxEmpty(t) })
		})
	}
	if _, hits, _ := r.snapshot(); hits != 0 {
		t.Errorf("the loopback receiver was reached %d times", hits)
	}
}

func TestLoadKeyPersists(t *testing.T) {
	t.Parallel()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	a, b := newKey(t, st), newKey(t, st)
	if a.KeyID() != b.KeyID() || a.KeyID() == "" {
		t.Errorf("LoadKey twice: kids %q and %q, want the same", a.KeyID(), b.KeyID())
	}
}

// rebinding answers a public address first, then a private one (DNS rebinding).
type rebinding struct {
	mu    sync.Mutex
	calls int
}

func (r *rebinding) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestDNSRebinding: a name that passed CheckURL and then resolves to a refused address is
// refused when dialed.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, "http://unused.invalid/")
	_, port, _ := net.SplitHostPort(r.addr)
	f := newFixture(t, &push.Options{Resolver: &rebinding{}, PollInterval: 5 * time.Millisecond})
	u := "http://rebind.example:" + port + "/hook"
	if err := f.d.CheckURL(t.Context(), u); err != nil {
		t.Fatalf("CheckURL(%s) while public = %v", u, err)
	}
	f.config(t, &a2a.PushConfig{ID: "c1", URL: u})
	f.emit(t, 1)
	waitFor(t, "the delivery to be dropped", func() bool { return f.outboxEmpty(t) })
	if _, hits, _ := r.snapshot(); hits != 0 {
		t.Errorf("the loopback receiver was reached %d times", hits)
	}
}
