package capnweb

// Running local calls.
//
// E-order: calls on local values start in the order they became ready — when they arrived, or,
// for a call with promise arguments, when those resolved. Ready calls wait in execQ, and one
// goroutine at a time holds the executor role and runs them one after another, so fast calls run
// strictly in order with no goroutine per call. Usually that goroutine is the read loop itself:
// after each message it runs the calls the message made ready (runQueued), the way an event loop
// does, so a call costs no hand-off between goroutines. A call that became ready elsewhere (a
// promise argument settled, say) starts an executor goroutine, which exits when the queue is
// empty. Like the read loop, an executor holds a pass while it runs: the answers it makes leave
// in its own write, not by way of the write loop.
//
// A call that blocks does not hold up the rest: when it waits on RPC (awaits a promise, reads or
// writes a stream), says it is about to block (Blocking) or runs longer than handoffAfter, the
// executor role passes to another goroutine (a reused one, see workers) and the blocked call finishes on its own. When the
// blocked call is running on the read loop, the read loop goes on in a new goroutine too: the
// message the call awaits must still be read.
//
// Concurrency: execQ, execActive and execBlocked are guarded by s.mu. An execRun's owner flag
// says whether its goroutine still holds the executor role; only the holder takes from execQ.
// execBlocked is the holder when its call said it would block (Blocking): the next call to
// arrive makes it hand off.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/gopool"
)

// handoffAfter: a call running this long on the executor role hands it on (see the watchdog).
const handoffAfter = time.Millisecond

type execTask struct {
	body func(ctx context.Context) (any, error)
	p    *promiseHook
}

// execRun is one goroutine's claim on the executor role, for one runReadyLocked.
type execRun struct {
	s     *Session
	owner atomic.Bool
	// reader: the goroutine is the read loop, in a pass; a hand-off ends the pass and moves
	// the read loop on. ownPass: the goroutine holds a pass of its own (an executor or a
	// finisher, see runReadyLocked), which a hand-off, or the queue running dry, ends; ran
	// counts the calls run in it. All under s.mu.
	reader, ownPass bool
	ran             int

	// For the watchdog (Session.watch): calls counts call starts and ends (odd: a call is
	// running).
	calls atomic.Uint64
	seen  atomic.Uint64 // calls at the watchdog's last look
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
	}
	if r.reader || r.ownPass {
		s.passes.Add(-1) // the pass ends here; what it queued goes out now
		if len(s.out) > 0 {
			s.kickWriterLocked()
		}
	}
	r.ownPass = false
	if r.reader {
		s.wg.Add(1)
		s.goLocked(s.readLoop)
	}
}

// Blocking tells the session that the method call running with ctx (the context the method
// received) is about to block on something other than this session — a lock, a channel, I/O,
// another service — so that the calls that arrived after it start without waiting for it to
// return, as they do when it awaits a promise or reads a stream. Calls still start in the order
// they arrived; only their completions interleave. Without it, a blocked call holds up the
// calls behind it for one to two milliseconds. Call it from the method itself, while it runs; it
// does nothing after the first time, or with a context that is not a method call's. (Called
// with a method's context after that method returned, it may hand on a later call.)
//
// On an executor goroutine the hand-off is lazy: it happens when the next call arrives (or at
// once if one is waiting), so a call that blocks while nothing else is queued keeps the
// executor's goroutine, and its grown stack, for the calls after it. On the read loop it is
// immediate: the read loop goes on in a new goroutine.
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
	case len(s.execQ) > 0, r.reader:
		// On the read loop, at once: no message can arrive to trigger it while the call blocks.
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
	s.wg.Add(1)
	s.goLocked(s.executor)
}

// workerIdle is how long a session's idle worker goroutine waits for the next read loop or
// executor to run.
const workerIdle = 20 * time.Millisecond

// goLocked starts f, a read loop or an executor, on one of the session's reused goroutines
// while the session is busy (busyState.workers): both parse, evaluate and encode, which grows a
// goroutine's stack, and under load both start as often as calls block. Caller holds mu.
func (s *Session) goLocked(f func()) {
	if b := s.busy.Load(); b != nil && !s.closing {
		if b.workers == nil {
			b.workers = gopool.New(workerIdle)
		}
		b.workers.Go(f)
		return
	}
	go f()
}

// maxExecBuf bounds the queue array a busy session keeps for its next calls.
const maxExecBuf = 64

// enqueueLocked adds a ready call. Caller holds mu.
func (s *Session) enqueueLocked(t execTask) {
	b := s.busy.Load()
	if len(s.execQ) == 0 && b != nil {
		// The last queue's array, drained, while the session is busy: a new slice per call was
		// an allocation per call.
		s.execQ = b.execBuf[:0]
	}
	before := cap(s.execQ)
	s.execQ = append(s.execQ, t)
	if b != nil && (len(s.execQ) == 1 || cap(s.execQ) != before) {
		// A new array (the queue started, or outgrew the last): keep its start, as popping
		// moves execQ past it, and let an old one go with the calls copied out of it.
		b.execBuf = nil
		if cap(s.execQ) <= maxExecBuf {
			b.execBuf = s.execQ[:0]
		}
	}
	switch {
	case !s.execActive:
		if s.passes.Load() > 0 {
			return // the pass runs it (runQueued, runReadyLocked) or starts an executor (endPass)
		}
		s.startExecutorLocked()
	case s.execBlocked != nil:
		s.execBlocked.handoffLocked()
	}
}

// runQueued is called by the read loop after each message: it runs the calls that are ready
// when no goroutine holds the executor role. It reports whether this goroutine is still the
// read loop (false: a call blocked, and the read loop went on in a new goroutine).
//
// rc is the read loop's claim, reused from one message to the next while it stays the read
// loop (a new one is made when nil).
func (s *Session) runQueued(rc *readerClaim) bool {
	s.mu.Lock()
	if s.execActive || len(s.execQ) == 0 {
		s.mu.Unlock()
		return true
	}
	s.execActive = true
	if rc.r == nil {
		rc.r = &execRun{s: s}
		rc.ctx = context.WithValue(s.ctx, execRunKey{}, rc.r)
	}
	rc.r.reader = true
	if !s.runReadyLocked(rc.r, rc.ctx) {
		rc.r, rc.ctx = nil, nil // handed off: the goroutine is no longer the read loop
		return false
	}
	return true
}

// readerClaim is the read loop's execRun and the context that carries it.
type readerClaim struct {
	r   *execRun
	ctx context.Context
}

func (s *Session) executor() {
	defer s.wg.Done()
	// The executor holds a pass, as a finisher does (runReadyLocked): the answers its calls
	// make leave with one write, its own, when the queue runs dry, not by way of the write
	// loop, one more thread to wake.
	r := &execRun{s: s, ownPass: true}
	s.passes.Add(1)
	s.mu.Lock()
	s.runReadyLocked(r, context.WithValue(s.ctx, execRunKey{}, r))
}

// runReadyLocked runs ready calls until the queue is empty, in a goroutine that has just been
// given the executor role (execActive set), as r, whose context is ctx; it is called with s.mu
// held, and returns with it released. It reports whether this goroutine is still the read loop
// (reader) once the queue has emptied: false when a call blocked, the role was handed off,
// and this goroutine finished the call on its own.
//
// A goroutine that finishes a call after a hand-off (a finisher) holds a pass while it settles
// the call's promise, so that what the result makes ready — a pipelined call waiting on it,
// an answer to a pull — is not handed to an executor goroutine and to the write loop, each a
// thread wake-up away: if the role is free the finisher takes it back and runs the calls
// itself, and at the end of its pass it sends the answers itself (endPass).
func (s *Session) runReadyLocked(r *execRun, ctx context.Context) bool {
	r.owner.Store(true)
	var dog *busyState // set when the watchdog watches r
	defer func() {
		if dog != nil {
			dog.dogRun.CompareAndSwap(r, nil)
		}
	}()
	for {
		if !r.owner.Load() {
			s.mu.Unlock()
			return false
		}
		if len(s.execQ) == 0 {
			r.owner.Store(false)
			s.execActive = false
			s.execBlocked = nil
			if dog == nil {
				s.dropParkedLocked() // else the watchdog's next look does
			}
			own := r.ownPass
			r.ownPass = false
			s.mu.Unlock()
			if own {
				s.endPass()
			}
			return r.reader
		}
		t := s.execQ[0]
		s.execQ[0] = execTask{}
		s.execQ = s.execQ[1:]
		if len(s.execQ) == 0 {
			s.execQ = nil // its array, drained, is busyState.execBuf
		}
		if max := s.lim().MaxPendingCalls; s.running >= max {
			// Queued calls do not count: this one would be one more running.
			err := protocolErrorf("too many pending calls (limit %d)", max)
			go s.shutdown(err, true)
			s.mu.Unlock()
			s.uncharge(callCost)
			t.p.resolve(errorHook{err})
			s.mu.Lock()
			continue
		}
		s.running++
		s.mu.Unlock()

		r.calls.Add(1)
		if dog == nil {
			dog = s.busyState()
			dog.dogRun.Store(r)
			s.armWatchdog(dog)
		}
		v, err := t.body(ctx)
		r.calls.Add(1)
		s.uncharge(callCost)
		s.mu.Lock()
		s.running--
		if s.execBlocked == r {
			s.execBlocked = nil // the call returned before anything needed the executor
		}
		finisher := !r.owner.Load()
		if finisher {
			s.passes.Add(1)
		}
		s.mu.Unlock()
		t.p.resolve(resultHook(v, err, s))
		s.mu.Lock()
		if !finisher {
			if r.ownPass {
				if r.ran++; r.ran >= maxPass {
					// A long run sends what it has answered so far, as a read loop's pass does.
					r.ran = 0
					s.mu.Unlock()
					s.endPass()
					s.passes.Add(1)
					s.mu.Lock()
				}
			}
			continue
		}
		if s.execActive || len(s.execQ) == 0 || s.err != nil {
			s.mu.Unlock()
			s.endPass()
			return false
		}
		// The role is free and calls are ready (made so by this result, most likely): run
		// them here, in the pass.
		s.execActive = true
		r.reader, r.ownPass = false, true
		r.owner.Store(true)
		if dog != nil {
			dog.dogRun.Store(r)
			s.armWatchdog(dog)
		}
	}
}

// The watchdog hands off a call that runs longer than handoffAfter. One timer per session
// (in its busyState) looks every handoffAfter at the run holding the executor role (dogRun), for
// as long as there is one: arming it per call or per run would cost more than the calls it
// watches.

// armWatchdog makes sure the watchdog's timer will look.
func (s *Session) armWatchdog(b *busyState) {
	if b.dogArmed.Swap(true) {
		return
	}
	b.dogOnce.Do(func() { b.dog = time.AfterFunc(time.Hour, func() { s.watch(b) }) })
	b.dog.Reset(handoffAfter)
}

// watch is the watchdog's look: a call that was already running at the last look, and still
// is, has run for at least handoffAfter, and the executor role passes on.
func (s *Session) watch(b *busyState) {
	b.dogArmed.Store(false)
	r := b.dogRun.Load()
	if r == nil || !r.owner.Load() {
		s.mu.Lock()
		s.dropParkedLocked() // the timer held the busy state last
		s.mu.Unlock()
		return
	}
	n := r.calls.Load()
	if n%2 == 1 && n == r.seen.Load() {
		r.handoff()
		return
	}
	r.seen.Store(n)
	s.armWatchdog(b)
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
	// Awaiting its arguments, the call holds a goroutine: it counts as running.
	if max := s.lim().MaxPendingCalls; s.running >= max {
		err := protocolErrorf("too many pending calls (limit %d)", max)
		go s.shutdown(err, true)
		s.uncharge(callCost)
		return errorHook{err}
	}
	s.running++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := prepare(s.ctx)
		s.mu.Lock()
		s.running--
		s.mu.Unlock()
		if err != nil {
			s.callDone()
			p.resolve(errorHook{err})
			return
		}
		s.enqueueOrFail(execTask{body: body, p: p})
	}()
	return p
}

// admitLocked charges a new local call to the budget (callDone gives it back), or returns the
// error hook that refuses it. It does not count the call as running: a call runs once it leaves
// the queue (runReadyLocked). Caller holds mu.
func (s *Session) admitLocked() hook {
	if s.err != nil {
		return errorHook{s.err}
	}
	if err := s.charge(callCost); err != nil {
		return errorHook{err}
	}
	return nil
}

// runAfter is run for a call whose arguments (args) hold promises. When they are all local
// results (waits, from localWaits), each gets a callback instead of a goroutine blocked on it,
// and the last to settle makes the call ready: a chain of dependent calls then runs back to back
// on the executor, with no hand-off between goroutines. Otherwise (waits is nil) a goroutine
// awaits them, as run does. The arguments are resolved just before body; if that fails they are
// released.
func (s *Session) runAfter(waits []*promiseHook, args *payload, body func(ctx context.Context) (any, error)) hook {
	a := &afterCall{s: s, waits: waits, args: args, body: body}
	if s == nil || waits == nil {
		return s.run(a.prepare, body)
	}
	s.mu.Lock()
	if h := s.admitLocked(); h != nil {
		s.mu.Unlock()
		args.release()
		return h
	}
	s.mu.Unlock()
	a.p = newPromiseHook()
	a.left.Store(int32(len(waits)))
	for _, w := range waits {
		w.onSettled(a.settled)
	}
	return a.p
}

// afterCall is a call waiting for its promise arguments (runAfter).
type afterCall struct {
	s     *Session
	waits []*promiseHook
	args  *payload
	body  func(ctx context.Context) (any, error)
	p     *promiseHook // the call's result
	left  atomic.Int32 // waits not settled yet
}

// prepare resolves the arguments, or releases them if that fails.
func (a *afterCall) prepare(ctx context.Context) error {
	_, err := a.args.resolve(ctx)
	if err != nil {
		a.args.release()
	}
	return err
}

func (a *afterCall) run(ctx context.Context) (any, error) {
	if err := a.prepare(ctx); err != nil {
		return nil, err
	}
	return a.body(ctx)
}

// settled is called as each wait settles; the last makes the call ready.
func (a *afterCall) settled() {
	if a.left.Add(-1) != 0 {
		return
	}
	s := a.s
	for _, w := range a.waits {
		if _, _, ok := tryPull(w); !ok {
			// Settled to something not at hand (a remote promise): await it off the
			// executor, as run does (which counts the call again).
			s.callDone()
			a.p.resolve(s.run(a.prepare, a.body))
			return
		}
	}
	if !s.enqueueOrFail(execTask{body: a.run, p: a.p}) {
		a.args.release()
	}
}

// enqueueOrFail makes a counted call ready, or, when the session has ended, settles its
// promise with the reason and uncounts it; it reports whether the call was queued.
func (s *Session) enqueueOrFail(t execTask) bool {
	s.mu.Lock()
	if err := s.err; err != nil {
		s.mu.Unlock()
		s.callDone()
		t.p.resolve(errorHook{err})
		return false
	}
	s.enqueueLocked(t)
	s.mu.Unlock()
	return true
}

// callDone gives back what admitLocked charged for a call that ends without running.
func (s *Session) callDone() {
	s.uncharge(callCost)
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
