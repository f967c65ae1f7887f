package binding

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"
)

// sharedCounts is a QuotaCounter and RateCounter in memory, as two replicas given the same
// database would see it; broken makes every call fail.
type sharedCounts struct {
	mu      sync.Mutex
	held    map[string]int
	tokens  map[string]float64
	broken  bool
	calls   int
	release int
}

func newSharedCounts() *sharedCounts {
	return &sharedCounts{held: map[string]int{}, tokens: map[string]float64{}}
}

var errBroken = errors.New("shared counter unreachable")

func (s *sharedCounts) Acquire(_ context.Context, quota, key string, limit int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.broken {
		return false, errBroken
	}
	if s.held[quota+"/"+key] >= limit {
		return false, nil
	}
	s.held[quota+"/"+key]++
	return true, nil
}

func (s *sharedCounts) Release(_ context.Context, quota, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release++
	if s.broken {
		return errBroken
	}
	s.held[quota+"/"+key]--
	return nil
}

// Take keeps a bucket that never refills (the test's rate is tiny).
func (s *sharedCounts) Take(_ context.Context, key string, perSecond float64, burst int) (bool, time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.broken {
		return false, 0, errBroken
	}
	tokens, ok := s.tokens[key]
	if !ok {
		tokens = float64(burst)
	}
	if tokens < 1 {
		return false, time.Duration(math.Ceil((1-tokens)/perSecond)) * time.Second, nil
	}
	s.tokens[key] = tokens - 1
	return true, 0, nil
}

func (s *sharedCounts) heldBy(quota, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[quota+"/"+key]
}

func (s *sharedCounts) breakIt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken = true
}

// Two replicas whose Quotas share a counter bound a principal's running tasks together: what
// runs on one counts on the other; a task that ends gives its slot back to both.
func TestSharedQuotaTasks(t *testing.T) {
	t.Parallel()
	shared := newSharedCounts()
	a := quotaServer(t, &Quotas{Tasks: 2, Shared: shared})
	b := quotaServer(t, &Quotas{Tasks: 2, Shared: shared})
	who := "shared-tasks"
	sendTo := func(ts *testServer, key string) error { return sendWaitAs(t, ts, who, key) }
	t.Cleanup(func() { b.exec.release("k2"); b.exec.release("k3") })
	if err := sendTo(a, "k1"); err != nil {
		t.Fatal(err)
	}
	if err := sendTo(b, "k2"); err != nil {
		t.Fatal(err)
	}
	quotaRefusal(t, "capnweb", sendTo(a, "k3"), quotaTasks)
	quotaRefusal(t, "capnweb", sendTo(b, "k3"), quotaTasks)
	a.exec.release("k1")
	deadline := time.Now().Add(10 * time.Second)
	for shared.heldBy(quotaTasks, "user:"+who) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("shared slots held = %d after a task ended, want 1", shared.heldBy(quotaTasks, "user:"+who))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := sendTo(b, "k3"); err != nil {
		t.Fatalf("after a task on the other replica ended: %v", err)
	}
}

// sendWaitAs starts, as who, over capnweb on ts, a task that runs until the test releases key.
func sendWaitAs(t *testing.T, ts *testServer, who, key string) error {
	s := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer " + who}})
	req := userMessageWire("wait:" + key)
	req["configuration"] = map[string]any{"returnImmediately": true}
	_, err := s.Main().Call("sendMessage", req).Await(t.Context())
	return err
}

// With the shared counter unreachable, each replica counts a principal's tasks on its own
// against the limit: a request is not refused for the counter's sake, nor let past the limit
// on the replica it reaches.
func TestSharedQuotaCountsAloneWhenDown(t *testing.T) {
	t.Parallel()
	shared := newSharedCounts()
	shared.breakIt()
	a := quotaServer(t, &Quotas{Tasks: 1, Shared: shared})
	b := quotaServer(t, &Quotas{Tasks: 1, Shared: shared})
	who := "shared-down"
	t.Cleanup(func() { a.exec.release("d1"); b.exec.release("d2") })
	if err := sendWaitAs(t, a, who, "d1"); err != nil {
		t.Fatalf("a's first task with the counter down: %v", err)
	}
	quotaRefusal(t, "capnweb", sendWaitAs(t, a, who, "d3"), quotaTasks)
	if err := sendWaitAs(t, b, who, "d2"); err != nil {
		t.Fatalf("b's first task with the counter down: %v", err)
	}
}

// Two replicas whose RateLimits share a counter take tokens from one bucket per principal;
// with the counter unreachable, each counts on its own buckets.
func TestSharedRateLimit(t *testing.T) {
	t.Parallel()
	shared := newSharedCounts()
	rl := func() *RateLimit { return &RateLimit{PerSecond: 0.001, Burst: 2, Shared: shared} }
	a := startServer(t, serverConfig{engine: true, opts: &Options{Authenticate: nameAuth, RateLimit: rl()}})
	b := startServer(t, serverConfig{engine: true, opts: &Options{Authenticate: nameAuth, RateLimit: rl()}})
	get := func(ts *testServer) int {
		r := do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/none", nil, "Authorization", "Bearer rate")
		return r.status
	}
	if got := get(a); got == http.StatusTooManyRequests {
		t.Fatal("first request refused")
	}
	if got := get(b); got == http.StatusTooManyRequests {
		t.Fatal("second request, on the other replica, refused")
	}
	if got := get(a); got != http.StatusTooManyRequests {
		t.Fatalf("third request = %d, want 429: the burst of 2 is the cluster's", got)
	}
	shared.breakIt()
	if got := get(b); got == http.StatusTooManyRequests {
		t.Fatal("with the shared counter down, b's own bucket (one request so far) refused")
	}
}
