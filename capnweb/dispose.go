package capnweb

// Holding targets for Dispose.
//
// A target's Dispose runs when the session no longer holds it: every reference the session
// has to a Disposer target is counted, and the count reaching zero — on the last release, or
// when the session ends and releases everything — runs Dispose, once. The references are:
//
//   - a localHook on the target (newLocalHook): an export (the main object, a pulled result,
//     a callback), a stub a local caller got, a mapper's input;
//   - a settled result that holds the target in its value (valueHook.held): a method's result
//     the peer has not pulled, only pipelined on, or not touched at all — as in the JS
//     library, where a call's result payload owns the targets in it;
//   - an operation under way on the target (localHook.hold): a call, property read or map that
//     has not run yet must not find the target disposed when it does.
//
// Concurrency: the counts (targetRef.refs) and the table (Session.targets) are guarded by the
// session's mu. Dispose, application code, runs after mu is released, in the goroutine that
// dropped the last reference; a panic in it is swallowed.

import (
	"encoding/json"
	"reflect"
	"sync"
)

// targetRef counts the references a session holds to one target.
type targetRef struct {
	refs int
}

// countedHook returns a new localHook on v that counts as a reference for Dispose, when v is a
// Disposer the session can count (comparable, as the table's key); else nil.
func (s *Session) countedHook(v any) *localHook {
	if s == nil {
		return nil
	}
	if _, ok := v.(Disposer); !ok || !isComparable(v) {
		return nil
	}
	s.mu.Lock()
	ref := s.targets[v]
	if ref == nil {
		ref = &targetRef{}
		if s.targets == nil {
			s.targets = map[any]*targetRef{}
		}
		s.targets[v] = ref
	}
	ref.refs++
	s.mu.Unlock()
	return &localHook{v: v, exec: s, ref: ref}
}

// targetRefAdd adds n to a target's count, and runs its Dispose when the count reaches zero.
func (s *Session) targetRefAdd(v any, ref *targetRef, n int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	ref.refs += n
	last := ref.refs == 0
	if last && s.targets[v] == ref {
		delete(s.targets, v)
	}
	s.mu.Unlock()
	if last {
		if d, ok := v.(Disposer); ok {
			func() {
				defer func() { recover() }()
				d.Dispose()
			}()
		}
	}
}

// isComparable reports whether v may be a map key (pointers, the usual targets, always are).
func isComparable(v any) bool {
	if t := reflect.TypeOf(v); t.Kind() == reflect.Pointer {
		return true
	} else if !t.Comparable() {
		return false
	}
	defer func() { recover() }() // a struct holding an interface that holds a slice, say
	_ = map[any]bool{v: true}
	return true
}

// hold returns a reference to h's target for an operation that runs later, or nil when h
// counts nothing; release it when the operation is over (holdUntilSettled).
func (h *localHook) hold() hook {
	if h.ref == nil {
		return nil
	}
	return h.dup()
}

// holdUntilSettled releases keep (from hold) once the operation whose result is r has run: when
// r settles. It returns r.
func holdUntilSettled(keep hook, r hook) hook {
	if keep == nil {
		return r
	}
	if p, ok := r.(*promiseHook); ok {
		p.onSettled(keep.release)
		return r
	}
	keep.release()
	return r
}

// holdTargets takes a counted reference to each Disposer target in v, a value a method returned
// (or part of one), as the encoder would find them: in slices, maps, structs' encoded fields,
// pointers and interfaces, not inside stubs or targets. A type that cannot hold a target (most)
// is not walked.
func (s *Session) holdTargets(v any) []*localHook {
	if s == nil {
		return nil
	}
	var held []*localHook
	eachTarget(v, 0, func(t any) {
		if h := s.countedHook(t); h != nil {
			held = append(held, h)
		}
	})
	return held
}

// releaseHeld releases what holdTargets took.
func releaseHeld(held []*localHook) {
	for _, h := range held {
		h.release()
	}
}

// eachTarget calls fn with each target in v (see holdTargets).
func eachTarget(v any, depth int, fn func(any)) {
	if depth > maxEncodeDepth {
		return // the encoder refuses such a value; nothing in it reaches the peer
	}
	switch x := v.(type) {
	case nil, bool, float64, string, int, int64, undefined, json.RawMessage, receivedJSON, []byte,
		*Stub, *Promise, *pending, *ReadableStream, *WritableStream, hook:
		return
	case []any:
		for _, e := range x {
			eachTarget(e, depth+1, fn)
		}
		return
	case Object:
		for _, p := range x {
			eachTarget(p.Value, depth+1, fn)
		}
		return
	case map[string]any:
		for _, e := range x {
			eachTarget(e, depth+1, fn)
		}
		return
	case *Error:
		if x != nil {
			for _, e := range x.Props {
				eachTarget(e, depth+1, fn)
			}
		}
		return
	}
	if isTarget(v) {
		fn(v)
		return
	}
	rv := reflect.ValueOf(v)
	if !mayHoldTargets(rv.Type()) {
		return
	}
	eachTargetIn(rv, depth, fn)
}

func eachTargetIn(rv reflect.Value, depth int, fn func(any)) {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !rv.IsNil() {
			eachTarget(rv.Elem().Interface(), depth+1, fn)
		}
	case reflect.Slice, reflect.Array:
		if !mayHoldTargets(rv.Type().Elem()) {
			return
		}
		for i := 0; i < rv.Len(); i++ {
			eachTarget(rv.Index(i).Interface(), depth+1, fn)
		}
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || !mayHoldTargets(rv.Type().Elem()) {
			return
		}
		for it := rv.MapRange(); it.Next(); {
			eachTarget(it.Value().Interface(), depth+1, fn)
		}
	case reflect.Struct:
		for _, f := range structFields(rv.Type()) {
			if !mayHoldTargets(f.typ) {
				continue
			}
			if fv, ok := fieldByIndex(rv, f.index); ok {
				eachTarget(fv.Interface(), depth+1, fn)
			}
		}
	}
}

var targetTypes sync.Map // reflect.Type -> bool: mayHoldTargets

// mayHoldTargets reports whether a value of type t can hold a target where the encoder would
// find it: t is a target type, an interface, or contains one of those.
func mayHoldTargets(t reflect.Type) bool {
	if v, ok := targetTypes.Load(t); ok {
		return v.(bool)
	}
	return mayHoldTargetsWalk(t, map[reflect.Type]bool{})
}

func mayHoldTargetsWalk(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if v, ok := targetTypes.Load(t); ok {
		return v.(bool)
	}
	if visiting[t] {
		return false // a cycle: what it holds is decided where it started
	}
	visiting[t] = true
	may := false
	switch {
	case t.Implements(markerType), t.Kind() == reflect.Interface:
		may = true
	default:
		switch t.Kind() {
		case reflect.Pointer:
			may = mayHoldTargetsWalk(t.Elem(), visiting)
		case reflect.Slice, reflect.Array:
			may = t.Elem().Kind() != reflect.Uint8 && mayHoldTargetsWalk(t.Elem(), visiting)
		case reflect.Map:
			may = t.Key().Kind() == reflect.String && mayHoldTargetsWalk(t.Elem(), visiting)
		case reflect.Struct:
			for _, f := range structFields(t) {
				if mayHoldTargetsWalk(f.typ, visiting) {
					may = true
					break
				}
			}
		}
	}
	if len(visiting) == 1 || may {
		// A type found false inside a cycle may yet be true through the cycle's start: only
		// the outermost answer, and true ones, are final.
		targetTypes.Store(t, may)
	}
	delete(visiting, t)
	return may
}
