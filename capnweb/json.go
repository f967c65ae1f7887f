package capnweb

// A strict JSON reader and a small JSON writer for the wire.
//
// The reader exists because encoding/json is too lenient for a hostile peer: it accepts duplicate
// object keys (last one wins, which lets a message smuggle a second value past a checker) and has
// no depth limit. This one rejects duplicate keys, bounds nesting depth, and produces the generic
// tree the evaluator walks: nil, bool, float64, string, []any, Object.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/a2awebcap/a2awebcap/internal/jsonstr"
)

type jsonReader struct {
	data     []byte
	pos      int
	maxDepth int
	// stack holds the elements of the arrays being read, innermost last, so that each array is
	// allocated once, at its final length, instead of growing by appends.
	stack []any
	// strs, when not nil, holds short strings already read (method names, object keys), each
	// with its interface value: a string read again costs no allocation.
	strs map[string]any
	// ask, when set, says which values of a resolve or a pushed call their consumer wants as
	// JSON: those are read as receivedJSON when they are plain data (see captureJSON).
	ask     jsonWanter
	site    captureSite
	at      [2]int // the index of the element being read at depths 0 and 1
	argMask uint64 // site captureArgs: the arguments wanted as JSON (bit i: argument i)
}

// jsonWanter says which values of a message are wanted as JSON, not as trees: the session,
// which knows who consumes them.
type jsonWanter interface {
	// maxDepth is the evaluator's MaxDepth.
	maxDepth() int
	// resolveJSON reports whether the value of a resolve of import id is wanted as JSON.
	resolveJSON(id any) bool
	// argsJSON returns which arguments of a call to export id at path are wanted as JSON:
	// bit i for argument i.
	argsJSON(id, path any) uint64
}

// captureSite says which values of a message the reader may capture.
type captureSite uint8

const (
	captureResolve captureSite = iota + 1 // ["resolve", id, VALUE]
	captureArgs                           // ["push", ["pipeline", id, path, [ARG, ...]]]
)

// Interning bounds: strings up to maxInternLen bytes, up to maxInterned of them per session.
const (
	maxInternLen = 32
	maxInterned  = 128
)

// smallInts are the numbers 0 to 255 in interfaces, made once.
var smallInts = func() (t [256]any) {
	for i := range t {
		t[i] = float64(i)
	}
	return t
}()

// parseJSON parses exactly one JSON value (surrounding whitespace allowed).
func parseJSON(data []byte, maxDepth int) (any, error) {
	v, _, err := parseJSONScratch(data, maxDepth, nil, nil)
	return v, err
}

// parseJSONScratch is parseJSON with a reusable scratch stack and string table (strs, may be
// nil): it returns the stack, emptied, for the next call (the session keeps both between
// messages).
func parseJSONScratch(data []byte, maxDepth int, stack []any, strs map[string]any) (any, []any, error) {
	r := jsonReader{data: data, maxDepth: maxDepth, stack: stack[:0], strs: strs}
	v, err := r.value(0)
	stack, err = r.end(err)
	if err != nil {
		return nil, stack, err
	}
	return v, stack, nil
}

// end finishes a parse that err ended (nil: the value was read): it checks that nothing but
// space follows, and returns the scratch stack, emptied, cleared of references into the
// message, and dropped if it grew past maxScratch.
func (r *jsonReader) end(err error) ([]any, error) {
	clear(r.stack[:cap(r.stack)])
	if cap(r.stack) > maxScratch {
		r.stack = nil
	}
	if err == nil {
		r.skipSpace()
		if r.pos != len(r.data) {
			err = r.errorf("unexpected data after JSON value")
		}
	}
	return r.stack[:0], err
}

// maxScratch bounds the scratch stack a session keeps between messages.
const maxScratch = 1024

func (r *jsonReader) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", r.pos, fmt.Sprintf(format, args...))
}

func (r *jsonReader) skipSpace() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

func (r *jsonReader) value(depth int) (any, error) {
	if depth >= r.maxDepth {
		return nil, fmt.Errorf("message exceeds maximum nesting depth of %d", r.maxDepth)
	}
	r.skipSpace()
	if r.pos >= len(r.data) {
		return nil, r.errorf("unexpected end of input")
	}
	switch c := r.data[r.pos]; {
	case c == '{':
		return r.object(depth)
	case c == '[':
		return r.array(depth)
	case c == '"':
		if v, ok := r.shortString(); ok {
			return v, nil
		}
		return r.string()
	case c == 't':
		return true, r.literal("true")
	case c == 'f':
		return false, r.literal("false")
	case c == 'n':
		return nil, r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return r.number()
	default:
		return nil, r.errorf("unexpected character %q", c)
	}
}

func (r *jsonReader) literal(word string) error {
	if len(r.data)-r.pos < len(word) || string(r.data[r.pos:r.pos+len(word)]) != word {
		return r.errorf("invalid literal")
	}
	r.pos += len(word)
	return nil
}

// object reads an object as an Object, its properties in order. While it reads, its keys and
// values are on the stack, in pairs, from base.
func (r *jsonReader) object(depth int) (any, error) {
	r.pos++ // '{'
	base := len(r.stack)
	r.skipSpace()
	if r.pos < len(r.data) && r.data[r.pos] == '}' {
		r.pos++
		return Object{}, nil
	}
	var seen map[string]struct{} // the keys, once there are many
	for {
		r.skipSpace()
		if r.pos >= len(r.data) || r.data[r.pos] != '"' {
			return nil, r.errorf("expected object key")
		}
		var k string
		ka, ok := r.shortString() // an interned key costs no allocation on the stack
		if ok {
			k = ka.(string)
		} else {
			var err error
			if k, err = r.string(); err != nil {
				return nil, err
			}
			ka = k
		}
		if r.hasKey(base, k, &seen) {
			return nil, r.errorf("duplicate object key %q", truncate(k, 64))
		}
		r.skipSpace()
		if r.pos >= len(r.data) || r.data[r.pos] != ':' {
			return nil, r.errorf("expected ':'")
		}
		r.pos++
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		r.stack = append(r.stack, ka, v)
		r.skipSpace()
		if r.pos >= len(r.data) {
			return nil, r.errorf("unexpected end of input")
		}
		switch r.data[r.pos] {
		case ',':
			r.pos++
		case '}':
			r.pos++
			o := make(Object, (len(r.stack)-base)/2)
			for i := range o {
				o[i] = Prop{Key: r.stack[base+2*i].(string), Value: r.stack[base+2*i+1]}
			}
			r.stack = r.stack[:base]
			return o, nil
		default:
			return nil, r.errorf("expected ',' or '}'")
		}
	}
}

// fewKeys: an object with fewer keys than this is checked for a duplicate by comparing with
// each; past it, the keys go into a set.
const fewKeys = 16

// hasKey reports whether the object being read (its keys and values on the stack from base)
// has the key k already. Past fewKeys keys it keeps them in *seen, adding k.
func (r *jsonReader) hasKey(base int, k string, seen *map[string]struct{}) bool {
	if n := (len(r.stack) - base) / 2; n < fewKeys {
		for i := base; i < len(r.stack); i += 2 {
			if r.stack[i].(string) == k {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*fewKeys)
		for i := base; i < len(r.stack); i += 2 {
			(*seen)[r.stack[i].(string)] = struct{}{}
		}
	}
	if _, ok := (*seen)[k]; ok {
		return true
	}
	(*seen)[k] = struct{}{}
	return false
}

func (r *jsonReader) array(depth int) (any, error) {
	base := len(r.stack)
	if err := r.elems(depth); err != nil {
		return nil, err
	}
	a := make([]any, len(r.stack)-base)
	copy(a, r.stack[base:])
	r.stack = r.stack[:base]
	return a, nil
}

// elems reads an array and leaves its elements on top of the stack.
func (r *jsonReader) elems(depth int) error {
	r.pos++ // '['
	r.skipSpace()
	if r.pos < len(r.data) && r.data[r.pos] == ']' {
		r.pos++
		return nil
	}
	for n := 0; ; n++ {
		v, err := r.elem(depth, n)
		if err != nil {
			return err
		}
		r.stack = append(r.stack, v)
		r.skipSpace()
		if r.pos >= len(r.data) {
			return r.errorf("unexpected end of input")
		}
		switch r.data[r.pos] {
		case ',':
			r.pos++
		case ']':
			r.pos++
			return nil
		default:
			return r.errorf("expected ',' or ']'")
		}
	}
}

// elem reads the element n of an array at depth: as receivedJSON when it is a value its
// consumer wants as JSON (ask) and plain data.
func (r *jsonReader) elem(depth, n int) (any, error) {
	if r.site != 0 {
		if depth < len(r.at) {
			r.at[depth] = n
		}
		// The elements read so far are on the stack: ["resolve", id] when the value comes,
		// ["push", "pipeline", id, path] when the arguments do.
		last := func(k int) any { return r.stack[len(r.stack)-k] }
		limit := 0
		switch {
		case r.site == captureResolve && depth == 0 && n == 2:
			if r.ask.resolveJSON(last(1)) {
				limit = r.ask.maxDepth() // evaluated at depth 0
			}
		case r.site == captureArgs && depth == 1 && n == 3 && r.at[0] == 1:
			r.argMask = r.ask.argsJSON(last(2), last(1))
		case r.site == captureArgs && depth == 2 && r.at[0] == 1 && r.at[1] == 3 && n < 64 && r.argMask&(1<<n) != 0:
			limit = r.ask.maxDepth() - 1 // each argument is evaluated at depth 1
		}
		if limit > 0 {
			if r.skipSpace(); r.pos < len(r.data) && (r.data[r.pos] == '{' || r.data[r.pos] == '[') {
				if v, end, ok := captureJSON(r.data, r.pos, limit); ok {
					r.pos = end
					return v, nil
				}
			}
		}
	}
	return r.value(depth + 1)
}

// parseMessage is parseJSONScratch for a message: a JSON array, whose elements it stores in
// dst instead of allocating the array itself. It returns how many there are, or -1 when the
// input is JSON but not an array of at most len(dst) elements.
//
// With ask (nil: never), the value of a resolve message, and the arguments of a call a push
// message makes, are read as receivedJSON when ask says they are wanted as JSON and they are
// plain data.
func parseMessage(data []byte, maxDepth int, stack []any, strs map[string]any, dst *[4]any, ask jsonWanter) (int, []any, error) {
	r := jsonReader{data: data, maxDepth: maxDepth, stack: stack[:0], strs: strs, ask: ask}
	switch {
	case ask == nil:
	case bytes.HasPrefix(data, []byte(`["resolve",`)):
		r.site = captureResolve
	case bytes.HasPrefix(data, []byte(`["push",["pipeline",`)):
		r.site = captureArgs
	}
	r.skipSpace()
	n := -1
	var err error
	if r.pos < len(r.data) && r.data[r.pos] == '[' {
		if err = r.elems(0); err == nil && len(r.stack) <= len(dst) {
			n = copy(dst[:], r.stack)
		}
	} else {
		_, err = r.value(0)
	}
	stack, err = r.end(err)
	if err != nil {
		clear(dst[:])
		return 0, stack, err
	}
	return n, stack, nil
}

// pushedCall is a push message of the commonest shape, as readPushedCall reads it: a call on
// the export id, whose path is names[:np] and whose arguments are vals[:na], where an argument
// whose bit is set in refs is an earlier call's promise, ["pipeline",pipes[i]], and its vals
// entry is nil. Kept on the caller's stack, it costs no allocation.
type pushedCall struct {
	id     float64
	np, na int
	refs   uint8
	names  [8]any
	vals   [8]any
	pipes  [8]int64
}

// tree returns the call's path and arguments as the generic reader builds them, promises as
// ["pipeline",ID] arrays, in one allocation.
func (c *pushedCall) tree() (path, args []any) {
	buf := make([]any, c.np+c.na)
	copy(buf, c.names[:c.np])
	copy(buf[c.np:], c.vals[:c.na])
	for i := range c.na {
		if c.refs&(1<<i) != 0 {
			buf[c.np+i] = []any{"pipeline", float64(c.pipes[i])}
		}
	}
	return buf[:c.np:c.np], buf[c.np:]
}

// readPushedCall reads a push message of the commonest shape, a call on an export whose path
// is short strings and whose arguments are scalars or earlier calls' promises
// (["pipeline",ID]), written without spaces —
//
//	["push",["pipeline",ID,["NAME",...],[ARG,...]]]
//
// — into c, without building a tree for the message, and without asking which arguments are
// wanted as JSON (only plain arrays and objects can be). Strings are those shortString takes. It
// reports false for anything else, valid or not, which the generic reader then reads, or
// refuses; whatever it reads, the generic reader reads the same (FuzzReadPushedCall).
func readPushedCall(raw []byte, strs map[string]any, c *pushedCall) bool {
	const prefix = `["push",["pipeline",`
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		return false
	}
	n, k := smallInt(raw[len(prefix):])
	if k == 0 {
		return false
	}
	r := jsonReader{data: raw, pos: len(prefix) + k, strs: strs}
	c.id, c.np, c.na, c.refs = float64(n), 0, 0, 0
	if !r.next(',') || !r.next('[') {
		return false
	}
	for {
		if c.np == len(c.names) || r.pos >= len(raw) || raw[r.pos] != '"' {
			return false
		}
		v, ok := r.shortString()
		if !ok {
			return false
		}
		c.names[c.np], c.np = v, c.np+1
		if r.next(']') {
			break
		}
		if !r.next(',') {
			return false
		}
	}
	if !r.next(',') || !r.next('[') {
		return false
	}
	for !r.next(']') {
		if c.na > 0 && !r.next(',') || c.na == len(c.vals) || r.pos >= len(raw) {
			return false
		}
		var v any
		var err error
		ok := true
		switch ch := raw[r.pos]; {
		case ch == '"':
			v, ok = r.shortString()
		case ch == '-' || ch >= '0' && ch <= '9':
			v, err = r.number()
		case ch == 't':
			v, err = true, r.literal("true")
		case ch == 'f':
			v, err = false, r.literal("false")
		case ch == 'n':
			v, err = nil, r.literal("null")
		case ch == '[':
			// The promise of an earlier call, as a chain of dependent calls passes it.
			const ref = `["pipeline",`
			rest := raw[r.pos:]
			if !bytes.HasPrefix(rest, []byte(ref)) {
				return false
			}
			m, k := smallInt(rest[len(ref):])
			if k == 0 || len(rest) <= len(ref)+k || rest[len(ref)+k] != ']' {
				return false
			}
			c.refs |= 1 << c.na
			c.pipes[c.na] = m
			r.pos += len(ref) + k + 1
		default:
			return false
		}
		if !ok || err != nil {
			return false
		}
		c.vals[c.na], c.na = v, c.na+1
	}
	return string(raw[r.pos:]) == "]]"
}

// next reads c if it comes next.
func (r *jsonReader) next(c byte) bool {
	if r.pos < len(r.data) && r.data[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// shortString reads a short string without escapes or control characters as an interface
// value that costs no allocation — a protocol word (a constant) or a string already in the
// string table, which it adds to while there is room — and reports whether it did; otherwise it
// reads nothing.
func (r *jsonReader) shortString() (any, bool) {
	end := r.pos + 1
	for end < len(r.data) && end-r.pos <= maxInternLen+1 {
		c := r.data[end]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		end++
	}
	if end >= len(r.data) || r.data[end] != '"' {
		return nil, false
	}
	b := r.data[r.pos+1 : end]
	v, ok := keyword(b)
	if !ok && r.strs != nil {
		if v, ok = r.strs[string(b)]; !ok && len(r.strs) < maxInterned && utf8.Valid(b) {
			str := string(b)
			v, ok = str, true
			r.strs[str] = v
		}
	}
	if ok {
		r.pos = end + 1
	}
	return v, ok
}

// smallInt reads an optionally negative integer of 1 to 15 digits without leading zeros (or a
// lone 0) from the start of b, and returns it with the bytes it took (0: none).
func smallInt(b []byte) (int64, int) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	start := i
	var v int64
	for i < len(b) && i-start < 16 && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 15 || (digits > 1 && b[start] == '0') || (neg && v == 0) {
		return 0, 0
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0
	}
	if neg {
		v = -v
	}
	return v, i
}

// keyword returns b, one of the protocol's words, as a constant in an interface.
func keyword(b []byte) (any, bool) {
	var k any
	switch string(b) {
	case "push":
		k = "push"
	case "pull":
		k = "pull"
	case "resolve":
		k = "resolve"
	case "reject":
		k = "reject"
	case "release":
		k = "release"
	case "abort":
		k = "abort"
	case "stream":
		k = "stream"
	case "pipe":
		k = "pipe"
	case "pipeline":
		k = "pipeline"
	case "import":
		k = "import"
	case "export":
		k = "export"
	case "promise":
		k = "promise"
	case "remap":
		k = "remap"
	case "error":
		k = "error"
	case "undefined":
		k = "undefined"
	case "bigint":
		k = "bigint"
	case "date":
		k = "date"
	case "bytes":
		k = "bytes"
	case "writable":
		k = "writable"
	case "readable":
		k = "readable"
	default:
		return nil, false
	}
	return k, true
}

func (r *jsonReader) number() (any, error) {
	start := r.pos
	end, ok := jsonstr.NumberEnd(r.data, r.pos)
	r.pos = end
	if !ok {
		return nil, r.errorf("invalid number")
	}
	if v, n := smallInt(r.data[start:r.pos]); n == r.pos-start {
		// A plain integer of at most 15 digits is exact in a float64: no need for ParseFloat.
		if v >= 0 && v < int64(len(smallInts)) {
			return smallInts[v], nil
		}
		return float64(v), nil
	}
	f, err := strconv.ParseFloat(string(r.data[start:r.pos]), 64)
	if err != nil {
		// Out of range: JSON.parse yields ±Infinity; do the same.
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return f, nil
		}
		return nil, r.errorf("invalid number")
	}
	return f, nil
}

func (r *jsonReader) string() (string, error) {
	r.pos++ // opening quote
	start := r.pos
	// Fast path: no escapes.
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		if c == '"' {
			s := r.data[start:r.pos]
			r.pos++
			if !utf8.Valid(s) {
				return string([]rune(string(s))), nil // replaces invalid bytes with U+FFFD
			}
			return string(s), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", r.errorf("control character in string")
		}
		r.pos++
	}
	buf := append([]byte(nil), r.data[start:r.pos]...)
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		switch {
		case c == '"':
			r.pos++
			if !utf8.Valid(r.data[start : r.pos-1]) {
				// Invalid bytes in the text become U+FFFD; not the lone surrogates escapes
				// stand for, which the WTF-8 of buf keeps (see AppendUnescapedWTF8).
				return sanitizedString(r.data[start : r.pos-1])
			}
			return string(buf), nil
		case c < 0x20:
			return "", r.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			r.pos++
			continue
		}
		var err error
		buf, r.pos, err = jsonstr.AppendUnescapedWTF8(buf, r.data, r.pos)
		switch err {
		case nil:
		case jsonstr.ErrTruncated:
			r.pos = len(r.data)
			return "", r.errorf("unterminated string")
		default:
			return "", r.errorf("%v", err)
		}
	}
	return "", r.errorf("unterminated string")
}

// sanitizedString reads lit, the inside of a string literal already checked, whose text holds
// invalid UTF-8: each invalid byte becomes U+FFFD (escapes are ASCII, and come through).
func sanitizedString(lit []byte) (string, error) {
	out, err := jsonstr.UnescapeWTF8([]byte(string([]rune(string(lit)))))
	return string(out), err
}

// appendJSONString appends s as a JSON string, as JSON.stringify does (see jsonstr.AppendJS).
func appendJSONString(b []byte, s string) []byte { return jsonstr.AppendJS(b, s) }

// appendJSONNumber appends a finite float as JSON.stringify would print it.
func appendJSONNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // also -0, as JSON.stringify prints it
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	// JS prints exponents without a leading zero and with an explicit '+'.
	s := strconv.FormatFloat(f, 'e', -1, 64)
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' {
			mant, exp := s[:i], s[i+1:]
			sign := exp[0]
			exp = exp[1:]
			for len(exp) > 1 && exp[0] == '0' {
				exp = exp[1:]
			}
			b = append(b, mant...)
			b = append(b, 'e', sign)
			return append(b, exp...)
		}
	}
	return append(b, s...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
