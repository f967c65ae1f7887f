package gopool

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestReuse checks that a task started while a worker is idle runs on that worker, and that
// idle workers end after the idle time.
func TestReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Second)
		ran := make(chan int, 3)
		for i := range 3 {
			p.Go(func() { ran <- i })
			if got := <-ran; got != i {
				t.Fatalf("task %d ran as %d", i, got)
			}
			synctest.Wait() // the worker is idle again
			if n := p.live.Load(); n != 1 {
				t.Fatalf("after task %d: %d workers, want 1 (reused)", i, n)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := p.live.Load(); n != 0 {
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
		done := make(chan struct{})
		p.Go(func() { done <- struct{}{} })
		<-done
		p.Close()
		synctest.Wait()
		if n := p.live.Load(); n != 0 {
			t.Fatalf("%d workers left after Close", n)
		}
		p.Go(func() { done <- struct{}{} })
		<-done
		p.Close() // twice is fine
	})
}
