package capnweb_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/google/go-cmp/cmp"
)

func TestObject(t *testing.T) {
	t.Parallel()
	o := capnweb.Object{{Key: "b", Value: 1.0}, {Key: "a", Value: capnweb.Object{{Key: "z", Value: true}, {Key: "y", Value: nil}}},
		{Key: "u", Value: capnweb.Undefined}}
	if v, ok := o.Get("a"); !ok || len(v.(capnweb.Object)) != 2 {
		t.Errorf("Get(a) = %v, %v", v, ok)
	}
	if _, ok := o.Get("missing"); ok {
		t.Error("Get(missing) found it")
	}
	if diff := cmp.Diff(map[string]any{"b": 1.0, "a": o[1].Value, "u": capnweb.Undefined}, o.Map()); diff != "" {
		t.Errorf("Map() (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(o)
	if err != nil || string(b) != `{"b":1,"a":{"z":true,"y":null}}` {
		t.Errorf("json.Marshal(Object) = %s, %v; want its keys in order, undefined left out", b, err)
	}
	var back capnweb.Object
	if err := json.Unmarshal([]byte(`{"b":1,"a":{"z":true,"y":null},"c":[{"q":1,"p":2}]}`), &back); err != nil {
		t.Fatal(err)
	}
	want := capnweb.Object{{Key: "b", Value: 1.0}, {Key: "a", Value: capnweb.Object{{Key: "z", Value: true}, {Key: "y", Value: nil}}},
		{Key: "c", Value: []any{capnweb.Object{{Key: "q", Value: 1.0}, {Key: "p", Value: 2.0}}}}}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("json.Unmarshal into an Object (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `[1]`, `{"a":`} {
		var o capnweb.Object
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("json.Unmarshal(%s) into an Object: no error", bad)
		}
	}
}

// TestDecodeObject: Decode keeps an Object where the destination is any, and makes Go maps
// where it is a map[string]any or a []any, at any depth, as encoding/json does.
func TestDecodeObject(t *testing.T) {
	t.Parallel()
	inner := capnweb.Object{{Key: "z", Value: 1.0}, {Key: "y", Value: []any{capnweb.Object{{Key: "k", Value: "v"}}}}}
	o := capnweb.Object{{Key: "b", Value: "x"}, {Key: "a", Value: inner}}
	var asAny any
	if err := capnweb.Decode(o, &asAny); err != nil || !cmp.Equal(any(o), asAny) {
		t.Errorf("Decode(Object, *any) = %v, %v; want the Object", asAny, err)
	}
	var m map[string]any
	if err := capnweb.Decode(o, &m); err != nil {
		t.Fatal(err)
	}
	wantMap := map[string]any{"b": "x", "a": map[string]any{"z": 1.0, "y": []any{map[string]any{"k": "v"}}}}
	if diff := cmp.Diff(wantMap, m); diff != "" {
		t.Errorf("Decode(Object, *map[string]any) (-want +got):\n%s", diff)
	}
	var list []any
	if err := capnweb.Decode([]any{o}, &list); err != nil || !cmp.Equal([]any{wantMap}, list) {
		t.Errorf("Decode([Object], *[]any) = %v, %v; want maps", list, err)
	}
	var st struct {
		B string         `json:"b"`
		A map[string]any `json:"a"`
	}
	if err := capnweb.Decode(o, &st); err != nil || st.B != "x" || !cmp.Equal(wantMap["a"], st.A) {
		t.Errorf("Decode(Object, *struct) = %+v, %v", st, err)
	}
	var fromMap capnweb.Object
	if err := capnweb.Decode(map[string]any{"b": 1.0, "a": 2.0}, &fromMap); err != nil ||
		!cmp.Equal(capnweb.Object{{Key: "a", Value: 2.0}, {Key: "b", Value: 1.0}}, fromMap) {
		t.Errorf("Decode(map, *Object) = %v, %v; want its keys sorted", fromMap, err)
	}
}

// orderAPI keeps and returns what it is given.
type orderAPI struct {
	capnweb.Target
	kept any
}

func (a *orderAPI) Keep(v any)     { a.kept = v }
func (a *orderAPI) Kept() any      { return a.kept }
func (a *orderAPI) Echo(v any) any { return v }
func (a *orderAPI) Big(n int) capnweb.Object {
	o := make(capnweb.Object, n)
	for i := range o {
		o[i] = capnweb.Prop{Key: fmt.Sprintf("k%d", n-i), Value: float64(n - i)}
	}
	return o
}

// TestObjectKeyOrder: an object keeps its key order through Go — echoed, kept by a target and
// returned later, read through a pipelined path — over each transport; and a large one is read
// by key as a small one is.
func TestObjectKeyOrder(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			cli := orderEnv(t, m)
			api := cli.Main()
			o := capnweb.Object{{Key: "zeta", Value: 1.0}, {Key: "alpha", Value: capnweb.Object{{Key: "y", Value: 2.0}, {Key: "x", Value: 3.0}}},
				{Key: "mid", Value: []any{capnweb.Object{{Key: "2", Value: "two"}, {Key: "1", Value: "one"}}}}}
			if diff := cmp.Diff(any(o), capnwebtest.Await[any](t, api.Call("echo", o))); diff != "" {
				t.Errorf("echo (-want +got):\n%s", diff)
			}
			capnwebtest.Await[any](t, api.Call("keep", o))
			if diff := cmp.Diff(any(o), capnwebtest.Await[any](t, api.Call("kept"))); diff != "" {
				t.Errorf("keep, then kept (-want +got):\n%s", diff)
			}
			wrapped := api.Call("echo", capnweb.Object{{Key: "w", Value: o}})
			if diff := cmp.Diff(o[1].Value, capnwebtest.Await[any](t, wrapped.Get("w", "alpha"))); diff != "" {
				t.Errorf("echo({w: o}).w.alpha (-want +got):\n%s", diff)
			}
			wrapped.Release()
			var raw json.RawMessage
			p := api.Call("echo", o)
			if err := p.Decode(t.Context(), &raw); err != nil || string(raw) != `{"zeta":1,"alpha":{"y":2,"x":3},"mid":[{"2":"two","1":"one"}]}` {
				t.Errorf("echo(o) as JSON = %s, %v; want its keys in order", raw, err)
			}
			p.Release()
			// A large object (indexed for lookups) read by key, first and last.
			big := api.Call("big", 1000)
			for _, k := range []string{"k1000", "k1", "k500"} {
				if got := capnwebtest.Await[float64](t, big.Get(k)); fmt.Sprint(got) != strings.TrimPrefix(k, "k") {
					t.Errorf("big(1000).%s = %v", k, got)
				}
			}
			if got := capnwebtest.Await[any](t, big.Get("k1001")); got != capnweb.Undefined {
				t.Errorf("big(1000).k1001 = %v, want undefined", got)
			}
			big.Release()
			checkClean(t, cli)
		})
	}
}

func orderEnv(t *testing.T, m mode) *capnweb.Session {
	t.Helper()
	if m == pipeMode {
		a, b := capnweb.Pipe()
		srv := capnweb.NewSession(a, &orderAPI{}, nil)
		cli := capnweb.NewSession(b, nil, nil)
		t.Cleanup(func() { cli.Close(); srv.Close() })
		return cli
	}
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return &orderAPI{}, nil }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); ts.Close() })
	cli, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
