package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// leased creates a task of owner in state st held by holder for ttl (no lease when holder is "").
func leased(t *testing.T, s store.Store, owner store.Owner, st a2a.TaskState, holder string, ttl time.Duration) *store.Task {
	t.Helper()
	task := &store.Task{Task: newTask(newID("task"), "ctx", st), Owner: owner, Lease: store.Lease{Holder: holder}, LeaseTTL: ttl}
	if err := s.Create(t.Context(), task, []a2a.Event{task.Task}); err != nil {
		t.Fatalf("Create(%s): %v", task.Task.ID, err)
	}
	return task
}

// expire waits until leases of ttl taken before the call have expired. Only a lower bound on
// the time that passes matters, so the test cannot be made flaky by a slow machine.
func expire(ttl time.Duration) { time.Sleep(ttl + 5*time.Millisecond) }

func testLeases(t *testing.T, s store.Store) {
	ctx := t.Context()
	before := time.Now().Add(-time.Second)
	held := leased(t, s, alice, a2a.TaskStateWorking, "r1", time.Hour)
	if held.Lease.Holder != "r1" || held.Lease.Until.Before(before.Add(time.Hour)) || held.Lease.Until.After(time.Now().Add(time.Hour+time.Second)) {
		t.Errorf("after Create with a lease of an hour: Lease %+v, want r1 until about an hour from now", held.Lease)
	}
	got := get(t, s, alice, held.Task.ID)
	if got.Lease.Holder != "r1" || !got.Lease.Until.Equal(held.Lease.Until) {
		t.Errorf("Get: Lease %+v, want %+v", got.Lease, held.Lease)
	}
	if got.LeaseTTL != 0 {
		t.Errorf("Get: LeaseTTL %v, want 0 (reads leave it)", got.LeaseTTL)
	}
	plain := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	if got := get(t, s, alice, plain.Task.ID); got.Lease != (store.Lease{}) {
		t.Errorf("Get of a task created without lease: Lease %+v, want none", got.Lease)
	}
	// A holder without a time, or a time without a holder, sets nothing.
	for _, l := range []struct {
		holder string
		ttl    time.Duration
	}{{"r1", 0}, {"", time.Hour}} {
		x := leased(t, s, alice, a2a.TaskStateWorking, l.holder, l.ttl)
		if got := get(t, s, alice, x.Task.ID); got.Lease != (store.Lease{}) {
			t.Errorf("Create with holder %q and time %v: Lease %+v, want none", l.holder, l.ttl, got.Lease)
		}
	}

	// Update without a lease leaves it; with one, replaces it.
	next := get(t, s, alice, held.Task.ID)
	next.Task.Status.State = a2a.TaskStateWorking
	if err := s.Update(ctx, next, []a2a.Event{statusEvent(next.Task, a2a.TaskStateWorking, "on")}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, alice, held.Task.ID); got.Lease != held.Lease {
		t.Errorf("after Update without a lease: Lease %+v, want %+v kept", got.Lease, held.Lease)
	}
	next = get(t, s, alice, held.Task.ID)
	next.Lease, next.LeaseTTL = store.Lease{Holder: "r2"}, 2*time.Hour
	if err := s.Update(ctx, next, nil); err != nil {
		t.Fatal(err)
	}
	if next.Lease.Holder != "r2" || !next.Lease.Until.After(held.Lease.Until) {
		t.Errorf("after Update with r2's lease: Lease %+v, want r2's, later than %v", next.Lease, held.Lease.Until)
	}
	if got := get(t, s, alice, held.Task.ID); got.Lease != next.Lease {
		t.Errorf("Get after Update with r2's lease: Lease %+v, want %+v", got.Lease, next.Lease)
	}
}

func testClaimExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	const short = 20 * time.Millisecond
	live := leased(t, s, alice, a2a.TaskStateWorking, "r1", time.Hour)
	unleased := leased(t, s, bob, a2a.TaskStateSubmitted, "", 0)
	tick()
	expired := leased(t, s, aliceT2, a2a.TaskStateWorking, "r1", short)
	tick()
	expired2 := leased(t, s, anon, a2a.TaskStateUnspecified, "r2", short)
	for _, st := range []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled,
		a2a.TaskStateRejected, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired} {
		leased(t, s, alice, st, "r1", short) // not active: never claimed
	}
	expire(short)

	claimed, err := s.ClaimExpired(ctx, "r3", time.Hour, 2)
	if err != nil {
		t.Fatalf("ClaimExpired: %v", err)
	}
	// Oldest first, every owner's, at most limit.
	if got, want := ids(claimed), []a2a.TaskID{unleased.Task.ID, expired.Task.ID}; !slices.Equal(got, want) {
		t.Fatalf("ClaimExpired(limit 2) = %v, want %v", got, want)
	}
	for _, c := range claimed {
		if c.Lease.Holder != "r3" || c.Lease.Until.Before(time.Now().Add(time.Hour-time.Minute)) {
			t.Errorf("claimed %s: Lease %+v, want r3's for an hour", c.Task.ID, c.Lease)
		}
		if c.Version != 2 {
			t.Errorf("claimed %s: Version %d, want 2 (a claim counts as a write)", c.Task.ID, c.Version)
		}
		if got := get(t, s, c.Owner, c.Task.ID); got.Version != c.Version || got.Lease != c.Lease || got.LastSeq != c.LastSeq {
			t.Errorf("Get after the claim of %s: version %d lease %+v, want %d %+v", c.Task.ID, got.Version, got.Lease, c.Version, c.Lease)
		}
		diff(t, "claimed task "+string(c.Task.ID), get(t, s, c.Owner, c.Task.ID).Task, c.Task)
	}
	// The previous holder's next write is refused: it can do nothing more to the task.
	stale := *expired
	stale.Task.Status.State = a2a.TaskStateCompleted
	wantErr(t, "Update by the holder whose lease was taken over", s.Update(ctx, &stale, nil), store.ErrConflict)

	claimed, err = s.ClaimExpired(ctx, "r4", time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(claimed), []a2a.TaskID{expired2.Task.ID}; !slices.Equal(got, want) {
		t.Errorf("second ClaimExpired = %v, want %v (the rest are live or not active)", got, want)
	}
	claimed, err = s.ClaimExpired(ctx, "r4", time.Hour, 10)
	if err != nil || len(claimed) != 0 {
		t.Errorf("third ClaimExpired = %v, %v; want none", ids(claimed), err)
	}
	if got := get(t, s, alice, live.Task.ID); got.Lease != live.Lease || got.Version != 1 {
		t.Errorf("a live peer's task was touched: %+v version %d", got.Lease, got.Version)
	}
}

func testRenewRelease(t *testing.T, s store.Store) {
	ctx := t.Context()
	const short = 20 * time.Millisecond
	mine := leased(t, s, alice, a2a.TaskStateWorking, "r1", short)
	theirs := leased(t, s, bob, a2a.TaskStateWorking, "r2", time.Hour)
	done := leased(t, s, alice, a2a.TaskStateCompleted, "r1", short)
	expire(short)
	// An expired lease nobody claimed is still the holder's to renew; a finished task is not
	// the holder's to run any more.
	lost, err := s.RenewLeases(ctx, "r1", []a2a.TaskID{mine.Task.ID, theirs.Task.ID, "no-such-task", done.Task.ID}, time.Hour)
	if err != nil {
		t.Fatalf("RenewLeases: %v", err)
	}
	if want := []a2a.TaskID{theirs.Task.ID, "no-such-task", done.Task.ID}; !slices.Equal(lost, want) {
		t.Errorf("RenewLeases lost %v, want %v", lost, want)
	}
	got := get(t, s, alice, mine.Task.ID)
	if got.Lease.Holder != "r1" || got.Lease.Until.Before(time.Now().Add(time.Hour-time.Minute)) || got.Version != 1 {
		t.Errorf("after renewal: Lease %+v version %d, want r1's for an hour, version 1 (renewing is not a write)", got.Lease, got.Version)
	}
	if got := get(t, s, bob, theirs.Task.ID); got.Lease != theirs.Lease {
		t.Errorf("r1's renewal changed r2's lease: %+v, want %+v", got.Lease, theirs.Lease)
	}
	if claimed, err := s.ClaimExpired(ctx, "r3", time.Hour, 10); err != nil || len(claimed) != 0 {
		t.Errorf("ClaimExpired after the renewal = %v, %v; want none", ids(claimed), err)
	}
	if lost, err := s.RenewLeases(ctx, "r1", nil, time.Hour); err != nil || len(lost) != 0 {
		t.Errorf("RenewLeases of nothing = %v, %v", lost, err)
	}

	// Releasing: others' leases and unknown IDs are left alone; the released task is the
	// next claim's.
	if err := s.ReleaseLeases(ctx, "r1", []a2a.TaskID{mine.Task.ID, theirs.Task.ID, "no-such-task"}); err != nil {
		t.Fatalf("ReleaseLeases: %v", err)
	}
	if got := get(t, s, bob, theirs.Task.ID); got.Lease != theirs.Lease {
		t.Errorf("r1's release changed r2's lease: %+v", got.Lease)
	}
	if got := get(t, s, alice, mine.Task.ID); got.Lease.Holder == "r1" {
		t.Errorf("after the release: Lease %+v, want r1's gone", got.Lease)
	}
	lost, err = s.RenewLeases(ctx, "r1", []a2a.TaskID{mine.Task.ID}, time.Hour)
	if err != nil || !slices.Equal(lost, []a2a.TaskID{mine.Task.ID}) {
		t.Errorf("RenewLeases after the release = %v, %v; want it lost", lost, err)
	}
	claimed, err := s.ClaimExpired(ctx, "r3", time.Hour, 10)
	if err != nil || !slices.Equal(ids(claimed), []a2a.TaskID{mine.Task.ID}) {
		t.Errorf("ClaimExpired after the release = %v, %v; want %s", ids(claimed), err, mine.Task.ID)
	}
}

func testLeaseArguments(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.RenewLeases(ctx, "r1", nil, 0)
	wantErr(t, "RenewLeases for no time", err, store.ErrInvalid)
	for _, c := range []struct {
		holder string
		ttl    time.Duration
		limit  int
	}{{"", time.Second, 1}, {"r1", 0, 1}, {"r1", -time.Second, 1}, {"r1", time.Second, 0}, {"r1", time.Second, -1}} {
		_, err := s.ClaimExpired(ctx, c.holder, c.ttl, c.limit)
		wantErr(t, "ClaimExpired with bad arguments", err, store.ErrInvalid)
	}
}

// testConcurrentClaimExpired: replicas claiming at once take every expired task exactly once.
func testConcurrentClaimExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	const tasks, replicas = 40, 4
	want := map[a2a.TaskID]bool{}
	for range tasks {
		want[leased(t, s, alice, a2a.TaskStateWorking, "", 0).Task.ID] = true
	}
	var (
		mu   sync.Mutex
		got  = map[a2a.TaskID]string{}
		errs []error
		wg   sync.WaitGroup
	)
	for r := range replicas {
		holder := "r" + string(rune('a'+r))
		wg.Go(func() {
			for {
				claimed, err := s.ClaimExpired(ctx, holder, time.Hour, 3)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, c := range claimed {
					if prev, ok := got[c.Task.ID]; ok {
						errs = append(errs, errors.New(string(c.Task.ID)+" claimed by "+prev+" and "+holder))
					}
					got[c.Task.ID] = holder
				}
				mu.Unlock()
				if err != nil || len(claimed) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d tasks claimed, want %d", len(got), len(want))
	}
	for id, holder := range got {
		if l := get(t, s, alice, id).Lease; l.Holder != holder {
			t.Errorf("%s: lease %+v, want %s's", id, l, holder)
		}
	}
}

// leaseCalls are the lease methods, for the done-context and Close tests.
func leaseCalls(ctx context.Context, s store.Store, id a2a.TaskID) []struct {
	name string
	call func() error
} {
	return []struct {
		name string
		call func() error
	}{
		{"RenewLeases", func() error { _, err := s.RenewLeases(ctx, "r1", []a2a.TaskID{id}, time.Hour); return err }},
		{"ClaimExpired", func() error { _, err := s.ClaimExpired(ctx, "r1", time.Hour, 1); return err }},
		{"ReleaseLeases", func() error { return s.ReleaseLeases(ctx, "r1", []a2a.TaskID{id}) }},
	}
}
