package gopool

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// workers returns how many goroutines there are beyond base, after giving any that
// synctest.Wait already counts as ended a moment to leave runtime.NumGoroutine's count too (a
// goroutine finishes exiting on its own thread, after the bubble has seen it go).
func workers(base, want int) int {
	n := runtime.NumGoroutine() - base
	for i := 0; i < 1000 && n > want; i++ {
		runtime.Gosched()
		n = runtime.NumGoroutine() - base
	}
	return n
}

// TestReuse checks that a task started while a worker is idle runs on that worker, and that
// idle workers end after the idle time.
func TestReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Second)
		base := runtime.NumGoroutine()
		ran := make(chan int, 3)
		for i := range 3 {
			p.Go(func() { ran <- i })
			if got := <-ran; got != i {
				t.Fatalf("task %d ran as %d", i, got)
			}
			synctest.Wait() // the worker is idle again
			if n := workers(base, 1); n != 1 {
				t.Fatalf("after task %d: %d workers, want 1 (reused)", i, n)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := workers(base, 0); n != 0 {
			t.Fatalf("%d workers left after the idle time", n)
		}
	})
}

// TestBusyWorkersDoNotBlockGo checks that Go never waits for a busy worker: each task that
// starts while the others run gets a goroutine of its own.
func TestBusyWorkersDoNotBlockGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Second)
		defer p.Close()
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			p.Go(func() { <-release; wg.Done() })
		}
		close(release)
		wg.Wait()
	})
}

// TestClose checks that Close ends idle workers at once, and that Go still runs tasks after it.
func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Hour)
		base := runtime.NumGoroutine()
		done := make(chan struct{})
		p.Go(func() { done <- struct{}{} })
		<-done
		p.Close()
		synctest.Wait()
		if n := workers(base, 0); n != 0 {
			t.Fatalf("%d workers left after Close", n)
		}
		p.Go(func() { done <- struct{}{} })
		<-done
		p.Close() // twice is fine
	})
}
