package engine

// Reused goroutines for runs and their pullers.
//
// Concurrency model: every worker goroutine is owned by the Engine (wg): started by goWork,
// it runs the function it was given, then waits up to workerIdle for another one (handed over
// on the unbuffered channel work, so a handover happens only when a worker is waiting) and
// returns when none comes, or when the engine closes.
//
// Why: a run's goroutine writes to the store through a deep call chain, which grows its stack
// past the initial size; a new goroutine per run paid for that growth (runtime.copystack) and
// for its start on every task: about 5% of the ours-memory server's CPU in bench/a2a
// send-task. A reused goroutine keeps its grown stack.

import "time"

// workerIdle is how long an idle worker waits for work before it returns.
const workerIdle = time.Second

// goWork runs f on an idle worker, or on a new one.
func (e *Engine) goWork(f func()) {
	select {
	case e.work <- f:
	default:
		e.wg.Add(1)
		go e.worker(f)
	}
}

func (e *Engine) worker(f func()) {
	defer e.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		f = nil
		idle.Reset(workerIdle)
		select {
		case f = <-e.work:
		case <-idle.C:
			return
		case <-e.ctx.Done():
			return
		}
	}
}
