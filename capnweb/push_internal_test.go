package capnweb

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// pushCases are push messages: the fast reader (readPushedCall) reads those marked fast, and
// declines the others, which the generic reader reads, or refuses.
var pushCases = []struct {
	msg  string
	fast bool
}{
	{`["push",["pipeline",0,["add"],[1,2]]]`, true},
	{`["push",["pipeline",0,["echo"],["hello, world"]]]`, true},
	{`["push",["pipeline",3,["increment"],[1]]]`, true},
	{`["push",["pipeline",-2,["a","b"],[]]]`, true},
	{`["push",["pipeline",0,["f"],[true,false,null,-1.5e3,0,255,256,123456789012345]]]`, true},
	{`["push",["pipeline",0,["f"],["é",""]]]`, true},
	{`["push",["pipeline",0,["f"],[1,2,3,4,5,6,7,8]]]`, true},
	{`["push",["pipeline",0,["add"],[["pipeline",3],1]]]`, true},
	{`["push",["pipeline",0,["add"],[["pipeline",-1],["pipeline",300]]]]`, true},
	{`["push",["pipeline",0,["add"],[["pipeline",3,["x"]],1]]]`, false},
	{`["push",["pipeline",0,["add"],[["pipeline",3]]`, false},
	{`["push",["pipeline",0,["add"],[["pipeline",3.5]]]]`, false},
	{`["push",["pipeline",0,["add"],[["import",3]]]]`, false},
	// Declined: anything but scalars, strings the string table does not take, other shapes.
	{`["push",["pipeline",0,["f"],[1,2,3,4,5,6,7,8,9]]]`, false},
	{`["push",["pipeline",0,["f"],[{"a":1}]]]`, false},
	{`["push",["pipeline",0,["f"],[[1]]]]`, false},
	{`["push",["pipeline",0,["f"],[[["pipeline",1]]]]]`, false},
	{`["push",["pipeline",0,["f"],["` + strings.Repeat("x", 40) + `"]]]`, false},
	{`["push",["pipeline",0,["f"],["a\"b"]]]`, false},
	{`["push",["pipeline",0,["f"],["\xff"]]]`, false},
	{`["push",["pipeline",0,[0],[1]]]`, false},
	{`["push",["pipeline",0,[],[1]]]`, false},
	{`["push",["pipeline",0,["f"]]]`, false},
	{`["push",["pipeline",0]]`, false},
	{`["push", ["pipeline",0,["f"],[1]]]`, false},
	{`["push",["pipeline",0,["f"],[1] ]]`, false},
	{`["push",["pipeline",0,["f"],[1]]] `, false},
	{`["push",["pipeline",1.0,["f"],[1]]]`, false},
	{`["push",["pipeline",01,["f"],[1]]]`, false},
	{`["push",["pipeline",0,["f"],[1]],1]`, false},
	{`["stream",["pipeline",0,["f"],[1]]]`, false},
	{`["push",["import",0,["f"],[1]]]`, false},
	// Malformed: declined, and refused by the generic reader.
	{`["push",["pipeline",0,["f"],[1,]]]`, false},
	{`["push",["pipeline",0,["f"],[01]]]`, false},
	{`["push",["pipeline",0,["f"],[tru]]]`, false},
	{`["push",["pipeline",0,["f"],[1]]`, false},
	{`["push",["pipeline",0,["f"],[1]]]]`, false},
	{`["push",["pipeline",0,["f",],[1]]]`, false},
}

// genericPushedCall reads msg as the generic reader and evaluator see a push: the call's
// export ID, path and arguments, or ok false when it is not a pipeline call of that shape.
func genericPushedCall(msg []byte) (id float64, path, args []any, ok bool) {
	var top [4]any
	n, _, err := parseMessage(msg, 72, nil, map[string]any{}, &top, nil)
	if err != nil || n != 2 || top[0] != "push" {
		return 0, nil, nil, false
	}
	x, _ := top[1].([]any)
	if len(x) != 4 || x[0] != "pipeline" {
		return 0, nil, nil, false
	}
	id, ok1 := x[1].(float64)
	path, ok2 := x[2].([]any)
	args, ok3 := x[3].([]any)
	return id, path, args, ok1 && ok2 && ok3
}

// checkPushedCall fails when the fast reader reads msg and the generic one reads it otherwise.
func checkPushedCall(t *testing.T, msg []byte) bool {
	t.Helper()
	var pc pushedCall
	if !readPushedCall(msg, map[string]any{}, &pc) {
		return false
	}
	id := pc.id
	path, args := pc.tree()
	gid, gpath, gargs, gok := genericPushedCall(msg)
	if !gok || id != gid || !reflect.DeepEqual(path, gpath) || !reflect.DeepEqual(args, gargs) {
		t.Fatalf("%s: fast reader read %v %v %v; the generic one %v %v %v (ok %v)", msg, id, path, args, gid, gpath, gargs, gok)
	}
	return true
}

func TestReadPushedCall(t *testing.T) {
	for _, c := range pushCases {
		if got := checkPushedCall(t, []byte(c.msg)); got != c.fast {
			t.Errorf("%s: read fast %v, want %v", c.msg, got, c.fast)
		}
	}
	// A full string table takes no new string: the fast reader declines one it has not seen.
	full := map[string]any{}
	for i := range maxInterned {
		full[strings.Repeat("k", i+1)] = strings.Repeat("k", i+1)
	}
	var pc pushedCall
	if readPushedCall([]byte(`["push",["pipeline",0,["unseen"],[1]]]`), full, &pc) {
		t.Error("read a method name a full string table does not hold")
	}
	if !readPushedCall([]byte(`["push",["pipeline",0,["kk"],["kkk"]]]`), full, &pc) {
		t.Error("declined names the string table holds")
	}
}

// FuzzReadPushedCall: whatever the fast reader reads, the generic reader reads the same.
func FuzzReadPushedCall(f *testing.F) {
	for _, c := range pushCases {
		f.Add([]byte(c.msg))
	}
	f.Fuzz(func(t *testing.T, msg []byte) { checkPushedCall(t, msg) })
}

type chainAPI struct{ Target }

func (*chainAPI) Add(a, b float64) float64             { return a + b }
func (*chainAPI) Obj() map[string]any                  { return map[string]any{"a": []any{1.0, "x"}} }
func (*chainAPI) Same(v map[string]any) map[string]any { return v }

// A pushed call whose argument is an earlier call's promise (["pipeline",ID]), read by the fast
// reader: a promise settled to a scalar is passed as its value, one settled to anything else
// goes the evaluator's way, and an unknown ID aborts the session as the evaluator would.
func TestPushedCallPipelinedArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		msgs []string
		want string // the answer to the last pull, or the abort
	}{
		{"scalar", []string{
			`["push",["pipeline",0,["add"],[1,1]]]`,
			`["push",["pipeline",0,["add"],[["pipeline",1],1]]]`,
			`["push",["pipeline",0,["add"],[["pipeline",2],["pipeline",1]]]]`,
			`["pull",3]`,
		}, `["resolve",3,5]`},
		{"object", []string{
			`["push",["pipeline",0,["obj"],[]]]`,
			`["push",["pipeline",0,["same"],[["pipeline",1]]]]`,
			`["pull",2]`,
		}, `["resolve",2,{"a":[[1,"x"]]}]`},
		{"unknown", []string{
			`["push",["pipeline",0,["add"],[["pipeline",7],1]]]`,
		}, `["abort",["error","Error","no such entry on exports table: 7"]]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newWayTransport()
			s := NewSession(tr, &chainAPI{}, nil)
			defer s.Close()
			for _, m := range c.msgs {
				tr.in <- []byte(m)
			}
			select {
			case m := <-tr.got: // the only message: the answer to the pull, or the abort
				if m != c.want {
					t.Errorf("got %s, want %s", m, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s", c.want)
			}
		})
	}
}
