package engine_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/backlog"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// scripted is a test executor driven by the first word of the message text.
type scripted struct {
	mu      sync.Mutex
	release map[string]chan struct{} // "slow <key>" waits on release[key]
	// yielded is closed by "many" once its executor has returned, and yieldAfterEnd says what
	// its yield of the final state returned (the engine stops an executor there: false).
	yielded       chan struct{}
	yieldAfterEnd bool
}

func (s *scripted) gate(key string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.release == nil {
		s.release = map[string]chan struct{}{}
	}
	if s.release[key] == nil {
		s.release[key] = make(chan struct{})
	}
	return s.release[key]
}

func text(m *a2a.Message) string {
	if m == nil || len(m.Parts) == 0 {
		return ""
	}
	return m.Parts[0].Text()
}

func (s *scripted) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		words := strings.Fields(text(ec.Message))
		cmd := ""
		if len(words) > 0 {
			cmd = words[0]
		}
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			cmd = "resume"
		}
		working := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil)
		switch cmd {
		case "reply":
			yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello back")), nil)
		case "refuse":
			yield(nil, fmt.Errorf("%w: this agent reads text only", a2a.ErrUnsupportedContentType))
		case "crash":
			yield(nil, errors.New("boom before any event"))
		case "fail":
			if yield(working, nil) {
				yield(nil, errors.New("boom: internal detail"))
			}
		case "ask":
			if yield(working, nil) {
				q := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("what is your name?"))
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, q), nil)
			}
		case "resume":
			if !yield(working, nil) {
				return
			}
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("hello, "+text(ec.Message))), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case "askfirst":
			// The executor's first event is the task itself, already waiting for input.
			task := a2a.NewSubmittedTask(ec, ec.Message)
			task.Status = a2a.TaskStatus{State: a2a.TaskStateInputRequired,
				Message: a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("what is your name?"))}
			yield(task, nil)
		case "retask":
			// A whole Task mid-run, as a2a-go executors may yield: working, with an artifact.
			if !yield(working, nil) {
				return
			}
			task := a2a.NewSubmittedTask(ec, ec.Message)
			task.Status = a2a.TaskStatus{State: a2a.TaskStateWorking}
			task.Artifacts = []*a2a.Artifact{{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("whole")}}}
			if !yield(task, nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case "slowask":
			// Working until released, then waiting for input.
			if !yield(working, nil) {
				return
			}
			select {
			case <-s.gate(strings.Join(words[1:], " ")):
			case <-ctx.Done():
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, nil), nil)
		case "slow":
			if !yield(working, nil) {
				return
			}
			select {
			case <-s.gate(strings.Join(words[1:], " ")):
			case <-ctx.Done():
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case "chunks":
			if !yield(working, nil) {
				return
			}
			id := a2a.NewArtifactID()
			for i := range 5 {
				ev := a2a.NewArtifactUpdateEvent(ec, id, a2a.NewTextPart(fmt.Sprint(i)))
				ev.Append = i > 0
				ev.LastChunk = i == 4
				if !yield(ev, nil) {
					return
				}
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case "many", "invalid":
			// "many N": N chunks of one artifact, then completed (and more if allowed).
			// "invalid N": N chunks, then an artifact update without an artifact, then more.
			defer close(s.yielded)
			var n int
			fmt.Sscan(words[1], &n)
			if !yield(working, nil) {
				return
			}
			id := a2a.NewArtifactID()
			for i := range n {
				ev := a2a.NewArtifactUpdateEvent(ec, id, a2a.NewTextPart(fmt.Sprint(i)))
				ev.Append = i > 0
				if !yield(ev, nil) {
					return
				}
			}
			if cmd == "invalid" && !yield(&a2a.TaskArtifactUpdateEvent{TaskID: ec.TaskID, ContextID: ec.ContextID}, nil) {
				return
			}
			more := yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			s.mu.Lock()
			s.yieldAfterEnd = more
			s.mu.Unlock()
			if more {
				yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("too late")), nil)
			}
		default:
			if !yield(working, nil) {
				return
			}
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text(ec.Message))), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (s *scripted) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func newEngine(t *testing.T) (*engine.Engine, *scripted, store.Store) {
	t.Helper()
	return newEngineWith(t, nil)
}

// newEngineWith is newEngine with options.
func newEngineWith(t *testing.T, opts *engine.Options) (*engine.Engine, *scripted, store.Store) {
	t.Helper()
	st := memory.New()
	ex := &scripted{yielded: make(chan struct{})}
	e := engine.New(ex, st, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Engine.Close() = %v", err)
		}
		st.Close()
	})
	return e, ex, st
}

// as returns a context for the principal name (empty: anonymous).
func as(ctx context.Context, name string) context.Context {
	ctx, cc := a2asrv.NewCallContext(ctx, nil)
	if name != "" {
		cc.User = &a2asrv.User{Name: name, Authenticated: true}
	}
	return ctx
}

func msg(textIn string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(textIn))}
}

func follow(task *a2a.Task, textIn string) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(textIn))
	m.TaskID, m.ContextID = task.ID, task.ContextID
	return &a2a.SendMessageRequest{Message: m}
}

func send(t *testing.T, e *engine.Engine, ctx context.Context, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := e.SendMessage(ctx, req)
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage() = %T, want *a2a.Task", res)
	}
	return task
}

func TestBlockingSend(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("hi there"))
	if task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("state = %v, want completed", task.Status.State)
	}
	if len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text() != "echo: hi there" {
		t.Errorf("artifacts = %+v", task.Artifacts)
	}
	if len(task.History) != 1 || text(task.History[0]) != "hi there" || task.History[0].TaskID != task.ID {
		t.Errorf("history = %+v, want the user's message with the task ID", task.History)
	}
}

func TestReturnImmediately(t *testing.T) {
	t.Parallel()
	e, ex, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	req := msg("slow r1")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	task := send(t, e, ctx, req)
	if s := task.Status.State; s != a2a.TaskStateSubmitted && s != a2a.TaskStateWorking {
		t.Errorf("state = %v, want submitted or working", s)
	}
	close(ex.gate("r1"))
	waitState(t, e, ctx, task.ID, a2a.TaskStateCompleted)
}

func waitState(t *testing.T, e *engine.Engine, ctx context.Context, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		if err == nil && got.Status.State == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: state %v (err %v), want %v", id, got.Status.State, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMessageReply(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	res, err := e.SendMessage(ctx, msg("reply"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := res.(*a2a.Message)
	if !ok || text(m) != "hello back" {
		t.Fatalf("SendMessage() = %#v, want the agent's message", res)
	}
	list, err := e.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 0 {
		t.Errorf("ListTasks() = %v, %v; want no task for a direct reply", list, err)
	}
	// Streaming: exactly one Message.
	var got []a2a.Event
	for ev, err := range e.SendStreamingMessage(ctx, msg("reply")) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 1 {
		t.Fatalf("stream = %d events, want 1 Message", len(got))
	}
	if _, ok := got[0].(*a2a.Message); !ok {
		t.Errorf("stream[0] = %T, want *a2a.Message", got[0])
	}
}

func kinds(evs []a2a.Event) []string {
	var out []string
	for _, ev := range evs {
		switch x := ev.(type) {
		case *a2a.Task:
			out = append(out, "task:"+string(x.Status.State))
		case *a2a.TaskStatusUpdateEvent:
			out = append(out, "status:"+string(x.Status.State))
		case *a2a.TaskArtifactUpdateEvent:
			out = append(out, "artifact")
		case *a2a.Message:
			out = append(out, "message")
		}
	}
	return out
}

func collect(t *testing.T, seq iter.Seq2[a2a.Event, error]) []a2a.Event {
	t.Helper()
	var out []a2a.Event
	for ev, err := range seq {
		if err != nil {
			t.Fatalf("stream error = %v", err)
		}
		out = append(out, ev)
	}
	return out
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	got := kinds(collect(t, e.SendStreamingMessage(ctx, msg("chunks"))))
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact", "artifact", "artifact", "artifact", "artifact", "status:TASK_STATE_COMPLETED"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
	list, _ := e.ListTasks(ctx, &a2a.ListTasksRequest{IncludeArtifacts: true})
	if len(list.Tasks) != 1 || len(list.Tasks[0].Artifacts) != 1 || len(list.Tasks[0].Artifacts[0].Parts) != 5 {
		t.Errorf("chunked artifact not assembled: %+v", list.Tasks)
	}
}

func TestInputRequiredAndResume(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("ask"))
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state = %v, want input-required", task.Status.State)
	}
	// A subscriber on the interrupted task sees it resumed and completed.
	subDone := make(chan []string)
	subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream := e.SubscribeToTask(subCtx, &a2a.SubscribeToTaskRequest{ID: task.ID})
	next, stop := iter.Pull2(stream)
	first, err, _ := next()
	if err != nil {
		t.Fatalf("SubscribeToTask(input-required) error = %v", err)
	}
	go func() {
		defer stop()
		out := kinds([]a2a.Event{first})
		for {
			ev, err, ok := next()
			if !ok || err != nil {
				break
			}
			out = append(out, kinds([]a2a.Event{ev})...)
		}
		subDone <- out
	}()
	done := send(t, e, ctx, follow(task, "Ann"))
	if done.Status.State != a2a.TaskStateCompleted || done.Artifacts[0].Parts[0].Text() != "hello, Ann" {
		t.Errorf("resumed task = %v %+v", done.Status.State, done.Artifacts)
	}
	if got := len(done.History); got != 3 {
		t.Errorf("history has %d messages, want 3 (ask, question, answer)", got)
	}
	// The stream shape of A2A: the Task first, then only updates. The follow-up resumed the task
	// (working: the engine's update), then the agent worked.
	want := []string{"task:TASK_STATE_INPUT_REQUIRED", "status:TASK_STATE_WORKING", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}
	if diff := cmp.Diff(want, <-subDone); diff != "" {
		t.Errorf("subscription (-want +got):\n%s", diff)
	}
	// A finished task accepts no more messages, and cannot be subscribed to.
	if _, err := e.SendMessage(ctx, follow(task, "again")); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("SendMessage(terminal task) error = %v, want UnsupportedOperation", err)
	}
	for _, err := range e.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("SubscribeToTask(terminal task) error = %v, want UnsupportedOperation", err)
		}
		break
	}
}

// untilSettled is how a client that ends a stream at the first terminal or interrupted state
// (A2A allows it) reads one: the kinds of events up to that state.
func untilSettled(t *testing.T, seq iter.Seq2[a2a.Event, error]) []string {
	t.Helper()
	var out []string
	for ev, err := range seq {
		if err != nil {
			t.Fatalf("stream error = %v", err)
		}
		out = append(out, kinds([]a2a.Event{ev})...)
		var st a2a.TaskState
		switch x := ev.(type) {
		case *a2a.Task:
			st = x.Status.State
		case *a2a.TaskStatusUpdateEvent:
			st = x.Status.State
		}
		if st.Terminal() || st == a2a.TaskStateInputRequired || st == a2a.TaskStateAuthRequired {
			break
		}
	}
	return out
}

// A streamed follow-up to an input-required task opens with the task as the message resumed
// it — working, the message in its history — so a client that stops at an interrupted state
// reads on to the answer; and nothing after the first event is a Task.
func TestStreamedFollowUp(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("ask"))
	req := follow(task, "Ann")
	events := collect(t, e.SendStreamingMessage(ctx, req))
	want := []string{"task:TASK_STATE_WORKING", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}
	if diff := cmp.Diff(want, kinds(events)); diff != "" {
		t.Fatalf("streamed follow-up (-want +got):\n%s", diff)
	}
	first := events[0].(*a2a.Task)
	if n := len(first.History); n != 3 || first.History[n-1].ID != req.Message.ID {
		t.Errorf("first event's history = %d messages, want 3 ending with the follow-up %s", n, req.Message.ID)
	}
	if first.Status.Message != nil {
		t.Errorf("first event's status message = %+v, want none (the question is answered)", first.Status.Message)
	}

	// The same, read by a client that ends the stream at an interrupted state.
	task = send(t, e, ctx, msg("ask"))
	if diff := cmp.Diff(want, untilSettled(t, e.SendStreamingMessage(ctx, follow(task, "Bo")))); diff != "" {
		t.Errorf("follow-up read up to the first settled state (-want +got):\n%s", diff)
	}
	got, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || len(got.History) != 3 {
		t.Errorf("GetTask after the follow-up = %v (err %v), want completed with 3 messages", got, err)
	}
}

// A stream whose task is interrupted from its first event ends there, and so does a
// subscription whose first live event interrupts the task.
func TestStreamEndsAtFirstInterruption(t *testing.T) {
	t.Parallel()
	e, ex, _ := newEngine(t)
	ctx, cancel := context.WithTimeout(as(t.Context(), "alice"), 10*time.Second)
	defer cancel()
	if diff := cmp.Diff([]string{"task:TASK_STATE_INPUT_REQUIRED"}, kinds(collect(t, e.SendStreamingMessage(ctx, msg("askfirst"))))); diff != "" {
		t.Errorf("stream of a task that asks at once (-want +got):\n%s", diff)
	}

	req := msg("slowask k1")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	task := send(t, e, ctx, req)
	waitState(t, e, ctx, task.ID, a2a.TaskStateWorking)
	var got []string
	for ev, err := range e.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatalf("SubscribeToTask() error = %v", err)
		}
		got = append(got, kinds([]a2a.Event{ev})...)
		if len(got) == 1 {
			close(ex.gate("k1"))
		}
	}
	if diff := cmp.Diff([]string{"task:TASK_STATE_WORKING", "status:TASK_STATE_INPUT_REQUIRED"}, got); diff != "" {
		t.Errorf("subscription (-want +got):\n%s", diff)
	}
}

// A Task an executor yields mid-run is stored as the task, and streamed as the status update it
// amounts to.
func TestMidRunTaskStreamsAsStatus(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	events := collect(t, e.SendStreamingMessage(ctx, msg("retask")))
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "status:TASK_STATE_WORKING", "status:TASK_STATE_COMPLETED"}
	if diff := cmp.Diff(want, kinds(events)); diff != "" {
		t.Fatalf("stream (-want +got):\n%s", diff)
	}
	id := events[0].(*a2a.Task).ID
	got, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
	if err != nil || len(got.Artifacts) != 1 || got.Artifacts[0].Parts[0].Text() != "whole" {
		t.Errorf("GetTask() = %+v (err %v), want the artifact of the Task the executor yielded", got, err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	req := msg("slow never")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	task := send(t, e, ctx, req)
	waitState(t, e, ctx, task.ID, a2a.TaskStateWorking)

	var sub []string
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for ev, err := range e.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
			if err != nil {
				return
			}
			sub = append(sub, kinds([]a2a.Event{ev})...)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	got, err := e.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask() = %v, %v; want canceled", got, err)
	}
	if _, err := e.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("second CancelTask() error = %v, want TaskNotCancelable", err)
	}
	select {
	case <-subDone:
	case <-time.After(10 * time.Second):
		t.Fatal("subscription did not end at cancel")
	}
	if len(sub) == 0 || sub[len(sub)-1] != "status:TASK_STATE_CANCELED" {
		t.Errorf("subscription = %v, want it to end with canceled", sub)
	}
	// The canceled run must not overwrite the state later.
	time.Sleep(20 * time.Millisecond)
	waitState(t, e, ctx, task.ID, a2a.TaskStateCanceled)
}

func TestHistoryLength(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("ask"))
	task = send(t, e, ctx, follow(task, "Ann"))
	for _, tt := range []struct {
		n    *int
		want int
	}{{nil, 3}, {ptr(0), 0}, {ptr(1), 1}, {ptr(10), 3}} {
		got, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: tt.n})
		if err != nil || len(got.History) != tt.want {
			t.Errorf("GetTask(historyLength=%v) history = %d (err %v), want %d", tt.n, len(got.History), err, tt.want)
		}
	}
	if got, _ := e.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: ptr(1)}); text(got.History[0]) != "Ann" {
		t.Errorf("historyLength=1 kept %q, want the newest message", text(got.History[0]))
	}
}

func ptr[T any](v T) *T { return &v }

func TestListTasks(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	var ids []a2a.TaskID
	for i := range 7 {
		ids = append(ids, send(t, e, ctx, msg(fmt.Sprint("task ", i))).ID)
	}
	asked := send(t, e, ctx, msg("ask"))
	// Newest first, paginated.
	var seen []a2a.TaskID
	token := ""
	for page := 0; ; page++ {
		res, err := e.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 3, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if res.TotalSize != 8 {
			t.Errorf("TotalSize = %d, want 8", res.TotalSize)
		}
		for _, task := range res.Tasks {
			if task.Artifacts != nil {
				t.Errorf("artifacts present without includeArtifacts")
			}
			seen = append(seen, task.ID)
		}
		if token = res.NextPageToken; token == "" {
			break
		}
		if page > 5 {
			t.Fatal("pagination does not end")
		}
	}
	want := append([]a2a.TaskID{asked.ID}, reverse(ids)...)
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("ListTasks order (-want +got):\n%s", diff)
	}
	res, _ := e.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired})
	if len(res.Tasks) != 1 || res.Tasks[0].ID != asked.ID {
		t.Errorf("ListTasks(status=input-required) = %v", res.Tasks)
	}
	res, _ = e.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: asked.ContextID})
	if len(res.Tasks) != 1 {
		t.Errorf("ListTasks(contextId) = %d tasks, want 1", len(res.Tasks))
	}
	if _, err := e.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1000}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("ListTasks(pageSize=1000) error = %v, want InvalidParams", err)
	}
	if _, err := e.ListTasks(ctx, &a2a.ListTasksRequest{PageToken: "garbage!"}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("ListTasks(bad token) error = %v, want InvalidParams", err)
	}
}

func reverse[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// Another caller sees nothing of alice's tasks: not found, never forbidden.
func TestCallerScoping(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	task := send(t, e, alice, msg("ask"))
	if _, err := e.GetTask(bob, &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob GetTask error = %v, want TaskNotFound", err)
	}
	if _, err := e.CancelTask(bob, &a2a.CancelTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob CancelTask error = %v, want TaskNotFound", err)
	}
	if _, err := e.SendMessage(bob, follow(task, "hijack")); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob SendMessage(alice's task) error = %v, want TaskNotFound", err)
	}
	for _, err := range e.SubscribeToTask(bob, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("bob SubscribeToTask error = %v, want TaskNotFound", err)
		}
		break
	}
	if res, _ := e.ListTasks(bob, &a2a.ListTasksRequest{}); len(res.Tasks) != 0 || res.TotalSize != 0 {
		t.Errorf("bob ListTasks = %d tasks, want none", len(res.Tasks))
	}
	if _, err := e.CreateTaskPushConfig(bob, &a2a.PushConfig{TaskID: task.ID, URL: "https://example.com/hook"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob CreateTaskPushConfig error = %v, want TaskNotFound", err)
	}
	if _, err := e.GetTask(alice, &a2a.GetTaskRequest{ID: task.ID}); err != nil {
		t.Errorf("alice GetTask error = %v", err)
	}
}

func TestExecutorFailure(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("fail"))
	if task.Status.State != a2a.TaskStateFailed {
		t.Errorf("state = %v, want failed", task.Status.State)
	}
	if strings.Contains(text(task.Status.Message), "internal detail") {
		t.Errorf("failure message leaks the executor's error: %q", text(task.Status.Message))
	}
}

// Every subscriber gets the same events in the same order.
func TestSubscribersAgree(t *testing.T) {
	t.Parallel()
	e, ex, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	req := msg("slow s")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	task := send(t, e, ctx, req)
	var wg sync.WaitGroup
	results := make([][]string, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev, err := range e.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
				if err != nil {
					return
				}
				if _, isTask := ev.(*a2a.Task); !isTask {
					results[i] = append(results[i], kinds([]a2a.Event{ev})...)
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(ex.gate("s"))
	wg.Wait()
	for i := range results {
		if diff := cmp.Diff([]string{"status:TASK_STATE_COMPLETED"}, results[i]); diff != "" {
			t.Errorf("subscriber %d (-want +got):\n%s", i, diff)
		}
	}
}

// Tasks a previous process left running are marked failed at startup.
func TestRecover(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := &scripted{}
	e1 := engine.New(ex, st, nil)
	ctx := as(t.Context(), "alice")
	req := msg("slow forever")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	task := send(t, e1, ctx, req)
	waitState(t, e1, ctx, task.ID, a2a.TaskStateWorking)
	// Simulate a crash: the store keeps the working task; a new engine starts on it.
	e2 := engine.New(ex, st, nil)
	n, err := e2.Recover(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Recover() = %d, %v; want 1 task settled", n, err)
	}
	got := waitState(t, e2, ctx, task.ID, a2a.TaskStateFailed)
	if !strings.Contains(text(got.Status.Message), "restarted") {
		t.Errorf("failed status message = %q, want a reason", text(got.Status.Message))
	}
	e1.Close(context.Background())
	e2.Close(context.Background())
}

// Events replays the log after a sequence number: what a reconnecting client missed.
func TestEventsReplay(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("chunks"))
	var seqs []int64
	for ev, err := range e.Events(ctx, "", task.ID, 3) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Seq)
	}
	if diff := cmp.Diff([]int64{4, 5, 6, 7, 8}, seqs); diff != "" {
		t.Errorf("Events(after 3) seqs (-want +got):\n%s", diff)
	}
}

// A client that lost its stream resumes it with Last-Event-ID and gets exactly what it missed,
// live events after, and nothing twice.
func TestResumeWithLastEventID(t *testing.T) {
	t.Parallel()
	e, ex, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	sctx, cancel := context.WithCancel(ctx)
	var first []a2a.Event
	for ev, err := range e.SendStreamingMessage(sctx, msg("slow gone")) {
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, ev)
		if len(first) == 2 { // the task and its working status; then the connection drops
			break
		}
	}
	cancel()
	last := seqOf(t, first[len(first)-1])
	task := first[0].(*a2a.Task)
	close(ex.gate("gone")) // the task completes while nobody listens

	rctx, _ := a2asrv.NewCallContext(ctx, a2asrv.NewServiceParams(map[string][]string{"Last-Event-ID": {fmt.Sprint(last)}}))
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		c2, _ := a2asrv.CallContextFrom(rctx)
		c2.User = cc.User
	}
	var rest []a2a.Event
	for ev, err := range e.SubscribeToTask(rctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatalf("resumed SubscribeToTask error = %v", err)
		}
		rest = append(rest, ev)
	}
	if diff := cmp.Diff([]string{"status:TASK_STATE_COMPLETED"}, kinds(rest)); diff != "" {
		t.Errorf("resumed stream (-want +got):\n%s", diff)
	}
	if got := seqOf(t, rest[0]); got != last+1 {
		t.Errorf("first resumed event has seq %d, want %d", got, last+1)
	}
	// Resuming at the end of a finished task's log has nothing to give: UnsupportedOperation.
	endCtx, _ := a2asrv.NewCallContext(ctx, a2asrv.NewServiceParams(map[string][]string{"Last-Event-ID": {fmt.Sprint(last + 1)}}))
	c3, _ := a2asrv.CallContextFrom(endCtx)
	c3.User = &a2asrv.User{Name: "alice", Authenticated: true}
	for _, err := range e.SubscribeToTask(endCtx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("resume past the end error = %v, want UnsupportedOperation", err)
		}
		break
	}
}

func seqOf(t *testing.T, ev a2a.Event) int64 {
	t.Helper()
	var m map[string]any
	switch x := ev.(type) {
	case *a2a.Task:
		m = x.Metadata
	case *a2a.TaskStatusUpdateEvent:
		m = x.Metadata
	case *a2a.TaskArtifactUpdateEvent:
		m = x.Metadata
	}
	n, ok := m[engine.SeqKey].(int64)
	if !ok {
		t.Fatalf("event %T has no %s metadata: %v", ev, engine.SeqKey, m)
	}
	return n
}

// An agent that refuses a request with an A2A error before creating the task: the caller gets
// that error, on SendMessage and on a stream, and no task exists. Any other early failure
// still makes a failed task, without its detail.
func TestExecutorRefusal(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	ctx := as(t.Context(), "alice")
	if _, err := e.SendMessage(ctx, msg("refuse")); !errors.Is(err, a2a.ErrUnsupportedContentType) {
		t.Errorf("SendMessage(refuse) error = %v, want UnsupportedContentType", err)
	}
	for ev, err := range e.SendStreamingMessage(ctx, msg("refuse")) {
		if !errors.Is(err, a2a.ErrUnsupportedContentType) {
			t.Errorf("SendStreamingMessage(refuse) = %v, %v; want UnsupportedContentType", ev, err)
		}
	}
	list, err := e.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 0 {
		t.Errorf("tasks after refusals: %v, %v; want none", list, err)
	}
	res, err := e.SendMessage(ctx, msg("crash"))
	task, ok := res.(*a2a.Task)
	if err != nil || !ok || task.Status.State != a2a.TaskStateFailed {
		t.Errorf("SendMessage(crash) = %#v, %v; want a failed task", res, err)
	}
}

// gatedStore holds every Update until release is closed, and records how many events each
// Update carried.
type gatedStore struct {
	store.Store
	release chan struct{}
	mu      sync.Mutex
	sizes   []int
}

func (g *gatedStore) Update(ctx context.Context, t *store.Task, events []a2a.Event) error {
	<-g.release
	g.mu.Lock()
	g.sizes = append(g.sizes, len(events))
	g.mu.Unlock()
	return g.Store.Update(ctx, t, events)
}

// Events the executor yields while a write is under way go to the store together, in the next
// write (group commit), and the log, the task and the stream are what one write per event
// would have made. A store that implements store.WriteBatcher sets how many events may queue.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{0, 16} {
		t.Run(fmt.Sprint("store batch ", batch), func(t *testing.T) {
			t.Parallel()
			testGroupCommit(t, batch)
		})
	}
}

// batchedStore is a store that asks for writes of up to n events.
type batchedStore struct {
	*gatedStore
	n int
}

func (b batchedStore) WriteBatch() int { return b.n }

func testGroupCommit(t *testing.T, batch int) {
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	st := &gatedStore{Store: mem, release: make(chan struct{})}
	var served store.Store = st
	// n chunks and completed: the first Update takes at least one, the rest fit in the queue.
	n := engine.MaxBatch
	if batch > 0 {
		served, n = batchedStore{st, batch}, batch
	}
	ex := &scripted{yielded: make(chan struct{})}
	e := engine.New(ex, served, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.Close(ctx)
	})
	ctx := as(t.Context(), "alice")
	next, stop := iter.Pull2(e.SendStreamingMessage(ctx, msg(fmt.Sprint("many ", n))))
	defer stop()
	first, err, _ := next() // the task, created with its first event (working)
	task, ok := first.(*a2a.Task)
	if err != nil || !ok {
		t.Fatalf("stream opens with %v, %v; want the task", first, err)
	}
	select {
	case <-ex.yielded: // every event is queued: the first Update holds the rest back
	case <-time.After(30 * time.Second):
		t.Fatal("the executor did not get to yield all its events while a write was held")
	}
	close(st.release)
	kindsGot := kinds([]a2a.Event{first})
	for {
		ev, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatalf("stream error = %v", err)
		}
		kindsGot = append(kindsGot, kinds([]a2a.Event{ev})...)
	}
	st.mu.Lock()
	sizes := st.sizes
	st.mu.Unlock()
	// The first Update took what was queued then; it was held until the executor had yielded
	// every event, so one more Update carries all the rest: n+1 events in at most 2 writes.
	total := 0
	for _, k := range sizes {
		total += k
	}
	if total != n+1 || len(sizes) > 2 {
		t.Errorf("events per Update = %v, want %d events in at most 2 Updates", sizes, n+1)
	}
	if diff := cmp.Diff(chunkKinds(n, a2a.TaskStateCompleted), kindsGot); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
	checkLog(t, mem, task.ID, n)
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.yieldAfterEnd {
		t.Error("the executor's yield of the final state returned true, want false")
	}
}

// chunkKinds is what kinds gives for the log of a "many n" or "invalid n" task that ended in
// state final: the submitted task, working, n chunks, final.
func chunkKinds(n int, final a2a.TaskState) []string {
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING"}
	for range n {
		want = append(want, "artifact")
	}
	return append(want, "status:"+string(final))
}

// checkLog checks the log and the stored task of a "many n" task: the submitted task, working,
// n chunks in order, completed; sequence numbers 1, 2, 3, … without gaps; the chunks assembled.
func checkLog(t *testing.T, st store.Store, id a2a.TaskID, n int) {
	t.Helper()
	owner := store.Owner{Principal: "alice"}
	evs, err := st.Events(t.Context(), owner, id, 0, 0)
	if err != nil {
		t.Fatalf("Events() error = %v", err)
	}
	var got []string
	want := chunkKinds(n, a2a.TaskStateCompleted)
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d has Seq %d, want %d", i, ev.Seq, i+1)
		}
		got = append(got, kinds([]a2a.Event{ev.Event})...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	rec, err := st.Get(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("Get() error = %v", err)
	}
	if len(rec.Task.Artifacts) != 1 {
		t.Fatalf("task has %d artifacts, want 1", len(rec.Task.Artifacts))
	}
	var parts []string
	for _, p := range rec.Task.Artifacts[0].Parts {
		parts = append(parts, p.Text())
	}
	var wantParts []string
	for i := range n {
		wantParts = append(wantParts, fmt.Sprint(i))
	}
	if diff := cmp.Diff(wantParts, parts); diff != "" {
		t.Errorf("assembled artifact (-want +got):\n%s", diff)
	}
	if rec.LastSeq != int64(len(want)) {
		t.Errorf("LastSeq = %d, want %d", rec.LastSeq, len(want))
	}
}

// A stream of many events, written as fast as the executor yields them, loses none, keeps their
// order, and ends at the final state.
func TestFastStream(t *testing.T) {
	t.Parallel()
	e, ex, st := newEngine(t)
	ctx := as(t.Context(), "alice")
	const n = 1000
	var got []string
	var id a2a.TaskID
	for ev, err := range e.SendStreamingMessage(ctx, msg(fmt.Sprint("many ", n))) {
		if err != nil {
			t.Fatalf("stream error = %v", err)
		}
		if task, ok := ev.(*a2a.Task); ok {
			id = task.ID
		}
		got = append(got, kinds([]a2a.Event{ev})...)
	}
	if len(got) != n+3 || got[0] != "task:TASK_STATE_SUBMITTED" || got[len(got)-1] != "status:TASK_STATE_COMPLETED" {
		t.Fatalf("stream of %d events from %v to %v, want %d from the submitted task to completed", len(got), got[0], got[len(got)-1], n+3)
	}
	checkLog(t, st, id, n)
	<-ex.yielded
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.yieldAfterEnd {
		t.Error("the executor's yield of the final state returned true, want false")
	}
}

// An invalid event fails the task; the events before it are written, whether or not they were
// queued together with it.
func TestInvalidEventAfterQueuedOnes(t *testing.T) {
	t.Parallel()
	e, _, st := newEngine(t)
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("invalid 50"))
	if task.Status.State != a2a.TaskStateFailed {
		t.Errorf("state = %v, want failed", task.Status.State)
	}
	evs, err := st.Events(ctx, store.Owner{Principal: "alice"}, task.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, kinds([]a2a.Event{ev.Event})...)
	}
	if diff := cmp.Diff(chunkKinds(50, a2a.TaskStateFailed), got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 50 {
		t.Errorf("failed task's artifacts = %v, want one of 50 parts", task.Artifacts)
	}
}

// ctxKeeper completes every task at once and keeps the context its run was given.
type ctxKeeper struct{ ctxs chan context.Context }

func (k ctxKeeper) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		k.ctxs <- ctx
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (ctxKeeper) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// A run's context ends with the run: a context left open stays registered with the engine's
// until Close, one per task ever run.
func TestRunContextEndsWithRun(t *testing.T) {
	t.Parallel()
	k := ctxKeeper{ctxs: make(chan context.Context, 1)}
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	eng := engine.New(k, st, nil)
	t.Cleanup(func() { eng.Close(context.Background()) })
	res, err := eng.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
	if err != nil {
		t.Fatalf("SendMessage() = %v", err)
	}
	if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage() = %v, want a completed task", res)
	}
	ctx := <-k.ctxs
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the run's context is still open after the task completed")
	}
}

// A blocking send waits for the outcome only (it is not woken by the events before it), and
// still gets it when more events than the ring holds went by meanwhile.
func TestSendMessageOutlivesRing(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngineWith(t, &engine.Options{RingSize: 4})
	const n = 100
	task := send(t, e, t.Context(), msg(fmt.Sprint("many ", n)))
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != n {
		t.Errorf("SendMessage() = %s with %d artifacts, want completed with one of %d parts", task.Status.State, len(task.Artifacts), n)
	}
}

// waiter works until its context ends: it says working, then reports when it saw the end.
type waiter struct{ started chan struct{} }

func (w waiter) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		w.started <- struct{}{}
		<-ctx.Done()
	}
}

func (waiter) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// Close interrupts the runs in progress: their executors see their contexts end with the
// shutdown as the cause, and their tasks are marked failed, so no client waits on a task
// nobody runs. Operations after Close fail with ErrClosed.
func TestCloseInterruptsRuns(t *testing.T) {
	t.Parallel()
	w := waiter{started: make(chan struct{}, 3)}
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	eng := engine.New(w, st, nil)
	var ids []a2a.TaskID
	for range 3 {
		req := msg("wait")
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
		ids = append(ids, send(t, eng, t.Context(), req).ID)
		<-w.started
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := eng.Close(ctx); err != nil {
		t.Fatalf("Close() = %v, want the runs ended", err)
	}
	for _, id := range ids {
		rec, err := st.Get(t.Context(), store.Owner{}, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Task.Status.State; got != a2a.TaskStateFailed {
			t.Errorf("task %s after Close: %s, want %s", id, got, a2a.TaskStateFailed)
		}
	}
	if _, err := eng.SendMessage(t.Context(), msg("late")); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("SendMessage after Close = %v, want ErrClosed", err)
	}
}

// A stream served under a backlog hint says, before each event, whether another is in hand to
// follow it at once: after a pause the consumer finds a backlog (More), and the stream's last
// event never says there is more.
func TestBacklogHint(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	hint := &backlog.Hint{}
	ctx := backlog.With(as(t.Context(), "alice"), hint)
	const n = 200
	var more []bool
	for ev, err := range e.SendStreamingMessage(ctx, msg(fmt.Sprint("many ", n))) {
		if err != nil {
			t.Fatalf("stream error = %v", err)
		}
		more = append(more, hint.More.Load())
		if _, ok := ev.(*a2a.Task); ok {
			time.Sleep(20 * time.Millisecond) // the run goes on: its events pile up
		}
	}
	if len(more) != n+3 {
		t.Fatalf("stream of %d events, want %d", len(more), n+3)
	}
	if more[len(more)-1] {
		t.Error("the last event said another follows")
	}
	if !slices.Contains(more[1:], true) {
		t.Error("after a pause, no event said another follows")
	}
}
