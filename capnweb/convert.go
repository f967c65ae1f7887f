package capnweb

// Converting received values into typed Go values (method parameters, Decode).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Decode converts a received value into dst, a non-nil pointer. Numbers convert to any numeric
// type that holds them exactly; objects (Object, or a map with string keys) to structs (by json
// field names, case-sensitively), maps with string keys and Objects (a map's keys sorted);
// arrays to slices and arrays. Into any, a value stays as received (an object an Object, its
// key order kept); into a map[string]any or a []any, the objects inside, at any depth, become
// map[string]any too, as encoding/json makes them; undefined and null to zero values. Stubs,
// errors, dates (time.Time), URLs, headers, bytes and streams convert to their own types. Into
// a json.RawMessage, a value converts to its JSON as JSON.stringify writes it, with bytes as
// base64 strings and dates as RFC 3339 strings in UTC (as encoding/json writes []byte and
// time.Time); undefined gives a nil json.RawMessage, and values with no JSON form (stubs,
// streams, errors, bigints, invalid dates, non-finite numbers, URLs, headers) are an error. A
// value that does not fit is an error naming where.
func Decode(v any, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("capnweb: Decode needs a non-nil pointer, got %T", dst)
	}
	out, err := convertTo(v, rv.Type().Elem())
	if err != nil {
		return err
	}
	rv.Elem().Set(out)
	return nil
}

var (
	anyType      = reflect.TypeFor[any]()
	stubType     = reflect.TypeFor[*Stub]()
	timeType     = reflect.TypeFor[time.Time]()
	bigIntType   = reflect.TypeFor[*big.Int]()
	urlType      = reflect.TypeFor[*url.URL]()
	headerType   = reflect.TypeFor[http.Header]()
	errorPtrType = reflect.TypeFor[*Error]()
	objectType   = reflect.TypeFor[Object]()
	mapAnyType   = reflect.TypeFor[map[string]any]()

	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

func convertTo(v any, t reflect.Type) (reflect.Value, error) {
	if t == rawMessageType && v != Undefined {
		if _, ok := v.(json.RawMessage); !ok {
			// The JSON of a received value: read off the message for plain data.
			b, err := jsonOf(v)
			if err != nil {
				return reflect.Value{}, err
			}
			return reflect.ValueOf(b), nil
		}
	}
	if _, ok := v.(receivedJSON); ok {
		tv, err := materialize(v)
		if err != nil {
			return reflect.Value{}, err
		}
		return convertTo(tv, t)
	}
	if _, ok := v.(json.RawMessage); ok && t != rawMessageType {
		// The value it holds, as a peer would receive it, not its bytes.
		pv, err := rawValue(v)
		if err != nil {
			return reflect.Value{}, err
		}
		return convertTo(pv, t)
	}
	if t == anyType {
		if v == nil {
			return reflect.Zero(t), nil
		}
		// A copy of v escapes, not v: taking v's address here moved every call's v to the
		// heap, one allocation per argument converted.
		box := v
		return reflect.ValueOf(&box).Elem(), nil
	}
	if v == nil || v == Undefined {
		return reflect.Zero(t), nil
	}
	if st, ok := v.(*Stub); ok && t != stubType {
		// A stub for a local value converts to the value's own type.
		if h, err := st.hookRef(); err == nil {
			if lh, ok := h.(*localHook); ok && reflect.TypeOf(lh.v).AssignableTo(t) {
				return reflect.ValueOf(lh.v).Convert(t), nil
			}
		}
	}
	vt := reflect.TypeOf(v)
	if vt == t {
		switch v.(type) {
		case []any, map[string]any:
			v = toMaps(v) // Go maps for the objects in it, as asked
		}
		return reflect.ValueOf(v), nil // no Convert: it copies (allocates) even to the same type
	}
	if vt.AssignableTo(t) {
		return reflect.ValueOf(v).Convert(t), nil
	}
	switch t {
	case errType:
		if e, ok := v.(*Error); ok {
			return reflect.ValueOf(e).Convert(t), nil
		}
	case timeType:
		if _, ok := v.(InvalidDate); ok {
			return reflect.Zero(t), nil
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t == stubType && (isTarget(v) || isCallable(v)) {
			// A local value reached us (a stub passed back to its owner): wrap it.
			return reflect.ValueOf(NewStub(v)), nil
		}
		inner, err := convertTo(v, t.Elem())
		if err != nil {
			return reflect.Value{}, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(inner)
		return p, nil
	case reflect.Interface:
		if vt.Implements(t) {
			return reflect.ValueOf(v).Convert(t), nil
		}
	case reflect.Bool:
		if b, ok := v.(bool); ok {
			return reflect.ValueOf(b).Convert(t), nil
		}
	case reflect.String:
		if s, ok := v.(string); ok {
			return reflect.ValueOf(s).Convert(t), nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := toInt(v)
		if ok && reflect.Zero(t).OverflowInt(n) {
			return reflect.Value{}, fmt.Errorf("number %v overflows %s", v, t)
		}
		if ok {
			return reflect.ValueOf(n).Convert(t), nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := toInt(v)
		if ok && (n < 0 || reflect.Zero(t).OverflowUint(uint64(n))) {
			return reflect.Value{}, fmt.Errorf("number %v overflows %s", v, t)
		}
		if ok {
			return reflect.ValueOf(uint64(n)).Convert(t), nil
		}
	case reflect.Float32, reflect.Float64:
		switch x := v.(type) {
		case float64:
			return reflect.ValueOf(x).Convert(t), nil
		case *big.Int:
			f, _ := new(big.Float).SetInt(x).Float64()
			return reflect.ValueOf(f).Convert(t), nil
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			switch x := v.(type) {
			case []byte:
				return reflect.ValueOf(x).Convert(t), nil
			case TypedBytes:
				return reflect.ValueOf(x.Data).Convert(t), nil
			case string:
				return reflect.ValueOf([]byte(x)).Convert(t), nil
			}
		}
		if list, ok := v.([]any); ok {
			out := reflect.MakeSlice(t, len(list), len(list))
			for i, e := range list {
				ev, err := convertTo(e, t.Elem())
				if err != nil {
					return reflect.Value{}, fmt.Errorf("[%d]: %w", i, err)
				}
				out.Index(i).Set(ev)
			}
			return out, nil
		}
	case reflect.Array:
		if list, ok := v.([]any); ok {
			out := reflect.New(t).Elem()
			for i := 0; i < t.Len() && i < len(list); i++ {
				ev, err := convertTo(list[i], t.Elem())
				if err != nil {
					return reflect.Value{}, fmt.Errorf("[%d]: %w", i, err)
				}
				out.Index(i).Set(ev)
			}
			return out, nil
		}
	case reflect.Map:
		if obj, ok := v.(Object); ok && t.Key().Kind() == reflect.String {
			if t == mapAnyType {
				return reflect.ValueOf(toMaps(obj)), nil
			}
			out := reflect.MakeMapWithSize(t, len(obj))
			for _, p := range obj {
				ev, err := convertTo(p.Value, t.Elem())
				if err != nil {
					return reflect.Value{}, fmt.Errorf("%s: %w", p.Key, err)
				}
				out.SetMapIndex(reflect.ValueOf(p.Key).Convert(t.Key()), ev)
			}
			return out, nil
		}
		if obj, ok := v.(map[string]any); ok && t.Key().Kind() == reflect.String {
			out := reflect.MakeMapWithSize(t, len(obj))
			for k, e := range obj {
				ev, err := convertTo(e, t.Elem())
				if err != nil {
					return reflect.Value{}, fmt.Errorf("%s: %w", k, err)
				}
				out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
			}
			return out, nil
		}
		if h, ok := v.(http.Header); ok && t == reflect.TypeFor[map[string][]string]() {
			return reflect.ValueOf(map[string][]string(h)), nil
		}
	case reflect.Struct:
		if obj, ok := v.(Object); ok {
			out := reflect.New(t).Elem()
			byName := structFieldsByName(t)
			for _, p := range obj {
				f := byName[p.Key]
				if f == nil {
					continue
				}
				ev, err := convertTo(p.Value, f.typ)
				if err != nil {
					return reflect.Value{}, fmt.Errorf("%s: %w", f.name, err)
				}
				setField(out, f.index, ev)
			}
			return out, nil
		}
		if obj, ok := v.(map[string]any); ok {
			out := reflect.New(t).Elem()
			for _, f := range structFields(t) {
				e, ok := obj[f.name]
				if !ok {
					continue
				}
				ev, err := convertTo(e, f.typ)
				if err != nil {
					return reflect.Value{}, fmt.Errorf("%s: %w", f.name, err)
				}
				setField(out, f.index, ev)
			}
			return out, nil
		}
	case reflect.Func:
		if st, ok := v.(*Stub); ok {
			return funcFromStub(st, t), nil
		}
	}
	if m, ok := v.(map[string]any); ok && t.Kind() == reflect.Slice && t == objectType {
		out := make(Object, 0, len(m)) // a Go map into an Object: keys sorted
		for _, k := range sortedKeys(m) {
			out = append(out, Prop{Key: k, Value: m[k]})
		}
		return reflect.ValueOf(out), nil
	}
	return reflect.Value{}, fmt.Errorf("cannot use %s as %s", describe(v), t)
}

// toMaps returns v with the Objects in it, at any depth, made map[string]any: what a Go map or
// slice of any holds. Containers without one are returned as they are, not copied.
func toMaps(v any) any {
	switch x := v.(type) {
	case Object:
		m := make(map[string]any, len(x))
		for _, p := range x {
			m[p.Key] = toMaps(p.Value)
		}
		return m
	case []any:
		if !hasObject(x) {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toMaps(e)
		}
		return out
	case map[string]any:
		if !hasObject(x) {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toMaps(e)
		}
		return out
	}
	return v
}

// hasObject reports whether v is or holds an Object.
func hasObject(v any) bool {
	switch x := v.(type) {
	case Object:
		return true
	case []any:
		for _, e := range x {
			if hasObject(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasObject(e) {
				return true
			}
		}
	}
	return false
}

func describe(v any) string {
	switch v.(type) {
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case Object, map[string]any:
		return "object"
	case *Stub:
		return "stub"
	}
	return fmt.Sprintf("%T", v)
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<63 {
			return 0, false
		}
		return int64(x), true
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), true
		}
	}
	return 0, false
}

// funcFromStub makes a Go func of type t that calls the stub: the func's arguments are sent,
// and its results (a value and/or an error) come from awaiting the call with the func's
// context argument, if it has one.
func funcFromStub(st *Stub, t reflect.Type) reflect.Value {
	mi := funcInfo(t, false)
	return reflect.MakeFunc(t, func(in []reflect.Value) []reflect.Value {
		ctx := context.Background()
		args := make([]any, 0, len(in))
		for i, a := range in {
			if i == 0 && mi.ctx {
				ctx = a.Interface().(context.Context)
				continue
			}
			args = append(args, a.Interface())
		}
		p := st.Invoke(args...)
		defer p.Release()
		v, err := p.Await(ctx)
		outs := make([]reflect.Value, t.NumOut())
		for i := range outs {
			outs[i] = reflect.Zero(t.Out(i))
		}
		if err == nil && mi.result {
			rv, cerr := convertTo(v, t.Out(0))
			if cerr != nil {
				err = cerr
			} else {
				outs[0] = rv
			}
		}
		if err != nil && mi.err {
			outs[len(outs)-1] = reflect.ValueOf(&err).Elem()
		}
		return outs
	})
}

type fieldInfo struct {
	name      string
	index     []int
	typ       reflect.Type
	omitEmpty bool
}

var fieldCache sync.Map // reflect.Type -> []fieldInfo

// structFields lists a struct's fields as encoding/json names them (tags, "-", omitempty,
// embedded structs promoted).
func structFields(t reflect.Type) []fieldInfo {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]fieldInfo)
	}
	var out []fieldInfo
	seen := map[string]bool{}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Type == reflect.TypeFor[Target]() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, fieldInfo{name: name, index: idx, typ: f.Type, omitEmpty: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")})
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}

var fieldNameCache sync.Map // reflect.Type -> map[string]*fieldInfo

// structFieldsByName is structFields by name.
func structFieldsByName(t reflect.Type) map[string]*fieldInfo {
	if m, ok := fieldNameCache.Load(t); ok {
		return m.(map[string]*fieldInfo)
	}
	fields := structFields(t)
	m := make(map[string]*fieldInfo, len(fields))
	for i := range fields {
		m[fields[i].name] = &fields[i]
	}
	fieldNameCache.Store(t, m)
	return m
}

func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

func setField(v reflect.Value, index []int, val reflect.Value) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	v.Set(val)
}
