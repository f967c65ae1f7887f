package capnweb

import (
	"fmt"
	"reflect"
	"testing"
)

// pipedSessions returns a session serving main over a Pipe and the peer session on its other
// end; both close when t ends.
func pipedSessions(t *testing.T, main any) (s, peer *Session) {
	a, b := Pipe()
	s = NewSession(a, main, nil)
	peer = NewSession(b, nil, nil)
	t.Cleanup(func() {
		s.Close()
		peer.Close()
	})
	return s, peer
}

// TestEvaluatorKnowsPlainness checks that what the evaluator records about a value it built
// (impure) agrees with isPlain's walk of it: the sessions trust the former to skip releasing,
// copying and resolving what comes off the wire.
func TestEvaluatorKnowsPlainness(t *testing.T) {
	// No session on the pipe's other end: a peer would abort at the release of export -1,
	// which it never made, and the session would end under the next expressions.
	a, _ := Pipe()
	s := NewSession(a, nil, nil)
	t.Cleanup(func() { s.Close() })
	for _, tc := range []struct {
		expr  string
		plain bool
	}{
		{`{"a":[["x",1,{"b":null}]],"c":"d"}`, true},
		{`[[["undefined"],["date",0],["bigint","12"],["bytes","AQI"],["inf"]]]`, true},
		{`[[1,[[2]]]]`, true},
		{`{"err":["error","TypeError","bad"]}`, false},
		{`{"deep":[[{"stub":["export",-1]}]]}`, false},
		{`["promise",-2]`, false},
		{`{"x":["pipeline",0,["f"]]}`, false},
	} {
		v, err := parseJSON([]byte(tc.expr), 64)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		ev := evaluator{im: s, lim: s.lim()}
		r, err := ev.evaluate(v)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := !ev.impure; got != tc.plain {
			t.Errorf("%s: evaluator says plain=%v, want %v", tc.expr, got, tc.plain)
		}
		if got := isPlain(r); got != tc.plain {
			t.Errorf("%s: isPlain=%v, want %v", tc.expr, got, tc.plain)
		}
		releaseValue(r)
	}
}

// TestPlainPullShares checks that pulling a plain settled value hands out the value itself,
// while one holding references is copied so that each pull owns its stubs.
func TestPlainPullShares(t *testing.T) {
	plain := map[string]any{"k": []any{"v"}}
	h := newValueHook(plain, true, nil)
	got, err := h.pull(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := got.(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("pull = %v", got)
	}
	m["k"] = "changed" // shared: the pull is the value itself
	if plain["k"] != "changed" {
		t.Errorf("a plain pull was copied")
	}
	st := NewStub(&idleAPI{})
	withRef := map[string]any{"s": st}
	h2 := newValueHook(withRef, true, nil)
	if h2.plain {
		t.Fatal("a value holding a stub is plain")
	}
	got2, err := h2.pull(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got2.(map[string]any)["s"] == st {
		t.Errorf("pulling a value with a stub shared the stub")
	}
	releaseValue(got2)
	h2.release()
}

// TestSettledArgument checks that a promise argument already settled to plain data evaluates
// to the data itself, so that the call it is passed to runs without waiting for it (a
// pipelined chain of calls then runs straight through), while a promise settled to an error,
// a target or a function, or not settled yet, still makes the call wait for it.
func TestSettledArgument(t *testing.T) {
	s, _ := pipedSessions(t, nil)
	settled := func(r hook) hook {
		p := newPromiseHook()
		p.resolve(r)
		return p
	}
	obj := map[string]any{"a": []any{"b"}}
	for _, tc := range []struct {
		name string
		h    hook
		want any // nil: the argument stays a promise
	}{
		{"number", settled(newValueHook(float64(3), true, s)), float64(3)},
		{"object", settled(newValueHook(obj, true, s)), obj},
		{"through a promise", settled(settled(newValueHook("x", true, s))), "x"},
		{"error", settled(errorHook{NewError("RangeError", "no")}), nil},
		{"target", settled(newValueHook(&idleAPI{}, true, s)), nil},
		{"function", settled(newValueHook(func() int { return 1 }, true, s)), nil},
		{"holding a stub", settled(newValueHook(map[string]any{"s": NewStub(&idleAPI{})}, true, s)), nil},
		{"not settled", newPromiseHook(), nil},
	} {
		id, err := s.exportHook(tc.h)
		if err != nil {
			t.Fatal(err)
		}
		v, err := parseJSON([]byte(fmt.Sprintf(`["pipeline",%d]`, id)), 64)
		if err != nil {
			t.Fatal(err)
		}
		ev := evaluator{im: s, lim: s.lim()}
		r, err := ev.evaluate(v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.want == nil {
			if _, ok := r.(*pending); !ok || !ev.impure {
				t.Errorf("%s: evaluated to %#v (impure %v), want a promise to wait for", tc.name, r, ev.impure)
			}
		} else if !reflect.DeepEqual(r, tc.want) || ev.impure {
			t.Errorf("%s: evaluated to %#v (impure %v), want %#v", tc.name, r, ev.impure, tc.want)
		}
		releaseValue(r)
	}
}
