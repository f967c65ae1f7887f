package capnweb

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// A json.RawMessage is sent as the JSON value it holds: the same wire bytes as the value
// json.Unmarshal makes of it, except that object keys keep their order, and it fails as
// invalid JSON fails.

func TestEncodeRawMessage(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, wire string }{
		{`null`, `null`},
		{` true `, `true`},
		{`false`, `false`},
		{`-12.5e+3`, `-12.5e+3`},
		{`0`, `0`},
		{`1e400`, `1e400`}, // JSON; both readers make it Infinity, as JSON.parse does
		{`"a\"b\\c\u00e9\n/ü"`, `"a\"b\\c\u00e9\n/ü"`},
		{`[]`, `[[]]`},
		{`[1, [2, []], {"a": [3]}]`, `[[1,[[2,[[]]]],{"a":[[3]]}]]`},
		{"{ \"b\" : 1 ,\n\t\"a\":{} }", `{"b":1,"a":{}}`},
		{`{"task":{"id":"t","history":[{"parts":[{"text":"hi"}]}]}}`, `{"task":{"id":"t","history":[[{"parts":[[{"text":"hi"}]]}]]}}`},
		{`["date", 0]`, `[["date",0]]`}, // data, not an expression
	}
	for _, tt := range tests {
		got, err := encodeForTest(json.RawMessage(tt.raw))
		if err != nil || got != tt.wire {
			t.Errorf("encode(json.RawMessage(%s)) = %s, %v; want %s", tt.raw, got, err, tt.wire)
			continue
		}
		// What the peer reads is what it reads for the same value as a tree (Objects, slices).
		if tt.raw == `1e400` {
			continue // a tree holds Infinity, sent as ["inf"]
		}
		plain, err := parseJSON([]byte(tt.raw), 64)
		if err != nil {
			t.Fatal(err)
		}
		want, err := evaluateForTest(mustEncode(t, plain))
		if err != nil {
			t.Fatal(err)
		}
		read, err := evaluateForTest(got)
		if err != nil {
			t.Fatalf("evaluate(%s): %v", got, err)
		}
		if d := cmp.Diff(want, read); d != "" {
			t.Errorf("json.RawMessage(%s) reads differently from its value (-value +raw):\n%s", tt.raw, d)
		}
	}
}

func mustEncode(t *testing.T, v any) string {
	t.Helper()
	s, err := encodeForTest(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEncodeRawMessageRejects(t *testing.T) {
	t.Parallel()
	bad := []string{
		``, ` `, `{`, `}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1,}`, `1 2`, `[1] x`,
		`tru`, `nul`, `01`, `-`, `1.`, `1e`, `.5`, `+1`, `0x1`, `NaN`, `Infinity`,
		`"abc`, `"a\qb"`, `"\u12"`, `"\u12g4"`, "\"a\x01b\"", "\"\xff\"", "[\"\xc3\"]",
		`'a'`, `[1}`, `{"a":1]`,
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[{"x":{"k":1,"k":[]}}]`, // duplicate keys, which the Go reader refuses
		strings.Repeat("[", maxEncodeDepth+2) + strings.Repeat("]", maxEncodeDepth+2),
	}
	for _, raw := range bad {
		got, err := encodeForTest(json.RawMessage(raw))
		if err == nil {
			t.Errorf("encode(json.RawMessage(%q)) = %s, want an error", truncate(raw, 40), truncate(got, 40))
			continue
		}
		if !strings.Contains(err.Error(), "json.RawMessage") {
			t.Errorf("encode(json.RawMessage(%q)) error = %v, want one naming json.RawMessage", truncate(raw, 40), err)
		}
	}
	// Objects with many keys: a duplicate is found however far apart.
	var many strings.Builder
	many.WriteString(`{`)
	for i := range 40 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	if _, err := encodeForTest(json.RawMessage(many.String() + `"last":[]}`)); err != nil {
		t.Errorf("encode(40 keys): %v", err)
	}
	if _, err := encodeForTest(json.RawMessage(many.String() + `"k\u0033":[]}`)); err == nil {
		t.Errorf("encode(40 keys, then k3 again): no error")
	}
	// Nesting up to the encoder's depth is fine.
	ok := strings.Repeat("[", maxEncodeDepth-1) + strings.Repeat("]", maxEncodeDepth-1)
	if _, err := encodeForTest(json.RawMessage(ok)); err != nil {
		t.Errorf("encode(%d nested arrays): %v", maxEncodeDepth-1, err)
	}
}

// FuzzEncodeRawMessage: what json.Valid accepts (in valid UTF-8, without duplicate keys)
// encodes, and reads back as the value it holds (as json.Unmarshal makes it, but in order: as
// our reader makes it); anything else fails.
func FuzzEncodeRawMessage(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":[]}],"c":"\u00e9"}`, `[]`, `"x"`, `[1,]`, `{"a" : [ true , null ] }`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if nesting(raw) > 200 {
			return // near the depth limits, which count a little differently
		}
		got, err := encodeForTest(json.RawMessage(raw))
		var std any
		uerr := json.Unmarshal(raw, &std)
		plain, perr := parseJSON(raw, 1000) // our reader: no duplicate keys, keys in order
		valid := json.Valid(raw) && utf8.Valid(raw) && perr == nil
		if (err == nil) != valid {
			t.Fatalf("encode(json.RawMessage(%q)) error = %v, want error: %v", raw, err, !valid)
		}
		if err != nil || uerr != nil {
			return // json.Unmarshal refuses numbers out of float64's range; JSON.parse does not
		}
		want, err := evaluateForTest(mustEncode(t, plain))
		if err != nil {
			return // deeper than the reader takes
		}
		read, err := evaluateForTest(got)
		if err != nil {
			t.Fatalf("evaluate(%s): %v", got, err)
		}
		if d := cmp.Diff(want, read); d != "" {
			t.Fatalf("json.RawMessage(%s) reads differently from its value (-value +raw):\n%s", raw, d)
		}
	})
}

// nesting is the deepest nesting of arrays and objects in valid JSON b.
func nesting(b []byte) int {
	depth, most, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '[' || c == '{':
			depth++
			most = max(most, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return most
}

// BenchmarkEncodeRawMessage: an A2A task, as the binding sends it, into a resolve message.
func BenchmarkEncodeRawMessage(b *testing.B) {
	raw := json.RawMessage(`{"task":{"id":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f","contextId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e90","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-05-01T12:00:00.123456789Z"},"artifacts":[{"artifactId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e91","parts":[{"text":"echo: task hello"}]}],"history":[{"messageId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e92","contextId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e90","taskId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f","role":"ROLE_USER","parts":[{"text":"task hello"}]}],"metadata":{"a2awebcap.seq":3}}}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		e := encoder{b: make([]byte, 0, 64)}
		e.b = append(e.b, `["resolve",1,`...)
		if err := e.value(raw, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzRawLookup: reading a property out of a json.RawMessage without a tree (rawCheck, then
// rawLookup) gives what parsing it and reading the property of the tree gives, and fails where
// that fails.
func FuzzRawLookup(f *testing.F) {
	for _, s := range []string{`{"task":{"id":"t1","n":[1,{"a":2}]},"x":null}`, `[1,"two",{"3":4}]`, `{"a":1,"a":2}`,
		`{"\u0061":1,"b":[]}`, `{"constructor":1}`, `"str"`, `[`, `{"a":{}} x`} {
		f.Add([]byte(s), "task", int8(1))
	}
	f.Fuzz(func(t *testing.T, raw []byte, key string, idx int8) {
		if nesting(raw) > 200 {
			return // near the depth limits, which count a little differently
		}
		for _, part := range []any{key, float64(idx), float64(idx) + 0.5} {
			want, werr := rawValue(json.RawMessage(raw))
			cerr := rawCheck(raw)
			if (werr == nil) != (cerr == nil) {
				t.Fatalf("rawCheck(%q) = %v, parsing says %v", raw, cerr, werr)
			}
			if cerr != nil {
				continue
			}
			want = property(want, part)
			got := rawLookup(raw, part)
			if rm, ok := got.(json.RawMessage); ok {
				if got, werr = rawValue(rm); werr != nil {
					t.Fatalf("rawLookup(%q, %v) = %q, which does not parse: %v", raw, part, rm, werr)
				}
			}
			if d := diffValues(want, got); d != "" {
				t.Fatalf("rawLookup(%q, %v) differs from the tree's property (-tree +lookup):\n%s", raw, part, d)
			}
		}
	})
}

// BenchmarkRawLookup: the pipelined read of an A2A sendMessage result's task id (sent.task.id):
// by lookup, and by parsing the whole result as before.
func BenchmarkRawLookup(b *testing.B) {
	raw := json.RawMessage(taskResolve[len(`["resolve",7,`) : len(taskResolve)-1])
	raw, err := jsonOfWire(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rawCheck(raw) != nil || rawLookup(rawLookup(raw, "task").(json.RawMessage), "id") != "019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f" {
				b.Fatal("lookup failed")
			}
		}
	})
	b.Run("tree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := rawValue(raw)
			if err != nil || property(property(v, "task"), "id") != "019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f" {
				b.Fatal("tree failed")
			}
		}
	})
}

// jsonOfWire turns a wire expression of plain data into its JSON.
func jsonOfWire(wire []byte) (json.RawMessage, error) {
	v, _, ok := captureJSON(wire, 0, DefaultLimits.MaxDepth)
	if !ok {
		return nil, errors.New("not plain data")
	}
	return json.RawMessage(v), nil
}
