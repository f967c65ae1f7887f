package capnweb

// The value an export's resolution sends.
//
// A resolution is sent once the export's promise has settled, with the local promises inside
// its value awaited (a .map() result, say, whose elements are local calls' results): the value
// goes as one message, not as ["promise", id] exports and resolutions of their own. But a
// promise inside it that is the peer's own — the result of a call this side made to the peer,
// a callback the mapper called — is not awaited: it is sent as a reference to the peer's
// promise (["pipeline", id]), which the peer resolves itself, as the JS library sends it.
// Awaiting it would cost a round trip per element, one after another, and wait forever on a
// callback that never answers. (The export's own promise is awaited even when it is the peer's:
// a top-level resolution is a value.)

import "context"

// answerPull returns the value to send as the resolution of h (borrowed): h's final value, with
// the local promises in it awaited and the peer's own left as references (see above).
func (s *Session) answerPull(ctx context.Context, h hook) (any, error) {
	r, err := settleLocal(ctx, h)
	if err != nil {
		return nil, err
	}
	vh, ok := r.(*valueHook)
	if !ok || vh.plain || isTarget(vh.v) || isCallable(vh.v) {
		return r.pull(ctx)
	}
	v := copyValue(vh.v)
	markDelivered(v)
	return s.resolveLocal(ctx, v)
}

// tryAnswerPull is answerPull when nothing it needs must be waited for; ok is false otherwise.
func (s *Session) tryAnswerPull(h hook) (v any, err error, ok bool) {
	if !s.atHand(h, false) {
		return nil, nil, false
	}
	v, err = s.answerPull(context.Background(), h)
	return v, err, true
}

// settleLocal waits for h, while it is a local promise, to settle, and returns what it settled
// to (borrowed): anything but a pending local promise.
func settleLocal(ctx context.Context, h hook) (hook, error) {
	for {
		p, ok := h.(*promiseHook)
		if !ok {
			return h, nil
		}
		// Settled already, h is at hand even before its waiters are woken (as they are after
		// its onSettled functions, which answer exports, run).
		r := p.settledTo()
		if r == nil {
			var err error
			if r, err = p.settle(ctx); err != nil {
				return nil, err
			}
		}
		h = r
	}
}

// peerPromise reports whether h is a promise of s's peer, left in a value as a reference.
func (s *Session) peerPromise(h hook) bool {
	ih, ok := h.(*importHook)
	return ok && ih.s == s
}

// resolveLocal is resolveValue for a value about to be sent to s's peer: it awaits the local
// promises in v, in place, and leaves the peer's own as they are (see above).
func (s *Session) resolveLocal(ctx context.Context, v any) (any, error) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if !hasPending(e) {
				continue
			}
			r, err := s.resolveLocal(ctx, e)
			if err != nil {
				return nil, err
			}
			if _, ok := e.(*pending); ok {
				x[i] = r
			}
		}
	case Object:
		for i, p := range x {
			if !hasPending(p.Value) {
				continue
			}
			r, err := s.resolveLocal(ctx, p.Value)
			if err != nil {
				return nil, err
			}
			if _, ok := p.Value.(*pending); ok {
				x[i].Value = r
			}
		}
	case map[string]any:
		for k, e := range x {
			if !hasPending(e) {
				continue
			}
			r, err := s.resolveLocal(ctx, e)
			if err != nil {
				return nil, err
			}
			if _, ok := e.(*pending); ok {
				x[k] = r
			}
		}
	case *pending:
		r, err := settleLocal(ctx, x.h)
		if err != nil {
			return nil, err
		}
		if s.peerPromise(r) {
			if r != x.h { // a local promise that settled to the peer's: refer to that
				nh := r.dup()
				x.h.release()
				x.h = nh
			}
			return x, nil
		}
		val, err := s.answerPull(ctx, r)
		if err != nil {
			return nil, err
		}
		x.h.release()
		x.h = errorHook{ErrReleased}
		return materialize(val)
	}
	return v, nil
}

// atHand reports whether answerPull(h) would not wait: h's local promises have settled, and
// so have those in its value, but for the peer's own, which it leaves (inner: h is inside a
// value, where the peer's promise stays a reference).
func (s *Session) atHand(h hook, inner bool) bool {
	for {
		p, ok := h.(*promiseHook)
		if !ok {
			break
		}
		if h = p.settledTo(); h == nil {
			return false
		}
	}
	switch x := h.(type) {
	case *valueHook:
		if x.plain {
			return true
		}
		return !anyLeaf(x.v, func(e any) bool {
			p, ok := e.(*pending)
			return ok && !s.atHand(p.h, true)
		})
	case *importHook:
		return inner && x.s == s
	case errorHook, *localHook, *mapVarHook:
		return true
	}
	return false
}
