package capnweb

// Encoding Go values into capnweb expressions, written straight to JSON.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxEncodeDepth bounds what we send (cycles in application values end here, not in a stack
// overflow).
const maxEncodeDepth = 256

// encoder writes one message. s is nil when values with references cannot be encoded (for
// Marshal). exports lists the exports made, to undo them if the message fails; refs lists the
// import entries reserved, to free once the message is queued.
type encoder struct {
	s        *Session
	m        *Mapper // recording a mapper: references become mapper variables
	b        []byte
	exports  []int64
	promises []int64 // promise exports, to start resolving once the message is queued
	refs     []*importEntry
	streams  bool // a stream was written (readable, writable)
}

// doneLocked frees the import entries reserved while encoding. Caller holds s.mu.
func (e *encoder) doneLocked() {
	for _, r := range e.refs {
		e.s.endSendLocked(r)
	}
	e.refs = nil
}

// queue queues the encoded message (or undoes its exports on err). Caller holds sendMu.
func (e *encoder) queue(err error) error {
	s := e.s
	s.mu.Lock()
	if err == nil && s.err != nil {
		err = s.err
	}
	if err == nil {
		s.queueLocked(e.b)
	}
	e.doneLocked()
	s.mu.Unlock()
	if err != nil {
		s.unexport(e.exports)
		e.promises = nil
	}
	return err
}

func (e *encoder) path(path []any) {
	e.b = append(e.b, '[')
	for i, p := range path {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		switch x := p.(type) {
		case string:
			e.b = appendJSONString(e.b, x)
		case float64:
			e.b = appendJSONNumber(e.b, x)
		default:
			e.b = appendJSONString(e.b, fmt.Sprint(x))
		}
	}
	e.b = append(e.b, ']')
}

func (e *encoder) array(list []any, depth int) error {
	e.b = append(e.b, '[')
	for i, v := range list {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if err := e.value(v, depth+1); err != nil {
			return err
		}
	}
	e.b = append(e.b, ']')
	return nil
}

// raw writes an already-encoded expression tree (map instructions) as JSON.
func (e *encoder) raw(v any, depth int) error {
	if depth > maxEncodeDepth {
		return typeErrorf("Serialization exceeded maximum allowed depth.")
	}
	switch x := v.(type) {
	case rawJSON:
		e.b = append(e.b, x...)
	case nil:
		e.b = append(e.b, "null"...)
	case bool:
		e.b = strconv.AppendBool(e.b, x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			e.b = append(e.b, "null"...) // as JSON.stringify writes them
			break
		}
		e.b = appendJSONNumber(e.b, x)
	case string:
		e.b = appendJSONString(e.b, x)
	case []any:
		e.b = append(e.b, '[')
		for i, y := range x {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if err := e.raw(y, depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, ']')
	case Object:
		e.b = append(e.b, '{')
		for i, p := range x {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendJSONString(e.b, p.Key)
			e.b = append(e.b, ':')
			if err := e.raw(p.Value, depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
	case map[string]any:
		e.b = append(e.b, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendJSONString(e.b, k)
			e.b = append(e.b, ':')
			if err := e.raw(x[k], depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
	default:
		return typeErrorf("Cannot serialize value in map instructions: %T", v)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return appendSortedKeys(make([]string, 0, len(m)), m)
}

// appendSortedKeys appends m's keys to keys, sorted.
func appendSortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (e *encoder) number(f float64) {
	switch {
	case math.IsNaN(f):
		e.b = append(e.b, `["nan"]`...)
	case math.IsInf(f, 1):
		e.b = append(e.b, `["inf"]`...)
	case math.IsInf(f, -1):
		e.b = append(e.b, `["-inf"]`...)
	case f == 0:
		e.b = append(e.b, '0')
	default:
		e.b = appendJSONNumber(e.b, f)
	}
}

func (e *encoder) tag(name string) {
	e.b = append(e.b, `["`...)
	e.b = append(e.b, name...)
	e.b = append(e.b, `",`...)
}

func (e *encoder) bytes(data []byte, typ string) {
	e.tag("bytes")
	e.b = append(e.b, '"')
	e.b = base64.RawStdEncoding.AppendEncode(e.b, data)
	e.b = append(e.b, '"')
	if typ != "" {
		e.b = append(e.b, ',')
		e.b = appendJSONString(e.b, typ)
	}
	e.b = append(e.b, ']')
}

func (e *encoder) errorValue(x *Error, depth int) {
	name := x.Name
	if name == "" {
		name = "Error"
	}
	e.tag("error")
	e.b = appendJSONString(e.b, name)
	e.b = append(e.b, ',')
	e.b = appendJSONString(e.b, x.Message)
	// Properties that cannot be encoded are dropped, as the JS library does.
	var props []byte
	if len(x.Props) > 0 && depth < maxEncodeDepth {
		props = append(props, '{')
		n := 0
		for _, k := range sortedKeys(x.Props) {
			if k == "name" || k == "message" || k == "stack" {
				continue
			}
			sub := encoder{s: e.s}
			if err := sub.value(x.Props[k], depth+1); err != nil {
				if e.s != nil {
					e.s.unexport(sub.exports)
				}
				continue
			}
			e.exports = append(e.exports, sub.exports...)
			e.promises = append(e.promises, sub.promises...)
			e.refs = append(e.refs, sub.refs...)
			if n > 0 {
				props = append(props, ',')
			}
			props = appendJSONString(props, k)
			props = append(props, ':')
			props = append(props, sub.b...)
			n++
		}
		props = append(props, '}')
		if n == 0 {
			props = nil
		}
	}
	switch {
	case props != nil:
		e.b = append(e.b, ',')
		if x.Stack != "" {
			e.b = appendJSONString(e.b, x.Stack)
		} else {
			e.b = append(e.b, "null"...)
		}
		e.b = append(e.b, ',')
		e.b = append(e.b, props...)
	case x.Stack != "":
		e.b = append(e.b, ',')
		e.b = appendJSONString(e.b, x.Stack)
	}
	e.b = append(e.b, ']')
}

func (e *encoder) headers(h http.Header) {
	e.tag("headers")
	e.headerPairs(h)
	e.b = append(e.b, ']')
}

// headerPairs writes headers as the JS Headers iterator yields them: lowercase names, sorted,
// values of a repeated name joined with ", ".
func (e *encoder) headerPairs(h http.Header) {
	names := make([]string, 0, len(h))
	vals := map[string][]string{}
	for k, v := range h {
		lk := strings.ToLower(k)
		if _, ok := vals[lk]; !ok {
			names = append(names, lk)
		}
		vals[lk] = append(vals[lk], v...)
	}
	sort.Strings(names)
	e.b = append(e.b, '[')
	i := 0
	for _, n := range names {
		vs := vals[n]
		if n == "set-cookie" {
			for _, v := range vs {
				e.pair(&i, n, v)
			}
			continue
		}
		e.pair(&i, n, strings.Join(vs, ", "))
	}
	e.b = append(e.b, ']')
}

func (e *encoder) pair(i *int, k, v string) {
	if *i > 0 {
		e.b = append(e.b, ',')
	}
	*i++
	e.b = append(e.b, '[')
	e.b = appendJSONString(e.b, k)
	e.b = append(e.b, ',')
	e.b = appendJSONString(e.b, v)
	e.b = append(e.b, ']')
}

// needSession reports an error when references are encoded outside a session.
func (e *encoder) needSession(what string) error {
	if e.m != nil {
		return NewError("Error", "Can't construct an RpcTarget, RPC callback or stream inside a mapper function. Try creating a new RpcStub outside the callback first, then using it inside the callback.")
	}
	if e.s == nil {
		return typeErrorf("Cannot serialize %s without an RPC session.", what)
	}
	return nil
}

// exportRef writes ["export"|"promise", id] for a hook we export, taking ownership of h.
func (e *encoder) exportRef(h hook, promise bool) error {
	if err := e.needSession("RPC stubs"); err != nil {
		h.release()
		return err
	}
	if lh, ok := h.(*localHook); ok && lh.ref == nil {
		// Count the peer's references, so the value's Dispose runs when they are gone.
		h = e.s.exportableHook(lh.v)
	}
	id, err := e.s.exportHook(h)
	if err != nil {
		return err
	}
	e.exports = append(e.exports, id)
	if promise {
		e.promises = append(e.promises, id)
		e.tag("promise")
	} else {
		e.tag("export")
	}
	e.b = strconv.AppendInt(e.b, id, 10)
	e.b = append(e.b, ']')
	return nil
}

// hookValue writes a reference to h (borrowed): ["import"|"pipeline", id, path] when h is the
// peer's own, else a new export of a duplicate.
func (e *encoder) hookValue(h hook, path []any, promise bool, depth int) error {
	if e.m != nil {
		if promise {
			e.tag("pipeline")
		} else {
			e.tag("import")
		}
		e.b = strconv.AppendInt(e.b, int64(e.m.capture(h)), 10)
		if len(path) > 0 {
			e.b = append(e.b, ',')
			e.path(path)
		}
		e.b = append(e.b, ']')
		return nil
	}
	if err := e.needSession("RPC stubs"); err != nil {
		return err
	}
	if ent, res, ok := e.s.refImport(h); ok {
		e.refs = append(e.refs, ent)
		if promise {
			e.tag("pipeline")
		} else {
			e.tag("import")
		}
		e.b = strconv.AppendInt(e.b, ent.id, 10)
		if len(path) > 0 {
			e.b = append(e.b, ',')
			e.path(path)
		}
		e.b = append(e.b, ']')
		return nil
	} else if res != nil {
		h = res
	}
	var x hook
	if len(path) > 0 {
		x = h.get(path)
	} else {
		x = h.dup()
	}
	if vh, ok := x.(*valueHook); ok && promise {
		// Already settled: send the value itself.
		if vh.plain {
			defer x.release()
			return e.value(vh.v, depth)
		}
		v := copyValue(vh.v)
		x.release()
		defer releaseValue(v)
		return e.value(v, depth)
	}
	return e.exportRef(x, promise)
}

// value writes v as an expression.
func (e *encoder) value(v any, depth int) error {
	if depth > maxEncodeDepth {
		return typeErrorf("Serialization exceeded maximum allowed depth. (Does the message contain cycles?)")
	}
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, "null"...)
	case undefined:
		e.b = append(e.b, `["undefined"]`...)
	case bool:
		e.b = strconv.AppendBool(e.b, x)
	case string:
		e.b = appendJSONString(e.b, x)
	case float64:
		e.number(x)
	case int:
		e.b = strconv.AppendInt(e.b, int64(x), 10)
	case int64:
		e.b = strconv.AppendInt(e.b, x, 10)
	case []any:
		e.b = append(e.b, '[')
		if err := e.array(x, depth); err != nil {
			return err
		}
		e.b = append(e.b, ']')
	case Object:
		e.b = append(e.b, '{')
		for i, p := range x {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendJSONString(e.b, p.Key)
			e.b = append(e.b, ':')
			if err := e.value(p.Value, depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
	case map[string]any:
		// A Go map has no order: its keys go sorted, so the same map gives the same message.
		var buf [8]string // the keys of a small object sort without an allocation
		e.b = append(e.b, '{')
		for i, k := range appendSortedKeys(buf[:0], x) {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendJSONString(e.b, k)
			e.b = append(e.b, ':')
			if err := e.value(x[k], depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
	case json.RawMessage:
		return e.rawMessage(x, depth)
	case receivedJSON:
		return e.rawMessage(json.RawMessage(x), depth)
	case []byte:
		e.bytes(x, "")
	case TypedBytes:
		if _, ok := byteContainerElemSize[x.Type]; !ok {
			return typeErrorf("Unknown bytes type marker: %s", truncate(x.Type, 64))
		}
		e.bytes(x.Data, x.Type)
	case *big.Int:
		if x == nil {
			e.b = append(e.b, "null"...)
			break
		}
		e.tag("bigint")
		e.b = append(e.b, '"')
		e.b = x.Append(e.b, 10)
		e.b = append(e.b, `"]`...)
	case time.Time:
		e.tag("date")
		e.number(float64(x.UnixMilli()))
		e.b = append(e.b, ']')
	case InvalidDate:
		e.b = append(e.b, `["date",null]`...)
	case *Error:
		if x == nil {
			e.b = append(e.b, "null"...)
			break
		}
		e.errorValue(e.s.wireError(x), depth)
	case *url.URL:
		if x == nil {
			e.b = append(e.b, "null"...)
			break
		}
		e.tag("url")
		e.b = appendJSONString(e.b, x.String())
		e.b = append(e.b, ']')
	case http.Header:
		e.headers(x)
	case *Request:
		return e.request(x, depth)
	case *Response:
		return e.response(x, depth)
	case Blob:
		return e.blob(&x)
	case *Blob:
		return e.blob(x)
	case *Stub:
		h, err := x.hookRef()
		if err != nil {
			return err
		}
		return e.hookValue(h, nil, false, depth)
	case *Promise:
		h, err := x.hookRef()
		if err != nil {
			return err
		}
		return e.hookValue(h, x.path, true, depth)
	case *pending:
		return e.hookValue(x.h, nil, true, depth)
	case *ReadableStream:
		return e.readable(x)
	case *WritableStream:
		return e.writable(x)
	case *boundMethod:
		if err := e.needSession("functions"); err != nil {
			return err
		}
		return e.exportRef(newLocalHook(x, e.s), false)
	case error:
		e.errorValue(e.s.wireError(x), depth)
	default:
		if isTarget(v) {
			if err := e.needSession("RpcTargets"); err != nil {
				return err
			}
			return e.exportRef(e.s.exportableHook(v), false)
		}
		return e.reflectValue(reflect.ValueOf(v), depth)
	}
	return nil
}

func (e *encoder) reflectValue(rv reflect.Value, depth int) error {
	switch rv.Kind() {
	case reflect.Invalid:
		e.b = append(e.b, "null"...)
	case reflect.Bool:
		e.b = strconv.AppendBool(e.b, rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.b = strconv.AppendInt(e.b, rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.b = strconv.AppendUint(e.b, rv.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		e.number(rv.Float())
	case reflect.String:
		e.b = appendJSONString(e.b, rv.String())
	case reflect.Func:
		if rv.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		if err := e.needSession("functions"); err != nil {
			return err
		}
		return e.exportRef(newLocalHook(rv.Interface(), e.s), false)
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		return e.value(rv.Elem().Interface(), depth+1)
	case reflect.Slice:
		if rv.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		fallthrough
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			data := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(data), rv)
			e.bytes(data, "")
			return nil
		}
		e.b = append(e.b, "[["...)
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if err := e.value(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, "]]"...)
	case reflect.Map:
		if rv.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		if rv.Type().Key().Kind() != reflect.String {
			return typeErrorf("Cannot serialize value: map key type %s", rv.Type().Key())
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		e.b = append(e.b, '{')
		for i, k := range keys {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendJSONString(e.b, k.String())
			e.b = append(e.b, ':')
			if err := e.value(rv.MapIndex(k).Interface(), depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
	case reflect.Struct:
		e.b = append(e.b, '{')
		n := 0
		for _, f := range structFields(rv.Type()) {
			fv, ok := fieldByIndex(rv, f.index)
			if !ok || (f.omitEmpty && fv.IsZero()) {
				continue
			}
			if n > 0 {
				e.b = append(e.b, ',')
			}
			n++
			e.b = appendJSONString(e.b, f.name)
			e.b = append(e.b, ':')
			if err := e.value(fv.Interface(), depth+1); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
	default:
		return typeErrorf("Cannot serialize value of type %s", rv.Type())
	}
	return nil
}

func (e *encoder) request(r *Request, depth int) error {
	e.tag("request")
	e.b = appendJSONString(e.b, r.URL)
	e.b = append(e.b, ',')
	init := map[string]any{}
	for k, v := range r.Init {
		init[k] = v
	}
	if r.Method != "" && r.Method != "GET" {
		init["method"] = r.Method
	}
	return e.fetchInit(init, r.Headers, r.Body, depth)
}

func (e *encoder) response(r *Response, depth int) error {
	e.tag("response")
	if err := e.value(r.Body, depth+1); err != nil {
		return err
	}
	e.b = append(e.b, ',')
	init := map[string]any{}
	for k, v := range r.Init {
		init[k] = v
	}
	if r.Status != 0 && r.Status != 200 {
		init["status"] = r.Status
	}
	if r.StatusText != "" {
		init["statusText"] = r.StatusText
	}
	return e.fetchInit(init, r.Headers, nil, depth)
}

// fetchInit writes a RequestInit/ResponseInit: plain values, headers as pairs, body as an
// expression.
func (e *encoder) fetchInit(init map[string]any, h http.Header, body any, depth int) error {
	delete(init, "headers")
	delete(init, "body")
	keys := sortedKeys(init)
	if len(h) > 0 {
		keys = append(keys, "headers")
	}
	if body != nil {
		keys = append(keys, "body")
	}
	sort.Strings(keys)
	e.b = append(e.b, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = appendJSONString(e.b, k)
		e.b = append(e.b, ':')
		switch k {
		case "headers":
			e.headerPairs(h)
		case "body":
			if err := e.value(body, depth+1); err != nil {
				return err
			}
		default:
			if err := e.raw(plainJSON(init[k]), depth+1); err != nil {
				return err
			}
		}
	}
	e.b = append(e.b, "}]"...)
	return nil
}

// plainJSON converts Go scalars to the JSON tree raw writes.
func plainJSON(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case map[string]any:
		out := map[string]any{}
		for k, y := range x {
			out[k] = plainJSON(y)
		}
		return out
	case Object:
		out := make(Object, len(x))
		for i, p := range x {
			out[i] = Prop{Key: p.Key, Value: plainJSON(p.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = plainJSON(y)
		}
		return out
	}
	return v
}
