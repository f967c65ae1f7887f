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

// notesEngine is an engine in memory running the runtime's note taker, closed with t.
func notesEngine(t *testing.T) *engine.Engine {
	t.Helper()
	h, err := agent.NewHost(&agent.Definition{Name: "notes", Policy: agent.Notes()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	e := engine.New(agent.Executor(h), memory.New(), nil)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func TestExecutorOnEngine(t *testing.T) {
	t.Parallel()
	e := notesEngine(t)
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

// A reply said while the task works, and repeated as the completed status's message, is one
// message of the task's history, not two: the end reuses the said message's ID.
func TestReplyIsOneMessageOfTheHistory(t *testing.T) {
	t.Parallel()
	e := notesEngine(t)
	res, err := e.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("remember the sea is green"))})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage = %T, want a task", res)
	}
	var agentSaid []string
	for _, m := range task.History {
		if m.Role == a2a.MessageRoleAgent {
			agentSaid = append(agentSaid, string(m.ID))
		}
	}
	if len(agentSaid) != 1 || task.Status.Message == nil || string(task.Status.Message.ID) != agentSaid[0] {
		t.Errorf("the agent's messages in the history: %q, the status's: %v; want one, the status's", agentSaid, task.Status.Message)
	}
}

type brokenStore struct{ agent.Store }

func (brokenStore) Commit(context.Context, agent.Key, *agent.Batch) error {
	return fmt.Errorf("secret internal path /var/db: disk full")
}

// A run whose memory cannot be saved fails the task, without internal error text on the wire.
func TestExecutorStoreFailure(t *testing.T) {
	t.Parallel()
	h, err := agent.NewHost(&agent.Definition{Name: "notes", Policy: agent.Notes()}, &agent.HostOptions{Store: brokenStore{agent.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	e := engine.New(agent.Executor(h), memory.New(), nil)
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

var _ engine.Recoverer = agent.Executor(nil).(engine.Recoverer)

// Canceling the task aborts its turn's model call at once, and the turn commits nothing.
func TestCancelAbortsTheConsult(t *testing.T) {
	t.Parallel()
	g := newGate()
	h, err := agent.NewHost(&agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: g}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	e := engine.New(agent.Executor(h), memory.New(), nil)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	res, err := e.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("why?")),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	<-g.entered
	if _, err := e.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a failure guard only: the call returns at once
	for {
		g.mu.Lock()
		n := len(g.ctxErr)
		g.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the model call was not canceled")
		}
		time.Sleep(time.Millisecond)
	}
	a, _ := h.Instance(t.Context(), agent.Principal{})
	if v, _ := a.View(t.Context()); v.Observations != 0 {
		t.Errorf("a canceled turn committed %d observations", v.Observations)
	}
	got, err := e.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("the task after cancel: %v, %v", got.Status.State, err)
	}
}

// A task whose turn committed but whose final status was never written (the process died
// between the two) is settled from the turn record; one whose turn never committed is failed.
func TestRecoverSettlesCommittedTurns(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	h, err := agent.NewHost(&agent.Definition{Name: "notes", Policy: agent.Notes()}, &agent.HostOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	x := agent.Executor(h).(engine.Recoverer)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("remember a is b"))
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}, History: []*a2a.Message{msg}}
	if evs, err := x.RecoverTask(t.Context(), task); evs != nil || err != nil {
		t.Fatalf("RecoverTask(no turn) = %v, %v, want nothing", evs, err)
	}
	if err := st.Commit(t.Context(), agent.Key{Agent: "notes"}, &agent.Batch{Turn: &agent.TurnRecord{Task: "t1", Session: "c1", Number: 1,
		Message: msg.ID, Status: agent.TurnCompleted, Reply: "Noted: a is b."}}); err != nil {
		t.Fatal(err)
	}
	evs, err := x.RecoverTask(t.Context(), task)
	if err != nil || len(evs) != 1 || describeEvent(evs[0]) != "status completed end: Noted: a is b." {
		t.Errorf("RecoverTask(committed) = %v, %v", evs, err)
	}
	later := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("and c is d"))
	task.History = append(task.History, later)
	if evs, err := x.RecoverTask(t.Context(), task); evs != nil || err != nil {
		t.Errorf("RecoverTask(a later message's turn never committed) = %v, %v, want nothing", evs, err)
	}
}

// A turn waiting for the model says so in its task's status, with its place in the queue.
func TestQueuedTurnSaysSo(t *testing.T) {
	t.Parallel()
	g := newGate()
	h, err := agent.NewHost(&agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: g}, &agent.HostOptions{Limiter: agent.NewLimiter(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	e := engine.New(agent.Executor(h), memory.New(), nil)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	if _, err := e.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("first?")),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	var queued []string
	for ev, err := range e.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("second?"))}) {
		if err != nil {
			t.Fatal(err)
		}
		if d := describeEvent(ev); strings.Contains(d, "queued") {
			queued = append(queued, d)
			st := ev.(*a2a.TaskStatusUpdateEvent)
			if m := st.Metadata[agent.MetaKey].(map[string]any); m["ahead"] != "0" || m["scope"] != "server" || m["bound"] != "1" {
				t.Errorf("queued metadata %v", m)
			}
			close(g.release)
		}
	}
	if len(queued) != 1 || queued[0] != "status working queued: Waiting for the model: 0 ahead." {
		t.Errorf("queued statuses %q", queued)
	}
}
