package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// The life of a task as the engine writes it: each change of the task goes with the events
// that caused it, under optimistic concurrency, and a client that reconnects replays the log.
func Example() {
	ctx := context.Background()
	s := memory.New() // or sqlite.Open(ctx, "a2a.db", nil), postgres.Open(ctx, dsn, nil)
	defer s.Close()

	alice := store.Owner{Tenant: "acme", Principal: "alice"}
	task := &store.Task{
		Owner: alice,
		Task:  &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}},
	}
	if err := s.Create(ctx, task, []a2a.Event{task.Task}); err != nil {
		panic(err)
	}
	fmt.Println("created: version", task.Version, "last seq", task.LastSeq)

	// A concurrent writer holds the same version.
	stale := *task

	task.Task.Status.State = a2a.TaskStateWorking
	working := &a2a.TaskStatusUpdateEvent{TaskID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	if err := s.Update(ctx, task, []a2a.Event{working}); err != nil {
		panic(err)
	}
	fmt.Println("updated: version", task.Version, "last seq", task.LastSeq)

	err := s.Update(ctx, &stale, []a2a.Event{working})
	fmt.Println("stale update is a conflict:", errors.Is(err, store.ErrConflict))

	_, err = s.Get(ctx, store.Owner{Tenant: "acme", Principal: "bob"}, "task-1")
	fmt.Println("another principal does not see it:", errors.Is(err, store.ErrNotFound))

	// A client that saw event 1 reconnects.
	events, err := s.Events(ctx, alice, "task-1", 1, 0)
	if err != nil {
		panic(err)
	}
	for _, e := range events {
		fmt.Printf("replay %d: %T\n", e.Seq, e.Event)
	}

	page, err := s.List(ctx, alice, store.ListQuery{State: a2a.TaskStateWorking})
	if err != nil {
		panic(err)
	}
	fmt.Println("working tasks:", len(page.Tasks), "of", page.TotalSize)
	// Output:
	// created: version 1 last seq 1
	// updated: version 2 last seq 2
	// stale update is a conflict: true
	// another principal does not see it: true
	// replay 2: *a2a.TaskStatusUpdateEvent
	// working tasks: 1 of 1
}
