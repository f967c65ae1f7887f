package capnweb

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// resolveOf is a resolve message carrying the expression wire.
func resolveOf(wire string) []byte { return []byte(`["resolve",1,` + wire + `]`) }

// captured parses msg as the session does, capturing at MaxDepth, and returns its value element.
func captured(t testing.TB, msg []byte) (any, error) {
	t.Helper()
	var dst [4]any
	n, _, err := parseMessage(msg, 2*DefaultLimits.MaxDepth+8, nil, nil, &dst, DefaultLimits.MaxDepth)
	if err != nil {
		return nil, err
	}
	if n != 3 {
		t.Fatalf("parseMessage(%s) = %d elements, want 3", msg, n)
	}
	return dst[2], nil
}

// TestCaptureJSON: a resolve's value that is plain data is read as its JSON, arrays unescaped;
// anything else is read as before. Either way it evaluates to the same value.
func TestCaptureJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wire string
		json string // "": not captured
	}{
		{`{"a":1}`, `{"a":1}`},
		{` { "a" : [[ 1 , "x" , [[ ]] ]] , "b" : { } } `, `{"a":[1,"x",[]],"b":{}}`},
		{`[[{"text":"hi"},null,true,false,-1.5e3]]`, `[{"text":"hi"},null,true,false,-1.5e3]`},
		{`{"s":"\u00e9\n\"","then":1,"dup":2,"dispose":3}`, `{"s":"\u00e9\n\"","then":1,"dup":2,"dispose":3}`},
		{`{"big":1e400}`, `{"big":1e400}`},
		{`[[]]`, `[]`},
		{`{"é":"ü"}`, `{"é":"ü"}`},
		// Not plain data: read the usual way.
		{`{"a":["undefined"]}`, ""},
		{`{"d":["date",0]}`, ""},
		{`{"a":[["undefined"]]}`, `{"a":["undefined"]}`},
		{`{"a":[[["undefined"]]]}`, ""},
		{`[["x"],1]`, ""},
		{`{"f":["export",-1]}`, ""},
		{`{"toString":1}`, ""},
		{`{"__proto__":{}}`, ""},
		{`{"a":1,"a":2}`, ""},
		{`{"a":1,"\u0061":2}`, ""},
		{`{"a":"` + "\xff" + `"}`, ""},
		{`[]`, ""},
		{`{"a":[1]}`, ""},
		{`{"a":}`, ""},
		{`"string"`, ""},
		{`7`, ""},
	} {
		msg := resolveOf(tc.wire)
		v, perr := captured(t, msg)
		rj, ok := v.(receivedJSON)
		switch {
		case tc.json == "" && ok:
			t.Errorf("%s: captured as %s, want it read as a tree", tc.wire, rj)
			continue
		case tc.json != "" && !ok:
			t.Errorf("%s: not captured (%T, %v), want %s", tc.wire, v, perr, tc.json)
			continue
		case ok && string(rj) != tc.json:
			t.Errorf("%s: captured as %s, want %s", tc.wire, rj, tc.json)
		}
		checkCaptureSame(t, msg)
	}
}

// checkCaptureSame checks that msg, a resolve, reads the same with capture as without: the same
// error, or the same value, the captured JSON made a tree.
func checkCaptureSame(t *testing.T, msg []byte) {
	t.Helper()
	lim := DefaultLimits
	var plain, capt [4]any
	n, _, perr := parseMessage(msg, 2*lim.MaxDepth+8, nil, nil, &plain, 0)
	nc, _, cerr := parseMessage(msg, 2*lim.MaxDepth+8, nil, nil, &capt, lim.MaxDepth)
	if (perr == nil) != (cerr == nil) || n != nc {
		t.Fatalf("%s: read with capture = %d, %v; without = %d, %v", msg, nc, cerr, n, perr)
	}
	if perr != nil || n != 3 {
		return
	}
	rj, ok := capt[2].(receivedJSON)
	if !ok {
		return
	}
	if !json.Valid(rj) {
		t.Fatalf("%s: captured invalid JSON %q", msg, rj)
	}
	ev := evaluator{im: noImporter{}, lim: &lim}
	want, err := ev.evaluate(plain[2])
	if err != nil {
		t.Fatalf("%s: captured as %s, but it does not evaluate: %v", msg, rj, err)
	}
	got, err := rj.tree()
	if err != nil {
		t.Fatalf("%s: captured %s does not read back: %v", msg, rj, err)
	}
	if d := diffValues(want, got); d != "" {
		t.Fatalf("%s: captured value differs from the evaluated one (-evaluated +captured):\n%s", msg, d)
	}
}

// TestCaptureJSONDepth: a value nested deeper than MaxDepth is not captured, so the evaluator
// reports it as before; one just inside is.
func TestCaptureJSONDepth(t *testing.T) {
	t.Parallel()
	max := DefaultLimits.MaxDepth
	for _, tc := range []struct {
		depth int
		want  bool
	}{{max - 1, true}, {max, false}} {
		wire := strings.Repeat(`{"a":`, tc.depth) + "1" + strings.Repeat("}", tc.depth)
		v, err := captured(t, resolveOf(wire))
		if _, ok := v.(receivedJSON); ok != tc.want || err != nil {
			t.Errorf("%d nested objects: captured %v (err %v), want %v", tc.depth, ok, err, tc.want)
		}
		arrays := strings.Repeat(`[[`, tc.depth) + "1" + strings.Repeat("]]", tc.depth)
		v, err = captured(t, resolveOf(`{"a":`+arrays+`}`))
		if _, ok := v.(receivedJSON); ok != (tc.depth < max-1) || err != nil {
			t.Errorf("%d nested arrays in an object: captured %v (err %v)", tc.depth, ok, err)
		}
	}
}

// FuzzCaptureJSON: for any resolve message, the value read with capture is the value read
// without it.
func FuzzCaptureJSON(f *testing.F) {
	for _, s := range []string{`{"a":[[1,{"b":[[]]}]],"c":"\u00e9"}`, `[[1,2]]`, `{"a":["date",1]}`,
		`{"x":[["undefined"]]}`, `{"a" : [[ true , null ]] }`, `{"toJSON":1}`, `{"a":1,"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		if bytes.Count(wire, []byte("[")) > 100 || bytes.Count(wire, []byte("{")) > 100 {
			return // deep nesting is TestCaptureJSONDepth's
		}
		checkCaptureSame(t, resolveOf(string(wire)))
	})
}

// BenchmarkCaptureTaskResolve is BenchmarkParseTaskResolve with capture: the message read and
// its value kept as JSON.
func BenchmarkCaptureTaskResolve(b *testing.B) {
	msg := taskResolve
	var dst [4]any
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		n, _, err := parseMessage(msg, 64, nil, nil, &dst, DefaultLimits.MaxDepth)
		if _, ok := dst[2].(receivedJSON); err != nil || n != 3 || !ok {
			b.Fatal(n, err)
		}
	}
}
