package capnweb

// Running local calls.
//
// E-order: calls on local values start in the order they became ready — when they arrived, or,
// for a call with promise arguments, when those resolved. A per-session executor goroutine runs
// ready calls one after another, so fast calls run strictly in order with no goroutine per call.
// A call that blocks does not hold up the rest: when it waits on RPC (awaits a promise, reads or
// writes a stream), says it is about to block (Blocking) or runs longer than handoffAfter, the
// executor role passes to a new goroutine and the blocked call finishes on its own. The executor
// lingers briefly when the queue empties, then exits: an idle session has no executor goroutine.
//
// Concurrency: execQ, execActive, execIdle and execBlocked are guarded by s.mu. An execRun's
// owner flag says whether its goroutine still holds the executor role; only the holder takes from
// execQ. execBlocked is the holder when its call said it would block (Blocking): the next call to
// arrive makes it hand off.

import (
	"context"
	"sync/atomic"
	"time"
)

const (
	handoffAfter = time.Millisecond
	execLinger   = 20 * time.Millisecond
)

type execTask struct {
	body func(ctx context.Context) (any, error)
	p    *promiseHook
}

// execRun is one executor goroutine's claim on the executor role.
type execRun struct {
	s     *Session
	owner atomic.Bool
}

type execRunKey struct{}

// handoff gives up the executor role, starting a new executor if work is queued. The caller's
// call goes on in this goroutine, which exits when it is done.
func (r *execRun) handoff() {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.handoffLocked()
}

// handoffLocked is handoff with s.mu held.
func (r *execRun) handoffLocked() {
	if !r.owner.CompareAndSwap(true, false) {
		return
	}
	s := r.s
	s.execActive = false
	s.execBlocked = nil
	if len(s.execQ) > 0 {
		s.startExecutorLocked()
	} else {
		s.execWake = nil // the next executor makes one
	}
}

// Blocking tells the session that the method call running with ctx (the context the method
// received) is about to block on something other than this session — a lock, a channel, I/O,
// another service — so that the calls that arrived after it start without waiting for it to
// return, as they do when it awaits a promise or reads a stream. Calls still start in the order
// they arrived; only their completions interleave. Without it, a blocked call holds up the
// calls behind it for up to a millisecond. Call it from the method itself, while it runs; it
// does nothing after the first time, or outside a method call.
//
// The hand-off is lazy: it happens when the next call arrives (or at once if one is waiting), so
// a call that blocks while nothing else is queued keeps the executor's goroutine, and its grown
// stack, for the calls after it.
func Blocking(ctx context.Context) {
	r, ok := ctx.Value(execRunKey{}).(*execRun)
	if !ok {
		return
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !r.owner.Load():
	case len(s.execQ) > 0:
		r.handoffLocked()
	default:
		s.execBlocked = r // enqueueLocked hands off
	}
}

// yieldGate releases the executor role held by the call running with ctx, if any: the call is
// about to block.
func yieldGate(ctx context.Context) {
	if r, ok := ctx.Value(execRunKey{}).(*execRun); ok {
		r.handoff()
	}
}

func (s *Session) startExecutorLocked() {
	s.execActive = true
	if s.execWake == nil {
		s.execWake = make(chan struct{}, 1)
	}
	s.wg.Add(1)
	go s.executor()
}

// enqueueLocked adds a ready call. Caller holds mu.
func (s *Session) enqueueLocked(t execTask) {
	s.execQ = append(s.execQ, t)
	switch {
	case !s.execActive:
		s.startExecutorLocked()
	case s.execBlocked != nil:
		s.execBlocked.handoffLocked()
	default:
		s.wakeExecutorLocked()
	}
}

// wakeExecutorLocked wakes the executor if it is lingering. Caller holds mu.
func (s *Session) wakeExecutorLocked() {
	if s.execIdle {
		s.execIdle = false
		select {
		case s.execWake <- struct{}{}:
		default:
		}
	}
}

func (s *Session) executor() {
	defer s.wg.Done()
	r := &execRun{s: s}
	r.owner.Store(true)
	ctx := context.WithValue(s.ctx, execRunKey{}, r)
	watchdog := time.AfterFunc(time.Hour, r.handoff)
	watchdog.Stop()
	var linger *time.Timer
	for {
		s.mu.Lock()
		if !r.owner.Load() {
			s.mu.Unlock()
			return
		}
		if len(s.execQ) == 0 {
			if s.err != nil {
				s.execActive, s.execWake = false, nil
				s.mu.Unlock()
				return
			}
			s.execIdle = true
			wake := s.execWake
			s.mu.Unlock()
			if lingerFor(&linger, wake) {
				continue
			}
			s.mu.Lock()
			s.execIdle = false
			if len(s.execQ) == 0 || s.err != nil {
				if r.owner.Load() {
					s.execActive, s.execWake = false, nil
				}
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			continue
		}
		t := s.execQ[0]
		s.execQ[0] = execTask{}
		s.execQ = s.execQ[1:]
		if len(s.execQ) == 0 {
			s.execQ = nil // an idle session keeps no queue
		}
		s.mu.Unlock()

		watchdog.Reset(handoffAfter)
		v, err := t.body(ctx)
		watchdog.Stop()
		s.mu.Lock()
		s.running--
		if s.execBlocked == r {
			s.execBlocked = nil // the call returned before anything needed the executor
		}
		s.mu.Unlock()
		t.p.resolve(resultHook(v, err, s))
	}
}

// run schedules body as a local call and returns the promise of its result. prepare, when not
// nil, runs first in its own goroutine (awaiting promise arguments); the call is ready after
// it. A nil session runs body in a plain goroutine with a background context.
func (s *Session) run(prepare func(ctx context.Context) error, body func(ctx context.Context) (any, error)) hook {
	p := newPromiseHook()
	if s == nil {
		go func() {
			ctx := context.Background()
			if prepare != nil {
				if err := prepare(ctx); err != nil {
					p.resolve(errorHook{err})
					return
				}
			}
			v, err := body(ctx)
			p.resolve(resultHook(v, err, nil))
		}()
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.admitLocked(); h != nil {
		return h
	}
	if prepare == nil {
		s.enqueueLocked(execTask{body: body, p: p})
		return p
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := prepare(s.ctx); err != nil {
			s.callDone()
			p.resolve(errorHook{err})
			return
		}
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			s.callDone()
			p.resolve(errorHook{err})
			return
		}
		s.enqueueLocked(execTask{body: body, p: p})
		s.mu.Unlock()
	}()
	return p
}

// admitLocked counts a new local call, or returns the error hook that refuses it. Caller holds
// mu.
func (s *Session) admitLocked() hook {
	if s.err != nil {
		return errorHook{s.err}
	}
	if s.running >= s.limits.MaxPendingCalls {
		go s.shutdown(protocolErrorf("too many pending calls (limit %d)", s.limits.MaxPendingCalls), true)
		return errorHook{protocolErrorf("too many pending calls")}
	}
	s.running++
	return nil
}

// runAfter is run for a call whose arguments (args) hold promises. When they are all local
// results (waits, from localWaits), each gets a callback instead of a goroutine blocked on it,
// and the last to settle makes the call ready: a chain of dependent calls then runs back to back
// on the executor, with no hand-off between goroutines. Otherwise (waits is nil) a goroutine
// awaits them, as run does. The arguments are resolved just before body; if that fails they are
// released.
func (s *Session) runAfter(waits []*promiseHook, args *payload, body func(ctx context.Context) (any, error)) hook {
	prepare := func(ctx context.Context) error {
		_, err := args.resolve(ctx)
		if err != nil {
			args.release()
		}
		return err
	}
	if s == nil || waits == nil {
		return s.run(prepare, body)
	}
	p := newPromiseHook()
	s.mu.Lock()
	if h := s.admitLocked(); h != nil {
		s.mu.Unlock()
		args.release()
		return h
	}
	s.mu.Unlock()
	var left atomic.Int32
	left.Store(int32(len(waits)))
	ready := func() {
		for _, w := range waits {
			if _, _, ok := tryPull(w); !ok {
				// Settled to something not at hand (a remote promise): await it off the
				// executor, as run does (which counts the call again).
				s.callDone()
				p.resolve(s.run(prepare, body))
				return
			}
		}
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			s.callDone()
			args.release()
			p.resolve(errorHook{err})
			return
		}
		s.enqueueLocked(execTask{body: func(ctx context.Context) (any, error) {
			if err := prepare(ctx); err != nil {
				return nil, err
			}
			return body(ctx)
		}, p: p})
		s.mu.Unlock()
	}
	for _, w := range waits {
		w.onSettled(func() {
			if left.Add(-1) == 0 {
				ready()
			}
		})
	}
	return p
}

// lingerFor waits up to execLinger for a wake-up on wake, reusing *t as its timer. It reports
// whether it was woken (false: the time passed).
func lingerFor(t **time.Timer, wake <-chan struct{}) bool {
	if *t == nil {
		*t = time.NewTimer(execLinger)
	} else {
		(*t).Reset(execLinger)
	}
	select {
	case <-wake:
		(*t).Stop()
		return true
	case <-(*t).C:
		return false
	}
}

func (s *Session) callDone() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
}

// spawn runs fn in a tracked goroutine and returns the promise of its result (no ordering).
func (s *Session) spawn(fn func(ctx context.Context) (any, error)) hook {
	p := newPromiseHook()
	ctx := context.Background()
	if s != nil {
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return errorHook{err}
		}
		s.wg.Add(1)
		s.mu.Unlock()
		ctx = s.ctx
	}
	go func() {
		if s != nil {
			defer s.wg.Done()
		}
		v, err := fn(ctx)
		p.resolve(resultHook(v, err, s))
	}()
	return p
}
