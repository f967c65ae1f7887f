package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/internal/clustertest"
)

// openLimits opens Limits on dsn for replica name, closed when the test ends.
func openLimits(t *testing.T, dsn, name string, ttl time.Duration) *Limits {
	t.Helper()
	l, err := OpenLimits(t.Context(), dsn, &LimitsOptions{Replica: name, TTL: ttl, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Replicas taking slots at once never exceed the limit together; a slot given back on one is
// free on the other; principals and quotas count apart.
func TestLimitsQuotaAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := clustertest.Postgres(t)
	a, b := openLimits(t, dsn, "a", time.Minute), openLimits(t, dsn, "b", time.Minute)
	const limit = 3
	var got atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			ok, err := l.Acquire(t.Context(), "tasks", "user:alice", limit)
			if err != nil {
				t.Error(err)
			}
			if ok {
				got.Add(1)
			}
		})
	}
	wg.Wait()
	if got.Load() != limit {
		t.Fatalf("%d slots taken by 20 concurrent acquires on two replicas, want %d", got.Load(), limit)
	}
	if n, _ := a.Held(t.Context(), "tasks", "user:alice"); n != limit {
		t.Errorf("Held = %d, want %d", n, limit)
	}
	for _, other := range []struct{ quota, key string }{{"tasks", "user:bob"}, {"streams", "user:alice"}} {
		if ok, err := b.Acquire(t.Context(), other.quota, other.key, limit); !ok || err != nil {
			t.Errorf("Acquire(%s, %s) = %v, %v; want a slot of its own", other.quota, other.key, ok, err)
		}
	}
	// Give back a slot, on a replica that holds one.
	var heldByA int
	if err := a.pool.QueryRow(t.Context(), `SELECT coalesce(sum(n), 0) FROM cluster_quota_held
		WHERE holder = $1 AND quota = 'tasks' AND key = 'user:alice'`, a.holder).Scan(&heldByA); err != nil {
		t.Fatal(err)
	}
	giver := b
	if heldByA > 0 {
		giver = a
	}
	if err := giver.Release(t.Context(), "tasks", "user:alice"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Acquire(t.Context(), "tasks", "user:alice", limit); !ok || err != nil {
		t.Errorf("Acquire after a release = %v, %v; want the freed slot", ok, err)
	}
	// A release by a replica that holds nothing changes nothing.
	c := openLimits(t, dsn, "c", time.Minute)
	if err := c.Release(t.Context(), "tasks", "user:alice"); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Held(t.Context(), "tasks", "user:alice"); n != limit {
		t.Errorf("Held after a release by a replica holding nothing = %d, want %d", n, limit)
	}
}

// The slots of a replica that died (its heartbeat stopped) are given back by the others once
// its heartbeat expired; a replica that closes gives its own back at once.
func TestLimitsDeadReplicasSlotsComeBack(t *testing.T) {
	t.Parallel()
	dsn := clustertest.Postgres(t)
	const ttl = 300 * time.Millisecond
	dead := openLimits(t, dsn, "dead", ttl)
	live := openLimits(t, dsn, "live", ttl)
	for range 2 {
		if ok, err := dead.Acquire(t.Context(), "tasks", "user:alice", 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if ok, _ := live.Acquire(t.Context(), "tasks", "user:alice", 2); ok {
		t.Fatal("a slot past the limit")
	}
	// dead dies: no more heartbeats, no goodbye.
	close(dead.quit)
	<-dead.done
	dead.pool.Close()
	dead.once.Do(func() {})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ok, err := live.Acquire(t.Context(), "tasks", "user:alice", 2); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead replica's slots never came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// live now holds one; closing gives it back at once.
	live.Close()
	other := openLimits(t, dsn, "other", time.Minute)
	if n, _ := other.Held(t.Context(), "tasks", "user:alice"); n != 0 {
		t.Errorf("Held after the holder closed = %d, want 0", n)
	}
}

// A principal's bucket is one for every replica: a burst of 3 is 3 requests across them; it
// refills at the rate, by the database's clock.
func TestLimitsRate(t *testing.T) {
	t.Parallel()
	dsn := clustertest.Postgres(t)
	a, b := openLimits(t, dsn, "a", time.Minute), openLimits(t, dsn, "b", time.Minute)
	for i, l := range []*Limits{a, b, a} {
		if ok, _, err := l.Take(t.Context(), "user:alice", 0.01, 3); !ok || err != nil {
			t.Fatalf("request %d of a burst of 3: %v, %v", i+1, ok, err)
		}
	}
	ok, wait, err := b.Take(t.Context(), "user:alice", 0.01, 3)
	if ok || err != nil {
		t.Fatalf("fourth request = %v, %v; want refused", ok, err)
	}
	if wait < 50*time.Second || wait > 101*time.Second {
		t.Errorf("wait = %v, want about 100 s (one token at 0.01/s)", wait)
	}
	if ok, _, _ := a.Take(t.Context(), "user:bob", 0.01, 3); !ok {
		t.Error("another principal's bucket is empty")
	}
	// A fast bucket refills: after its period, a token is back (a lower bound on time only).
	for range 2 {
		b.Take(t.Context(), "user:fast", 20, 1)
	}
	time.Sleep(100 * time.Millisecond) // two periods of 50 ms
	if ok, _, err := a.Take(t.Context(), "user:fast", 20, 1); !ok || err != nil {
		t.Errorf("after the refill period: %v, %v; want a token", ok, err)
	}
}

// One replica at a time holds an agent instance; the epoch changes only when it changes hands;
// a released or expired lease is the next taker's.
func TestOwnershipInPostgres(t *testing.T) {
	t.Parallel()
	dsn := clustertest.Postgres(t)
	a, b := openLimits(t, dsn, "a", time.Minute), openLimits(t, dsn, "b", time.Minute)
	const ttl = 200 * time.Millisecond
	oa, ob := a.Ownership(ttl), b.Ownership(ttl)
	alice := agent.Key{Agent: "helper", Principal: agent.Principal{Tenant: "acme", Name: "alice"}}
	bob := agent.Key{Agent: "helper", Principal: agent.Principal{Tenant: "acme", Name: "bob"}}
	e1, ok, err := oa.Hold(t.Context(), alice)
	if err != nil || !ok {
		t.Fatalf("a takes alice: %v, %v", ok, err)
	}
	if _, ok, _ := ob.Hold(t.Context(), alice); ok {
		t.Fatal("b took alice while a held her")
	}
	if _, ok, _ := ob.Hold(t.Context(), bob); !ok {
		t.Fatal("b cannot take bob")
	}
	if e, ok, _ := oa.Hold(t.Context(), alice); !ok || e != e1 {
		t.Errorf("a renews: epoch %d, %v; want %d", e, ok, e1)
	}
	if err := oa.Release(t.Context(), alice); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := oa.Hold(t.Context(), alice); !ok || e != e1 {
		t.Errorf("a takes alice again after releasing her, nobody between: epoch %d, %v; want %d", e, ok, e1)
	}
	time.Sleep(ttl + 50*time.Millisecond) // a's lease expires (a lower bound on time only)
	e2, ok, _ := ob.Hold(t.Context(), alice)
	if !ok || e2 == e1 {
		t.Errorf("b takes alice after a's lease expired: epoch %d, %v; want a new epoch", e2, ok)
	}
	if _, ok, _ := oa.Hold(t.Context(), alice); ok {
		t.Error("a took alice back while b held her")
	}
}

// Two live replicas never share a name: OpenLimits refuses the name of a live replica (it
// sees its heartbeat renewed), and gives it to the next replica once that one has closed, or
// once its heartbeat expired after it died.
func TestLimitsReplicaNameIsUnique(t *testing.T) {
	t.Parallel()
	dsn := clustertest.Postgres(t)
	const ttl = 900 * time.Millisecond
	first := openLimits(t, dsn, "r1", ttl)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if l, err := OpenLimits(ctx, dsn, &LimitsOptions{Replica: "r1", TTL: ttl, Logger: quiet}); !errors.Is(err, ErrReplicaNameInUse) {
		if err == nil {
			l.Close()
		}
		t.Fatalf("OpenLimits(r1) while r1 lives = %v, want ErrReplicaNameInUse", err)
	}
	other := openLimits(t, dsn, "r2", ttl) // other names are free

	// A graceful stop gives the name back at once: no waiting for the heartbeat.
	first.Close()
	start := time.Now()
	second := openLimits(t, dsn, "r1", ttl)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("taking the name of a replica that closed took %v", took)
	}
	if l, err := OpenLimits(ctx, dsn, &LimitsOptions{Replica: "r1", TTL: ttl, Logger: quiet}); !errors.Is(err, ErrReplicaNameInUse) {
		if err == nil {
			l.Close()
		}
		t.Fatalf("OpenLimits(r1) while the second r1 lives = %v, want ErrReplicaNameInUse", err)
	}

	// other dies (no more heartbeats, no goodbye): its name is taken once its heartbeat expired.
	close(other.quit)
	<-other.done
	other.pool.Close()
	other.once.Do(func() {})
	third := openLimits(t, dsn, "r2", ttl)
	if err := third.beat(t.Context()); err != nil {
		t.Errorf("the heartbeat of the replica that took a dead one's name: %v", err)
	}
	if err := second.beat(t.Context()); err != nil {
		t.Errorf("the heartbeat of r1: %v", err)
	}
}
