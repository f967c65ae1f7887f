package capnweb

import (
	"context"
	"errors"
	"sync/atomic"
)

// A Deferred is the result of a method call that settles after the method has returned. A
// method whose answer comes from another goroutine — a job queue, an event it waits for —
// creates one with NewDeferred, returns it, and calls Resolve once the answer is known:
//
//	func (s *Service) Run(ctx context.Context, job string) *capnweb.Deferred {
//		d := capnweb.NewDeferred(ctx)
//		s.queue <- work{job, func(res Result, err error) { d.Resolve(res, err) }}
//		return d
//	}
//
// Unlike a method that blocks (see Blocking), it holds no goroutine while it waits: the session
// goes on with the calls behind it at once, on the same goroutine. Until Resolve, the call counts
// as running (toward Limits.MaxPendingCalls), and calls pipelined on its result wait. The
// goroutine that calls Resolve sends the answer itself, with any other answers ready by then;
// calls that the result made ready run on the session's goroutines, not the resolver's.
//
// Resolve must be called exactly once (later calls do nothing), also when the method returns
// an error instead: an unresolved Deferred holds its session's pending-call slot until the
// session ends. A Deferred is returned by one method call, at most once.
type Deferred struct {
	s        *Session // nil for a call not made through a session
	p        *promiseHook
	resolved atomic.Bool
	returned atomic.Bool
}

// NewDeferred returns a Deferred for the method call running with ctx (the context the method
// received). With another context it still works, but counts toward no session's limits.
func NewDeferred(ctx context.Context) *Deferred {
	d := &Deferred{p: newPromiseHook()}
	if r, ok := ctx.Value(execRunKey{}).(*execRun); ok {
		s := r.s
		s.mu.Lock()
		s.running++ // the method's own count ends when it returns
		s.mu.Unlock()
		d.s = s
	}
	return d
}

// Resolve settles the call with v, or with err when err is not nil, as if its method had
// returned (v, err). It may be called from any goroutine, before or after the method returns;
// only the first call counts.
func (d *Deferred) Resolve(v any, err error) {
	if d.resolved.Swap(true) {
		return
	}
	s := d.s
	if s == nil {
		d.p.resolve(resultHook(v, err, nil))
		return
	}
	// Like a blocked call's goroutine when it returns (runReadyLocked's finisher), this one
	// holds a pass while it settles the call, so that the answers ready by then go out here in
	// one write, not a thread wake-up away. Unlike a finisher it runs no calls: they might
	// block the resolver's goroutine, which is not the session's. endPass starts an executor
	// for the calls the result made ready.
	s.passes.Add(1)
	d.p.resolve(resultHook(v, err, s))
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	s.endPass()
}

// errDeferredTwice fails a second call that returned the same Deferred.
var errDeferredTwice = errors.New("capnweb: a Deferred was returned by more than one call")

// hook returns the promise a call that returned d settles with.
func (d *Deferred) hook() hook {
	if d.returned.Swap(true) {
		return errorHook{errDeferredTwice}
	}
	return d.p
}
