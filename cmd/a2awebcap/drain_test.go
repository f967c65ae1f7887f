package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// A task that finishes within -drain completes when serve is told to stop; one that would not
// is failed, with the reason, at the end of the drain time.
func TestDrainLetsTasksFinish(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	db := filepath.Join(dir, "a2a.db")
	cfg := serveConfig{addr: addr, db: db, agent: "builtin", noPush: true, drain: 20 * time.Second}
	stop, done := starter(t, cfg)()
	c := sdkClient(t, addr)
	start := func(text string) a2a.TaskID {
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
			Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*a2a.Task).ID
	}
	short := start("wait 2")
	// The stop comes in the middle of the task: it has seconds left.
	time.Sleep(500 * time.Millisecond)
	stop()
	if err := stopped(t, done); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	st, err := sqlite.Open(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Get(t.Context(), store.Owner{}, short)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("a task with 1.5 s left, stopped with -drain 20s: %s, want completed", rec.Task.Status.State)
	}

	// Now a drain too short for the task.
	cfg.drain = 300 * time.Millisecond
	stop, done = starter(t, cfg)()
	c = sdkClient(t, addr)
	long := start("wait 30")
	stop()
	if err := stopped(t, done); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if rec, err = st.Get(ctx, store.Owner{}, long); err != nil {
		t.Fatal(err)
	}
	if rec.Task.Status.State != a2a.TaskStateFailed || !strings.Contains(text(rec.Task.Status.Message), "shut down") {
		t.Errorf("a task longer than the drain: %s %q, want failed because the server shut down", rec.Task.Status.State, text(rec.Task.Status.Message))
	}
}

// stopped returns what serve's run returned, failing the test if it has not returned a minute
// after it was told to stop (the drain times here are far shorter).
func stopped(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute of being told to")
		return nil
	}
}
