package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// state is "input-required" for TASK_STATE_INPUT_REQUIRED.
func state(s a2a.TaskState) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

// describeEvent renders an A2A event as "kind state/name detail" for comparison.
func describeEvent(ev a2a.Event) string {
	switch ev := ev.(type) {
	case *a2a.Task:
		return "task " + state(ev.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		s := "status " + state(ev.Status.State)
		if m, ok := ev.Metadata[agent.MetaKey].(map[string]any); ok {
			s += fmt.Sprintf(" %v", m["kind"])
			if r, ok := m["rule"]; ok {
				s += " " + r.(string)
			}
		}
		if ev.Status.Message != nil {
			for _, p := range ev.Status.Message.Parts {
				if t, ok := p.Content.(a2a.Text); ok {
					s += ": " + string(t)
				}
			}
		}
		return s
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact " + ev.Artifact.Name
	case *a2a.Message:
		return "message"
	}
	return fmt.Sprintf("%T", ev)
}

func TestExecutorOnEngine(t *testing.T) {
	t.Parallel()
	a, err := agent.New(t.Context(), "notes", &agent.Options{Policy: agent.Notes()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	e := engine.New(agent.Executor(a), memory.New(), nil)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	stream := func(m *a2a.Message) []string {
		var got []string
		for ev, err := range e.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
			if err != nil {
				t.Fatalf("SendStreamingMessage: %v", err)
			}
			got = append(got, describeEvent(ev))
		}
		return got
	}
	got := stream(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("remember the sky is blue")))
	want := []string{
		"task submitted",
		"status working thought remember",
		"status working call remember",
		"artifact remember result",
		"status working step remember",
		"status working thought ack-stored",
		"status working call ack-stored",
		"artifact reply result",
		"status working output ack-stored: Noted: the sky is blue.",
		"status working step ack-stored",
		"status completed end: Noted: the sky is blue.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A question: the task waits for input, and the answer goes to the same task.
	got = stream(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("remember my cat")))
	if last := got[len(got)-1]; last != "status input-required end: What is my cat?" {
		t.Fatalf("last event = %q, want input-required", last)
	}
	var taskID a2a.TaskID
	for ev, err := range e.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("remember my dog"))}) {
		if err != nil {
			t.Fatal(err)
		}
		if task, ok := ev.(*a2a.Task); ok {
			taskID = task.ID
		}
	}
	answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Rex"))
	answer.TaskID = taskID
	got = stream(answer)
	if last := got[len(got)-1]; last != "status completed end: Noted: my dog is Rex." {
		t.Errorf("after the answer: %q", strings.Join(got, "\n"))
	}
}

type brokenStore struct{ agent.Store }

func (brokenStore) Append(context.Context, string, agent.Observation) error {
	return fmt.Errorf("secret internal path /var/db: disk full")
}

// A run whose memory cannot be saved fails the task, without internal error text on the wire.
func TestExecutorStoreFailure(t *testing.T) {
	t.Parallel()
	a, err := agent.New(t.Context(), "notes", &agent.Options{Policy: agent.Notes(), Store: brokenStore{agent.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	e := engine.New(agent.Executor(a), memory.New(), nil)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	var got []string
	for ev, err := range e.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("remember a is b"))}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, describeEvent(ev))
	}
	last := got[len(got)-1]
	if last != "status failed end: I could not save my memory of this message." {
		t.Errorf("last event = %q", last)
	}
}
