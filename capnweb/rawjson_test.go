package capnweb_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/google/go-cmp/cmp"
)

// docs serves JSON documents as json.RawMessage.
type docs struct{ capnweb.Target }

func (docs) Doc(s string) json.RawMessage { return json.RawMessage(s) }

// Dated returns a value with a date in it: data that JSON has no form for.
func (docs) Dated() map[string]any { return map[string]any{"at": time.UnixMilli(0), "n": 1} }

// Echo returns the JSON of its argument as it received it.
func (docs) Echo(v json.RawMessage) json.RawMessage { return v }

// TestRawMessage: a method's json.RawMessage result reaches the peer as the value it holds, over
// each transport; pipelined property reads and .map() work on it; invalid JSON fails the call
// and nothing else.
func TestRawMessage(t *testing.T) {
	t.Parallel()
	const doc = `{"task": {"id": "t1", "tags": ["a", "b"], "history": [{"n": 1}, {"n": 2}], "empty": [], "nested": [[1], []]}}`
	var obj capnweb.Object // the value it holds, its keys in order
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	var want any = obj
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := newDocsEnv(t, m)
			main := s.Main()
			got := capnwebtest.Await[any](t, main.Call("doc", doc))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("doc() differs from the JSON it returned (-want +got):\n%s", d)
			}
			// Pipelined: one round trip, the result never awaited.
			if id := capnwebtest.Await[string](t, main.Call("doc", doc).Get("task", "id")); id != "t1" {
				t.Errorf(`doc().task.id = %q, want "t1"`, id)
			}
			if n := capnwebtest.Await[float64](t, main.Call("doc", doc).Get("task", "history", 1, "n")); n != 2 {
				t.Errorf("doc().task.history[1].n = %v, want 2", n)
			}
			if u := capnwebtest.Await[any](t, main.Call("doc", doc).Get("task", "missing")); u != capnweb.Undefined {
				t.Errorf("doc().task.missing = %v, want undefined", u)
			}
			ns := main.Call("doc", doc).Get("task", "history").Map(func(_ *capnweb.Mapper, e *capnweb.Promise) any { return e.Get("n") })
			if d := cmp.Diff([]any{1.0, 2.0}, capnwebtest.Await[[]any](t, ns)); d != "" {
				t.Errorf("doc().task.history.map(h => h.n) (-want +got):\n%s", d)
			}
			// Invalid JSON: a TypeError for that call; the session goes on.
			// (Invalid UTF-8 cannot arrive in a string argument: the sender replaces it.)
			for _, bad := range []string{`{"a":`, `{"a":1,"a":2}`, `[1,]`} {
				p := main.Call("doc", bad)
				_, err := p.Await(t.Context())
				p.Release()
				var ce *capnweb.Error
				if !errors.As(err, &ce) || ce.Name != "TypeError" || !strings.Contains(ce.Message, "json.RawMessage") {
					t.Errorf("doc(%q) error = %v, want a TypeError about json.RawMessage", bad, err)
				}
			}
			if id := capnwebtest.Await[string](t, main.Call("doc", `{"id":"after"}`).Get("id")); id != "after" {
				t.Errorf("after the failures: id = %q", id)
			}
		})
	}
}

// TestDecodeRawMessage: Decode reads a json.RawMessage as the value it holds.
func TestDecodeRawMessage(t *testing.T) {
	t.Parallel()
	var dst struct {
		ID   string   `json:"id"`
		Tags []string `json:"tags"`
	}
	if err := capnweb.Decode(json.RawMessage(`{"id":"x","tags":["a","b"]}`), &dst); err != nil {
		t.Fatal(err)
	}
	if dst.ID != "x" || len(dst.Tags) != 2 || dst.Tags[1] != "b" {
		t.Errorf("Decode = %+v", dst)
	}
	if err := capnweb.Decode(json.RawMessage(`{"id":`), &dst); err == nil {
		t.Error("Decode(invalid JSON): no error")
	}
	// Into []byte it is the value it holds, as a peer would get it, not the JSON text.
	var b []byte
	if err := capnweb.Decode(json.RawMessage(`{"id":"x"}`), &b); err == nil {
		t.Errorf("Decode(an object, *[]byte) = %q, want an error", b)
	}
	var tree any
	if err := capnweb.Decode(json.RawMessage(`{"id":"x"}`), &tree); err != nil || !cmp.Equal(tree, capnweb.Object{{Key: "id", Value: "x"}}) {
		t.Errorf("Decode(json.RawMessage, *any) = %#v, %v; want the object", tree, err)
	}
	var raw json.RawMessage
	if err := capnweb.Decode(json.RawMessage(`{"id":"x"}`), &raw); err != nil || string(raw) != `{"id":"x"}` {
		t.Errorf("Decode(json.RawMessage, *json.RawMessage) = %s, %v", raw, err)
	}
}

// TestDecodeJSON: a result decoded into a json.RawMessage is its JSON (for plain data, read off
// the message without a tree); values JSON has no form for are an error; a json.RawMessage
// parameter receives its argument's JSON; over each transport, HTTP batch included.
func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	const doc = `{"task": {"id": "t1", "tags": ["a", "b"], "history": [{"n": 1}, {"n": 2.5e3}], "empty": [], "nested": [[1], []], "s": "\u00e9<"}}`
	same := func(t *testing.T, what string, want string, got json.RawMessage) {
		t.Helper()
		var w, g any
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s = %s: not JSON: %v", what, got, err)
		}
		if d := cmp.Diff(w, g); d != "" {
			t.Errorf("%s = %s (-want +got):\n%s", what, got, d)
		}
	}
	for _, m := range append(modes, "batch") {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			var s *capnweb.Session
			if m == "batch" {
				h := capnweb.NewHandler(func(*http.Request) (any, error) { return docs{}, nil }, nil)
				ts := httptest.NewServer(h)
				t.Cleanup(func() { h.Close(); ts.Close() })
				s = capnweb.NewBatchSession(ts.URL, nil, nil)
				t.Cleanup(func() { s.Close() })
			} else {
				s = newDocsEnv(t, m)
			}
			main := s.Main()
			p := main.Call("doc", doc)
			defer p.Release()
			var raw, again json.RawMessage
			if err := p.Decode(t.Context(), &raw); err != nil {
				t.Fatal(err)
			}
			same(t, "doc() as json.RawMessage", doc, raw)
			// Each Decode gets bytes of its own; the value also still reads as a tree.
			clear(raw)
			if err := p.Decode(t.Context(), &again); err != nil {
				t.Fatal(err)
			}
			same(t, "doc() decoded again", doc, again)
			if m != "batch" { // a batch client's promise cannot pipeline after its batch went
				if id := capnwebtest.Await[string](t, p.Get("task", "id")); id != "t1" {
					t.Errorf(`doc().task.id after Decode = %q, want "t1"`, id)
				}
			}
			var st struct {
				Task struct {
					History []struct {
						N float64 `json:"n"`
					} `json:"history"`
				} `json:"task"`
			}
			if err := p.Decode(t.Context(), &st); err != nil || len(st.Task.History) != 2 || st.Task.History[1].N != 2500 {
				t.Errorf("doc() as a struct = %+v, %v", st, err)
			}
			if m == "batch" {
				return // one batch per session; the rest is the same code as over a WebSocket
			}
			// The JSON is the peer's, as it sent it (its key order, say): read off the
			// message, with no tree in between, both ways.
			var exact json.RawMessage
			if err := main.Call("doc", `{"b":1,"a":[2,{"d":3,"c":4}]}`).Decode(t.Context(), &exact); err != nil || string(exact) != `{"b":1,"a":[2,{"d":3,"c":4}]}` {
				t.Errorf("doc() as json.RawMessage = %s, %v; want the JSON as sent", exact, err)
			}
			if err := main.Call("echo", json.RawMessage(`{"z":1,"y":[true]}`)).Decode(t.Context(), &exact); err != nil || string(exact) != `{"z":1,"y":[true]}` {
				t.Errorf("echo(json.RawMessage) = %s, %v; want the JSON as sent", exact, err)
			}
			// An array result, and data JSON has no form for.
			var arr json.RawMessage
			if err := main.Call("doc", `[1,[2,{"a":[]}]]`).Decode(t.Context(), &arr); err != nil || string(arr) != `[1,[2,{"a":[]}]]` {
				t.Errorf("doc([...]) as json.RawMessage = %s, %v", arr, err)
			}
			// .map() on a result that arrived as JSON (it runs here, on the settled value).
			list := main.Call("doc", `[{"n":1},{"n":2}]`)
			defer list.Release()
			if err := list.Decode(t.Context(), &arr); err != nil {
				t.Fatal(err)
			}
			ns := list.Map(func(_ *capnweb.Mapper, e *capnweb.Promise) any { return e.Get("n") })
			if d := cmp.Diff([]any{1.0, 2.0}, capnwebtest.Await[[]any](t, ns)); d != "" {
				t.Errorf("settled doc([...]).map(x => x.n) (-want +got):\n%s", d)
			}
			dated := main.Call("dated")
			defer dated.Release()
			// Dates and bytes as encoding/json writes time.Time and []byte.
			if err := dated.Decode(t.Context(), &arr); err != nil || string(arr) != `{"at":"1970-01-01T00:00:00Z","n":1}` {
				t.Errorf("dated() as json.RawMessage = %s, %v", arr, err)
			}
			if n := capnwebtest.Await[float64](t, dated.Get("n")); n != 1 {
				t.Errorf("dated().n = %v, want 1", n)
			}
			// A json.RawMessage parameter gets its argument's JSON: keys sorted, undefined
			// members left out, as JSON.stringify writes them.
			arg := map[string]any{"b": []any{1, "x", nil}, "a": map[string]any{}, "u": capnweb.Undefined}
			var echoed json.RawMessage
			if err := main.Call("echo", arg).Decode(t.Context(), &echoed); err != nil || string(echoed) != `{"a":{},"b":[1,"x",null]}` {
				t.Errorf("echo(%v) = %s, %v", arg, echoed, err)
			}
			if got := capnwebtest.Await[[]any](t, main.Call("echo", []any{time.UnixMilli(1500), []byte("hi")})); !cmp.Equal(got, []any{"1970-01-01T00:00:01.5Z", "aGk="}) {
				t.Errorf("echo([a date, bytes]) = %v", got)
			}
			// What JSON has no form for fails the call, and only the call.
			for _, bad := range []any{func() {}, big.NewInt(1), math.Inf(1)} {
				if err := capnwebtest.AwaitErr(t, main.Call("echo", bad)); !strings.Contains(err.Error(), "no JSON form") {
					t.Errorf("echo(%T) error = %v, want one saying it has no JSON form", bad, err)
				}
			}
			if v := capnwebtest.Await[string](t, main.Call("echo", "after")); v != "after" {
				t.Errorf(`echo("after") = %q`, v)
			}
		})
	}
}

func newDocsEnv(t *testing.T, m mode) *capnweb.Session {
	t.Helper()
	switch m {
	case pipeMode:
		a, b := capnweb.Pipe()
		srv := capnweb.NewSession(a, docs{}, nil)
		cli := capnweb.NewSession(b, nil, nil)
		t.Cleanup(func() { cli.Close(); srv.Close() })
		return cli
	default:
		h := capnweb.NewHandler(func(*http.Request) (any, error) { return docs{}, nil }, nil)
		ts := httptest.NewServer(h)
		t.Cleanup(func() { h.Close(); ts.Close() })
		s, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http")+"/", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
