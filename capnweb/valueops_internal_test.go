package capnweb

import "testing"

// TestEvaluatorKnowsPlainness checks that what the evaluator records about a value it built
// (impure) agrees with isPlain's walk of it: the sessions trust the former to skip releasing,
// copying and resolving what comes off the wire.
func TestEvaluatorKnowsPlainness(t *testing.T) {
	a, b := Pipe()
	s := NewSession(a, nil, nil)
	peer := NewSession(b, nil, nil)
	defer s.Close()
	defer peer.Close()
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
		ev := evaluator{im: s, lim: &s.limits}
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
