package engine

import (
	"context"
	"errors"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// Recoverer is an optional interface of an a2asrv.AgentExecutor. The engine asks it about every
// task whose run ended without settling it because the process that ran it is gone (a crash, or
// in a cluster the replica whose lease on the task expired), before it fails the task.
//
// An agent that commits its work before it reports it (the agent runtime commits a turn's memory
// and turn record, then yields the final status) answers with the events that report what it had
// committed, so a crash between the two loses nothing. Any other answer leaves the task to the
// engine, which fails it with a reason.
type Recoverer interface {
	// RecoverTask returns the events that settle task (applied and written in order; the last
	// must leave the task terminal or interrupted), or nil when the agent has nothing committed
	// for it. task is a copy the method may keep. An error is logged and the task is failed.
	RecoverTask(ctx context.Context, task *a2a.Task) ([]a2a.Event, error)
}

// errNotSettled is why recovered events that leave a task running are refused.
var errNotSettled = errors.New("engine: the recovered events leave the task running")

// recoverTask settles one task left running: with the executor's own account of it when it has
// one, else as failed. It returns the events written.
func (e *Engine) recoverTask(ctx context.Context, rec *store.Task) ([]a2a.Event, error) {
	if r, ok := e.exec.(Recoverer); ok {
		events, err := r.RecoverTask(ctx, cloneTask(rec.Task))
		if err == nil && len(events) > 0 {
			next := cloneRec(rec)
			if err = applyAll(next.Task, events); err == nil && !endsStream(next.Task.Status.State) {
				err = errNotSettled
			}
			if err == nil {
				return events, e.st.Update(ctx, next, events)
			}
		}
		if err != nil {
			e.log.Warn("the agent could not recover a task; failing it", "task", rec.Task.ID, "err", err)
		}
	}
	ev := statusEvent(rec.Task, a2a.TaskStateFailed, "The server restarted while this task was running; it was not resumed.")
	if err := apply(rec.Task, ev); err != nil {
		return nil, err
	}
	events := []a2a.Event{ev}
	return events, e.st.Update(ctx, rec, events)
}

func applyAll(t *a2a.Task, events []a2a.Event) error {
	for _, ev := range events {
		if err := apply(t, ev); err != nil {
			return err
		}
	}
	return nil
}
