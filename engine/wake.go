package engine

import (
	"context"
	"errors"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/store"
)

// Waker is an optional interface of an a2asrv.AgentExecutor whose task, once it waits for
// input, may go on without a message from the client: the agent runtime's turn that asked the
// user a question stops waiting when no answer came in time, or when the question was decided
// another way (a capability's approval decided elsewhere), and its task must report how the
// turn ended rather than wait for input forever.
//
// New calls SetWake once, before any run, with wake. The executor calls wake with the task's
// tenant and user (as the ExecutorContext of its run named them) to have the engine run it
// again on the task: if the task is still interrupted, it is written working and Execute runs
// with an ExecutorContext whose Message is nil and whose StoredTask is the task as it waited;
// the events it yields continue the task's log, as after a follow-up message. A task that no
// longer waits (answered, canceled, ended) is left as it is, and wake returns ErrNotWaiting.
// wake waits for a run of the task still writing its events, bounded by ctx, and must not be
// called holding a lock the executor's runs need.
type Waker interface {
	// SetWake takes the engine's wake function (see Waker).
	SetWake(wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error)
}

// ErrNotWaiting is what a Waker's wake returns for a task that waits for no input: nothing
// was run.
var ErrNotWaiting = errors.New("engine: the task waits for no input")

// wake runs the executor again, without a message, on task if it waits for input (Waker).
func (e *Engine) wake(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.exit()
	owner := store.Owner{Tenant: tenant}
	if user != nil && user.Authenticated {
		owner.Principal = user.Name
	}
	for {
		// A run of the task still under way here (the one that yielded the question, say,
		// writing it): wait for it to end, then look again.
		ts := e.state(task)
		ts.mu.Lock()
		r := ts.run
		ts.mu.Unlock()
		e.release(ts)
		if r != nil {
			select {
			case <-r.done:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		rec, err := e.st.Get(ctx, owner, task)
		if err != nil {
			return e.storeErr(err)
		}
		if !store.IsInterrupted(rec.Task.Status.State) {
			return ErrNotWaiting
		}
		ts, _, _, err = e.proceed(ctx, nil, owner, rec, &a2asrv.ExecutorContext{Tenant: owner.Tenant, User: user})
		if err != nil {
			return err
		}
		e.release(ts)
		return nil
	}
}
