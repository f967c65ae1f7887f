package capnweb

// Evaluating incoming expressions into Go values, and handling top-level messages.

import (
	"encoding/base64"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// importer resolves the IDs an expression refers to. The session is one; a mapper (remap) is
// another, with its own numbering.
type importer interface {
	// getExport returns the hook exported under id, borrowed.
	getExport(id float64) (hook, error)
	// importStub returns a new reference to the peer's export id.
	importStub(id float64) (hook, error)
	// importPromise returns a new reference to the peer's promise id.
	importPromise(id float64) (hook, error)
	// pipeReadable takes the readable end of the pipe id.
	pipeReadable(id float64) (*ReadableStream, error)
	session() *Session
}

type evaluator struct {
	im  importer
	lim *Limits
	// The references made so far, released if evaluation fails: the first few in first (no
	// allocation for a typical message), the rest in more.
	first [4]any
	made  int
	more  []any
	// impure: the last evaluation made something that keeps its value from being plain
	// (isPlain): a reference, a stream or an error.
	impure bool
}

// evaluate turns an expression into a value. On error, everything it created is released.
func (ev *evaluator) evaluate(v any) (any, error) {
	ev.impure = false
	r, err := ev.eval(v, 0)
	if err = ev.done(err); err != nil {
		return nil, err
	}
	return r, nil
}

// evaluateElems is evaluate for the elements of an escaped array (a call's arguments), in place.
func (ev *evaluator) evaluateElems(a []any) error {
	ev.impure = false
	return ev.done(ev.evalElems(a, 1))
}

// done ends an evaluation: when it failed (err), it releases everything it created.
func (ev *evaluator) done(err error) error {
	if err != nil {
		for _, c := range ev.first[:min(ev.made, len(ev.first))] {
			releaseValue(c)
		}
		for _, c := range ev.more {
			releaseValue(c)
		}
	}
	clear(ev.first[:])
	ev.made, ev.more = 0, nil
	return err
}

func (ev *evaluator) track(v any) any {
	ev.impure = true
	if ev.made < len(ev.first) {
		ev.first[ev.made] = v
	} else {
		ev.more = append(ev.more, v)
	}
	ev.made++
	return v
}

func unknownSpecial(v any) error {
	enc := encoder{}
	enc.raw(v, 0)
	return typeErrorf("unknown special value: %s", truncate(string(enc.b), 200))
}

func (ev *evaluator) eval(v any, depth int) (any, error) {
	if depth >= ev.lim.MaxDepth {
		return nil, typeErrorf("Deserialization exceeded maximum allowed message depth of %d.", ev.lim.MaxDepth)
	}
	switch x := v.(type) {
	case Object:
		j := 0
		for _, p := range x {
			r, err := ev.eval(p.Value, depth+1)
			if err != nil {
				return nil, err
			}
			if droppedKey(p.Key) {
				// Object.prototype names are evaluated (for their side effects) and dropped.
				releaseValue(r)
				continue
			}
			x[j] = Prop{Key: p.Key, Value: r}
			j++
		}
		if j == len(x) {
			return v, nil // x in its interface already: no new one to allocate
		}
		clear(x[j:])
		return x[:j], nil
	case []any:
		return ev.special(x, depth)
	}
	return v, nil
}

// evalElems evaluates the elements of an escaped array in place.
func (ev *evaluator) evalElems(a []any, depth int) error {
	for i, e := range a {
		r, err := ev.eval(e, depth)
		if err != nil {
			return err
		}
		a[i] = r
	}
	return nil
}

func (ev *evaluator) special(x []any, depth int) (any, error) {
	if len(x) == 1 {
		if inner, ok := x[0].([]any); ok {
			if err := ev.evalElems(inner, depth+1); err != nil {
				return nil, err
			}
			return x[0], nil // inner, already in an interface: evaluated in place
		}
	}
	if len(x) == 0 {
		return nil, unknownSpecial(x)
	}
	tag, _ := x[0].(string)
	switch tag {
	case "undefined":
		if len(x) == 1 {
			return Undefined, nil
		}
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	case "bigint":
		if len(x) >= 2 {
			if s, ok := x[1].(string); ok {
				if len(s) > ev.lim.MaxBigIntDigits {
					return nil, typeErrorf("Deserialized bigint exceeds maximum length of %d digits.", ev.lim.MaxBigIntDigits)
				}
				n, ok := new(big.Int).SetString(strings.TrimSpace(s), 10)
				if !ok {
					return nil, &abortError{name: "SyntaxError", msg: "Cannot convert " + truncate(s, 64) + " to a BigInt"}
				}
				return n, nil
			}
		}
	case "date":
		if len(x) >= 2 {
			if x[1] == nil {
				return InvalidDate{}, nil
			}
			if f, ok := x[1].(float64); ok {
				if math.IsNaN(f) || math.Abs(f) > 8.64e15 {
					return InvalidDate{}, nil
				}
				return time.UnixMilli(int64(f)), nil
			}
		}
	case "bytes":
		return ev.bytes(x)
	case "error":
		return ev.errorValue(x, depth)
	case "url":
		if len(x) == 2 {
			if s, ok := x[1].(string); ok {
				u, err := url.Parse(s)
				if err != nil || !u.IsAbs() {
					return nil, typeErrorf("Invalid URL")
				}
				return u, nil
			}
		}
	case "headers":
		if len(x) == 2 {
			if pairs, ok := x[1].([]any); ok {
				return headersFrom(pairs)
			}
		}
	case "request":
		return ev.request(x, depth)
	case "response":
		return ev.response(x, depth)
	case "blob":
		return ev.blob(x, depth)
	case "import", "pipeline":
		return ev.importExpr(x, tag == "pipeline", depth)
	case "remap":
		return ev.remapExpr(x)
	case "export", "promise":
		if len(x) >= 2 {
			if id, ok := x[1].(float64); ok {
				if tag == "promise" {
					h, err := ev.im.importPromise(id)
					if err != nil {
						return nil, err
					}
					return ev.track(&pending{h: h}), nil
				}
				h, err := ev.im.importStub(id)
				if err != nil {
					return nil, err
				}
				return ev.track(newStub(h)), nil
			}
		}
	case "writable":
		if len(x) >= 2 {
			if id, ok := x[1].(float64); ok {
				h, err := ev.im.importStub(id)
				if err != nil {
					return nil, err
				}
				return ev.track(newRemoteWritable(h)), nil
			}
		}
	case "readable":
		if len(x) >= 2 {
			if id, ok := x[1].(float64); ok {
				rs, err := ev.im.pipeReadable(id)
				if err != nil {
					return nil, err
				}
				return ev.track(rs), nil
			}
		}
	}
	return nil, unknownSpecial(x)
}

func (ev *evaluator) bytes(x []any) (any, error) {
	if len(x) < 2 || len(x) > 3 {
		return nil, unknownSpecial(x)
	}
	s, ok := x[1].(string)
	if !ok {
		return nil, unknownSpecial(x)
	}
	data, err := decodeBase64(s)
	if err != nil {
		return nil, typeErrorf("invalid base64 in bytes value")
	}
	if len(x) == 2 {
		return data, nil
	}
	marker, ok := x[2].(string)
	if !ok {
		return nil, typeErrorf("Unknown bytes type marker type")
	}
	size, ok := byteContainerElemSize[marker]
	if !ok {
		return nil, typeErrorf("Unknown bytes type marker: %s", truncate(marker, 64))
	}
	if len(data)%size != 0 {
		return nil, typeErrorf("Invalid byte length %d for %s; expected a multiple of %d", len(data), marker, size)
	}
	if marker == "Uint8Array" {
		return data, nil
	}
	return TypedBytes{Type: marker, Data: data}, nil
}

// decodeBase64 accepts padded and unpadded, standard and URL-safe base64, as Node's Buffer does.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

func (ev *evaluator) errorValue(x []any, depth int) (any, error) {
	if len(x) < 3 || len(x) > 5 {
		return nil, unknownSpecial(x)
	}
	name, ok1 := x[1].(string)
	msg, ok2 := x[2].(string)
	if !ok1 || !ok2 {
		return nil, unknownSpecial(x)
	}
	if !knownErrorNames[name] {
		name = "Error"
	}
	e := &Error{Name: name, Message: msg}
	ev.impure = true
	if len(x) >= 4 {
		if st, ok := x[3].(string); ok {
			e.Stack = st
		}
	}
	if len(x) == 5 {
		props, ok := x[4].(Object)
		if !ok {
			return nil, unknownSpecial(x)
		}
		for _, p := range props {
			r, err := ev.eval(p.Value, depth+1)
			if err != nil {
				return nil, err
			}
			if k := p.Key; k == "name" || k == "message" || k == "stack" || droppedKey(k) {
				releaseValue(r)
				continue
			}
			if e.Props == nil {
				e.Props = map[string]any{}
			}
			e.Props[p.Key] = r
		}
	}
	return e, nil
}

func headersFrom(pairs []any) (http.Header, error) {
	h := http.Header{}
	for _, p := range pairs {
		kv, ok := p.([]any)
		if !ok || len(kv) != 2 {
			return nil, typeErrorf("Headers must be an array of [name, value] pairs.")
		}
		k, ok1 := kv[0].(string)
		v, ok2 := kv[1].(string)
		if !ok1 || !ok2 {
			return nil, typeErrorf("Headers must be an array of [name, value] pairs.")
		}
		h.Add(k, v)
	}
	return h, nil
}

func (ev *evaluator) fetchInit(init Object, depth int) (http.Header, any, map[string]any, error) {
	var h http.Header
	var body any
	rest := map[string]any{}
	for _, p := range init {
		k, v := p.Key, p.Value
		switch k {
		case "headers":
			pairs, ok := v.([]any)
			if !ok {
				return nil, nil, nil, typeErrorf("Request headers must be serialized as an array of pairs.")
			}
			var err error
			if h, err = headersFrom(pairs); err != nil {
				return nil, nil, nil, err
			}
		case "body":
			b, err := ev.eval(v, depth+1)
			if err != nil {
				return nil, nil, nil, err
			}
			switch b.(type) {
			case nil, string, []byte, *ReadableStream:
			default:
				releaseValue(b)
				return nil, nil, nil, typeErrorf("Request body must be of type ReadableStream.")
			}
			body = b
		case "signal", "webSocket":
			return nil, nil, nil, typeErrorf("%s cannot be serialized", k)
		default:
			rest[k] = v
		}
	}
	return h, body, rest, nil
}

func (ev *evaluator) request(x []any, depth int) (any, error) {
	if len(x) != 3 {
		return nil, unknownSpecial(x)
	}
	u, ok := x[1].(string)
	init, ok2 := x[2].(Object)
	if !ok || !ok2 {
		return nil, unknownSpecial(x)
	}
	h, body, rest, err := ev.fetchInit(init, depth)
	if err != nil {
		return nil, err
	}
	r := &Request{URL: u, Headers: h, Body: body, Method: "GET"}
	if m, ok := rest["method"].(string); ok {
		r.Method = strings.ToUpper(m)
		delete(rest, "method")
	}
	if len(rest) > 0 {
		r.Init = rest
	}
	return r, nil
}

func (ev *evaluator) response(x []any, depth int) (any, error) {
	if len(x) != 3 {
		return nil, unknownSpecial(x)
	}
	init, ok := x[2].(Object)
	if !ok {
		return nil, unknownSpecial(x)
	}
	// The body is x[1]: one in init, which JS never sends, is ignored, unevaluated.
	j := 0
	for _, p := range init {
		if p.Key != "body" {
			init[j] = p
			j++
		}
	}
	init = append(init[:j], Prop{Key: "body", Value: x[1]})
	h, body, rest, err := ev.fetchInit(init, depth)
	if err != nil {
		return nil, err
	}
	r := &Response{Status: 200, Headers: h, Body: body}
	if s, ok := rest["status"].(float64); ok {
		r.Status = int(s)
		delete(rest, "status")
	}
	if s, ok := rest["statusText"].(string); ok {
		r.StatusText = s
		delete(rest, "statusText")
	}
	if len(rest) > 0 {
		r.Init = rest
	}
	return r, nil
}

func (ev *evaluator) path(v any) ([]any, bool) {
	p, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, e := range p {
		switch e.(type) {
		case string, float64:
		default:
			return nil, false
		}
	}
	return p, true
}

func (ev *evaluator) importExpr(x []any, promise bool, depth int) (any, error) {
	if len(x) < 2 || len(x) > 4 {
		return nil, unknownSpecial(x)
	}
	id, ok := x[1].(float64)
	if !ok {
		return nil, unknownSpecial(x)
	}
	h, err := ev.im.getExport(id)
	if err != nil {
		return nil, err
	}
	var r hook
	switch len(x) {
	case 2:
		if promise {
			if v, ok := settledPlain(h); ok {
				return v, nil // what awaiting it would give, at once: the call need not wait
			}
			r = h.get(nil)
		} else {
			r = h.dup()
		}
	case 3:
		path, ok := ev.path(x[2])
		if !ok {
			return nil, unknownSpecial(x)
		}
		r = h.get(path)
	case 4:
		path, ok := ev.path(x[2])
		args, ok2 := x[3].([]any)
		if !ok || !ok2 {
			return nil, unknownSpecial(x)
		}
		if r, err = ev.call(h, path, args, x[3]); err != nil {
			return nil, err
		}
	}
	if promise {
		return ev.track(&pending{h: r}), nil
	}
	return ev.track(newStub(r)), nil
}

// call calls h at path with args, the elements of an escaped array (argsV: the array, as an
// interface), evaluated in place.
func (ev *evaluator) call(h hook, path, args []any, argsV any) (hook, error) {
	sub := evaluator{im: ev.im, lim: ev.lim}
	if err := sub.evaluateElems(args); err != nil {
		return nil, err
	}
	return h.call(path, &payload{v: argsV, plain: !sub.impure}), nil
}

func (ev *evaluator) remapExpr(x []any) (any, error) {
	if len(x) != 5 {
		return nil, unknownSpecial(x)
	}
	id, ok := x[1].(float64)
	path, ok2 := ev.path(x[2])
	caps, ok3 := x[3].([]any)
	instrs, ok4 := x[4].([]any)
	if !ok || !ok2 || !ok3 || !ok4 {
		return nil, unknownSpecial(x)
	}
	h, err := ev.im.getExport(id)
	if err != nil {
		return nil, err
	}
	captures := make([]hook, 0, len(caps))
	fail := func(err error) (any, error) {
		releaseHooks(captures)
		return nil, err
	}
	for _, c := range caps {
		cv, ok := c.([]any)
		if !ok || len(cv) != 2 {
			return fail(typeErrorf("unknown map capture: %s", truncate(string(mustRaw(c)), 100)))
		}
		kind, _ := cv[0].(string)
		cid, ok := cv[1].(float64)
		if !ok || (kind != "import" && kind != "export") {
			return fail(typeErrorf("unknown map capture: %s", truncate(string(mustRaw(c)), 100)))
		}
		if kind == "export" {
			ch, err := ev.im.importStub(cid)
			if err != nil {
				return fail(err)
			}
			captures = append(captures, ch)
		} else {
			ch, err := ev.im.getExport(cid)
			if err != nil {
				return fail(err)
			}
			captures = append(captures, ch.dup())
		}
	}
	return ev.track(&pending{h: h.remap(path, captures, instrs)}), nil
}

func mustRaw(v any) []byte {
	enc := encoder{}
	enc.raw(v, 0)
	return enc.b
}

// ---- the session as importer ----

func (s *Session) session() *Session { return s }

// smallIntMessage reads raw as exactly prefix, an integer, then (when second is not nil) a comma
// and a second integer, then "]" — compact, as the JS library writes it — with integers of at most
// 15 digits. Anything else is not an error: ok is false, and the general reader takes the message.
func smallIntMessage(raw []byte, prefix string, second *int64) (int64, bool) {
	if len(raw) < len(prefix)+2 || string(raw[:len(prefix)]) != prefix {
		return 0, false
	}
	rest := raw[len(prefix):]
	first, n := smallInt(rest)
	if n == 0 {
		return 0, false
	}
	rest = rest[n:]
	if second != nil {
		if len(rest) == 0 || rest[0] != ',' {
			return 0, false
		}
		v, m := smallInt(rest[1:])
		if m == 0 {
			return 0, false
		}
		*second = v
		rest = rest[1+m:]
	}
	return first, len(rest) == 1 && rest[0] == ']'
}

func checkID(id float64) (int64, bool) {
	if id != math.Trunc(id) || math.Abs(id) > 1<<53 {
		return 0, false
	}
	return int64(id), true
}

func (s *Session) getExport(fid float64) (hook, error) {
	id, ok := checkID(fid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.exports[id]; ok && e != nil {
		return e.h, nil
	}
	return nil, protocolErrorf("no such entry on exports table: %s", strconv.FormatFloat(fid, 'f', -1, 64))
}

// maxDepth, resolveJSON and argsJSON make the session a jsonWanter.
func (s *Session) maxDepth() int { return s.lim().MaxDepth }

// resolveJSON: the value of import id is wanted as JSON when its promise is decoded into a
// json.RawMessage (markJSON).
func (s *Session) resolveJSON(id any) bool {
	fid, ok := id.(float64)
	n, ok2 := checkID(fid)
	if !ok || !ok2 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.imports[n]
	return e != nil && e.wantJSON
}

// argsJSON: a method of a Go target takes as JSON the arguments of its json.RawMessage
// parameters. Calls to anything else (a func, a promise, a remote stub) take none.
func (s *Session) argsJSON(id, path any) uint64 {
	fid, ok := id.(float64)
	p, _ := path.([]any)
	n, ok2 := checkID(fid)
	if !ok || !ok2 || len(p) != 1 {
		return 0
	}
	name, ok := p[0].(string)
	if !ok {
		return 0
	}
	s.mu.Lock()
	e := s.exports[n]
	s.mu.Unlock()
	if e == nil {
		return 0
	}
	lh, ok := e.h.(*localHook)
	if !ok || !isTarget(lh.v) {
		return 0
	}
	if mi := targetInfo(lh.v).methods[name]; mi != nil && !mi.property {
		return mi.jsonArgs
	}
	return 0
}

func (s *Session) importStub(fid float64) (hook, error) {
	id, ok := checkID(fid)
	if !ok || id > 0 {
		return nil, protocolErrorf("invalid export ID from peer: %s", strconv.FormatFloat(fid, 'f', -1, 64))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	e := s.imports[id]
	if e == nil || e.gone {
		if err := s.admitImportLocked(); err != nil {
			return nil, err
		}
		e = &importEntry{id: id}
		s.imports[id] = e
	}
	if e.promise {
		return nil, protocolErrorf("peer exported a stub reusing promise ID %d", id)
	}
	e.remoteRefs++
	return s.newImportRef(e), nil
}

func (s *Session) importPromise(fid float64) (hook, error) {
	id, ok := checkID(fid)
	if !ok || id >= 0 {
		return nil, protocolErrorf("invalid promise ID from peer: %s", strconv.FormatFloat(fid, 'f', -1, 64))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if s.imports[id] != nil {
		return nil, protocolErrorf("The peer sent a promise reusing an existing export ID.")
	}
	if err := s.admitImportLocked(); err != nil {
		return nil, err
	}
	e := &importEntry{id: id, remoteRefs: 1, promise: true, pulled: true}
	s.imports[id] = e
	return s.newImportRef(e), nil
}

func (s *Session) pipeReadable(fid float64) (*ReadableStream, error) {
	id, _ := checkID(fid)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.exports[id]
	if e == nil || e.pipeReadable == nil {
		return nil, protocolErrorf("Export %s is not a pipe or its readable end was already consumed.", strconv.FormatFloat(fid, 'f', -1, 64))
	}
	rs := e.pipeReadable
	e.pipeReadable = nil
	return rs, nil
}

// ---- top-level messages ----

func (s *Session) badMessage(msg []byte) error {
	return protocolErrorf("bad RPC message: %s", truncate(string(msg), 200))
}

// handle processes one incoming message. An error aborts the session.
func (s *Session) handle(raw []byte) error {
	// The two commonest messages, read without building a tree.
	if id, ok := smallIntMessage(raw, `["pull",`, nil); ok {
		return s.ensureResolving(id)
	}
	var refs int64
	if id, ok := smallIntMessage(raw, `["release",`, &refs); ok {
		return s.releaseExport(id, int(refs))
	}
	b := s.busyState()
	var pc pushedCall
	if readPushedCall(raw, b.strs, &pc) {
		return s.pushCall(&pc, len(raw))
	}
	var top [4]any // the message's elements: every message has fewer
	lim := s.lim()
	n, scratch, err := parseMessage(raw, 2*lim.MaxDepth+8, b.scratch, b.strs, &top, s)
	b.scratch = scratch
	if err != nil {
		return &abortError{name: "SyntaxError", msg: err.Error()}
	}
	if n <= 0 {
		return s.badMessage(raw)
	}
	msg := top[:n]
	kind, _ := msg[0].(string)
	ev := evaluator{im: s, lim: lim}
	switch kind {
	case "push", "stream":
		if len(msg) != 2 {
			return s.badMessage(raw)
		}
		id, err := s.reservePush(len(raw))
		if err != nil {
			return err
		}
		v, err := ev.evaluate(msg[1])
		if err != nil {
			return err
		}
		var h hook
		switch x := v.(type) {
		case *pending:
			h = x.h // the usual case: the push is a call; its promise is the export
		case *Stub:
			// As in the JS library, a pushed stub resolves to what it points at.
			h = x.c.take()
			x.cleanup.Stop()
		default:
			h = newValueHookPlain(v, true, !ev.impure, s)
		}
		s.exportPushed(id, h, kind == "stream", len(raw))
		if kind == "stream" {
			return s.ensureResolving(id)
		}
		return nil
	case "pipe":
		if len(msg) != 1 {
			return s.badMessage(raw)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.admitExportLocked(entryCost); err != nil {
			return err
		}
		id := s.nextPushID
		s.nextPushID++
		rs, w := newPipe(s)
		s.exports[id] = &exportEntry{h: w, refs: 1, pipeReadable: rs, held: entryCost}
		return nil
	case "pull":
		if len(msg) != 2 {
			return s.badMessage(raw)
		}
		fid, ok := msg[1].(float64)
		id, ok2 := checkID(fid)
		if !ok || !ok2 {
			return s.badMessage(raw)
		}
		return s.ensureResolving(id)
	case "resolve", "reject":
		if len(msg) != 3 {
			return s.badMessage(raw)
		}
		fid, ok := msg[1].(float64)
		id, ok2 := checkID(fid)
		if !ok || !ok2 {
			return s.badMessage(raw)
		}
		v, err := ev.evaluate(msg[2])
		if err != nil {
			return err
		}
		var res hook
		if kind == "resolve" {
			// Held until our program releases the promise: the message bounds what it holds.
			res = s.holdValue(newValueHookPlain(v, true, !ev.impure, s), int64(len(raw)))
		} else {
			e, ok := v.(*Error)
			if !ok {
				releaseValue(v)
				e = &Error{Name: "Error", Message: "rejected with a non-error value"}
			}
			res = errorHook{e}
		}
		s.settleImport(id, res)
		return nil
	case "release":
		if len(msg) != 3 {
			return s.badMessage(raw)
		}
		fid, ok := msg[1].(float64)
		fn, ok2 := msg[2].(float64)
		id, ok3 := checkID(fid)
		if !ok || !ok2 || !ok3 || fn != math.Trunc(fn) {
			return s.badMessage(raw)
		}
		return s.releaseExport(id, int(fn))
	case "abort":
		if len(msg) < 2 {
			return s.badMessage(raw)
		}
		v, err := ev.evaluate(msg[1])
		var reason error = &Error{Name: "Error", Message: "peer aborted the session"}
		if err == nil {
			if e, ok := v.(*Error); ok {
				reason = e
			} else {
				releaseValue(v)
			}
		}
		s.shutdown(reason, false)
		return nil
	}
	return s.badMessage(raw)
}

// pushCall handles a push message of the commonest shape (readPushedCall), read without a tree:
// what evaluating ["pipeline", id, path, args] does, without the pending value. An argument that
// is an earlier call's promise, settled to a scalar already (as in a chain of calls, each run as
// it arrived), is replaced by its value here, as the evaluator would, without building the
// ["pipeline", ID] array first.
func (s *Session) pushCall(pc *pushedCall, size int) error {
	id, err := s.reservePush(size)
	if err != nil {
		return err
	}
	h, err := s.getExport(pc.id)
	if err != nil {
		return err
	}
	for i := range pc.na {
		if pc.refs&(1<<i) == 0 {
			continue
		}
		ref, err := s.getExport(float64(pc.pipes[i]))
		if err != nil {
			return err
		}
		if v, ok := settledPlain(ref); ok && isScalar(v) {
			pc.vals[i] = v
			pc.refs &^= 1 << i
		}
	}
	path, args := pc.tree()
	ev := evaluator{im: s, lim: s.lim()}
	r, err := ev.call(h, path, args, args)
	if err != nil {
		return err
	}
	s.exportPushed(id, r, false, size)
	return nil
}

// isScalar reports whether v is a JSON scalar, which evaluating leaves as it is.
func isScalar(v any) bool {
	switch v.(type) {
	case nil, float64, string, bool:
		return true
	}
	return false
}

// reservePush takes the export ID of the next push or stream message, of size bytes: its entry
// is charged the message, which bounds what the call's arguments or the pushed value hold, until
// the peer releases it (exportPushed).
func (s *Session) reservePush(size int) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitExportLocked(entryCost + int64(size)); err != nil {
		return 0, err
	}
	id := s.nextPushID
	s.nextPushID++
	return id, nil
}

// exportPushed exports h, the result of a push or stream message of size bytes, under the ID
// reservePush gave.
func (s *Session) exportPushed(id int64, h hook, autoRelease bool, size int) {
	s.mu.Lock()
	s.exports[id] = &exportEntry{h: h, refs: 1, autoRelease: autoRelease, held: entryCost + int64(size)}
	s.mu.Unlock()
}

// settleImport resolves the import id with res (taking ownership), and releases it on the peer.
func (s *Session) settleImport(id int64, res hook) {
	s.mu.Lock()
	e := s.imports[id]
	if e == nil || e.res != nil || e.gone {
		s.mu.Unlock()
		res.release() // a resolution we no longer want
		return
	}
	e.res = res
	if e.done != nil {
		s.wokeWaiter = true // see endPass
	}
	e.settled()
	dead := e.localRefs == 0
	s.releaseImportLocked(e)
	s.mu.Unlock()
	if dead {
		res.release()
	}
}
