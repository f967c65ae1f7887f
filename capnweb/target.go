package capnweb

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
)

// Target marks a type whose values are passed by reference: embed it in a struct, and a value
// of that struct (usually a pointer) sent over RPC becomes a stub the peer calls back, instead of
// being copied. It is the Go counterpart of JavaScript's RpcTarget.
//
// A target exposes its exported methods under lowerCamelCase names, as JavaScript callers write
// them: GetUser is "getUser", ID is "id", HTTPGet is "httpGet". A method may take a
// context.Context first (it is the session's: canceled when the session ends), then any
// arguments, and may return nothing, a value, an error, or a value and an error. Arguments are
// converted to the parameter types (see Decode); missing ones are zero values, extra ones are
// ignored, as in JavaScript. Calls from one peer start one after another, in the order they
// arrived; a method that is about to block on anything but this session should call Blocking
// first, so that the calls behind it start at once.
//
// Optional methods refine what is exposed (none of them is itself exposed):
//
//	RPCMethods() []string     // when present, only these names are exposed
//	RPCProperties() []string  // names of no-argument methods served as properties (getters)
//	Dispose()                 // called when the session no longer holds the target
//	RPCIdleTimeout(), RPCEvictable()  // a Handler's main object: see KeepPolicy
//
// A session holds a target while the peer holds a stub to it, while the promise of a call
// that returned it (anywhere in its result) is not released — even if the peer only ever
// pipelined calls on it, or never used it — and while a call on it is under way. Dispose runs
// once, when the last of these goes, or when the session ends; a target returned again later
// is held anew. A target the program keeps (a singleton, say) is told each time a session lets
// go of it.
type Target struct{}

func (Target) capnwebTarget() {}

type targetMarker interface{ capnwebTarget() }

// Disposer is implemented by targets that want to know when a session no longer holds them
// (see Target).
type Disposer interface{ Dispose() }

// Names never exposed, whatever the target: JavaScript's Object.prototype members, which the JS
// library refuses too, and names with special meaning to stubs.
var blockedNames = map[string]bool{
	"constructor": true, "__proto__": true, "hasOwnProperty": true, "isPrototypeOf": true,
	"propertyIsEnumerable": true, "toLocaleString": true, "toString": true, "valueOf": true,
	"__defineGetter__": true, "__defineSetter__": true, "__lookupGetter__": true,
	"__lookupSetter__": true, "toJSON": true, "then": true, "dup": true, "dispose": true,
}

var (
	ctxType    = reflect.TypeFor[context.Context]()
	errType    = reflect.TypeFor[error]()
	markerType = reflect.TypeFor[targetMarker]()
)

type methodInfo struct {
	name     string
	fn       reflect.Value // for methods: the method expression (receiver first)
	method   bool
	ctx      bool
	in       []reflect.Type
	variadic bool
	result   bool
	err      bool
	property bool
	jsonArgs uint64 // the parameters of type json.RawMessage: bit i for in[i]
}

type typeInfo struct {
	t       reflect.Type
	methods map[string]*methodInfo
}

var typeCache sync.Map // reflect.Type -> *typeInfo

// lastTarget is the type targetInfo found last, checked before typeCache: a server calls the
// methods of one or two types, every call, and a sync.Map lookup hashes the type each time.
var lastTarget atomic.Pointer[typeInfo]

func isTarget(v any) bool {
	if v == nil {
		return false
	}
	_, ok := v.(targetMarker)
	return ok
}

func isCallable(v any) bool {
	switch v.(type) {
	case nil:
		return false
	case *boundMethod:
		return true
	}
	return reflect.TypeOf(v).Kind() == reflect.Func
}

// lowerCamel converts an exported Go name to the name JavaScript callers use.
func lowerCamel(name string) string {
	r := []rune(name)
	n := 0
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	switch {
	case n == 0:
		return name
	case n == len(r):
		return strings.ToLower(name)
	case n > 1:
		n-- // "HTTPServer" -> "httpServer": the last capital starts the next word
	}
	for i := 0; i < n; i++ {
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

func targetInfo(v any) *typeInfo {
	t := reflect.TypeOf(v)
	if ti := lastTarget.Load(); ti != nil && ti.t == t {
		return ti
	}
	if ti, ok := typeCache.Load(t); ok {
		lastTarget.Store(ti.(*typeInfo))
		return ti.(*typeInfo)
	}
	ti := &typeInfo{t: t, methods: map[string]*methodInfo{}}
	var only map[string]bool
	if l, ok := v.(interface{ RPCMethods() []string }); ok {
		only = map[string]bool{}
		for _, n := range l.RPCMethods() {
			only[n] = true
		}
	}
	props := map[string]bool{}
	if l, ok := v.(interface{ RPCProperties() []string }); ok {
		for _, n := range l.RPCProperties() {
			props[n] = true
		}
	}
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		if !m.IsExported() || strings.HasPrefix(m.Name, "RPC") || m.Name == "Dispose" {
			continue
		}
		name := lowerCamel(m.Name)
		if blockedNames[name] || (only != nil && !only[name] && !props[name]) {
			continue
		}
		mi := funcInfo(m.Func.Type(), true)
		mi.name, mi.fn, mi.method = name, m.Func, true
		mi.property = props[name]
		ti.methods[name] = mi
	}
	typeCache.Store(t, ti)
	return ti
}

func funcInfo(ft reflect.Type, method bool) *methodInfo {
	mi := &methodInfo{variadic: ft.IsVariadic()}
	i := 0
	if method {
		i = 1
	}
	if i < ft.NumIn() && ft.In(i) == ctxType {
		mi.ctx = true
		i++
	}
	for ; i < ft.NumIn(); i++ {
		if ft.In(i) == rawMessageType && len(mi.in) < 64 {
			mi.jsonArgs |= 1 << len(mi.in)
		}
		mi.in = append(mi.in, ft.In(i))
	}
	switch ft.NumOut() {
	case 1:
		if ft.Out(0) == errType {
			mi.err = true
		} else {
			mi.result = true
		}
	case 2:
		mi.result = true
		mi.err = ft.Out(1) == errType
	}
	return mi
}

// boundMethod is a target's method read as a property: a function value.
type boundMethod struct {
	recv reflect.Value
	m    *methodInfo
}

// invoke calls fn (a Go func value or a *boundMethod) with wire arguments.
func invoke(ctx context.Context, fn any, args []any) (any, error) {
	if x, ok := fn.(*boundMethod); ok {
		return invokeFunc(ctx, x.m, x.m.fn, x.recv, args)
	}
	f := reflect.ValueOf(fn)
	return invokeFunc(ctx, funcInfo(f.Type(), false), f, reflect.Value{}, args)
}

// invokeFunc calls f, described by mi, with wire arguments: a method when recv is valid (f
// then takes the receiver first), else a func value.
func invokeFunc(ctx context.Context, mi *methodInfo, f, recv reflect.Value, args []any) (any, error) {
	var inBuf [6]reflect.Value // receiver, context and four arguments, on the stack
	in := inBuf[:0]
	if recv.IsValid() {
		in = append(in, recv)
	}
	if mi.ctx {
		in = append(in, reflect.ValueOf(ctx))
	}
	fixed := len(mi.in)
	if mi.variadic {
		fixed--
	}
	for i := 0; i < fixed; i++ {
		var a any = Undefined
		if i < len(args) {
			a = args[i]
		}
		rv, err := convertTo(a, mi.in[i])
		if err != nil {
			return nil, &ArgError{Arg: i + 1, Err: err}
		}
		in = append(in, rv)
	}
	if mi.variadic {
		et := mi.in[fixed].Elem()
		for i := fixed; i < len(args); i++ {
			rv, err := convertTo(args[i], et)
			if err != nil {
				return nil, &ArgError{Arg: i + 1, Err: err}
			}
			in = append(in, rv)
		}
	}
	out, err := callSafely(f, in)
	if err != nil {
		return nil, err
	}
	var res any = Undefined
	if mi.result {
		res = out[0].Interface()
	}
	if mi.err {
		if e := out[len(out)-1]; !e.IsNil() {
			return nil, e.Interface().(error)
		}
	}
	return res, nil
}

// callSafely turns a panic in application code into an error for the caller; the session and
// the server stay up.
func callSafely(f reflect.Value, in []reflect.Value) (out []reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("capnweb: method panicked: %v", r)
		}
	}()
	return f.Call(in), nil
}

// targetProperty reads a property of a target: a getter's value, a method as a function value,
// or Undefined.
func targetProperty(ctx context.Context, v any, name string) (any, error) {
	mi := targetInfo(v).methods[name]
	if mi == nil {
		return Undefined, nil
	}
	bm := &boundMethod{recv: reflect.ValueOf(v), m: mi}
	if mi.property {
		return invoke(ctx, bm, nil)
	}
	return bm, nil
}

func pathName(p any) (string, bool) {
	switch x := p.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

func joinPath(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i], _ = pathName(p)
	}
	return strings.Join(parts, ".")
}

// localHook is a Go value exposed to RPC: a target, a function, or a bound method.
type localHook struct {
	v    any
	exec *Session
	ref  *targetRef // a Disposer's count of references in exec (dispose.go); nil: not counted
}

// newLocalHook returns a hook on v whose calls run in exec (nil: in goroutines of their own).
// On a session, a hook on a Disposer target counts as a reference to it: release it.
func newLocalHook(v any, exec *Session) *localHook {
	if h := exec.countedHook(v); h != nil {
		return h
	}
	return &localHook{v: v, exec: exec}
}

func (h *localHook) dup() hook {
	if h.ref != nil {
		h.exec.targetRefAdd(h.v, h.ref, 1)
	}
	return &localHook{v: h.v, exec: h.exec, ref: h.ref}
}

func (h *localHook) release() {
	if h.ref != nil {
		ref := h.ref
		h.ref = nil
		h.exec.targetRefAdd(h.v, ref, -1)
	}
}

// pull gives a stub for the local value: a call through it starts in order with the session's
// other calls. (Decode into the target's own type unwraps it.)
func (h *localHook) pull(ctx context.Context) (any, error) {
	return newStub(h.dup()), nil
}

func (h *localHook) get(path []any) hook {
	if len(path) == 0 {
		return h.dup()
	}
	v := h.v
	return holdUntilSettled(h.hold(), h.exec.run(nil, func(ctx context.Context) (any, error) {
		return walkLocal(ctx, v, path)
	}))
}

func (h *localHook) call(path []any, args *payload) hook {
	return h.callAndRelease(path, args)
}

// callAndRelease runs the call in its own goroutine (in arrival order), awaits promise
// arguments first, and releases the argument stubs when the call returns: stubs the callee
// wants to keep it must Dup.
func (h *localHook) callAndRelease(path []any, args *payload) hook {
	body := func(ctx context.Context) (any, error) {
		defer args.release()
		list, _ := args.v.([]any)
		var err error
		recv := h.v
		if len(path) > 0 {
			recv, err = walkLocal(ctx, h.v, path[:len(path)-1])
			if err != nil {
				return nil, err
			}
		}
		if rh, ok := recv.(hook); ok {
			// The path led to a remote stub or a promise: the call continues there.
			defer rh.release()
			return rh.call(path[len(path)-1:], &payload{v: dupValue(list)}), nil
		}
		fn := recv
		if len(path) > 0 {
			name, _ := pathName(path[len(path)-1])
			switch {
			case isTarget(recv):
				if mi := targetInfo(recv).methods[name]; mi != nil && !mi.property {
					return invokeFunc(ctx, mi, mi.fn, reflect.ValueOf(recv), list)
				}
				fn = nil
			default:
				fn = property(recv, path[len(path)-1])
			}
		}
		if !isCallable(fn) {
			return nil, NewError("TypeError", fmt.Sprintf("'%s' is not a function.", joinPath(path)))
		}
		return invoke(ctx, fn, list)
	}
	keep := h.hold() // the call holds the target until it has run
	if !hasPending(args.v) {
		return holdUntilSettled(keep, h.exec.run(nil, body))
	}
	return holdUntilSettled(keep, h.exec.runAfter(localWaits(args.v), args, body))
}

func (h *localHook) remap(path []any, captures []hook, instrs []any) hook {
	target, exec := h.v, h.exec
	return holdUntilSettled(h.hold(), exec.run(nil, func(ctx context.Context) (any, error) {
		v, err := walkLocal(ctx, target, path)
		if err != nil {
			releaseHooks(captures)
			return nil, err
		}
		if len(path) == 0 {
			// Mapping over the target itself: the input is the target, by reference.
			return applyMap(exec, target, captures, instrs), nil
		}
		return followValue(v, nil, exec, func(r hook, p []any) hook { return r.remap(p, captures, instrs) },
			func(v any) hook { return applyMap(exec, v, captures, instrs) }), nil
	}))
}

// walkLocal follows a path from a local value, calling getters of targets on the way. It stops
// at a stub or promise and returns it (the caller continues remotely).
func walkLocal(ctx context.Context, v any, path []any) (any, error) {
	for i, part := range path {
		switch x := v.(type) {
		case *Stub:
			h, err := x.hookRef()
			if err != nil {
				return nil, err
			}
			return h.get(path[i:]), nil
		case *pending:
			return x.h.get(path[i:]), nil
		}
		if isTarget(v) {
			name, ok := pathName(part)
			if !ok || blockedNames[name] {
				v = Undefined
				continue
			}
			var err error
			v, err = targetProperty(ctx, v, name)
			if err != nil {
				return nil, err
			}
			continue
		}
		v = property(v, part)
	}
	return v, nil
}

// property reads one step of a path from plain data, as the JS library does: own properties of
// objects, non-negative integer indexes of arrays, json-named fields of structs. Anything else,
// including Object.prototype names, is Undefined.
func property(v any, part any) any {
	name, ok := pathName(part)
	if !ok || blockedNames[name] {
		return Undefined
	}
	switch x := v.(type) {
	case Object:
		if r, ok := x.lookup(name); ok {
			return r
		}
		return Undefined
	case map[string]any:
		if r, ok := x[name]; ok {
			return r
		}
		return Undefined
	case []any:
		f, ok := part.(float64)
		if !ok || f < 0 || f != float64(int(f)) || int(f) >= len(x) {
			return Undefined
		}
		return x[int(f)]
	case nil, undefined:
		return Undefined
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return Undefined
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Struct:
		for _, f := range structFields(rv.Type()) {
			if f.name == name {
				fv, ok := fieldByIndex(rv, f.index)
				if !ok {
					return Undefined
				}
				return fv.Interface()
			}
		}
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			e := rv.MapIndex(reflect.ValueOf(name).Convert(rv.Type().Key()))
			if e.IsValid() {
				return e.Interface()
			}
		}
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return Undefined
		}
		f, ok := part.(float64)
		if ok && f >= 0 && f == float64(int(f)) && int(f) < rv.Len() {
			return rv.Index(int(f)).Interface()
		}
	}
	return Undefined
}
