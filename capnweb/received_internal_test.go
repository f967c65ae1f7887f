package capnweb

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// wantAll wants every value a reader asks about as JSON, under a MaxDepth of its value.
type wantAll int

func (w wantAll) maxDepth() int          { return int(w) }
func (wantAll) resolveJSON(any) bool     { return true }
func (wantAll) argsJSON(any, any) uint64 { return ^uint64(0) }

// resolveOf is a resolve message carrying the expression wire.
func resolveOf(wire string) []byte { return []byte(`["resolve",1,` + wire + `]`) }

// pushOf is a push message calling m with the arguments wire, an expression each.
func pushOf(wire ...string) []byte {
	return []byte(`["push",["pipeline",0,["m"],[` + strings.Join(wire, ",") + `]]]`)
}

// captured parses msg as the session does, capturing at MaxDepth, and returns its value element.
func captured(t testing.TB, msg []byte) (any, error) {
	t.Helper()
	var dst [4]any
	n, _, err := parseMessage(msg, 2*DefaultLimits.MaxDepth+8, nil, nil, &dst, wantAll(DefaultLimits.MaxDepth))
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
		checkArgCaptureSame(t, pushOf(tc.wire, `{"b":1}`, `["undefined"]`))
	}
}

// TestCaptureArgs: the arguments of a pushed call are captured when plain, each on its own;
// nothing else in a push is.
func TestCaptureArgs(t *testing.T) {
	t.Parallel()
	var dst [4]any
	msg := pushOf(`{"a":[[1]]}`, `["date",0]`, `[["x"]]`, `5`)
	n, _, err := parseMessage(msg, 64, nil, nil, &dst, wantAll(DefaultLimits.MaxDepth))
	if err != nil || n != 2 {
		t.Fatalf("parseMessage(%s) = %d, %v", msg, n, err)
	}
	call := dst[1].([]any)
	if _, ok := call[2].([]any); !ok {
		t.Errorf("the call's path was read as %T", call[2])
	}
	args := call[3].([]any)
	want := []string{`{"a":[1]}`, "", `["x"]`, ""}
	for i, w := range want {
		rj, ok := args[i].(receivedJSON)
		if ok != (w != "") || ok && string(rj) != w {
			t.Errorf("argument %d read as %T %v, want %q", i, args[i], args[i], w)
		}
	}
	// Elsewhere in a push, in a pull, in a stream message: nothing is captured.
	for _, other := range []string{`["push",["pipeline",0,["m"]]]`, `["push",{"a":1}]`, `["stream",["pipeline",0,["write"],[{"a":1}]]]`,
		`["push",["import",0,["m"],[{"a":1}]]]`, `["reject",1,{"a":1}]`} {
		var dst [4]any
		parseMessage([]byte(other), 64, nil, nil, &dst, wantAll(DefaultLimits.MaxDepth))
		if found := anyLeaf(dst[:], func(v any) bool { _, ok := v.(receivedJSON); return ok }); found {
			t.Errorf("%s: something was captured: %v", other, dst)
		}
	}
}

// readBoth reads msg without capture and with everything wanted as JSON, and checks that both
// fail alike or read as many elements; ok says both read the n elements the caller checks.
func readBoth(t *testing.T, msg []byte, n int) (plain, capt [4]any, ok bool) {
	t.Helper()
	lim := DefaultLimits
	np, _, perr := parseMessage(msg, 2*lim.MaxDepth+8, nil, nil, &plain, nil)
	nc, _, cerr := parseMessage(msg, 2*lim.MaxDepth+8, nil, nil, &capt, wantAll(lim.MaxDepth))
	if (perr == nil) != (cerr == nil) || np != nc {
		t.Fatalf("%s: read with capture = %d, %v; without = %d, %v", msg, nc, cerr, np, perr)
	}
	return plain, capt, perr == nil && np == n
}

// checkArgCaptureSame checks that the arguments of msg, a push of a pipelined call, read the
// same with capture as without: the same error, or the same values once evaluated (as a call's
// arguments are, from depth 1).
func checkArgCaptureSame(t *testing.T, msg []byte) {
	t.Helper()
	lim := DefaultLimits
	plain, capt, ok := readBoth(t, msg, 2)
	if !ok {
		return
	}
	pc, _ := plain[1].([]any)
	cc, _ := capt[1].([]any)
	if len(pc) != 4 || len(cc) != 4 {
		return
	}
	pargs, _ := pc[3].([]any)
	cargs, _ := cc[3].([]any)
	if len(pargs) != len(cargs) {
		t.Fatalf("%s: %d arguments with capture, %d without", msg, len(cargs), len(pargs))
	}
	for i, c := range cargs {
		rj, ok := c.(receivedJSON)
		if !ok {
			continue
		}
		ev := evaluator{im: noImporter{}, lim: &lim}
		a := []any{pargs[i]}
		if err := ev.evaluateElems(a); err != nil {
			t.Fatalf("%s: argument %d captured as %s, but it does not evaluate: %v", msg, i, rj, err)
		}
		got, err := rj.tree()
		if err != nil {
			t.Fatalf("%s: captured %s does not read back: %v", msg, rj, err)
		}
		if d := diffValues(a[0], got); d != "" {
			t.Fatalf("%s: argument %d differs from the evaluated one (-evaluated +captured):\n%s", msg, i, d)
		}
	}
}

// checkCaptureSame checks that msg, a resolve, reads the same with capture as without: the same
// error, or the same value, the captured JSON made a tree.
func checkCaptureSame(t *testing.T, msg []byte) {
	t.Helper()
	lim := DefaultLimits
	plain, capt, ok := readBoth(t, msg, 3)
	if !ok {
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
		// An argument is evaluated one level down.
		var dst [4]any
		if _, _, err := parseMessage(pushOf(wire), 2*max+8, nil, nil, &dst, wantAll(max)); err == nil {
			arg := dst[1].([]any)[3].([]any)[0]
			if _, ok := arg.(receivedJSON); ok != (tc.depth < max-1) {
				t.Errorf("an argument of %d nested objects: captured %v", tc.depth, ok)
			}
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
		checkArgCaptureSame(t, pushOf(string(wire)))
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
		n, _, err := parseMessage(msg, 64, nil, nil, &dst, wantAll(DefaultLimits.MaxDepth))
		if _, ok := dst[2].(receivedJSON); err != nil || n != 3 || !ok {
			b.Fatal(n, err)
		}
	}
}

type jsonTaker struct{ Target }

func (jsonTaker) Take(a json.RawMessage, b any, c json.RawMessage) {}
func (jsonTaker) Tree(a any)                                       {}
func (jsonTaker) Doc() json.RawMessage                             { return json.RawMessage(`{"b":1,"a":2}`) }

// The session wants as JSON the arguments of json.RawMessage parameters of its Go targets'
// methods, and the results the caller decodes into a json.RawMessage: nothing else.
func TestWantedJSON(t *testing.T) {
	t.Parallel()
	srv, cli := pipedSessions(t, jsonTaker{})
	for _, tc := range []struct {
		id, path any
		want     uint64
	}{
		{0.0, []any{"take"}, 0b101},
		{0.0, []any{"tree"}, 0},
		{0.0, []any{"missing"}, 0},
		{0.0, []any{}, 0},
		{0.0, []any{"take", "x"}, 0},
		{7.0, []any{"take"}, 0},
		{"0", []any{"take"}, 0},
	} {
		if got := srv.argsJSON(tc.id, tc.path); got != tc.want {
			t.Errorf("argsJSON(%v, %v) = %b, want %b", tc.id, tc.path, got, tc.want)
		}
	}
	// A result awaited as a value is read as a tree (an Object: the JSON made of it later keeps
	// its key order); one decoded into a json.RawMessage is read as the JSON the peer sent.
	p := cli.Main().Call("doc")
	defer p.Release()
	if _, err := p.Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	if err := p.Decode(t.Context(), &raw); err != nil || string(raw) != `{"b":1,"a":2}` {
		t.Errorf("doc() awaited, then decoded = %s, %v; want the JSON of a tree", raw, err)
	}
	q := cli.Main().Call("doc")
	defer q.Release()
	if err := q.Decode(t.Context(), &raw); err != nil || string(raw) != `{"b":1,"a":2}` {
		t.Errorf("doc() decoded = %s, %v; want the JSON as sent", raw, err)
	}
}
