// Package gopool runs functions on reused goroutines.
//
// A goroutine that runs a deep call chain grows its stack, and a new goroutine pays for that
// growth again (runtime.copystack) on every start. Short tasks started often — a capnweb
// session's read loop handed on each time a call blocks, say — run faster on a goroutine that
// already has the stack. Idle workers wait a short while for the next task and then end, so an
// idle program holds none; Close ends them at once.
package gopool

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a set of idle worker goroutines. The zero value is not usable; see New.
type Pool struct {
	idle      time.Duration
	work      chan func()
	done      chan struct{}
	closeOnce sync.Once
	live      atomic.Int64 // workers started and not yet ended (for the tests)
}

// New returns a pool whose idle workers end after waiting idle for a task.
func New(idle time.Duration) *Pool {
	return &Pool{idle: idle, work: make(chan func()), done: make(chan struct{})}
}

// Go runs f on an idle worker, or on a new goroutine when none is waiting. Like a go
// statement, it does not wait for f.
func (p *Pool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		p.live.Add(1)
		go p.worker(f)
	}
}

// Close makes the idle workers end now, and busy ones when their task returns. Go still works
// after Close, on a new goroutine each time.
func (p *Pool) Close() {
	p.closeOnce.Do(func() { close(p.done) })
}

func (p *Pool) worker(f func()) {
	defer p.live.Add(-1)
	var idle *time.Timer
	for {
		f()
		f = nil
		if idle == nil {
			idle = time.NewTimer(p.idle)
		} else {
			idle.Reset(p.idle)
		}
		select {
		case f = <-p.work:
		case <-idle.C:
			return
		case <-p.done:
			idle.Stop()
			return
		}
	}
}
