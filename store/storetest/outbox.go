package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// claimAll claims every due delivery (with a long lease) and returns them keyed by
// "config/seq".
func claimAll(t *testing.T, s store.Store) map[string]*store.Delivery {
	t.Helper()
	ds, err := s.ClaimDeliveries(t.Context(), store.ClaimQuery{Limit: 100, Lease: time.Hour})
	if err != nil {
		t.Fatalf("ClaimDeliveries: %v", err)
	}
	out := map[string]*store.Delivery{}
	for _, d := range ds {
		out[fmt.Sprintf("%s/%d", d.ConfigID, d.Seq)] = d
	}
	return out
}

func keys(m map[string]*store.Delivery) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func testOutbox(t *testing.T, s store.Store) {
	ctx := t.Context()
	task := create(t, s, alice, "ctx", a2a.TaskStateSubmitted, statusEvent(newTask("x", "c", ""), a2a.TaskStateSubmitted, "before"))
	if got := claimAll(t, s); len(got) != 0 {
		t.Fatalf("deliveries without push configs: %v", keys(got))
	}
	cfgA := &a2a.PushConfig{TaskID: task.Task.ID, ID: "a", URL: "https://example.com/a", Token: "tok",
		Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "secret"}}
	cfgB := &a2a.PushConfig{TaskID: task.Task.ID, ID: "b", URL: "https://example.com/b"}
	for _, cfg := range []*a2a.PushConfig{cfgA, cfgB} {
		if err := s.PutPushConfig(ctx, alice, cfg, store.PushLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	ev2 := statusEvent(task.Task, a2a.TaskStateWorking, "2")
	ev3 := statusEvent(task.Task, a2a.TaskStateWorking, "3")
	if err := s.Update(ctx, task, []a2a.Event{ev2, ev3}); err != nil {
		t.Fatal(err)
	}

	// Every event after the configs exist, once per config; not the one before.
	got := claimAll(t, s)
	diff(t, "claimed deliveries", []string{"a/2", "a/3", "b/2", "b/3"}, keys(got))
	d := got["a/2"]
	diff(t, "claimed delivery", &store.Delivery{TaskID: task.Task.ID, ConfigID: "a", Seq: 2, Owner: alice,
		Config: cfgA, Destination: "https://example.com:443", Event: ev2, Attempts: 1, Claim: d.Claim}, d)
	if d.Claim == "" {
		t.Error("Delivery.Claim is empty")
	}
	if again := claimAll(t, s); len(again) != 0 {
		t.Errorf("claimed again while leased: %v", keys(again))
	}

	// Complete removes; a second Complete lost its claim.
	if err := s.CompleteDelivery(ctx, got["a/3"]); err != nil {
		t.Fatalf("CompleteDelivery: %v", err)
	}
	wantErr(t, "second CompleteDelivery", s.CompleteDelivery(ctx, got["a/3"]), store.ErrConflict)

	// Retry makes it due again after the delay, with a new claim; the old one is void.
	if err := s.RetryDelivery(ctx, got["a/2"], 0); err != nil {
		t.Fatalf("RetryDelivery: %v", err)
	}
	if err := s.RetryDelivery(ctx, got["b/2"], time.Hour); err != nil {
		t.Fatalf("RetryDelivery: %v", err)
	}
	again := claimAll(t, s)
	diff(t, "claimed after RetryDelivery", []string{"a/2"}, keys(again))
	if again["a/2"].Attempts != 2 {
		t.Errorf("Attempts = %d after a retry, want 2", again["a/2"].Attempts)
	}
	wantErr(t, "CompleteDelivery with a released claim", s.CompleteDelivery(ctx, got["a/2"]), store.ErrConflict)
	wantErr(t, "RetryDelivery with a released claim", s.RetryDelivery(ctx, got["a/2"], 0), store.ErrConflict)
	wantErr(t, "CompleteDelivery unclaimed", s.CompleteDelivery(ctx, &store.Delivery{TaskID: task.Task.ID, ConfigID: "b", Seq: 2}), store.ErrConflict)
	if err := s.CompleteDelivery(ctx, again["a/2"]); err != nil {
		t.Fatal(err)
	}

	// A lease that runs out lets another claim take the delivery.
	if err := s.RetryDelivery(ctx, got["b/3"], 0); err != nil {
		t.Fatal(err)
	}
	ds, err := s.ClaimDeliveries(ctx, store.ClaimQuery{Limit: 10, Lease: time.Millisecond})
	if err != nil || len(ds) != 1 || ds[0].ConfigID != "b" || ds[0].Seq != 3 {
		t.Fatalf("ClaimDeliveries = %v, %v; want b/3", ds, err)
	}
	first := ds[0]
	var second *store.Delivery
	for deadline := time.Now().Add(10 * time.Second); second == nil; {
		if time.Now().After(deadline) {
			t.Fatal("a delivery whose lease ran out is not claimed again")
		}
		time.Sleep(5 * time.Millisecond)
		second = claimAll(t, s)["b/3"]
	}
	if second.Attempts != first.Attempts+1 || second.Claim == first.Claim {
		t.Errorf("reclaimed delivery: attempts %d, claim %q (first %q)", second.Attempts, second.Claim, first.Claim)
	}
	wantErr(t, "CompleteDelivery with an expired claim", s.CompleteDelivery(ctx, first), store.ErrConflict)

	// Deleting a config drops its deliveries.
	if err := s.Update(ctx, task, []a2a.Event{statusEvent(task.Task, a2a.TaskStateWorking, "4")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePushConfig(ctx, alice, task.Task.ID, "b"); err != nil {
		t.Fatal(err)
	}
	diff(t, "claimed after DeletePushConfig", []string{"a/4"}, keys(claimAll(t, s)))
	wantErr(t, "RetryDelivery of a deleted config's delivery", s.RetryDelivery(ctx, second, 0), store.ErrConflict)

	_, err = s.ClaimDeliveries(ctx, store.ClaimQuery{Limit: 0, Lease: time.Second})
	wantErr(t, "ClaimDeliveries(limit 0)", err, store.ErrInvalid)
}

// testConcurrentClaims: claimants racing over the outbox never take the same delivery.
func testConcurrentClaims(t *testing.T, s store.Store) {
	const n = 40
	task := create(t, s, alice, "ctx", a2a.TaskStateWorking)
	if err := s.PutPushConfig(t.Context(), alice, &a2a.PushConfig{TaskID: task.Task.ID, ID: "c", URL: "https://example.com"}, store.PushLimits{}); err != nil {
		t.Fatal(err)
	}
	var evs []a2a.Event
	for i := range n {
		evs = append(evs, statusEvent(task.Task, a2a.TaskStateWorking, fmt.Sprint(i)))
	}
	if err := s.Update(t.Context(), task, evs); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				ds, err := s.ClaimDeliveries(t.Context(), store.ClaimQuery{Limit: 3, Lease: time.Hour})
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.Seq]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d deliveries claimed, want %d", len(seen), n)
	}
	for seq, k := range seen {
		if k != 1 {
			t.Errorf("delivery %d claimed %d times", seq, k)
		}
	}
}

func testLoadOrStore(t *testing.T, s store.Store) {
	got, err := s.LoadOrStore(t.Context(), "k", []byte("first"))
	if err != nil || string(got) != "first" {
		t.Fatalf("LoadOrStore(first) = %q, %v", got, err)
	}
	got, err = s.LoadOrStore(t.Context(), "k", []byte("second"))
	if err != nil || string(got) != "first" {
		t.Fatalf("LoadOrStore(second) = %q, %v; want the stored first", got, err)
	}
	got, err = s.LoadOrStore(t.Context(), "other", []byte("x"))
	if err != nil || string(got) != "x" {
		t.Fatalf("LoadOrStore(other) = %q, %v", got, err)
	}
}

// testCreateWithPushConfigs: configs given to Create are stored and get the first events.
func testCreateWithPushConfigs(t *testing.T, s store.Store) {
	ctx := t.Context()
	base := newTask(newID("push"), "ctx", a2a.TaskStateSubmitted)
	cfg := &a2a.PushConfig{ID: "inline", URL: "https://example.com/hook", Token: "t"}
	task := &store.Task{Task: base, Owner: alice, PushConfigs: []*a2a.PushConfig{cfg}}
	evs := []a2a.Event{statusEvent(base, a2a.TaskStateSubmitted, "1"), statusEvent(base, a2a.TaskStateWorking, "2")}
	if err := s.Create(ctx, task, evs); err != nil {
		t.Fatal(err)
	}
	list, err := listConfigs(ctx, s, alice, base.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := *cfg
	want.TaskID = base.ID
	diff(t, "ListPushConfigs after Create with PushConfigs", []*a2a.PushConfig{&want}, list)
	diff(t, "deliveries enqueued by Create", []string{"inline/1", "inline/2"}, keys(claimAll(t, s)))
	if got := get(t, s, alice, base.ID); got.PushConfigs != nil {
		t.Errorf("Get().PushConfigs = %v, want nil", got.PushConfigs)
	}

	bad := &store.Task{Task: newTask(newID("push"), "ctx", a2a.TaskStateSubmitted), Owner: alice, PushConfigs: []*a2a.PushConfig{{URL: "https://example.com"}}}
	wantErr(t, "Create with a push config without ID", s.Create(ctx, bad, nil), store.ErrInvalid)
}
