package capnweb

import "context"

// Operations on value trees. The trees that carry references are made of Object, []any and
// map[string]any (what comes off the wire, and what applications usually pass); stubs inside
// them are owned by the tree. Stubs inside application struct types are not tracked: they stay the
// application's to release.

// dupValue copies v's containers and duplicates the references in it, so the copy can be owned
// (and released) independently of v.
func dupValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dupValue(e)
		}
		return out
	case Object:
		out := make(Object, len(x))
		for i, p := range x {
			out[i] = Prop{Key: p.Key, Value: dupValue(p.Value)}
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = dupValue(e)
		}
		return out
	case *Stub:
		return x.Dup()
	case *Promise:
		h, err := x.hookRef()
		if err != nil {
			return newPromise(errorHook{err}, nil)
		}
		return newPromise(h.dup(), x.path)
	case *pending:
		return &pending{h: x.h.dup()}
	}
	return v
}

// copyValue is dupValue, but shares subtrees that hold no references.
func copyValue(v any) any {
	if !hasRefs(v) {
		return v
	}
	return dupValue(v)
}

// isPlain reports whether v holds nothing the operations here act on: no references, no
// promises, no streams and no errors (whose properties may hold references). Releasing,
// resolving and delivering a plain value change nothing, and copies of it may share it; the
// holders of a value (payload, valueHook) remember this, so that each walks the tree once at
// most, or never when the evaluator that built it already knows.
func isPlain(v any) bool {
	return !anyLeaf(v, func(e any) bool {
		switch e.(type) {
		case *Stub, *Promise, *pending, *ReadableStream, *WritableStream, *Error:
			return true
		}
		return false
	})
}

// hasRefs reports whether v holds references (stubs, promises, streams).
func hasRefs(v any) bool {
	return anyLeaf(v, func(e any) bool {
		switch e.(type) {
		case *Stub, *Promise, *pending, *ReadableStream, *WritableStream:
			return true
		}
		return false
	})
}

// releaseStreams releases the streams in v, as releaseValue does, and nothing else.
func releaseStreams(v any) {
	eachLeaf(v, func(e any) {
		switch x := e.(type) {
		case *ReadableStream:
			x.releaseUnread()
		case *WritableStream:
			x.release()
		}
	})
}

// anyLeaf reports whether pred holds for some value in v that is not a container.
func anyLeaf(v any, pred func(any) bool) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if anyLeaf(e, pred) {
				return true
			}
		}
		return false
	case Object:
		for _, p := range x {
			if anyLeaf(p.Value, pred) {
				return true
			}
		}
		return false
	case map[string]any:
		for _, e := range x {
			if anyLeaf(e, pred) {
				return true
			}
		}
		return false
	}
	return pred(v)
}

// eachLeaf calls fn with every value in v that is not a container.
func eachLeaf(v any, fn func(any)) {
	anyLeaf(v, func(e any) bool { fn(e); return false })
}

// releaseValue releases every reference in v.
func releaseValue(v any) {
	eachLeaf(v, func(e any) {
		switch x := e.(type) {
		case *Stub:
			x.Release()
		case *Promise:
			x.Release()
		case *pending:
			x.h.release()
		case *ReadableStream:
			x.releaseUnread()
		case *WritableStream:
			x.release()
		case *Error:
			for _, p := range x.Props {
				releaseValue(p)
			}
		}
	})
}

// resolveValue replaces, in place, every pending promise in v by its resolution, so the value
// can be delivered to the application. On error the tree still owns what it held.
//
// It writes only where a pending promise is: subtrees without promises may be shared with other
// values (see copyValue), which other goroutines may be reading.
func resolveValue(ctx context.Context, v any) (any, error) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if !hasPending(e) {
				continue
			}
			r, err := resolveValue(ctx, e)
			if err != nil {
				return nil, err
			}
			if _, ok := e.(*pending); ok {
				x[i] = r // containers were resolved in place
			}
		}
	case Object:
		for i, p := range x {
			if !hasPending(p.Value) {
				continue
			}
			r, err := resolveValue(ctx, p.Value)
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
			r, err := resolveValue(ctx, e)
			if err != nil {
				return nil, err
			}
			if _, ok := e.(*pending); ok {
				x[k] = r
			}
		}
	case *pending:
		r, err := x.h.pull(ctx)
		if err != nil {
			return nil, err
		}
		x.h.release()
		x.h = errorHook{ErrReleased}
		// A received value goes into a tree as a tree (see receivedJSON).
		if r, err = materialize(r); err != nil {
			return nil, err
		}
		return resolveValue(ctx, r)
	}
	return v, nil
}

func (p *payload) resolve(ctx context.Context) (any, error) {
	if p.plain {
		return p.v, nil
	}
	v, err := resolveValue(ctx, p.v)
	if err == nil {
		p.v = v
	}
	return v, err
}

func (p *payload) release() {
	if p != nil && !p.borrowed {
		if !p.plain {
			releaseValue(p.v)
		}
		p.v = nil
	}
}

// localWaits lists the promises v awaits when every one is a local result (a promiseHook), or
// returns nil.
func localWaits(v any) []*promiseHook {
	var waits []*promiseHook
	other := anyLeaf(v, func(e any) bool {
		x, ok := e.(*pending)
		if !ok {
			return false
		}
		p, ok := x.h.(*promiseHook)
		if ok {
			waits = append(waits, p)
		}
		return !ok
	})
	if other {
		return nil
	}
	return waits
}

// hasPending reports whether v holds promises to await.
func hasPending(v any) bool {
	return anyLeaf(v, func(e any) bool { _, ok := e.(*pending); return ok })
}

// markDelivered hands the received streams in v to the application: releasing the value they
// came in no longer cancels them.
func markDelivered(v any) {
	eachLeaf(v, func(e any) {
		if rs, ok := e.(*ReadableStream); ok {
			rs.mu.Lock()
			rs.delivered = true
			rs.mu.Unlock()
		}
	})
}
