package capnweb

// Received plain data kept as JSON: a result that is only data (objects, arrays, strings,
// numbers, booleans, null) is read off the wire into its JSON text, not into maps and slices,
// and becomes a tree only when something needs one. Decoding it into a json.RawMessage costs
// no tree at all (see the package doc).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// receivedJSON is a plain value received from the peer, as JSON text: its wire expression with
// the arrays unescaped and the whitespace dropped. It holds valid UTF-8 JSON with no duplicate
// keys, no key the evaluator drops (blockedNames) and no nesting deeper than the session's
// MaxDepth, so tree cannot fail on it. It is never modified.
//
// A value is captured only where its consumer wants JSON (jsonWanter): the result of a promise
// decoded into a json.RawMessage (markJSON), and the arguments of a Go method's
// json.RawMessage parameters; everything else is read as a tree, at no extra cost. So it lives
// only in the value of a settled import and in the arguments of a call the peer pushed, and
// leaves the package only as a tree (Await, resolveValue, followValue, convertTo), as the wire
// expression again (encoder), or as a json.RawMessage (convertTo).
type receivedJSON []byte

// captureJSON reads the wire expression at data[pos], an object or an escaped array, as
// receivedJSON when it is plain data nested no deeper than limit (the evaluator's MaxDepth). It
// returns the offset after the expression. For anything else, valid or not, ok is false and
// the message is read the usual way, which also reports its errors.
func captureJSON(data []byte, pos, limit int) (v receivedJSON, end int, ok bool) {
	// The JSON is never longer than its wire form: one allocation.
	t := rawTranscoder{in: data, i: pos, mark: pos, out: make([]byte, 0, len(data)-pos), limit: limit, unwrap: true}
	if t.value(0) != nil {
		return nil, pos, false
	}
	t.flush(t.i)
	// The reader replaces invalid UTF-8 with U+FFFD; such a value is read the usual way.
	if !utf8.Valid(t.out) {
		return nil, pos, false
	}
	return receivedJSON(t.out), t.i, true
}

// escapedArray copies the escaped array [[e, ...]] at t.i as the JSON array [e', ...], each
// element an expression of plain data in turn.
func (t *rawTranscoder) escapedArray(depth int) error {
	t.flush(t.i) // the outer bracket is not copied
	t.i++
	t.mark = t.i
	if t.ws(); t.i >= len(t.in) || t.in[t.i] != '[' {
		return errNotPlain // a special form, or an array the evaluator rejects
	}
	t.i++ // the inner bracket is copied with the run
	if t.ws(); t.i < len(t.in) && t.in[t.i] == ']' {
		t.i++
	} else {
		for {
			if err := t.value(depth + 1); err != nil {
				return err
			}
			if t.ws(); t.i >= len(t.in) {
				return errNotPlain
			}
			c := t.in[t.i]
			t.i++
			if c == ']' {
				break
			}
			if c != ',' {
				return errNotPlain
			}
		}
	}
	if t.ws(); t.i >= len(t.in) || t.in[t.i] != ']' {
		return errNotPlain // [[...], more]: not an escape
	}
	t.flush(t.i)
	t.i++
	t.mark = t.i
	return nil
}

// droppedKey reports whether received objects lose the key k: a name in blockedNames, but for
// the three the evaluator keeps.
func droppedKey[K string | []byte](k K) bool {
	if !blockedNames[string(k)] {
		return false
	}
	switch string(k) {
	case "then", "dup", "dispose":
		return false
	}
	return true
}

// tree returns the value as the evaluator would have made it: Objects, slices, strings,
// float64s, booleans and nil, afresh on each call.
func (r receivedJSON) tree() (any, error) {
	// Each level of JSON is one level of the reader: the limit the value was captured under
	// (at most 2*MaxDepth+8, the message's) cannot be reached.
	return parseJSON(r, maxReceivedNesting)
}

// maxReceivedNesting bounds the reader that turns receivedJSON into a tree: above any MaxDepth
// a value could have been captured under (it was read from a message no deeper than this).
const maxReceivedNesting = math.MaxInt32

// materialize returns v as a tree if it is receivedJSON, and v otherwise.
func materialize(v any) (any, error) {
	if r, ok := v.(receivedJSON); ok {
		return r.tree()
	}
	return v, nil
}

// jsonOf returns the JSON text of a received value, for a json.RawMessage: receivedJSON as it
// is (copied), and trees of JSON data as JSON.stringify writes them (undefined members of
// objects left out, undefined elements of arrays as null, an Object's keys in its order, a
// map's sorted), with
// bytes as base64 strings and dates as RFC 3339 strings in UTC, as encoding/json writes
// []byte and time.Time. Values with no JSON form — capabilities, streams, errors, bigints,
// invalid dates, non-finite numbers, URLs, headers — are errors.
func jsonOf(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case receivedJSON:
		return json.RawMessage(bytes.Clone(x)), nil
	case json.RawMessage:
		return x, nil
	}
	b, err := appendJSONOf(nil, v, 0)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

func appendJSONOf(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxEncodeDepth {
		return nil, fmt.Errorf("capnweb: value nests deeper than %d", maxEncodeDepth)
	}
	switch x := v.(type) {
	case nil, undefined:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return appendJSONString(b, x), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("capnweb: %v has no JSON form", x)
		}
		return appendJSONNumber(b, x), nil
	case receivedJSON:
		return append(b, x...), nil
	case []byte:
		return appendBase64(b, x), nil
	case TypedBytes:
		return appendBase64(b, x.Data), nil
	case time.Time:
		b = append(b, '"')
		b = x.UTC().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"'), nil
	case json.RawMessage:
		if !json.Valid(x) {
			return nil, fmt.Errorf("capnweb: json.RawMessage is not valid JSON")
		}
		return append(b, x...), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONOf(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case Object:
		b = append(b, '{')
		first := true
		for _, p := range x {
			if p.Value == Undefined {
				continue // as JSON.stringify leaves it out
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, p.Key)
			b = append(b, ':')
			var err error
			if b, err = appendJSONOf(b, p.Value, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case map[string]any:
		var buf [8]string // the keys of a small object sort without an allocation
		b = append(b, '{')
		first := true
		for _, k := range appendSortedKeys(buf[:0], x) {
			if x[k] == Undefined {
				continue // as JSON.stringify leaves it out
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSONOf(b, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("capnweb: a %s has no JSON form", valueKind(v))
}

func appendBase64(b, data []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, '"')
}

// valueKind names the kind of a received value in errors.
func valueKind(v any) string {
	switch v.(type) {
	case *Stub, *Promise:
		return "capability"
	case *ReadableStream, *WritableStream:
		return "stream"
	case *Error:
		return "error"
	}
	return fmt.Sprintf("%T", v)
}
