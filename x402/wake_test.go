package x402_test

import (
	"context"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/x402"
)

var _ engine.Waker = (*x402.Merchant)(nil)

// wakeable is an agent that takes the engine's wake function.
type wakeable struct {
	a2asrv.AgentExecutor
	wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error
}

func (w *wakeable) SetWake(wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error) {
	w.wake = wake
}

// A priced agent's tasks can be woken too: the merchant hands the engine's wake function to the
// agent it wraps.
func TestMerchantHandsTheWakeToItsAgent(t *testing.T) {
	t.Parallel()
	agent := &wakeable{AgentExecutor: a2atest.NewAgent()}
	m := x402.NewMerchant(agent, &x402.MerchantOptions{
		Price:       func(context.Context, *a2asrv.ExecutorContext) ([]x402.Requirements, error) { return nil, nil },
		Facilitator: x402.NewFacilitatorClient("http://127.0.0.1:1", nil), // never called: nothing is priced
	})
	st := memory.New()
	defer st.Close()
	e := engine.New(m, st, nil)
	defer e.Close(context.Background())
	if agent.wake == nil {
		t.Fatal("the agent behind the merchant got no wake function")
	}
	if err := agent.wake(t.Context(), "", nil, "no-such-task"); err == nil || errors.Is(err, engine.ErrNotWaiting) {
		t.Errorf("wake() of no task = %v, want the engine's task-not-found", err)
	}
}
