package client_test

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// allBindings is the transport matrix: every behaviour test runs over each.
var allBindings = []client.Binding{
	client.BindingCapnweb, client.BindingCapnwebBatch,
	client.BindingJSONRPC, client.BindingREST, client.BindingGRPC,
}

// connect returns a client of srv over binding b (zero: the client's choice), destroyed by
// t.Cleanup.
func connect(t *testing.T, srv *a2atest.Server, b client.Binding, opts *client.Options) *client.Client {
	t.Helper()
	var o client.Options
	if opts != nil {
		o = *opts
	}
	o.Binding = b
	c, err := client.New(t.Context(), srv.URL, &o)
	if err != nil {
		t.Fatalf("client.New(%s, %q) = %v", srv.URL, b, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func userMessage(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

// Shorthands for a2atest's helpers.
var (
	collect   = a2atest.Collect
	kinds     = a2atest.Kinds
	seqs      = a2atest.Seqs
	lastState = a2atest.LastState
)

// waitState waits until the task is in state.
func waitState(t *testing.T, c *client.Client, id a2a.TaskID, state a2a.TaskState) *a2a.Task {
	t.Helper()
	return a2atest.WaitTask(t, c, id, func(task *a2a.Task) bool { return task.Status.State == state })
}

// startWaiting sends "wait KEY" with returnImmediately and returns the task, which runs until
// srv.Agent.Release(key).
func startWaiting(t *testing.T, c *client.Client, key string) *a2a.Task {
	t.Helper()
	req := userMessage("wait " + key)
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	res, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatalf("SendMessage(wait) = %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage(wait) = %T, want a task", res)
	}
	return task
}

func ptr[T any](v T) *T { return &v }
