package capnweb

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
)

// Stub is a reference to a capability: a remote object, a remote function, or a local Go value
// wrapped by NewStub. Calls on it return promises at once, without a round trip, so dependent
// calls pipeline.
//
// A Stub is owned by whoever holds it and must be released with Release when no longer needed
// (a forgotten one is released when garbage collected). Stubs received as arguments belong to
// the call: Dup one to keep it after the method returns. Stubs in an awaited result belong to
// the caller. All methods are safe for concurrent use.
type Stub struct {
	ref
}

// Promise is the pending result of a call or property read. Call and Get on a promise pipeline:
// they are sent before the result arrives. Await waits for the value.
//
// A promise owns its hook; Release it when done (Await does not release it, so it can still be
// pipelined on). A forgotten one is released when garbage collected, or, on a batch session
// (NewBatchSession), when the batch ends.
type Promise struct {
	ref
	path []any
}

// ref holds one owned hook reference, released once.
type ref struct {
	c       *cell
	cleanup runtime.Cleanup
}

type cell struct {
	mu sync.Mutex
	h  hook
}

func (c *cell) take() hook {
	c.mu.Lock()
	h := c.h
	c.h = nil
	c.mu.Unlock()
	return h
}

func newStub(h hook) *Stub {
	s := &Stub{ref: ref{c: &cell{h: h}}}
	if releasedByGC(h) {
		s.cleanup = runtime.AddCleanup(s, releaseCell, s.c)
	}
	return s
}

func newPromise(h hook, path []any) *Promise {
	p := &Promise{ref: ref{c: &cell{h: h}}, path: path}
	if releasedByGC(h) {
		p.cleanup = runtime.AddCleanup(p, releaseCell, p.c)
	}
	return p
}

// releasedByGC reports whether a stub or promise holding h, forgotten, must be released when
// garbage collected. Not when releasing h does nothing (an error), nor for an import of a batch
// client session: everything a batch holds is released when the batch ends, soon, and a batch
// of many calls spent a tenth of its client's time adding and removing the cleanups (each one
// walks the list of those on its memory span, long when a hundred promises live at once).
func releasedByGC(h hook) bool {
	switch x := h.(type) {
	case errorHook:
		return false
	case *importHook:
		return x.s.batch != batchClient
	}
	return true
}

func releaseCell(c *cell) {
	if h := c.take(); h != nil {
		h.release()
	}
}

// hookRef returns the hook, borrowed (not dup'd), or ErrReleased.
func (r *ref) hookRef() (hook, error) {
	if r == nil || r.c == nil {
		return nil, ErrReleased
	}
	r.c.mu.Lock()
	h := r.c.h
	r.c.mu.Unlock()
	if h == nil {
		return nil, ErrReleased
	}
	return h, nil
}

// Release drops the reference. It is idempotent.
func (r *ref) Release() {
	if r == nil || r.c == nil {
		return
	}
	if h := r.c.take(); h != nil {
		r.cleanup.Stop()
		h.release()
	}
}

// NewStub wraps a local Go value — a value embedding Target, or a func — as a stub. Calls on
// it run locally, with the same semantics as calls from a peer. Passing it to a peer exports it.
func NewStub(v any) *Stub {
	return newStub(newLocalHook(v, nil))
}

// Call calls the method and returns the promise for its result. Arguments are copied (stubs in
// them are duplicated): the caller keeps what it passed.
func (s *Stub) Call(method string, args ...any) *Promise {
	return callName(&s.ref, method, args)
}

// Invoke calls the stub itself, for a stub that is a function.
func (s *Stub) Invoke(args ...any) *Promise {
	return callRef(&s.ref, nil, args)
}

// Get reads a property path; each element is a string or a number (array index).
func (s *Stub) Get(path ...any) *Promise {
	return pathPromise(&s.ref, nil, path)
}

// Dup returns a new, independently released reference to the same capability.
func (s *Stub) Dup() *Stub {
	defer runtime.KeepAlive(s) // its cleanup must not release h while we use it
	h, err := s.hookRef()
	if err != nil {
		return newStub(errorHook{err})
	}
	return newStub(h.dup())
}

// Await resolves the stub: for a local target its Go value, for a remote one the stub's
// resolution (useful for stubs that are promises on the other side).
func (s *Stub) Await(ctx context.Context) (any, error) {
	defer runtime.KeepAlive(s) // a stub only awaited must not be collected (and released) meanwhile
	h, err := s.hookRef()
	if err != nil {
		return nil, err
	}
	v, err := h.pull(ctx)
	if err != nil {
		return nil, err
	}
	return materialize(v)
}

// Call calls a method on the promised value without waiting for it (pipelining).
func (p *Promise) Call(method string, args ...any) *Promise {
	if len(p.path) == 0 {
		return callName(&p.ref, method, args)
	}
	return callRef(&p.ref, append(append([]any(nil), p.path...), method), args)
}

// Invoke calls the promised value itself, which must be a function.
func (p *Promise) Invoke(args ...any) *Promise {
	return callRef(&p.ref, p.path, args)
}

// Get reads a property of the promised value without waiting for it. Nothing is sent until the
// result is awaited or used, so a.Get("b").Call("c") is one call with the path b.c, as in
// JavaScript.
func (p *Promise) Get(path ...any) *Promise {
	return pathPromise(&p.ref, p.path, path)
}

// Await waits for the promise and returns its value. Stubs in the value belong to the caller.
func (p *Promise) Await(ctx context.Context) (any, error) {
	v, err := p.await(ctx, false)
	if err != nil {
		return nil, err
	}
	return materialize(v)
}

// await is Await, but a value received as plain data may be left as receivedJSON: with
// wantJSON, the result is asked for as JSON (markJSON).
func (p *Promise) await(ctx context.Context, wantJSON bool) (any, error) {
	// p.Call(...).Await(ctx) leaves nothing else referring to p while the result is on its way:
	// without this, p's cleanup could release the import and the result would never arrive.
	defer runtime.KeepAlive(p)
	h, err := p.hookRef()
	if err != nil {
		return nil, err
	}
	if len(p.path) > 0 {
		g := h.get(p.path)
		defer g.release()
		if wantJSON {
			markJSON(g)
		}
		return g.pull(ctx)
	}
	if wantJSON {
		markJSON(h)
	}
	return h.pull(ctx)
}

// Decode awaits the promise and converts its value into dst, a non-nil pointer, with the rules
// of the package-level Decode. Decoding into a *json.RawMessage gives the value's JSON; for a
// result the peer sent as plain data, that JSON is read straight off the message, without
// building the value from maps and slices first.
func (p *Promise) Decode(ctx context.Context, dst any) error {
	_, wantJSON := dst.(*json.RawMessage)
	v, err := p.await(ctx, wantJSON)
	if err != nil {
		return err
	}
	return Decode(v, dst)
}

// Stub returns a stub for the promised value (pipelined): calls on it go to the eventual
// result. The promise stays valid; release both.
func (p *Promise) Stub() *Stub {
	defer runtime.KeepAlive(p)
	h, err := p.hookRef()
	if err != nil {
		return newStub(errorHook{err})
	}
	if len(p.path) == 0 {
		return newStub(h.dup())
	}
	return newStub(h.get(p.path))
}

func callRef(r *ref, path []any, args []any) *Promise {
	h, err := r.hookRef()
	if err != nil {
		return newPromise(errorHook{err}, nil)
	}
	return callHook(h, path, args)
}

// callHook is callRef on the hook the reference holds.
func callHook(h hook, path []any, args []any) *Promise {
	if args == nil {
		args = []any{}
	}
	if m := mapperOf(args); m != nil {
		return newPromise(m.recordCall(h, path, args), nil)
	}
	if ih, ok := h.(*importHook); ok {
		// A call on the peer encodes the arguments at once, taking references of its own to
		// the stubs and promises in them: no need to copy them first. (Streams are handed
		// over by the call: sendCall releases those.)
		return newPromise(ih.call(path, &payload{v: args, borrowed: true}), nil)
	}
	return newPromise(h.call(path, &payload{v: dupValue(args)}), nil)
}

// callName is callRef with the path [name]: a call on the peer encodes it without making it.
func callName(r *ref, name string, args []any) *Promise {
	h, err := r.hookRef()
	if err != nil {
		return newPromise(errorHook{err}, nil)
	}
	if ih, ok := h.(*importHook); ok && mapperOf(args) == nil {
		if args == nil {
			args = []any{}
		}
		return newPromise(ih.callName(name, &payload{v: args, borrowed: true}), nil)
	}
	return callHook(h, []any{name}, args)
}

func pathPromise(r *ref, base, more []any) *Promise {
	h, err := r.hookRef()
	if err != nil {
		return newPromise(errorHook{err}, nil)
	}
	path := make([]any, 0, len(base)+len(more))
	for _, p := range append(append([]any(nil), base...), more...) {
		path = append(path, normalizePathElem(p))
	}
	return newPromise(h.dup(), path)
}

func normalizePathElem(p any) any {
	switch x := p.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return p
}

// markJSON asks that the result h will have, when it is an import's, be read as JSON
// (receivedJSON) if it is plain data: its taker decodes it into a json.RawMessage.
func markJSON(h hook) {
	if ih, ok := h.(*importHook); ok {
		ih.s.mu.Lock()
		ih.e.wantJSON = true
		ih.s.mu.Unlock()
	}
}
