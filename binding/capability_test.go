package binding

import (
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// A session's rights end with its credential: the expiry an authenticator recorded in the
// user's "exp" attribute (time.Time, or Unix seconds).
func TestGrantCredentialExpiry(t *testing.T) {
	now := time.Now()
	for _, exp := range []any{now.Add(-time.Second), float64(now.Add(-time.Second).Unix()), now.Add(-time.Second).Unix()} {
		u := a2asrv.NewAuthenticatedUser("alice", map[string]any{"exp": exp})
		if err := (&grant{}).permit("GetTask", &a2a.GetTaskRequest{ID: "x"}, u, now); !errors.Is(err, a2a.ErrUnauthenticated) {
			t.Errorf("exp %v (%T) in the past: %v, want ErrUnauthenticated", exp, exp, err)
		}
	}
	u := a2asrv.NewAuthenticatedUser("alice", map[string]any{"exp": now.Add(time.Minute)})
	if err := (&grant{}).permit("GetTask", &a2a.GetTaskRequest{ID: "x"}, u, now); err != nil {
		t.Errorf("exp in the future: %v", err)
	}
}

// The token bucket refills at its rate and never beyond its burst.
func TestLimiterRefill(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimiter(&RateLimit{PerSecond: 2, Burst: 3})
	l.now = func() time.Time { return now }
	for i := range 3 {
		if ok, _ := l.allow("k"); !ok {
			t.Fatalf("request %d within the burst refused", i+1)
		}
	}
	if ok, wait := l.allow("k"); ok || wait != 500*time.Millisecond {
		t.Errorf("over the burst: ok %v, wait %v; want refused, 500ms", ok, wait)
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.allow("k"); !ok {
		t.Error("after one token's refill: refused")
	}
	now = now.Add(time.Hour)
	for i := range 3 {
		if ok, _ := l.allow("k"); !ok {
			t.Fatalf("after a long pause, request %d refused", i+1)
		}
	}
	if ok, _ := l.allow("k"); ok {
		t.Error("the bucket refilled beyond its burst")
	}
	if ok, _ := l.allow("other"); !ok {
		t.Error("another key shares the bucket")
	}
}
