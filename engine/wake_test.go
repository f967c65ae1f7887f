package engine_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// asking is an executor whose task asks for input, and that goes on without a message when
// woken (engine.Waker): it records what the woken run was given.
type asking struct {
	wake  func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error
	woken chan *a2asrv.ExecutorContext
	hold  chan struct{} // nil, or the woken run waits until it is closed
}

func (x *asking) SetWake(wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error) {
	x.wake = wake
}

func (x *asking) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.Message == nil { // woken
			x.woken <- ec
			if x.hold != nil {
				<-x.hold
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("went on alone"))), nil)
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("may I?"))), nil)
	}
}

func (x *asking) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// A Waker's task waiting for input runs again without a message when the executor wakes it:
// the woken run sees the task as it waited and its owner, its events end the task; waking a
// task that waits no more, or another owner's, changes nothing.
func TestWakerRunsAWaitingTaskAgain(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	x := &asking{woken: make(chan *a2asrv.ExecutorContext, 1)}
	e := engine.New(x, st, nil)
	defer e.Close(context.Background())
	if x.wake == nil {
		t.Fatal("New did not call SetWake")
	}
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("go"))
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the task is %s, want input-required", task.Status.State)
	}
	bob := &a2asrv.User{Name: "bob", Authenticated: true}
	if err := x.wake(t.Context(), "", bob, task.ID); err == nil {
		t.Error("bob woke alice's task")
	}
	alice := &a2asrv.User{Name: "alice", Authenticated: true}
	if err := x.wake(t.Context(), "", alice, task.ID); err != nil {
		t.Fatalf("wake() = %v", err)
	}
	ec := <-x.woken
	if ec.TaskID != task.ID || ec.StoredTask == nil || ec.StoredTask.Status.State != a2a.TaskStateInputRequired || ec.User.Name != "alice" {
		t.Errorf("the woken run's context: task %s, stored %v, user %v", ec.TaskID, ec.StoredTask, ec.User)
	}
	got := waitState(t, e, ctx, task.ID, a2a.TaskStateCompleted)
	if text(got.Status.Message) != "went on alone" {
		t.Errorf("the task ended with %q", text(got.Status.Message))
	}
	if err := x.wake(t.Context(), "", alice, task.ID); !errors.Is(err, engine.ErrNotWaiting) {
		t.Errorf("wake() of a finished task = %v, want ErrNotWaiting", err)
	}
	select {
	case <-x.woken:
		t.Error("a finished task ran again")
	default:
	}
}

// An answer sent while the woken run goes on is refused as an answer to a question withdrawn,
// not told to come back later (the task is not going to ask it again); once the woken run
// ended the task, as a message to a task that is over.
func TestWakerRefusesAnAnswerDuringTheWokenRun(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	x := &asking{woken: make(chan *a2asrv.ExecutorContext, 1), hold: make(chan struct{})}
	e := engine.New(x, st, nil)
	defer e.Close(context.Background())
	ctx := as(t.Context(), "alice")
	task := send(t, e, ctx, msg("go"))
	if err := x.wake(t.Context(), "", &a2asrv.User{Name: "alice", Authenticated: true}, task.ID); err != nil {
		t.Fatalf("wake() = %v", err)
	}
	<-x.woken
	_, err := e.SendMessage(ctx, follow(task, "yes"))
	if !errors.Is(err, a2a.ErrUnsupportedOperation) || !strings.Contains(err.Error(), "waits for no answer any more") {
		t.Errorf("an answer during the woken run: %v, want UnsupportedOperation: waits for no answer any more", err)
	}
	close(x.hold)
	waitState(t, e, ctx, task.ID, a2a.TaskStateCompleted)
	if _, err := e.SendMessage(ctx, follow(task, "yes")); !errors.Is(err, a2a.ErrUnsupportedOperation) || !strings.Contains(err.Error(), "accepts no more messages") {
		t.Errorf("an answer after the woken run: %v, want UnsupportedOperation: accepts no more messages", err)
	}
}
