package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/engine"
)

type sendOutcome struct {
	res a2a.SendMessageResult
	err error
}

// sendFunc starts req with SendMessageFunc and returns the channel its outcome arrives on, and
// whether done had been called by the time SendMessageFunc returned.
func sendFunc(e *engine.Engine, ctx context.Context, req *a2a.SendMessageRequest) (<-chan sendOutcome, bool) {
	out := make(chan sendOutcome, 2) // room for a second call, which would be a bug
	e.SendMessageFunc(ctx, req, func(res a2a.SendMessageResult, err error) { out <- sendOutcome{res, err} })
	return out, len(out) > 0
}

func outcome(t *testing.T, out <-chan sendOutcome) sendOutcome {
	t.Helper()
	select {
	case o := <-out:
		select {
		case again := <-out:
			t.Errorf("done called twice: then with %v, %v", again.res, again.err)
		case <-time.After(10 * time.Millisecond):
		}
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("done was not called")
		return sendOutcome{}
	}
}

func funcTask(t *testing.T, out <-chan sendOutcome) *a2a.Task {
	t.Helper()
	o := outcome(t, out)
	task, ok := o.res.(*a2a.Task)
	if o.err != nil || !ok {
		t.Fatalf("SendMessageFunc outcome = %#v, %v; want a task", o.res, o.err)
	}
	return task
}

// SendMessageFunc gives what SendMessage gives: each kind of outcome, through a resume, past
// the ring, with ReturnImmediately.
func TestSendMessageFunc(t *testing.T) {
	t.Parallel()
	e, ex, _ := newEngineWith(t, &engine.Options{RingSize: 4})
	ctx := as(t.Context(), "alice")

	out, _ := sendFunc(e, ctx, msg("hi there"))
	task := funcTask(t, out)
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text() != "echo: hi there" {
		t.Errorf("echo: %s %+v, want completed with its artifact", task.Status.State, task.Artifacts)
	}

	out, _ = sendFunc(e, ctx, msg("reply"))
	if o := outcome(t, out); o.err != nil || text(asMessage(o.res)) != "hello back" {
		t.Errorf("reply: %#v, %v; want the agent's message", o.res, o.err)
	}

	out, _ = sendFunc(e, ctx, msg("refuse"))
	if o := outcome(t, out); !errors.Is(o.err, a2a.ErrUnsupportedContentType) {
		t.Errorf("refuse: %v, want UnsupportedContentType", o.err)
	}
	out, _ = sendFunc(e, ctx, msg("crash"))
	if task := funcTask(t, out); task.Status.State != a2a.TaskStateFailed {
		t.Errorf("crash: %s, want failed", task.Status.State)
	}

	// Refused before any run: done is called before SendMessageFunc returns.
	out, early := sendFunc(e, ctx, &a2a.SendMessageRequest{Message: &a2a.Message{ID: "m1"}})
	if o := outcome(t, out); !early || !errors.Is(o.err, a2a.ErrInvalidParams) {
		t.Errorf("empty message: %v (done before return: %v), want InvalidParams at once", o.err, early)
	}

	out, _ = sendFunc(e, ctx, msg("ask"))
	asked := funcTask(t, out)
	if asked.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("ask: %s, want input-required", asked.Status.State)
	}
	out, _ = sendFunc(e, ctx, follow(asked, "Ann"))
	if task := funcTask(t, out); task.Status.State != a2a.TaskStateCompleted || task.Artifacts[0].Parts[0].Text() != "hello, Ann" || len(task.History) != 3 {
		t.Errorf("resumed: %s %+v with %d messages, want completed, hello Ann, 3 messages", task.Status.State, task.Artifacts, len(task.History))
	}
	out, _ = sendFunc(e, ctx, follow(asked, "again"))
	if o := outcome(t, out); !errors.Is(o.err, a2a.ErrUnsupportedOperation) {
		t.Errorf("message to a finished task: %v, want UnsupportedOperation", o.err)
	}

	const n = 50 // far more events than the ring holds: the outcome is read back from the log
	out, _ = sendFunc(e, ctx, msg(fmt.Sprint("many ", n)))
	if task := funcTask(t, out); task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != n {
		t.Errorf("many: %s with %d artifacts, want completed with one of %d parts", task.Status.State, len(task.Artifacts), n)
	}

	req := msg("slow immediate")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	out, _ = sendFunc(e, ctx, req)
	if s := funcTask(t, out).Status.State; s != a2a.TaskStateSubmitted && s != a2a.TaskStateWorking {
		t.Errorf("returnImmediately: %s, want submitted or working", s)
	}
	close(ex.gate("immediate"))
}

func asMessage(r a2a.SendMessageResult) *a2a.Message {
	m, _ := r.(*a2a.Message)
	return m
}

// While the agent works, no call is made; once it finishes, done gets the task. A caller whose
// context ends first gets its cause, once, and the task still completes.
func TestSendMessageFuncWaits(t *testing.T) {
	t.Parallel()
	e, ex, _ := newEngine(t)
	ctx := as(t.Context(), "alice")

	out, early := sendFunc(e, ctx, msg("slow one"))
	if early {
		t.Fatal("done called before the agent finished")
	}
	select {
	case o := <-out:
		t.Fatalf("done called while the agent works: %v, %v", o.res, o.err)
	case <-time.After(20 * time.Millisecond):
	}
	close(ex.gate("one"))
	if task := funcTask(t, out); task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("state = %s, want completed", task.Status.State)
	}

	cctx, cancel := context.WithCancelCause(ctx)
	out, _ = sendFunc(e, cctx, msg("slow two"))
	gone := errors.New("caller gone")
	cancel(gone)
	if o := outcome(t, out); !errors.Is(o.err, gone) {
		t.Errorf("canceled: %v, want the context's cause", o.err)
	}
	close(ex.gate("two"))
	list, err := e.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range list.Tasks {
		waitState(t, e, ctx, task.ID, a2a.TaskStateCompleted)
	}
	select {
	case o := <-out:
		t.Errorf("done called again after the cancel: %v, %v", o.res, o.err)
	case <-time.After(20 * time.Millisecond):
	}
}
