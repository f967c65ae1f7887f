package agent

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

// A rule's fast program (tiered.fast: no cost tracking) runs only where CEL's static estimate
// proves the cap: on inputs within the tier's bound, the cost the tracked program counts never
// passes the estimate's maximum, and both programs answer the same.
func TestFastProgramWithinEstimate(t *testing.T) {
	exprs := []string{
		`text.matches("a+b|c[de]*f")`,
		`text.lowerAscii().trim().startsWith(args) || text.contains(command)`,
		`text.split(" ").exists(w, w.contains(args))`,
		`goals.exists(g, text.contains(g))`,
		`data.exists(k, data[k].startsWith(text.substring(0, text.size() / 2)))`,
		`last.exists(k, last[k].size() > 3) && "tool" in data && text.size() < 5`,
		`text.replace("a", args).indexOf(command) >= 0`,
		`[text, args, pending].join(" ").size() > self.size()`, // not sound: runs tracked
		`text.endsWith(args) && !(text.size() - args.size() >= 3) && text.substring(1) != "" && kind != source`,
		`(text + args + kind + source).upperAscii().reverse().size() > 0`,
	}
	var fast int
	for _, p := range []*Policy{Notes(), Assistant()} {
		for _, r := range slices.Concat(p.Axioms, p.Rules) {
			exprs = append(exprs, r.When)
			for _, src := range r.Params {
				exprs = append(exprs, src)
			}
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	str := func(n int) string {
		const letters = "abcdef  ABCDEF é"
		var b strings.Builder
		for b.Len() < n {
			b.WriteByte(letters[rnd.IntN(len(letters))])
		}
		return b.String()[:n]
	}
	for _, src := range exprs {
		ast, iss := celEnv.Compile(src)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", src, iss.Err())
		}
		for i, n := range costTiers[:2] {
			limit := uint64(10000) * costFactor[i]
			tr, err := program(src, ast.OutputType(), 10000)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if tr.fast[i] == nil {
				continue
			}
			fast++
			est, err := celEnv.EstimateCost(ast, tierSizes{uint64(n)})
			if err != nil || est.Max > limit {
				t.Fatalf("%s: a fast program for tier %d, estimate %v, %v", src, i, est, err)
			}
			for range 6 {
				// Every variable within the bound; the largest strings most often.
				size := func() int {
					if rnd.IntN(3) == 0 {
						return n
					}
					return rnd.IntN(n + 1)
				}
				vars := map[string]any{"text": str(size()), "command": str(size() / 8), "args": str(size()), "kind": str(size()),
					"source": "user", "self": str(size()), "pending": str(size()),
					"data":  map[string]string{"tool": str(size()), str(size() / 4): str(size())},
					"last":  map[string]string{"action": str(size()), "status": str(size())},
					"goals": []string{str(size()), str(size() / 2)}, "state": map[string]int64{"fired": 1}}
				act, err := cel.NewActivation(vars)
				if err != nil {
					t.Fatal(err)
				}
				want, det, werr := tr.tracked[i].Eval(act)
				if werr != nil && strings.Contains(werr.Error(), "cost limit") {
					t.Fatalf("%s: the tracked program passed the cap the estimate proved: %v", src, werr)
				}
				if c := det.ActualCost(); c == nil || *c > est.Max {
					t.Fatalf("%s: cost %d over the estimate's maximum %d", src, *c, est.Max)
				}
				got, _, gerr := tr.fast[i].Eval(act)
				if (werr != nil) != (gerr != nil) || (werr == nil && !reflect.DeepEqual(want.Value(), got.Value())) {
					t.Fatalf("%s: tracked %v, %v; fast %v, %v", src, want, werr, got, gerr)
				}
			}
		}
	}
	if fast == 0 {
		t.Fatal("no rule has a fast program")
	}
	// Every rule of the runtime's own policies has one.
	for _, p := range []*Policy{Notes(), Assistant()} {
		cp, err := compile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cp.rules {
			if r.when.fast[0] == nil {
				t.Errorf("rule %s: no fast program", r.Name)
			}
		}
	}
}

// An input beyond a tier's bound runs the tracked program, which stops at the cap.
func TestFastProgramOnlyWithinBound(t *testing.T) {
	tr, err := program(`text.split(" ").exists(w, w.contains(args))`, cel.BoolType, 10)
	if err != nil {
		t.Fatal(err)
	}
	if tr.fast[0] != nil {
		t.Fatal("a fast program for a cap the estimate cannot prove")
	}
	tr, err = program(`text == "a"`, cel.BoolType, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if tr.at(10, 10) != tr.fast[0] || tr.at(10, costTiers[0]+1) != tr.tracked[0] {
		t.Fatal("at does not choose by the bound")
	}
	act, _ := cel.NewActivation(map[string]any{"text": strings.Repeat("a b ", 100), "args": "b"})
	if _, _, err := mustProgram(t, `text.split(" ").exists(w, w.contains(args))`, 10).at(400, 400).Eval(act); err == nil ||
		!strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("over the cap: %v", err)
	}
}

func mustProgram(t *testing.T, src string, limit uint64) *tiered {
	tr, err := program(src, cel.BoolType, limit)
	if err != nil {
		t.Fatal(err)
	}
	return &tr
}
