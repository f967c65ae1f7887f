package capnweb

import "context"

// Operations on value trees. The trees that carry references are made of map[string]any and
// []any (what comes off the wire, and what applications usually pass); stubs inside them are
// owned by the tree. Stubs inside application struct types are not tracked: they stay the
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

func hasRefs(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if hasRefs(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasRefs(e) {
				return true
			}
		}
	case *Stub, *Promise, *pending, *ReadableStream, *WritableStream:
		return true
	}
	return false
}

// releaseValue releases every reference in v.
func releaseValue(v any) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			releaseValue(e)
		}
	case map[string]any:
		for _, e := range x {
			releaseValue(e)
		}
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
		for _, e := range x.Props {
			releaseValue(e)
		}
	}
}

// resolveValue replaces, in place, every pending promise in v by its resolution, so the value
// can be delivered to the application. On error the tree still owns what it held.
//
// It writes only where a pending promise is: subtrees without references may be shared with
// other values (see copyValue), which other goroutines may be reading.
func resolveValue(ctx context.Context, v any) (any, error) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if !hasRefs(e) {
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
	case map[string]any:
		for k, e := range x {
			if !hasRefs(e) {
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
		return resolveValue(ctx, r)
	}
	return v, nil
}

func (p *payload) resolve(ctx context.Context) (any, error) {
	v, err := resolveValue(ctx, p.v)
	if err == nil {
		p.v = v
	}
	return v, err
}

func (p *payload) release() {
	if p != nil {
		releaseValue(p.v)
		p.v = nil
	}
}

// hasPending reports whether v holds promises to await.
func hasPending(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if hasPending(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasPending(e) {
				return true
			}
		}
	case *pending:
		return true
	}
	return false
}

// markDelivered hands the received streams in v to the application: releasing the value they
// came in no longer cancels them.
func markDelivered(v any) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			markDelivered(e)
		}
	case map[string]any:
		for _, e := range x {
			markDelivered(e)
		}
	case *ReadableStream:
		x.mu.Lock()
		x.delivered = true
		x.mu.Unlock()
	}
}
