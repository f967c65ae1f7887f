package capnweb

// .map(): recording a mapper on the calling side (Mapper) and applying one on the receiving
// side (applyMap). See the protocol's "remap" expression.

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"strconv"
	"sync/atomic"
)

// rawJSON is an already-encoded expression (a recorded map instruction).
type rawJSON []byte

// Mapper records the body of a Map callback as instructions the peer runs, once per element,
// without a round trip per element. Within the callback, use only the element promise, stubs
// (their calls are recorded, not made) and plain values; the callback runs once, locally, to
// record, and must have no side effects.
type Mapper struct {
	instrs   []any
	captures []hook
	capIdx   map[hook]int
	err      error
	done     atomic.Bool // Map has sent the mapper: its variables are placeholders no more
}

// recording counts the Map callbacks running, in any goroutine. While one runs, a call on a
// stub (not a mapper variable) looks for mapper variables in its arguments (mapperOf): the
// cost every other call pays is this load.
var recording atomic.Int32

// mapVarHook is a variable of the mapper being recorded: the input (0) or an instruction's
// result (i > 0), or a capture (i < 0).
type mapVarHook struct {
	m   *Mapper
	idx int
}

var errMapperUse = NewError("Error", "Attempted to use an abstract placeholder from a mapper function. Please make sure your map function has no side effects.")

func (h *mapVarHook) call(path []any, args *payload) hook {
	defer args.release()
	list, _ := args.v.([]any)
	return h.m.record(h.idx, path, list, true)
}

func (h *mapVarHook) get(path []any) hook {
	if len(path) == 0 {
		return h
	}
	return h.m.record(h.idx, path, nil, false)
}

func (h *mapVarHook) remap(path []any, captures []hook, instrs []any) hook {
	releaseHooks(captures)
	h.m.fail(NewError("Error", "capnweb: nested map() inside a mapper is not supported"))
	return errorHook{h.m.err}
}

func (h *mapVarHook) dup() hook                         { return h }
func (h *mapVarHook) release()                          {}
func (h *mapVarHook) pull(context.Context) (any, error) { return nil, errMapperUse }
func (m *Mapper) fail(err error)                        { m.setErr(err) }
func (m *Mapper) setErr(err error) {
	if m.err == nil {
		m.err = err
	}
}

// Capture returns a stub for use inside the mapper: calls on it are recorded and run by the
// peer against s, once per element. (A call on s itself is recorded too when its arguments
// hold a mapper value; see Map. Capture also records the calls that hold none.)
func (m *Mapper) Capture(s *Stub) *Stub {
	defer runtime.KeepAlive(s)
	h, err := s.hookRef()
	if err != nil {
		m.setErr(err)
		return newStub(errorHook{err})
	}
	return newStub(&mapVarHook{m: m, idx: m.capture(h)})
}

// capture returns the mapper index of h: its own variables as they are, other hooks as
// captures (-1, -2, …).
func (m *Mapper) capture(h hook) int {
	if v, ok := h.(*mapVarHook); ok && v.m == m {
		return v.idx
	}
	if m.capIdx == nil {
		m.capIdx = map[hook]int{}
	}
	if i, ok := m.capIdx[h]; ok {
		return i
	}
	m.captures = append(m.captures, h.dup())
	i := -len(m.captures)
	m.capIdx[h] = i
	return i
}

// recordCall records a call on h, a stub that is not a variable of m, made inside the mapper
// with m's variables among its arguments: h is captured and the call runs on the peer. It
// takes ownership of args.
func (m *Mapper) recordCall(h hook, path []any, args []any) hook {
	return m.record(m.capture(h), path, args, true)
}

// mapperOf returns the mapper being recorded whose variables args hold, if any: a call with
// such arguments belongs in the mapper (Map). It looks only while some mapper is recording.
func mapperOf(args []any) *Mapper {
	if recording.Load() == 0 {
		return nil
	}
	var found *Mapper
	eachRef(args, 0, func(h hook) bool {
		if v, ok := h.(*mapVarHook); ok && !v.m.done.Load() {
			found = v.m
			return true
		}
		return false
	})
	return found
}

// eachRef calls fn with the hook of each stub and promise in v, where the encoder would find
// them, until fn returns true.
func eachRef(v any, depth int, fn func(hook) bool) bool {
	if depth > maxEncodeDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, float64, string, int, int64, undefined, json.RawMessage, []byte:
		return false
	case *Stub:
		h, err := x.hookRef()
		return err == nil && fn(h)
	case *Promise:
		h, err := x.hookRef()
		return err == nil && fn(h)
	case []any:
		for _, e := range x {
			if eachRef(e, depth+1, fn) {
				return true
			}
		}
		return false
	case Object:
		for _, p := range x {
			if eachRef(p.Value, depth+1, fn) {
				return true
			}
		}
		return false
	case map[string]any:
		for _, e := range x {
			if eachRef(e, depth+1, fn) {
				return true
			}
		}
		return false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !rv.IsNil() && eachRef(rv.Elem().Interface(), depth+1, fn)
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return false
		}
		for i := 0; i < rv.Len(); i++ {
			if eachRef(rv.Index(i).Interface(), depth+1, fn) {
				return true
			}
		}
	case reflect.Map:
		for it := rv.MapRange(); it.Next(); {
			if eachRef(it.Value().Interface(), depth+1, fn) {
				return true
			}
		}
	case reflect.Struct:
		for _, f := range structFields(rv.Type()) {
			if fv, ok := fieldByIndex(rv, f.index); ok && eachRef(fv.Interface(), depth+1, fn) {
				return true
			}
		}
	}
	return false
}

func (m *Mapper) record(idx int, path []any, args []any, isCall bool) hook {
	enc := encoder{m: m}
	enc.b = append(enc.b, `["pipeline",`...)
	enc.b = strconv.AppendInt(enc.b, int64(idx), 10)
	enc.b = append(enc.b, ',')
	enc.path(path)
	if isCall {
		enc.b = append(enc.b, ',')
		if err := enc.array(args, 0); err != nil {
			m.setErr(err)
		}
	}
	enc.b = append(enc.b, ']')
	m.instrs = append(m.instrs, rawJSON(enc.b))
	return &mapVarHook{m: m, idx: len(m.instrs)}
}

// Map applies fn on the peer's side to the promised value: to each element when it is an array
// (the result is the array of results), to the value itself otherwise, and not at all when it
// is null or undefined (the result is that value). fn's return value may contain the element,
// promises from calls recorded in fn, and plain values.
//
// fn runs once, here, to record. A call on the element, or on a value recorded from it, is
// recorded. So is a call on any other stub whose arguments hold the element or a recorded
// value (api.Call("getUser", id)): the stub is captured, as with m.Capture, and the call runs
// on the peer for each element. A call whose receiver and arguments hold neither is not
// recorded: it is made once, when fn runs, like a call outside fn, and every element shares its
// result (m.Capture(api).Call("f") makes it once per element instead).
func (p *Promise) Map(fn func(m *Mapper, elem *Promise) any) *Promise {
	defer runtime.KeepAlive(p)
	h, err := p.hookRef()
	if err != nil {
		return newPromise(errorHook{err}, nil)
	}
	m := &Mapper{}
	recording.Add(1)
	out := func() any {
		defer recording.Add(-1)
		return fn(m, newPromise(&mapVarHook{m: m, idx: 0}, nil))
	}()
	defer m.done.Store(true)
	enc := encoder{m: m}
	if err := enc.value(out, 0); err != nil {
		m.setErr(err)
	}
	if m.err != nil {
		releaseHooks(m.captures)
		return newPromise(errorHook{m.err}, nil)
	}
	m.instrs = append(m.instrs, rawJSON(enc.b))
	return newPromise(h.remap(p.path, m.captures, m.instrs), nil)
}

// ---- applying a mapper ----

// mapImporter resolves a mapper's IDs: negative are captures, zero the input, positive earlier
// instructions' results. A mapper cannot refer to the session's tables.
type mapImporter struct {
	s        *Session
	captures []hook
	vars     []hook
}

func (mi *mapImporter) session() *Session { return mi.s }

func (mi *mapImporter) getExport(fid float64) (hook, error) {
	id, ok := checkID(fid)
	switch {
	case !ok:
	case id < 0 && int(-id) <= len(mi.captures):
		return mi.captures[-id-1], nil
	case id >= 0 && int(id) < len(mi.vars):
		return mi.vars[id], nil
	}
	return nil, protocolErrorf("no such entry on exports table: %s", strconv.FormatFloat(fid, 'f', -1, 64))
}

func (mi *mapImporter) importStub(float64) (hook, error) {
	return nil, protocolErrorf("A mapper function cannot refer to exports.")
}

func (mi *mapImporter) importPromise(float64) (hook, error) {
	return nil, protocolErrorf("A mapper function cannot refer to exports.")
}

func (mi *mapImporter) pipeReadable(float64) (*ReadableStream, error) {
	return nil, protocolErrorf("A mapper function cannot use pipe readables.")
}

// applyMap runs a mapper over input (borrowed) and returns the result. It takes ownership of
// captures.
func applyMap(s *Session, input any, captures []hook, instrs []any) hook {
	defer releaseHooks(captures)
	if len(instrs) == 0 {
		return errorHook{NewError("Error", "Invalid empty mapper function.")}
	}
	parsed := make([]any, len(instrs))
	lim := DefaultLimits
	if s != nil {
		lim = *s.lim()
	}
	for i, in := range instrs {
		if r, ok := in.(rawJSON); ok {
			v, err := parseJSON(r, 2*lim.MaxDepth+8)
			if err != nil {
				return errorHook{err}
			}
			in = v
		}
		parsed[i] = in
	}
	input, err := rawValue(input)
	if err != nil {
		return errorHook{err}
	}
	one := func(elem any) (any, error) {
		var in hook
		if isTarget(elem) || isCallable(elem) {
			in = newLocalHook(elem, s)
		} else {
			in = newValueHook(copyValue(elem), true, s)
		}
		mi := &mapImporter{s: s, captures: captures, vars: []hook{in}}
		defer func() { releaseHooks(mi.vars) }()
		for i, in := range parsed {
			ev := evaluator{im: mi, lim: &lim}
			v, err := ev.evaluate(copyRaw(in))
			if err != nil {
				return nil, err
			}
			if i == len(parsed)-1 {
				return v, nil
			}
			switch x := v.(type) {
			case *pending:
				mi.vars = append(mi.vars, x.h)
			case *Stub:
				h := x.c.take()
				x.cleanup.Stop()
				mi.vars = append(mi.vars, h)
			default:
				mi.vars = append(mi.vars, newValueHook(v, true, s))
			}
		}
		return nil, nil
	}
	switch x := input.(type) {
	case nil, undefined:
		return newValueHook(input, true, s)
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			r, err := one(e)
			if err != nil {
				releaseValue(out)
				return errorHook{err}
			}
			out = append(out, r)
		}
		return s.holdValue(newValueHook(out, true, s), heldSize(out))
	}
	if rv := reflect.ValueOf(input); (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) && rv.Type().Elem().Kind() != reflect.Uint8 {
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return newValueHook(nil, true, s)
		}
		out := make([]any, 0, rv.Len())
		for i := 0; i < rv.Len(); i++ {
			r, err := one(rv.Index(i).Interface())
			if err != nil {
				releaseValue(out)
				return errorHook{err}
			}
			out = append(out, r)
		}
		return s.holdValue(newValueHook(out, true, s), heldSize(out))
	}
	r, err := one(input)
	if err != nil {
		return errorHook{err}
	}
	return newValueHook(r, true, s)
}

// copyRaw deep-copies a parsed JSON tree (evaluation rewrites trees in place).
func copyRaw(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyRaw(e)
		}
		return out
	case Object:
		out := make(Object, len(x))
		for i, p := range x {
			out[i] = Prop{Key: p.Key, Value: copyRaw(p.Value)}
		}
		return out
	}
	return v
}
