package engine_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// Identifiers a store cannot hold are INVALID_PARAMS before the agent runs, whatever the store:
// invalid UTF-8 (which no JSON binding can deliver, but a Go caller can), a NUL, an over-long
// ID, and a principal name that is any of those. (client/unstorable_test.go shows the same over
// every binding and store.)
func TestUnstorableIDs(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("hello"))
	bad := map[string]string{
		"invalid UTF-8": "a\xffb",
		"NUL":           "a\x00b",
		"too long":      strings.Repeat("é", engine.MaxIDBytes/2+1),
	}
	for name, v := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			calls := map[string]func() error{
				"send contextId": func() error {
					req := msg("hello")
					req.Message.ContextID = v
					_, err := e.SendMessage(ctx, req)
					return err
				},
				"send messageId": func() error {
					req := msg("hello")
					req.Message.ID = v
					_, err := e.SendMessage(ctx, req)
					return err
				},
				"send as principal": func() error { _, err := e.SendMessage(as(t.Context(), v), msg("hello")); return err },
				"stream tenant": func() error {
					req := msg("hello")
					req.Tenant = v
					for _, err := range e.SendStreamingMessage(ctx, req) {
						return err
					}
					return nil
				},
				"get": func() error { _, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(v)}); return err },
				"get as principal": func() error {
					_, err := e.GetTask(as(t.Context(), v), &a2a.GetTaskRequest{ID: task.ID})
					return err
				},
				"list": func() error { _, err := e.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: v}); return err },
				"cancel": func() error {
					_, err := e.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(v)})
					return err
				},
				"push config": func() error {
					_, err := e.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: v, URL: "https://example.com/hook"})
					return err
				},
			}
			for call, f := range calls {
				if err := f(); !errors.Is(err, a2a.ErrInvalidParams) {
					t.Errorf("%s with an ID that is %s: error = %v, want INVALID_PARAMS", call, name, err)
				}
			}
		})
	}
	// Nothing ran but the first task.
	list, err := e.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 1 {
		t.Errorf("the caller has %d tasks, want 1: a refused message started one", len(list.Tasks))
	}
}

// failingStore fails every read with an error quoting what a database would.
type failingStore struct {
	store.Store
	fail error
}

func (s failingStore) Get(context.Context, store.Owner, a2a.TaskID) (*store.Task, error) {
	return nil, s.fail
}

func (s failingStore) List(context.Context, store.Owner, store.ListQuery) (*store.ListResult, error) {
	return nil, s.fail
}

// A store failure reaches the caller as INTERNAL_ERROR without the store's text, which goes to
// the log; a store's refusal of an argument stays INVALID_PARAMS.
func TestStoreErrorsStayInTheLog(t *testing.T) {
	t.Parallel()
	secret := errors.New(`postgres: get task: ERROR: row "payroll ATTACKER-123" (SQLSTATE 22021)`)
	var log bytes.Buffer
	st := memory.New()
	e := engine.New(&scripted{}, failingStore{Store: st, fail: secret}, &engine.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Close(ctx)
		st.Close()
	})
	ctx := t.Context()
	_, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: "t1"})
	if !errors.Is(err, a2a.ErrInternalError) || strings.Contains(err.Error(), "SQLSTATE") || strings.Contains(err.Error(), "payroll") {
		t.Errorf("GetTask() over a failing store = %v, want INTERNAL_ERROR without the store's text", err)
	}
	if !strings.Contains(log.String(), "SQLSTATE") {
		t.Errorf("the log lacks the store's error: %s", log.String())
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"cancel", func() error { _, err := e.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "t1"}); return err }()},
		{"list", func() error { _, err := e.ListTasks(ctx, &a2a.ListTasksRequest{}); return err }()},
	} {
		if !errors.Is(c.err, a2a.ErrInternalError) || strings.Contains(c.err.Error(), "SQLSTATE") {
			t.Errorf("%s over a failing store = %v, want INTERNAL_ERROR without the store's text", c.name, c.err)
		}
	}

	e2 := engine.New(&scripted{}, failingStore{Store: st, fail: errors.Join(store.ErrInvalid, errors.New("malformed page token"))}, nil)
	defer e2.Close(ctx)
	if _, err := e2.ListTasks(ctx, &a2a.ListTasksRequest{PageToken: "x"}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("ListTasks() with a token the store refuses = %v, want INVALID_PARAMS", err)
	}
}
