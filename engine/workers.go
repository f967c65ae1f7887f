package engine

// Reused goroutines for runs and their pullers (internal/gopool).
//
// Why: a run's goroutine writes to the store through a deep call chain, which grows its stack
// past the initial size; a new goroutine per run paid for that growth (runtime.copystack) and
// for its start on every task: about 5% of the ours-memory server's CPU in bench/a2a
// send-task. A reused goroutine keeps its grown stack.
//
// Every task handed to goWork is counted in wg until it returns, so Close waits for runs and
// pullers; the idle workers themselves end on their own (workerIdle), or at once when Close
// closes the pool.

import "time"

// workerIdle is how long an idle worker waits for work before it returns.
const workerIdle = time.Second

// goWork runs f on an idle worker, or on a new one.
func (e *Engine) goWork(f func()) {
	e.wg.Add(1)
	e.workers.Go(func() {
		defer e.wg.Done()
		f()
	})
}
