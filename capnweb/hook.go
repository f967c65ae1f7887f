package capnweb

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
)

// A hook is what a stub points at: a local Go value, a settled value, a pending local result,
// an error, or an entry in a session's import table. It is the Go counterpart of capnweb's
// StubHook.
//
// Ownership: every hook reference is owned by exactly one holder, which must call release
// exactly once. dup returns a new reference the caller owns. call and remap take ownership of
// their args and captures; they never take ownership of the receiver.
//
// No hook method may be called while holding a session lock: they may block on one.
type hook interface {
	// call calls the method at path (empty path: the value itself is called) and returns the
	// promise for its result.
	call(path []any, args *payload) hook
	// get reads the property at path and returns the promise for its value.
	get(path []any) hook
	// remap applies a mapper (.map()) to the value at path.
	remap(path []any, captures []hook, instrs []any) hook
	// dup returns a new reference to the same thing.
	dup() hook
	// pull waits for the final value. The caller owns the returned value: it must release the
	// stubs in it (releaseValue).
	pull(ctx context.Context) (any, error)
	// release drops this reference.
	release()
}

// payload is a value tree on its way into a call: it may contain *Stub (owned by the payload)
// and *pending placeholders that must be awaited before delivery.
type payload struct {
	v any
	// borrowed: v, and the references in it, are the caller's. It may be read (encoded, which
	// takes references of its own) as is; a hook that keeps it takes a copy (owned), and
	// releasing it does nothing.
	borrowed bool
	// plain: v is known to be plain (isPlain); false when unknown.
	plain bool
}

// owned returns p, or a copy of its value that the receiver may keep when p is borrowed.
func (p *payload) owned() *payload {
	if p != nil && p.borrowed {
		if p.plain {
			return &payload{v: p.v, plain: true}
		}
		return &payload{v: dupValue(p.v)}
	}
	return p
}

// pending is a promise inside a value tree: it is replaced by its resolution before the value
// reaches the application.
type pending struct {
	h hook
}

// errorHook is a rejected promise.
type errorHook struct{ err error }

func (h errorHook) call(_ []any, args *payload) hook {
	args.release()
	return h
}
func (h errorHook) get([]any) hook { return h }
func (h errorHook) remap(_ []any, captures []hook, _ []any) hook {
	releaseHooks(captures)
	return h
}
func (h errorHook) dup() hook                         { return h }
func (h errorHook) pull(context.Context) (any, error) { return nil, h.err }
func (h errorHook) release()                          {}

func releaseHooks(hs []hook) {
	for _, h := range hs {
		if h != nil {
			h.release()
		}
	}
}

// promiseHook is a local result that is not settled yet. Operations on it queue, in order, and
// are delivered to the resolution when it arrives (E-order).
//
// Concurrency: mu guards every field; resolution delivery happens after unlocking.
type promiseHook struct {
	mu      sync.Mutex
	done    chan struct{} // closed when woken; made by the first pull that waits
	woken   bool          // queued operations are delivered: pulls may have res
	res     hook          // set once, under mu, before woken
	refs    int
	queue   []queuedOp
	settled []func() // run, in the resolving goroutine, once res is set
}

type queuedOp struct {
	kind     byte // 'c' call, 'g' get, 'm' remap
	path     []any
	args     *payload
	captures []hook
	instrs   []any
	result   *promiseHook
}

func newPromiseHook() *promiseHook {
	return &promiseHook{refs: 1}
}

// resolve settles the promise with r, taking ownership of r, and delivers queued operations.
func (p *promiseHook) resolve(r hook) {
	p.mu.Lock()
	if p.res != nil {
		p.mu.Unlock()
		r.release()
		return
	}
	p.res = r
	q := p.queue
	p.queue = nil
	fns := p.settled
	p.settled = nil
	dead := p.refs == 0
	p.mu.Unlock()
	// Queued operations are delivered before waiters wake, so they start first (E-order).
	defer func() {
		next, forwards := r.(*promiseHook)
		for _, f := range fns {
			if forwards {
				next.onSettled(f) // settled to another local promise: its turn to say
			} else {
				f()
			}
		}
		p.mu.Lock()
		p.woken = true
		done := p.done
		p.mu.Unlock()
		if done != nil {
			close(done)
		}
	}()
	for _, op := range q {
		var out hook
		switch op.kind {
		case 'c':
			out = r.call(op.path, op.args)
		case 'g':
			out = r.get(op.path)
		default:
			out = r.remap(op.path, op.captures, op.instrs)
		}
		op.result.resolve(out)
	}
	if dead {
		r.release()
	}
}

// onSettled runs f once the promise has settled to something other than a local promise
// still pending (as a call's promise does to a Deferred's): now, if it has, else in the
// goroutine that settles it.
func (p *promiseHook) onSettled(f func()) {
	p.mu.Lock()
	if p.res == nil {
		p.settled = append(p.settled, f)
		p.mu.Unlock()
		return
	}
	r := p.res
	p.mu.Unlock()
	if next, ok := r.(*promiseHook); ok {
		next.onSettled(f)
		return
	}
	f()
}

// settledTo returns what p settled to, or nil while it is pending.
func (p *promiseHook) settledTo() hook {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

// settledPlain returns the plain data h has settled to, which a pull would return at once and
// shared (see valueHook.pull); ok is false for anything else: not settled yet, an error, a
// reference, a target or a function.
func settledPlain(h hook) (v any, ok bool) {
	for {
		switch x := h.(type) {
		case *promiseHook:
			r := x.settledTo()
			if r == nil {
				return nil, false
			}
			h = r
		case *valueHook:
			if !x.plain || isTarget(x.v) || isCallable(x.v) {
				return nil, false
			}
			return x.v, true
		default:
			return nil, false
		}
	}
}

// tryPull is pull when the value is at hand; ok is false when pulling would block.
func tryPull(h hook) (v any, err error, ok bool) {
	switch x := h.(type) {
	case *promiseHook:
		r := x.settledTo()
		if r == nil {
			return nil, nil, false
		}
		return tryPull(r)
	case *valueHook:
		if !x.plain && hasPending(x.v) {
			return nil, nil, false
		}
		v, err := x.pull(context.Background())
		return v, err, true
	case errorHook, *localHook, *mapVarHook:
		v, err := h.pull(context.Background())
		return v, err, true
	}
	return nil, nil, false
}

func (p *promiseHook) enqueue(op queuedOp) hook {
	p.mu.Lock()
	if p.res == nil {
		op.result = newPromiseHook()
		p.queue = append(p.queue, op)
		p.mu.Unlock()
		return op.result
	}
	r := p.res
	p.mu.Unlock()
	switch op.kind {
	case 'c':
		return r.call(op.path, op.args)
	case 'g':
		return r.get(op.path)
	default:
		return r.remap(op.path, op.captures, op.instrs)
	}
}

func (p *promiseHook) call(path []any, args *payload) hook {
	return p.enqueue(queuedOp{kind: 'c', path: path, args: args})
}

func (p *promiseHook) get(path []any) hook {
	if len(path) == 0 {
		return p.dup()
	}
	return p.enqueue(queuedOp{kind: 'g', path: path})
}

func (p *promiseHook) remap(path []any, captures []hook, instrs []any) hook {
	return p.enqueue(queuedOp{kind: 'm', path: path, captures: captures, instrs: instrs})
}

func (p *promiseHook) dup() hook {
	p.mu.Lock()
	p.refs++
	p.mu.Unlock()
	return p
}

func (p *promiseHook) pull(ctx context.Context) (any, error) {
	r, err := p.settle(ctx)
	if err != nil {
		return nil, err
	}
	return r.pull(ctx)
}

// settle waits for the promise to settle and returns its resolution, borrowed.
func (p *promiseHook) settle(ctx context.Context) (hook, error) {
	if r, _ := p.wait(false); r != nil {
		return r, nil
	}
	yieldGate(ctx)
	r, done := p.wait(true)
	if r == nil {
		select {
		case <-done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		r = p.res // set before done closed
	}
	return r, nil
}

// wait returns the resolution once waiters may have it (woken), or else, with mk, the channel
// that closes then, made on first need: most promises settle before anyone waits.
func (p *promiseHook) wait(mk bool) (hook, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.woken {
		return p.res, nil
	}
	if mk && p.done == nil {
		p.done = make(chan struct{})
	}
	return nil, p.done
}

func (p *promiseHook) release() {
	p.mu.Lock()
	p.refs--
	var r hook
	if p.refs == 0 && p.res != nil {
		r = p.res
	}
	p.mu.Unlock()
	if r != nil {
		r.release()
	}
}

// valueHook is a settled value: the result of a call, or data pushed by the peer. It owns the
// stubs inside its value when owned is true (values that came off the wire); values returned by
// Go methods are not owned: their targets are exported afresh whenever they are serialized.
// It holds a reference to each Disposer target in its value (held), as long as it lives.
type valueHook struct {
	v       any
	refs    atomic.Int32
	charged int32 // bytes charged to exec's budget (holdValue), given back with the last reference
	owned   bool
	plain   bool // isPlain(v): pulls share v, and releasing it does nothing
	exec    *Session
	held    *[]*localHook // the targets in v (holdTargets), if any: only values made in Go have some
}

// newValueHook holds v, a value made in Go or a part of one (which may hold targets).
func newValueHook(v any, owned bool, exec *Session) *valueHook {
	h := newValueHookPlain(v, owned, isPlain(v), exec)
	if held := exec.holdTargets(v); held != nil {
		h.held = new([]*localHook) // only here: &held would move held to the heap every time
		*h.held = held
	}
	return h
}

// newValueHookPlain holds v, received from the peer (which holds no targets), whose
// plainness the caller knows.
func newValueHookPlain(v any, owned, plain bool, exec *Session) *valueHook {
	h := &valueHook{v: v, owned: owned, plain: plain, exec: exec}
	h.refs.Store(1)
	return h
}

func (h *valueHook) dup() hook {
	h.refs.Add(1)
	return h
}

func (h *valueHook) release() {
	if h.refs.Add(-1) != 0 {
		return
	}
	if h.charged != 0 {
		h.exec.uncharge(int64(h.charged))
	}
	if h.owned && !h.plain {
		releaseValue(h.v)
	}
	if h.held != nil {
		releaseHeld(*h.held)
		h.held = nil
	}
}

func (h *valueHook) pull(ctx context.Context) (any, error) {
	if isTarget(h.v) || isCallable(h.v) {
		return newStub(newLocalHook(h.v, h.exec)), nil
	}
	if h.plain {
		return h.v, nil
	}
	v := copyValue(h.v)
	markDelivered(v)
	return resolveValue(ctx, v)
}

func (h *valueHook) get(path []any) hook {
	if len(path) == 0 {
		return h.dup()
	}
	return followValue(h.v, path, h.exec, func(rest hook, p []any) hook { return rest.get(p) },
		func(v any) hook {
			if h.plain && h.held == nil {
				return newValueHookPlain(v, true, true, h.exec)
			}
			if !hasRefs(v) {
				return newValueHook(v, true, h.exec)
			}
			// A copy of its containers: held as long as its own references are.
			cv := dupValue(v)
			return h.exec.holdValue(newValueHook(cv, true, h.exec), heldSize(cv))
		})
}

func (h *valueHook) call(path []any, args *payload) hook {
	if len(path) == 0 {
		if isCallable(h.v) {
			return callLocal(h.v, h.exec, nil, args)
		}
		args.release()
		return errorHook{NewError("TypeError", "value is not a function")}
	}
	parent, last := path[:len(path)-1], path[len(path)-1]
	return followValue(h.v, parent, h.exec, func(rest hook, p []any) hook {
		return rest.call(append(p, last), args)
	}, func(v any) hook {
		return callLocal(v, h.exec, []any{last}, args)
	})
}

// callLocal calls the local value v at path (see localHook.callAndRelease).
func callLocal(v any, exec *Session, path []any, args *payload) hook {
	lh := newLocalHook(v, exec)
	defer lh.release() // the call holds its own reference
	return lh.callAndRelease(path, args)
}

func (h *valueHook) remap(path []any, captures []hook, instrs []any) hook {
	return followValue(h.v, path, h.exec, func(rest hook, p []any) hook {
		return rest.remap(p, captures, instrs)
	}, func(v any) hook {
		return applyMap(h.exec, v, captures, instrs)
	})
}

// followValue walks path through a value. When the walk reaches a stub, a promise or a local
// target, the rest of the path is handed to delegate with that thing's hook; otherwise leaf is
// called with the value found (Undefined when the path leads nowhere).
func followValue(v any, path []any, exec *Session, delegate func(h hook, rest []any) hook, leaf func(v any) hook) hook {
	// A json.RawMessage (a local method's result) is read without a tree: each step finds its
	// property in the JSON (rawLookup); looked says v was found so, in JSON already checked.
	looked := false
	for i, part := range path {
		var err error
		if v, err = materialize(v); err != nil {
			return errorHook{err}
		}
		if raw, ok := v.(json.RawMessage); ok {
			if !looked {
				if err := rawCheck(raw); err != nil {
					return errorHook{err}
				}
			}
			v, looked = rawLookup(raw, part), true
			continue
		}
		looked = false
		switch x := v.(type) {
		case *Stub:
			h, err := x.hookRef()
			if err != nil {
				return errorHook{err}
			}
			return delegate(h, path[i:])
		case *pending:
			return delegate(x.h, path[i:])
		}
		if isTarget(v) {
			lh := newLocalHook(v, exec)
			defer lh.release() // what delegate starts holds its own reference
			return delegate(lh, path[i:])
		}
		v = property(v, part)
	}
	if raw, ok := v.(json.RawMessage); ok && looked {
		// An object or array the path ended on inside JSON: the value it holds, as the tree
		// would have had it.
		pv, err := rawValue(raw)
		if err != nil {
			return errorHook{err}
		}
		v = pv
	}
	switch x := v.(type) {
	case *Stub:
		h, err := x.hookRef()
		if err != nil {
			return errorHook{err}
		}
		return delegate(h, nil)
	case *pending:
		return delegate(x.h, nil)
	}
	v, err := materialize(v)
	if err != nil {
		return errorHook{err}
	}
	return leaf(v)
}
