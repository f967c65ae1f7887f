package a2atest

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// Helpers for checking what clients receive, on any binding.

// Collect drains an event stream; it stops at the first error and returns it.
func Collect(seq iter.Seq2[a2a.Event, error]) ([]a2a.Event, error) {
	var out []a2a.Event
	for ev, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// Kinds names events for comparison: "task(STATE)", "status(STATE)", "artifact(TEXT)" (the
// text of the first part) and "message".
func Kinds(events []a2a.Event) []string {
	var out []string
	for _, ev := range events {
		switch v := ev.(type) {
		case *a2a.Task:
			out = append(out, "task("+string(v.Status.State)+")")
		case *a2a.TaskStatusUpdateEvent:
			out = append(out, "status("+string(v.Status.State)+")")
		case *a2a.TaskArtifactUpdateEvent:
			text := ""
			if len(v.Artifact.Parts) > 0 {
				text = v.Artifact.Parts[0].Text()
			}
			out = append(out, "artifact("+text+")")
		case *a2a.Message:
			out = append(out, "message")
		default:
			out = append(out, "?")
		}
	}
	return out
}

// Seqs returns the events' sequence numbers (engine.SeqKey), -1 for an event without one.
func Seqs(events []a2a.Event) []int64 {
	out := make([]int64, len(events))
	for i, ev := range events {
		out[i] = -1
		switch v := ev.Meta()[engine.SeqKey].(type) {
		case float64:
			out[i] = int64(v)
		case int64:
			out[i] = v
		}
	}
	return out
}

// LastState returns the task state the last event that reports one reports.
func LastState(events []a2a.Event) a2a.TaskState {
	for i := len(events) - 1; i >= 0; i-- {
		if state, ok := wire.StateOf(events[i]); ok {
			return state
		}
	}
	return ""
}

// TaskGetter is what WaitTask needs of a client: a2aclient.Client and client.Client have it.
type TaskGetter interface {
	GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error)
}

// WaitTask polls GetTask until done(task) holds, and fails the test after 10 s.
func WaitTask(t testing.TB, c TaskGetter, id a2a.TaskID, done func(*a2a.Task) bool) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("GetTask(%s) = %v", id, err)
		}
		if done(task) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s (%s, %d artifacts) did not get there in time", id, task.Status.State, len(task.Artifacts))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Sender is what Send needs of a client: a2aclient.Client and client.Client have it.
type Sender interface {
	SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error)
}

// Send sends text from the user, on task when it is not nil (its ID and context), and returns
// the task as the send left it, or the send's error. A reply that is not a task fails the test.
func Send(t testing.TB, c Sender, task *a2a.Task, text string) (*a2a.Task, error) {
	t.Helper()
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	if task != nil {
		m.TaskID, m.ContextID = task.ID, task.ContextID
	}
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		return nil, err
	}
	got, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage(%q) = %T", text, res)
	}
	return got, nil
}
