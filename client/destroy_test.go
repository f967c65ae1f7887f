package client_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// Destroy ends the connection and everything on it: open streams end with ErrClosed, later
// calls fail, and no goroutine is left behind, the client's or the server's.
//
// Not parallel: it counts the process's goroutines.
func TestDestroy(t *testing.T) {
	for _, b := range []client.Binding{client.BindingCapnweb, client.BindingCapnwebBatch} {
		t.Run(string(b), func(t *testing.T) {
			srv := a2atest.Start(t, nil)
			before := settledGoroutines(t, -1)

			c, err := client.New(t.Context(), srv.URL, &client.Options{Binding: b})
			if err != nil {
				t.Fatalf("client.New() = %v", err)
			}
			ctx := t.Context()
			if _, err := c.SendMessage(ctx, userMessage("hello")); err != nil {
				t.Fatalf("SendMessage() = %v", err)
			}
			// A stream left early, and one still open when the client is destroyed.
			for range c.SendStreamingMessage(ctx, userMessage("early exit")) {
				break
			}
			key := uuid.NewString()
			open := make(chan error, 1)
			started := make(chan struct{})
			go func() {
				var last error
				for _, err := range c.SendStreamingMessage(ctx, userMessage("wait "+key)) {
					if err != nil {
						last = err
						break
					}
					select {
					case <-started:
					default:
						close(started)
					}
				}
				open <- last
			}()
			<-started

			if err := c.Destroy(); err != nil {
				t.Errorf("Destroy() = %v", err)
			}
			if err := c.Destroy(); err != nil {
				t.Errorf("second Destroy() = %v", err)
			}
			select {
			case err := <-open:
				if !errors.Is(err, client.ErrClosed) {
					t.Errorf("open stream ended with %v, want ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the open stream did not end after Destroy")
			}
			if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "any"}); !errors.Is(err, client.ErrClosed) {
				t.Errorf("GetTask() after Destroy = %v, want ErrClosed", err)
			}
			srv.Agent.Release(key)
			if after := settledGoroutines(t, before); after > before {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines after Destroy, %d before:\n%s", after, before, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// settledGoroutines waits until the number of goroutines stops changing, or falls to target
// (-1: none), and returns it.
func settledGoroutines(t *testing.T, target int) int {
	t.Helper()
	n, same := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if target >= 0 && m <= target {
			return m
		}
		if m == n {
			same++
		} else {
			n, same = m, 0
		}
		if target < 0 && same >= 5 {
			return n
		}
	}
	return runtime.NumGoroutine()
}
