package binding

import (
	"context"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Calls to a client's function (a stream's observer, a push subscription's callback) through a
// window: at most size calls unanswered, so events go out without a round trip each while a
// slow function still holds the stream back (docs/capnweb-binding.md, Streaming).
//
// Concurrency: the goroutine that owns a callWindow (the streaming method, or the push
// subscription's goroutine) alone calls call and wait, and alone touches its fields. Each call
// sent starts a goroutine that awaits its result (awaiting sends the pull, so the results of
// all the calls in flight come back without waiting for each other), releases the promise,
// cancels ctx if the call failed, and hands the result over the call's channel. The owner
// takes the results in the order the calls were sent, so at most size-1 calls are sent after
// one that fails, whatever the order the goroutines run in; once ctx is canceled nothing more
// is sent and the goroutines still awaiting give up.

// hdrObserverWindow is the service parameter that sets the window of one call.
const hdrObserverWindow = "A2A-Observer-Window"

// maxObserverWindow bounds Options.ObserverWindow and the A2A-Observer-Window parameter.
const maxObserverWindow = 256

// callWindow sends calls to one function of the peer, keeping at most len(ring) of them
// unanswered.
type callWindow struct {
	fn     *capnweb.Stub // not owned: the caller keeps it until wait returns
	ctx    context.Context
	cancel context.CancelCauseFunc
	ring   []chan error // the unanswered calls' results, oldest at head
	head   int
	n      int   // unanswered calls
	err    error // the first failure: nothing is sent after it
	waited bool
}

// newCallWindow returns a window of size calls (at least 1) to fn. ctx ending stops it.
func newCallWindow(ctx context.Context, fn *capnweb.Stub, size int) *callWindow {
	wctx, cancel := context.WithCancelCause(ctx)
	return &callWindow{fn: fn, ctx: wctx, cancel: cancel, ring: make([]chan error, max(size, 1))}
}

// call sends fn(arg), first waiting for the oldest call's result when the window is full. It
// returns instead the error of a call that failed, or of ctx: from then on nothing more is
// sent, and the calls still unanswered are given up.
func (w *callWindow) call(arg any) error {
	if w.n == len(w.ring) {
		w.next()
	}
	if w.err == nil && w.ctx.Err() != nil { // a later call failed, or ctx ended
		w.fail(context.Cause(w.ctx))
	}
	if w.err != nil {
		return w.err
	}
	res := make(chan error, 1)
	p := w.fn.Invoke(arg)
	go func() {
		_, err := p.Await(w.ctx)
		p.Release()
		if err != nil {
			w.cancel(err) // the other calls stop waiting at once
		}
		res <- err
	}()
	w.ring[(w.head+w.n)%len(w.ring)] = res
	w.n++
	return nil
}

// next takes the oldest unanswered call's result.
func (w *callWindow) next() {
	res := w.ring[w.head]
	w.ring[w.head] = nil
	w.head = (w.head + 1) % len(w.ring)
	w.n--
	if err := <-res; err != nil {
		w.fail(err)
	}
}

// fail stops the window; err is the first failure unless there was one.
func (w *callWindow) fail(err error) {
	if w.err == nil {
		w.cancel(err)
		w.err = context.Cause(w.ctx) // a call's goroutine may have canceled first
	}
}

// wait waits until every call sent is answered or given up, and returns the first failure (a
// call's, or ctx's). The window is spent; wait may be called again, and returns the same.
func (w *callWindow) wait() error {
	if w.waited {
		return w.err
	}
	for w.n > 0 {
		w.next()
	}
	if w.err == nil && w.ctx.Err() != nil {
		w.fail(context.Cause(w.ctx))
	}
	w.waited = true
	w.cancel(context.Canceled)
	return w.err
}

// observerWindow returns the window of the call whose context is cctx: its
// A2A-Observer-Window service parameter (per call, or the connection's), else the binding's
// default.
func (s *agentSession) observerWindow(cctx context.Context) (int, error) {
	if cc, ok := a2asrv.CallContextFrom(cctx); ok {
		if vs, ok := cc.ServiceParams().Get(hdrObserverWindow); ok {
			n, err := strconv.Atoi(vs[0])
			if len(vs) != 1 || err != nil || n < 1 || n > maxObserverWindow {
				return 0, invalidParams(hdrObserverWindow + " must be an integer from 1 to " + strconv.Itoa(maxObserverWindow))
			}
			return n, nil
		}
	}
	return s.b.window, nil
}
