package storetest

import (
	"fmt"
	"testing"

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
