package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// recovering is the scripted executor with a Recoverer: it answers with what answer returns.
type recovering struct {
	*scripted
	answer func(t *a2a.Task) ([]a2a.Event, error)
	asked  []a2a.TaskID
}

func (r *recovering) RecoverTask(_ context.Context, t *a2a.Task) ([]a2a.Event, error) {
	r.asked = append(r.asked, t.ID)
	return r.answer(t)
}

// An executor that committed a task's outcome before the crash reports it at recovery; one that
// has nothing, or answers with events that leave the task running, gets the task failed.
func TestRecoverAsksTheExecutor(t *testing.T) {
	t.Parallel()
	completed := func(t *a2a.Task) ([]a2a.Event, error) {
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, t, a2a.NewTextPart("done before the crash"))
		return []a2a.Event{a2a.NewStatusUpdateEvent(t, a2a.TaskStateCompleted, msg)}, nil
	}
	stillWorking := func(t *a2a.Task) ([]a2a.Event, error) {
		return []a2a.Event{a2a.NewStatusUpdateEvent(t, a2a.TaskStateWorking, nil)}, nil
	}
	for _, tc := range []struct {
		name   string
		answer func(*a2a.Task) ([]a2a.Event, error)
		state  a2a.TaskState
		text   string
	}{
		{"committed", completed, a2a.TaskStateCompleted, "done before the crash"},
		{"nothing", func(*a2a.Task) ([]a2a.Event, error) { return nil, nil }, a2a.TaskStateFailed, "restarted"},
		{"error", func(*a2a.Task) ([]a2a.Event, error) { return nil, errors.New("boom") }, a2a.TaskStateFailed, "restarted"},
		{"not settled", stillWorking, a2a.TaskStateFailed, "restarted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := memory.New()
			defer st.Close()
			ctx := as(t.Context(), "alice")
			e1 := engine.New(&scripted{}, st, nil)
			req := msg("slow forever")
			req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
			task := send(t, e1, ctx, req)
			waitState(t, e1, ctx, task.ID, a2a.TaskStateWorking)

			r := &recovering{scripted: &scripted{}, answer: tc.answer}
			e2 := engine.New(r, st, nil)
			if n, err := e2.Recover(ctx); err != nil || n != 1 {
				t.Fatalf("Recover() = %d, %v; want 1 task settled", n, err)
			}
			if len(r.asked) != 1 || r.asked[0] != task.ID {
				t.Errorf("RecoverTask asked about %v, want [%s]", r.asked, task.ID)
			}
			got := waitState(t, e2, ctx, task.ID, tc.state)
			if !strings.Contains(text(got.Status.Message), tc.text) {
				t.Errorf("status message = %q, want it to contain %q", text(got.Status.Message), tc.text)
			}
			e1.Close(context.Background())
			e2.Close(context.Background())
		})
	}
}
