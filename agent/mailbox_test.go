package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A call whose context ends while it waits in the mailbox never runs, and one already running is
// waited for: a closure never touches its caller's variables after the call has returned.
func TestAbandonedCallNeverRuns(t *testing.T) {
	t.Parallel()
	h, err := NewHost(&Definition{Name: "mailbox"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	e, err := h.acquire(t.Context(), Principal{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.release(e)
	unblock := make(chan struct{})
	if err := e.in.post(t.Context(), func(*core) { <-unblock }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var ran atomic.Bool
	done := make(chan error, 1)
	go func() { done <- e.in.do(ctx, func(*core) { ran.Store(true) }) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("do() = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("do() did not return when its context ended")
	}
	close(unblock)
	if err := e.in.do(t.Context(), func(*core) {}); err != nil { // the mailbox has drained
		t.Fatal(err)
	}
	if ran.Load() {
		t.Error("the abandoned call ran after do() returned")
	}

	// A call that has started is waited for even when its context ends meanwhile.
	ran.Store(false)
	started, finish := make(chan struct{}), make(chan struct{})
	ctx, cancel = context.WithCancel(t.Context())
	go func() {
		done <- e.in.do(ctx, func(*core) { close(started); <-finish; ran.Store(true) })
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		close(finish)
		t.Fatalf("do() = %v before its running call finished", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(finish)
	if err := <-done; err != nil || !ran.Load() {
		t.Errorf("do() = %v, ran = %v; want nil, true", err, ran.Load())
	}
}
