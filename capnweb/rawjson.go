package capnweb

// json.RawMessage values: JSON an application already holds, sent as the value it holds without
// building that value out of maps and slices first (see the package doc).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/a2awebcap/a2awebcap/internal/jsonstr"
)

// rawMessage appends the JSON value raw holds as the wire expression of the same value: arrays
// escaped, whitespace dropped, everything else copied. It checks raw on the way: exactly one
// JSON value, in valid UTF-8, without duplicate object keys (the Go reader refuses them), nested
// no deeper than any other value may be. On error e.b is left as it was.
func (e *encoder) rawMessage(raw json.RawMessage, depth int) error {
	if !utf8.Valid(raw) {
		return typeErrorf("json.RawMessage is not valid UTF-8")
	}
	// One growth up front: the copy is as long as raw, plus two bytes per array, less any
	// whitespace.
	t := rawTranscoder{in: raw, out: slices.Grow(e.b, len(raw)+len(raw)/16+8), limit: maxEncodeDepth + 1}
	if err := t.value(depth); err != nil {
		return err
	}
	if t.ws(); t.i < len(t.in) {
		return t.errorf("data after the value")
	}
	t.flush(len(t.in))
	e.b = t.out
	return nil
}

// rawTranscoder copies one JSON value from in to out in wire form, or, with unwrap, one wire
// expression of plain data to out as JSON (receivedJSON). It reads in byte by byte, but copies
// it in runs: what is not whitespace or a bracket of an array is copied as it is, when the run
// ends (flush).
type rawTranscoder struct {
	in   []byte
	i    int // the next byte to read
	mark int // the first byte of in not copied yet
	out  []byte
	// limit: values may nest this deep at most (depth 0 is the value itself).
	limit int
	// check: out is not written; the input is only checked (rawCheck, rawLookup).
	check bool
	// unwrap: in is a wire expression, whose every array must be an escaped one ([[...]], out
	// as [...]) and whose object keys must not be ones the evaluator drops (blockedNames); any
	// other input, valid or not, is refused with errNotPlain.
	unwrap bool
}

// errNotPlain: an unwrapping rawTranscoder met something that is not plain data (a special
// form, a dropped key), or an input error; the message is then read the usual way.
var errNotPlain = errors.New("capnweb: not plain data")

// flush copies in[mark:to] to out.
func (t *rawTranscoder) flush(to int) {
	if !t.check {
		t.out = append(t.out, t.in[t.mark:to]...)
	}
	t.mark = to
}

func (t *rawTranscoder) errorf(what string) error {
	if t.unwrap {
		return errNotPlain
	}
	return typeErrorf("json.RawMessage is not valid JSON: %s at offset %d", what, t.i)
}

// ws skips whitespace, which is not copied.
func (t *rawTranscoder) ws() {
	if t.i >= len(t.in) || !isSpace(t.in[t.i]) {
		return
	}
	t.flush(t.i)
	for t.i < len(t.in) && isSpace(t.in[t.i]) {
		t.i++
	}
	t.mark = t.i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (t *rawTranscoder) value(depth int) error {
	if depth >= t.limit {
		if t.unwrap {
			return errNotPlain
		}
		return typeErrorf("json.RawMessage nests deeper than %d", maxEncodeDepth)
	}
	t.ws()
	if t.i >= len(t.in) {
		return t.errorf("unexpected end")
	}
	switch c := t.in[t.i]; {
	case c == '{':
		return t.object(depth)
	case c == '[':
		return t.array(depth)
	case c == '"':
		_, _, err := t.str()
		return err
	case c == 't':
		return t.literal("true")
	case c == 'f':
		return t.literal("false")
	case c == 'n':
		return t.literal("null")
	case c == '-' || isDigit(c):
		return t.number()
	}
	return t.errorf(fmt.Sprintf("unexpected %q", t.in[t.i]))
}

// array copies an array as an escaped one: [[...]].
func (t *rawTranscoder) array(depth int) error {
	if t.unwrap {
		return t.escapedArray(depth)
	}
	t.i++
	t.flush(t.i)
	if !t.check {
		t.out = append(t.out, '[')
	}
	if t.ws(); t.i < len(t.in) && t.in[t.i] == ']' {
		t.closeArray()
		return nil
	}
	for {
		if err := t.value(depth + 1); err != nil {
			return err
		}
		if t.ws(); t.i >= len(t.in) {
			return t.errorf("unexpected end in an array")
		}
		switch t.in[t.i] {
		case ',':
			t.i++
		case ']':
			t.closeArray()
			return nil
		default:
			return t.errorf("want , or ] in an array")
		}
	}
}

// closeArray writes the ] at t.i as ]].
func (t *rawTranscoder) closeArray() {
	t.flush(t.i)
	t.i++
	t.mark = t.i
	if !t.check {
		t.out = append(t.out, "]]"...)
	}
}

// smallObject: objects with up to this many keys look for a duplicate key among the keys seen
// so far, without allocating; larger ones use a map.
const smallObject = 16

func (t *rawTranscoder) object(depth int) error {
	t.i++
	if t.ws(); t.i < len(t.in) && t.in[t.i] == '}' {
		t.i++
		return nil
	}
	var small [smallObject][]byte
	keys := small[:0]
	var seen map[string]struct{}
	for {
		if t.ws(); t.i >= len(t.in) || t.in[t.i] != '"' {
			return t.errorf("want a key")
		}
		at := t.i
		k, escaped, err := t.str()
		if err == nil && escaped {
			k, err = unescapeJSON(k)
		}
		if err != nil {
			return err
		}
		if t.unwrap && droppedKey(k) {
			return errNotPlain
		}
		dup := false
		if seen == nil {
			for _, o := range keys {
				if dup = bytes.Equal(o, k); dup {
					break
				}
			}
			if keys = append(keys, k); len(keys) == smallObject {
				seen = make(map[string]struct{}, 2*smallObject)
				for _, o := range keys {
					seen[string(o)] = struct{}{}
				}
			}
		} else {
			_, dup = seen[string(k)]
			seen[string(k)] = struct{}{}
		}
		if dup {
			t.i = at
			return t.errorf(fmt.Sprintf("duplicate key %q", truncate(string(k), 64)))
		}
		if t.ws(); t.i >= len(t.in) || t.in[t.i] != ':' {
			return t.errorf("want : after a key")
		}
		t.i++
		if err := t.value(depth + 1); err != nil {
			return err
		}
		if t.ws(); t.i >= len(t.in) {
			return t.errorf("unexpected end in an object")
		}
		switch t.in[t.i] {
		case ',':
			t.i++
		case '}':
			t.i++
			return nil
		default:
			return t.errorf("want , or } in an object")
		}
	}
}

// str reads the string at t.i and returns the bytes between its quotes, and whether they hold
// escapes (only keys are read further, to compare them).
func (t *rawTranscoder) str() (s []byte, escaped bool, err error) {
	start := t.i
	t.i++
	for {
		in, i := t.in, t.i // locals: the loop runs without reloading fields
		for i < len(in) && strPlain[in[i]] {
			i++
		}
		t.i = i
		if t.i >= len(t.in) {
			return nil, false, t.errorf("unterminated string")
		}
		switch c := t.in[t.i]; {
		case c == '"':
			t.i++
			return t.in[start+1 : t.i-1], escaped, nil
		case c == '\\':
			escaped = true
			if t.i+1 >= len(t.in) {
				return nil, false, t.errorf("unterminated string")
			}
			switch t.in[t.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				t.i += 2
			case 'u':
				if t.i+6 > len(t.in) || !isHex(t.in[t.i+2]) || !isHex(t.in[t.i+3]) || !isHex(t.in[t.i+4]) || !isHex(t.in[t.i+5]) {
					return nil, false, t.errorf(`bad \u escape`)
				}
				t.i += 6
			default:
				return nil, false, t.errorf("bad escape")
			}
		default:
			return nil, false, t.errorf("control character in a string")
		}
	}
}

// strPlain marks the bytes a string holds as they are: not a quote, a backslash or a control
// character.
var strPlain = func() (a [256]bool) {
	for c := 0x20; c < 256; c++ {
		a[c] = c != '"' && c != '\\'
	}
	return a
}()

// unescapeJSON reads the escapes of s, the inside of a valid JSON string, lone surrogates kept
// as the wire reader keeps them.
func unescapeJSON(s []byte) ([]byte, error) {
	out, err := jsonstr.UnescapeWTF8(s)
	if err != nil {
		return nil, typeErrorf("json.RawMessage is not valid JSON: %v", err)
	}
	return out, nil
}

func (t *rawTranscoder) literal(word string) error {
	if !bytes.HasPrefix(t.in[t.i:], []byte(word)) {
		return t.errorf("bad literal")
	}
	t.i += len(word)
	return nil
}

// number reads a number as JSON writes it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (t *rawTranscoder) number() error {
	end, ok := jsonstr.NumberEnd(t.in, t.i)
	t.i = end
	if !ok {
		return t.errorf("bad number")
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

// rawCheck checks that raw holds what rawMessage takes — one JSON value, in valid UTF-8,
// without duplicate keys, nested no deeper than the encoder goes — and returns rawMessage's
// error if not. It writes nothing.
func rawCheck(raw json.RawMessage) error {
	if !utf8.Valid(raw) {
		return typeErrorf("json.RawMessage is not valid UTF-8")
	}
	t := rawTranscoder{in: raw, limit: maxEncodeDepth + 1, check: true}
	if err := t.value(0); err != nil {
		return err
	}
	if t.ws(); t.i < len(t.in) {
		return t.errorf("data after the value")
	}
	return nil
}

// rawLookup reads one property (as property does on the tree) out of raw, which rawCheck
// passed, without building the tree: a member of an object, an element of an array, or
// Undefined. An object or array found is returned as a json.RawMessage (a slice of raw), a
// scalar as its value.
func rawLookup(raw json.RawMessage, part any) any {
	name, ok := pathName(part)
	if !ok || blockedNames[name] {
		return Undefined
	}
	t := rawTranscoder{in: raw, limit: maxEncodeDepth + 1, check: true}
	found := func() any {
		t.ws()
		start := t.i
		if t.value(0) != nil {
			return Undefined // cannot happen: raw passed rawCheck
		}
		v := raw[start:t.i]
		if v[0] == '{' || v[0] == '[' {
			return v
		}
		pv, err := parseJSON(v, 1)
		if err != nil {
			return Undefined
		}
		return pv
	}
	switch t.ws(); {
	case t.i < len(raw) && raw[t.i] == '{':
		t.i++
		for t.ws(); t.i < len(raw) && raw[t.i] == '"'; t.ws() {
			k, escaped, err := t.str()
			if err == nil && escaped {
				k, err = unescapeJSON(k)
			}
			if err != nil {
				return Undefined
			}
			t.ws()
			t.i++ // ':'
			if string(k) == name {
				return found()
			}
			if t.value(1) != nil {
				return Undefined
			}
			if t.ws(); t.i < len(raw) && raw[t.i] == ',' {
				t.i++
			}
		}
	case t.i < len(raw) && raw[t.i] == '[':
		f, ok := part.(float64)
		if !ok || f < 0 || f != float64(int(f)) {
			return Undefined
		}
		t.i++
		for n := 0; ; n++ {
			if t.ws(); t.i >= len(raw) || raw[t.i] == ']' {
				return Undefined
			}
			if n == int(f) {
				return found()
			}
			if t.value(1) != nil {
				return Undefined
			}
			if t.ws(); t.i < len(raw) && raw[t.i] == ',' {
				t.i++
			}
		}
	}
	return Undefined
}

// rawValue returns the value a json.RawMessage holds, parsed, and any other value as it is:
// property reads, .map() and Decode look into a json.RawMessage.
func rawValue(v any) (any, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		return v, nil
	}
	if !utf8.Valid(raw) {
		return nil, typeErrorf("json.RawMessage is not valid UTF-8")
	}
	pv, err := parseJSON(raw, maxEncodeDepth+1)
	if err != nil {
		return nil, typeErrorf("json.RawMessage is not valid JSON: %v", err)
	}
	return pv, nil
}
