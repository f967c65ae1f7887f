package capnweb

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

type heldTarget struct {
	Target
	disposed atomic.Int32
}

func (h *heldTarget) Name() string {
	if h.disposed.Load() != 0 {
		return "called after Dispose"
	}
	return "alive"
}

func (h *heldTarget) Dispose() { h.disposed.Add(1) }

// TestQueuedCallHoldsTarget: a call waiting its turn holds its target, so that a release
// handled meanwhile (the executor busy with other calls) does not dispose it under the call.
func TestQueuedCallHoldsTarget(t *testing.T) {
	t.Parallel()
	a, _ := Pipe()
	s := NewSession(a, nil, nil)
	defer s.Close()
	x := &heldTarget{}
	s.mu.Lock()
	s.execActive = true // another goroutine holds the executor role: calls wait in execQ
	s.mu.Unlock()
	res := newValueHook(x, false, s) // a method's result, holding x
	call := res.call([]any{"name"}, &payload{v: []any{}})
	res.release() // the peer released the result before the call ran
	if n := x.disposed.Load(); n != 0 {
		t.Fatalf("target disposed %d times while a call on it waited", n)
	}
	s.mu.Lock()
	s.execActive = false
	s.startExecutorLocked()
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	v, err := call.pull(ctx)
	if err != nil || v != "alive" {
		t.Errorf("queued call = %v, %v; want alive", v, err)
	}
	call.release()
	deadline := time.Now().Add(5 * time.Second)
	for x.disposed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := x.disposed.Load(); n != 1 {
		t.Errorf("target disposed %d times after the call ran, want once", n)
	}
}
