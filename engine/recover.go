package engine

import (
	"context"
	"errors"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/store"
)

// Recoverer is an optional interface of an a2asrv.AgentExecutor. The engine asks it about every
// task whose run ended without settling it because the process that ran it is gone (a crash, or
// in a cluster the replica whose lease on the task expired, or a replica that handed its tasks
// over as it shut down), before it fails the task.
//
// An agent that commits its work before it reports it (the agent runtime commits a turn's memory
// and turn record, then yields the final status) answers with the events that report what it had
// committed, so a crash between the two loses nothing. An agent that can carry on from where the
// task's log stands answers ErrResume. Any other answer leaves the task to the engine, which
// fails it with a reason.
type Recoverer interface {
	// RecoverTask returns the events that settle task (applied and written in order; the last
	// must leave the task terminal or interrupted), or nil when the agent has nothing committed
	// for it, or ErrResume to be run again on it. task is a copy the method may keep. Another
	// error is logged and the task is failed.
	RecoverTask(ctx context.Context, task *a2a.Task) ([]a2a.Event, error)
}

// ErrResume is what a Recoverer's RecoverTask returns to have the engine run the executor again
// on the task, as it stands in the store: Execute gets an ExecutorContext whose StoredTask is
// the task, still submitted or working (which tells a resumption from a new task, with no
// StoredTask, and from a follow-up message, whose StoredTask waits for input), and whose
// Message is the last message of the task's history from the user (the one its run was
// started for), with the task's owner as User. The run's events continue the task's log. What
// the executor did outside the store before the crash may happen again: resume only where
// that is safe.
var ErrResume = errors.New("engine: resume the task")

// errNotSettled is why recovered events that leave a task running are refused.
var errNotSettled = errors.New("engine: the recovered events leave the task running")

// errNoMessage is why a task without a user message cannot resume.
var errNoMessage = errors.New("engine: the task has no user message to resume with")

// recoverTask settles or resumes one task left running: with the executor's own account of it
// when it has one, else by failing it. rec is the task as the store holds it, just claimed (in
// a cluster) or read.
func (e *Engine) recoverTask(ctx context.Context, rec *store.Task) error {
	reason := "The server restarted while this task was running; it was not resumed."
	if e.cl != nil {
		reason = "The replica running this task stopped, and the agent cannot resume it."
	}
	if r, ok := e.exec.(Recoverer); ok {
		events, err := r.RecoverTask(ctx, cloneTask(rec.Task))
		if errors.Is(err, ErrResume) {
			if err = e.resume(rec); err == nil {
				return nil
			}
		}
		if err == nil && len(events) > 0 {
			next := cloneRec(rec)
			if err = applyAll(next.Task, events); err == nil && !endsStream(next.Task.Status.State) {
				err = errNotSettled
			}
			if err == nil {
				if err = e.st.Update(ctx, next, events); err == nil {
					e.written(next, events)
				}
				return err
			}
		}
		if err != nil {
			e.log.Warn("the agent could not recover a task; failing it", "task", rec.Task.ID, "err", err)
		}
	}
	next := cloneRec(rec)
	ev := statusEvent(next.Task, a2a.TaskStateFailed, reason)
	if err := apply(next.Task, ev); err != nil {
		return err
	}
	events := []a2a.Event{ev}
	if err := e.st.Update(ctx, next, events); err != nil {
		return err
	}
	e.written(next, events)
	return nil
}

// resume runs the executor again on a task it asked to resume (ErrResume).
func (e *Engine) resume(rec *store.Task) error {
	msg := lastUserMessage(rec.Task)
	if msg == nil {
		return errNoMessage
	}
	execCtx := &a2asrv.ExecutorContext{Message: msg, TaskID: rec.Task.ID, ContextID: rec.Task.ContextID,
		StoredTask: cloneTask(rec.Task), Tenant: rec.Owner.Tenant, User: userOf(rec.Owner)}
	ts := e.state(rec.Task.ID)
	defer e.release(ts)
	ts.mu.Lock()
	defer ts.unlock()
	if ts.run != nil && ts.run.cancel != nil {
		// A run of ours whose lease expired (it could not renew it): the task is taken over
		// now, and that run can write nothing more.
		ts.run.cancel(errLeaseLost)
	}
	ts.owner = rec.Owner
	if ts.rec == nil || ts.rec.Version < rec.Version {
		ts.rec, ts.partial = cloneRec(rec), false
	}
	e.log.Info("engine: resuming a task", "task", rec.Task.ID)
	e.startRunLocked(ts, execCtx, nil, cloneRec(rec), nil, trace.SpanContext{})
	return nil
}

// lastUserMessage returns the last message of t's history from the user, nil if none.
func lastUserMessage(t *a2a.Task) *a2a.Message {
	for i := len(t.History) - 1; i >= 0; i-- {
		if m := t.History[i]; m != nil && m.Role == a2a.MessageRoleUser {
			return m
		}
	}
	return nil
}

func applyAll(t *a2a.Task, events []a2a.Event) error {
	for _, ev := range events {
		if err := apply(t, ev); err != nil {
			return err
		}
	}
	return nil
}
