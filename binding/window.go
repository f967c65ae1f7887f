package binding

import (
	"context"
	"strconv"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Calls to a client's function (a stream's observer, a push subscription's callback) through a
// window: at most size calls unanswered, so events go out without a round trip each while a
// slow function still holds the stream back (docs/capnweb-binding.md, Streaming).
//
// Concurrency: the goroutine that owns a callWindow (the streaming method, or the push
// subscription's goroutine) alone calls call and wait. Each call sent starts a goroutine that
// awaits its result (awaiting sends the pull, so the results of all the calls in flight come
// back without waiting for each other), releases the promise and then frees the call's slot;
// wait waits for those goroutines. No lock: slots is a semaphore, and the first failure is
// the cause of ctx.

// hdrObserverWindow is the service parameter that sets the window of one call.
const hdrObserverWindow = "A2A-Observer-Window"

// maxObserverWindow bounds Options.ObserverWindow and the A2A-Observer-Window parameter.
const maxObserverWindow = 256

// callWindow sends calls to one function of the peer, keeping at most cap(slots) of them
// unanswered.
type callWindow struct {
	fn     *capnweb.Stub // not owned: the caller keeps it until wait returns
	ctx    context.Context
	cancel context.CancelCauseFunc
	slots  chan struct{} // one element per call sent and not yet answered
	wg     sync.WaitGroup

	waited bool  // wait has returned
	err    error // what wait returned
}

// newCallWindow returns a window of size calls (at least 1) to fn. ctx ending stops it.
func newCallWindow(ctx context.Context, fn *capnweb.Stub, size int) *callWindow {
	wctx, cancel := context.WithCancelCause(ctx)
	return &callWindow{fn: fn, ctx: wctx, cancel: cancel, slots: make(chan struct{}, max(size, 1))}
}

// call sends fn(arg) once fewer than size calls are unanswered. It returns instead the error
// of a call that failed (or of ctx): once a call has failed nothing more is sent, and the
// calls still unanswered are given up.
func (w *callWindow) call(arg any) error {
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		return context.Cause(w.ctx)
	}
	// A failure frees its slot only after canceling ctx: checked here, no call follows it.
	if w.ctx.Err() != nil {
		<-w.slots
		return context.Cause(w.ctx)
	}
	p := w.fn.Invoke(arg)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		_, err := p.Await(w.ctx)
		p.Release()
		if err != nil {
			w.cancel(err) // the first cause stays
		}
		<-w.slots
	}()
	return nil
}

// wait waits until every call sent is answered or given up, and returns the first error (a
// call's, or ctx's). The window is spent; wait may be called again, and returns the same.
func (w *callWindow) wait() error {
	if w.waited {
		return w.err
	}
	w.wg.Wait()
	if w.ctx.Err() != nil {
		w.err = context.Cause(w.ctx)
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
