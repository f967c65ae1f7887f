package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// The benchmarks every implementation runs (BenchmarkCreate and so on in its package). Each
// takes a new, empty store; the task is a typical one (two messages, an artifact: about 1.5 KB
// of JSON) and the events are status updates.

func benchTask(id a2a.TaskID) *store.Task {
	return &store.Task{Task: newTask(id, "bench-ctx", a2a.TaskStateWorking), Owner: alice}
}

// BenchCreate measures Create of a task with one event.
func BenchCreate(b *testing.B, s store.Store) {
	ctx := b.Context()
	i := 0
	for b.Loop() {
		t := benchTask(a2a.TaskID(fmt.Sprintf("bench-%09d", i)))
		i++
		if err := s.Create(ctx, t, []a2a.Event{statusEvent(t.Task, a2a.TaskStateSubmitted, "created")}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchUpdateAppend measures Update of one task with one event, the engine's hot path.
func BenchUpdateAppend(b *testing.B, s store.Store) {
	ctx := b.Context()
	t := benchTask("bench-update")
	if err := s.Create(ctx, t, nil); err != nil {
		b.Fatal(err)
	}
	ev := []a2a.Event{statusEvent(t.Task, a2a.TaskStateWorking, "tick")}
	for b.Loop() {
		if err := s.Update(ctx, t, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchGet measures Get of one of 1000 tasks.
func BenchGet(b *testing.B, s store.Store) {
	ctx := b.Context()
	const n = 1000
	populate(b, s, n)
	i := 0
	for b.Loop() {
		if _, err := s.Get(ctx, alice, a2a.TaskID(fmt.Sprintf("bench-%09d", i%n))); err != nil {
			b.Fatal(err)
		}
		i += 7
	}
}

// BenchList measures List of the first page (50) of one context's 500 tasks, among 1000 of
// the owner and 1000 of another owner.
func BenchList(b *testing.B, s store.Store) {
	ctx := b.Context()
	populate(b, s, 1000)
	for i := range 1000 {
		t := benchTask(a2a.TaskID(fmt.Sprintf("other-%09d", i)))
		t.Owner = bob
		if err := s.Create(ctx, t, nil); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		res, err := s.List(ctx, alice, store.ListQuery{ContextID: "bench-ctx-0"})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Tasks) != 50 || res.TotalSize != 500 {
			b.Fatalf("List: %d tasks of %d, want 50 of 500", len(res.Tasks), res.TotalSize)
		}
	}
}

// populate creates n tasks of alice, bench-000000000 and on, in contexts bench-ctx-0 and -1.
func populate(b *testing.B, s store.Store, n int) {
	b.Helper()
	for i := range n {
		t := benchTask(a2a.TaskID(fmt.Sprintf("bench-%09d", i)))
		t.Task.ContextID = fmt.Sprint("bench-ctx-", i%2)
		if err := s.Create(b.Context(), t, []a2a.Event{statusEvent(t.Task, a2a.TaskStateSubmitted, "created")}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchOutbox makes a task of owner whose one push config (to url) has n deliveries due.
func benchOutbox(b *testing.B, s store.Store, owner store.Owner, url string, n int) {
	ctx := b.Context()
	t := benchTask(newID("bench-outbox"))
	t.Owner = owner
	if err := s.Create(ctx, t, nil); err != nil {
		b.Fatal(err)
	}
	if err := s.PutPushConfig(ctx, owner, &a2a.PushConfig{TaskID: t.Task.ID, ID: "c", URL: url}, store.PushLimits{}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 100 {
		var evs []a2a.Event
		for j := i; j < min(i+100, n); j++ {
			evs = append(evs, statusEvent(t.Task, a2a.TaskStateWorking, fmt.Sprint(j)))
		}
		if err := s.Update(ctx, t, evs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchClaimSettle measures a deliverer's round trip on an outbox with a backlog: claim one
// delivery (bounded per destination and owner) of 1,000 due, and settle it (a retry, due at
// once: the backlog stays).
func BenchClaimSettle(b *testing.B, s store.Store) {
	ctx := b.Context()
	benchOutbox(b, s, alice, "https://hooks.example/", 1000)
	q := store.ClaimQuery{Limit: 1, Lease: time.Minute, PerDestination: 4, PerOwner: 8}
	for b.Loop() {
		ds, err := s.ClaimDeliveries(ctx, q)
		if err != nil || len(ds) != 1 {
			b.Fatalf("ClaimDeliveries = %d, %v", len(ds), err)
		}
		if err := s.RetryDelivery(ctx, ds[0], 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchClaimPastBacklog measures a claim that passes over one owner's backlog of 10,000 due
// deliveries to a destination at its bound (a tarpit) and takes another owner's one, then
// settles it (a retry, due at once): what every claim costs while such a backlog lasts.
func BenchClaimPastBacklog(b *testing.B, s store.Store) {
	ctx := b.Context()
	benchOutbox(b, s, bob, "https://tarpit.example/", 10000)
	q := store.ClaimQuery{Limit: 10, Lease: time.Hour, PerDestination: 4, PerOwner: 8}
	if ds, err := s.ClaimDeliveries(ctx, q); err != nil || len(ds) != 4 {
		b.Fatalf("first claim = %d, %v; want the tarpit's 4", len(ds), err)
	}
	benchOutbox(b, s, alice, "https://hooks.example/", 1)
	for b.Loop() {
		ds, err := s.ClaimDeliveries(ctx, q)
		if err != nil || len(ds) != 1 || ds[0].Owner != alice {
			b.Fatalf("ClaimDeliveries = %d, %v; want alice's one", len(ds), err)
		}
		if err := s.RetryDelivery(ctx, ds[0], 0); err != nil {
			b.Fatal(err)
		}
	}
}
