package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// outboxTask creates a working task of owner with push configs to urls (IDs c0, c1, …) and
// writes n events, so that each config has n deliveries due.
func outboxTask(t *testing.T, s store.Store, owner store.Owner, n int, urls ...string) *store.Task {
	t.Helper()
	task := create(t, s, owner, "ctx", a2a.TaskStateWorking)
	for i, u := range urls {
		if err := s.PutPushConfig(t.Context(), owner, &a2a.PushConfig{TaskID: task.Task.ID, ID: fmt.Sprint("c", i), URL: u}, store.PushLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	var evs []a2a.Event
	for i := range n {
		evs = append(evs, statusEvent(task.Task, a2a.TaskStateWorking, fmt.Sprint(i)))
	}
	if err := s.Update(t.Context(), task, evs); err != nil {
		t.Fatal(err)
	}
	return task
}

// claimCount claims with q and counts what it got by owner's principal and destination.
func claimCount(t *testing.T, s store.Store, q store.ClaimQuery) (map[string]int, []*store.Delivery) {
	t.Helper()
	ds, err := s.ClaimDeliveries(t.Context(), q)
	if err != nil {
		t.Fatalf("ClaimDeliveries(%+v): %v", q, err)
	}
	n := map[string]int{}
	for _, d := range ds {
		n[d.Owner.Principal+" "+d.Destination]++
	}
	return n, ds
}

// testClaimBounds: PerDestination and PerOwner bound what one owner has under lease, counting
// earlier claims' leases until they end; another owner, and another destination of the same
// owner, are claimed past a busy one.
func testClaimBounds(t *testing.T, s store.Store) {
	ctx := t.Context()
	const slow, fast = "https://slow.example:443", "https://fast.example:443"
	// Alice: three configs at one slow host (one destination, whatever the path and case),
	// one at a fast host; Bob: one at the slow host. Five events each.
	outboxTask(t, s, alice, 5, "https://slow.example/a", "https://SLOW.example:443/b", "https://slow.example./c", "https://fast.example/")
	outboxTask(t, s, bob, 5, "https://slow.example/bob")
	q := store.ClaimQuery{Limit: 100, Lease: time.Hour, PerDestination: 2, PerOwner: 3}
	got, ds := claimCount(t, s, q)
	diff(t, "first claim, by principal and destination", map[string]int{"alice " + slow: 2, "alice " + fast: 1, "bob " + slow: 2}, got)

	// Nothing more while those are under lease.
	if again, _ := claimCount(t, s, q); len(again) != 0 {
		t.Errorf("claimed past the bounds while under lease: %v", again)
	}
	// One of Alice's slow deliveries settles: exactly one more of hers fits.
	var aliceSlow *store.Delivery
	for _, d := range ds {
		if d.Owner == alice && d.Destination == slow {
			aliceSlow = d
		}
	}
	if err := s.CompleteDelivery(ctx, aliceSlow); err != nil {
		t.Fatal(err)
	}
	got, _ = claimCount(t, s, q)
	if len(got) != 1 || got["alice "+slow]+got["alice "+fast] != 1 {
		t.Errorf("after one settled: %v; want one more of alice's", got)
	}
	// A retried delivery is no longer under lease: it frees its place, and is due again.
	var bobs []*store.Delivery
	for _, d := range ds {
		if d.Owner == bob {
			bobs = append(bobs, d)
		}
	}
	if err := s.RetryDelivery(ctx, bobs[0], 0); err != nil {
		t.Fatal(err)
	}
	got, _ = claimCount(t, s, q)
	diff(t, "after bob's retry", map[string]int{"bob " + slow: 1}, got)

	// Without bounds, everything due is claimed.
	got, _ = claimCount(t, s, store.ClaimQuery{Limit: 100, Lease: time.Hour})
	total := 0
	for _, n := range got {
		total += n
	}
	// 25 deliveries, one completed, five under lease.
	if total != 25-1-5 {
		t.Errorf("an unbounded claim took %d, want the %d left", total, 25-1-5)
	}
}

// testClaimLeaseEnds: a lease that ran out (a crashed claimant) no longer counts against the
// bounds.
func testClaimLeaseEnds(t *testing.T, s store.Store) {
	outboxTask(t, s, alice, 3, "https://slow.example/")
	q := store.ClaimQuery{Limit: 100, Lease: 20 * time.Millisecond, PerDestination: 1}
	if got, _ := claimCount(t, s, q); len(got) != 1 {
		t.Fatalf("first claim: %v", got)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, ds := claimCount(t, s, q)
		if len(ds) == 1 {
			break
		}
		if len(ds) > 1 || time.Now().After(deadline) {
			t.Fatalf("after the lease ran out: %v; want one delivery", got)
		}
	}
}

// testClaimTurns: owners take turns: one owner's long backlog, due earlier, does not come
// before another owner's first delivery.
func testClaimTurns(t *testing.T, s store.Store) {
	outboxTask(t, s, alice, 20, "https://a.example/")
	time.Sleep(2 * time.Millisecond) // bob's are due strictly later
	outboxTask(t, s, bob, 1, "https://b.example/")
	outboxTask(t, s, aliceT2, 1, "https://a.example/") // another tenant's alice is another owner
	got, ds := claimCount(t, s, store.ClaimQuery{Limit: 3, Lease: time.Hour})
	diff(t, "a claim of 3 by turns", map[string]int{"alice https://a.example:443": 2, "bob https://b.example:443": 1}, got)
	tenants := map[string]bool{}
	for _, d := range ds {
		if d.Owner.Principal == "alice" {
			tenants[d.Owner.Tenant] = true
		}
	}
	if len(tenants) != 2 {
		t.Errorf("alice's deliveries claimed are of tenants %v; want one of each tenant", tenants)
	}
}

// testConcurrentClaimBounds: claimants racing (as replicas would) never have more under lease
// than the bounds allow.
func testConcurrentClaimBounds(t *testing.T, s store.Store) {
	outboxTask(t, s, alice, 30, "https://slow.example/")
	q := store.ClaimQuery{Limit: 2, Lease: time.Hour, PerDestination: 3}
	var (
		mu    sync.Mutex
		total int
		wg    sync.WaitGroup
	)
	for range 6 {
		wg.Go(func() {
			for range 3 {
				ds, err := s.ClaimDeliveries(t.Context(), q)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += len(ds)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if total != 3 {
		t.Errorf("racing claims took %d deliveries to one destination, want PerDestination 3", total)
	}
}
