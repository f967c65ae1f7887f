package agent

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
)

// Action is what a rule does when its predicate holds. The set is fixed.
type Action string

// The actions, with the parameters each takes (required ones first; all are strings).
const (
	// Remember writes a long-term belief (subject, value; reason optional). The same value
	// corroborates the current belief; a different one contradicts it and demotes it.
	Remember Action = "remember"
	// Note puts (subject, value) in working memory; repeated notes are promoted.
	Note Action = "note"
	// Promote moves the working note on subject to long-term memory.
	Promote Action = "promote"
	// Demote lowers the confidence of the belief on subject.
	Demote Action = "demote"
	// Forget retires the belief on subject; it stays in the history.
	Forget Action = "forget"
	// Revise corrects the belief on subject to value, superseding it.
	Revise Action = "revise"
	// Recall searches memory for query; the result is in last.result.
	Recall Action = "recall"
	// Reply answers with text.
	Reply Action = "reply"
	// AskInput asks text and waits for input on subject.
	AskInput Action = "ask"
	// CallTool calls tool with input; the result is a new observation from the tool.
	CallTool Action = "call"
	// Adopt makes goal an open goal of the agent (visible to rules as `goals`).
	Adopt Action = "adopt"
	// Achieve marks the open goal as achieved.
	Achieve Action = "achieve"
	// Drop abandons the open goal.
	Drop Action = "drop"
	// Consult asks the agent's [Model] about prompt (optional; the event's text by default),
	// with a working context assembled from memory and the agent's tools; the answer is the
	// run's reply. Without a model its status is "no-model". See the package doc.
	Consult Action = "consult"
)

var actionParams = map[Action]struct{ required, optional []string }{
	Remember: {[]string{"subject", "value"}, []string{"reason"}},
	Note:     {[]string{"subject", "value"}, nil},
	Promote:  {[]string{"subject"}, []string{"reason"}},
	Demote:   {[]string{"subject"}, []string{"reason"}},
	Forget:   {[]string{"subject"}, []string{"reason"}},
	Revise:   {[]string{"subject", "value"}, []string{"reason"}},
	Recall:   {[]string{"query"}, nil},
	Reply:    {[]string{"text"}, nil},
	AskInput: {[]string{"text", "subject"}, nil},
	CallTool: {[]string{"tool", "input"}, nil},
	Adopt:    {[]string{"goal"}, []string{"reason"}},
	Achieve:  {[]string{"goal"}, []string{"reason"}},
	Drop:     {[]string{"goal"}, []string{"reason"}},
	Consult:  {nil, []string{"prompt"}},
}

// Rule is one update rule: when When holds, do Action with Params.
type Rule struct {
	// Name identifies the rule in its policy; proposals address rules by name.
	Name string `json:"name"`
	// When is a CEL predicate (see the package doc for its variables).
	When   string `json:"when"`
	Action Action `json:"action"`
	// Params are CEL expressions of type string, one per parameter of the action.
	Params map[string]string `json:"params,omitempty"`
	// Stop ends the run after this rule fires.
	Stop bool `json:"stop,omitempty"`
	// Reason says why the rule exists; it becomes the reason in the provenance of what it writes.
	Reason string `json:"reason"`
	// Description says what the rule does for whoever sends it a message, when it answers one:
	// the agent's card derives its skills from it (docs/multi-agent.md). It changes nothing the
	// rule does. "" means none: a skill is then described by Reason.
	Description string `json:"description,omitempty"`
}

// Limits are the meta-level validation rules: frozen, no proposal can change them.
type Limits struct {
	// CostLimit caps the CEL cost of one evaluation of a rule on an event whose strings (its
	// text, data and the last result) total at most 1 KiB; zero means 10000. CEL charges string
	// functions by length, so the cap grows with the input: eight times as much for up to 8 KiB,
	// 64 times for up to 64 KiB (see TextBytes).
	CostLimit uint64 `json:"costLimit,omitempty"`
	// TextBytes bounds the text of an observation: a user's message longer than that is refused
	// before any rule runs (its turn fails, saying so), and a longer tool result or model answer
	// is logged cut to that length, with data "truncated" holding its full length. Zero means
	// 64 KiB, the most it may be.
	TextBytes int `json:"textBytes,omitempty"`
	// ReplayWindow is how many recent observations a proposal is replayed on; zero means 100.
	ReplayWindow int `json:"replayWindow,omitempty"`
	// MaxEdits proposals may be applied per EditWindow; zero means 3.
	MaxEdits int `json:"maxEdits,omitempty"`
	// EditWindow is the window of MaxEdits; zero means one hour.
	EditWindow time.Duration `json:"editWindow,omitempty"`
	// WorkingSize bounds working memory; zero means 64 notes.
	WorkingSize int `json:"workingSize,omitempty"`
	// WorkingTTL drops older working notes; zero means one hour.
	WorkingTTL time.Duration `json:"workingTTL,omitempty"`
	// PromoteAfter is how many uses promote a working note to a belief; zero means 3.
	PromoteAfter int `json:"promoteAfter,omitempty"`
	// ContextTokens is the budget of the working context a Consult gives the model, in
	// [EstimateTokens] units; zero means 4096.
	ContextTokens int `json:"contextTokens,omitempty"`
	// ModelSteps bounds the model calls of one Consult (each may call tools); zero means 4.
	ModelSteps int `json:"modelSteps,omitempty"`
	// Approval lists the actions whose rules change only with a human's approval: a proposal
	// that adds or writes a rule with one of them, or replaces or removes one, is held for
	// [Agent.Approve]. A rule's class is its action (memory promotion and forgetting: Promote,
	// Demote, Forget; belief revision: Revise; tool preference: CallTool; asking: AskInput).
	// Every entry must be a known action. Nil means no approval is needed.
	Approval []Action `json:"approval,omitempty"`
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.CostLimit == 0 {
		l.CostLimit = 10000
	}
	def(&l.ReplayWindow, 100)
	def(&l.MaxEdits, 3)
	def(&l.WorkingSize, 64)
	def(&l.PromoteAfter, 3)
	def(&l.ContextTokens, 4096)
	def(&l.ModelSteps, 4)
	if l.TextBytes <= 0 || l.TextBytes > maxTextBytes {
		l.TextBytes = maxTextBytes
	}
	if l.EditWindow <= 0 {
		l.EditWindow = time.Hour
	}
	if l.WorkingTTL <= 0 {
		l.WorkingTTL = time.Hour
	}
	return l
}

// Policy is an agent's meta-level state: frozen axioms, mutable rules and frozen limits.
// Axioms are evaluated before rules, each in order.
type Policy struct {
	Axioms []Rule `json:"axioms"`
	Rules  []Rule `json:"rules"`
	Limits Limits `json:"limits"`
}

func (p *Policy) clone() *Policy {
	l := p.Limits
	l.Approval = slices.Clone(l.Approval)
	return &Policy{Axioms: cloneRules(p.Axioms), Rules: cloneRules(p.Rules), Limits: l}
}

// ErrInvalidRule is wrapped by errors about rules that do not compile or type-check.
var ErrInvalidRule = errors.New("agent: invalid rule")

// compiledRule is a rule with its programs.
type compiledRule struct {
	Rule
	axiom  bool
	when   tiered
	params map[string]tiered
}

// maxTextBytes is the most Limits.TextBytes may be: the input the largest cost tier serves.
const maxTextBytes = 64 << 10

// costTiers are the input sizes (total bytes of an event's strings) each program of a rule
// serves, smallest first; the program for tier i has Limits.CostLimit times costFactor[i].
var (
	costTiers  = [...]int{1 << 10, 8 << 10, maxTextBytes}
	costFactor = [...]uint64{1, 8, 64}
)

// tiered is one CEL expression compiled once per cost tier: CEL charges string functions by
// the length of their arguments, so a cap that lets a rule read a sentence would refuse it a
// page, and an axiom that cannot be evaluated must not simply be skipped.
//
// Tracking the cost as a program runs is half of what evaluating it costs. So each tier also
// has, when CEL's static estimate proves the cap cannot be reached, a program that does not
// track it (fast): the estimate assumes every variable — each string, each map and list, each
// of their elements — holds at most the tier's bytes or entries, and the fast program runs only
// on inputs within that bound (see at), where the estimate's maximum is within the cap. CEL's
// estimate is not an upper bound of the cost it tracks for every function (join's is not), so
// only expressions that call nothing but the functions of estimateSound have a fast program;
// TestFastProgramWithinEstimate checks each of them. Elsewhere the tracked program runs.
type tiered struct {
	tracked [len(costTiers)]cel.Program
	fast    [len(costTiers)]cel.Program // nil where the estimate does not prove the cap
}

// at returns the program for an input of size bytes (the largest tier beyond it), whose
// largest variable (bytes of one string, or entries of a map or list: see varBound) is bound.
func (t *tiered) at(size, bound int) cel.Program {
	i := len(costTiers) - 1
	for j, n := range costTiers {
		if size <= n {
			i = j
			break
		}
	}
	if t.fast[i] != nil && bound <= costTiers[i] {
		return t.fast[i]
	}
	return t.tracked[i]
}

// estimateSound are the functions and operators whose static cost estimate bounds the cost CEL
// tracks as they run (TestFastProgramWithinEstimate exercises each).
var estimateSound = map[string]bool{
	"_==_": true, "_!=_": true, "_&&_": true, "_||_": true, "!_": true, "_?_:_": true, "_<_": true, "_<=_": true,
	"_>_": true, "_>=_": true, "_+_": true, "_-_": true, "_/_": true, "@in": true, "_[_]": true, "@not_strictly_false": true,
	"size": true, "startsWith": true, "endsWith": true, "contains": true, "matches": true, "lowerAscii": true,
	"upperAscii": true, "trim": true, "indexOf": true, "split": true, "substring": true, "replace": true, "reverse": true,
}

// soundEstimate reports whether every call of ast is to a function of estimateSound.
func soundEstimate(a *cel.Ast) bool {
	ok := true
	celast.PostOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.CallKind && !estimateSound[e.AsCall().FunctionName()] {
			ok = false
		}
	}))
	return ok
}

// tierSizes is the checker's size estimator for a tier's fast program: every variable, and
// every element of one, has at most n bytes or entries.
type tierSizes struct{ n uint64 }

func (e tierSizes) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	if len(node.Path()) == 0 {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: e.n}
}

func (tierSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

type compiledPolicy struct {
	src   *Policy
	rules []*compiledRule // axioms, then rules
}

var celEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("text", cel.StringType),
		cel.Variable("command", cel.StringType),
		cel.Variable("args", cel.StringType),
		cel.Variable("kind", cel.StringType),
		cel.Variable("source", cel.StringType),
		cel.Variable("self", cel.StringType),
		cel.Variable("pending", cel.StringType),
		cel.Variable("data", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("state", cel.MapType(cel.StringType, cel.IntType)),
		cel.Variable("last", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("goals", cel.ListType(cel.StringType)),
		ext.Strings(),
	)
	if err != nil {
		panic(err)
	}
	return env
}()

// compile checks and compiles every rule of p.
func compile(p *Policy) (*compiledPolicy, error) {
	p = p.clone()
	p.Limits = p.Limits.withDefaults()
	cp := &compiledPolicy{src: p}
	for _, a := range p.Limits.Approval {
		if _, ok := actionParams[a]; !ok {
			return nil, fmt.Errorf("%w: limits: approval of unknown action %q", ErrInvalidRule, a)
		}
	}
	names := map[string]bool{}
	for i, r := range slices.Concat(p.Axioms, p.Rules) {
		if names[r.Name] {
			return nil, fmt.Errorf("%w: duplicate rule name %q", ErrInvalidRule, r.Name)
		}
		names[r.Name] = true
		c, err := compileRule(r, p.Limits.CostLimit)
		if err != nil {
			return nil, err
		}
		c.axiom = i < len(p.Axioms)
		cp.rules = append(cp.rules, c)
	}
	return cp, nil
}

func compileRule(r Rule, costLimit uint64) (*compiledRule, error) {
	if r.Name == "" {
		return nil, fmt.Errorf("%w: a rule needs a name", ErrInvalidRule)
	}
	spec, ok := actionParams[r.Action]
	if !ok {
		return nil, fmt.Errorf("%w: rule %q: unknown action %q", ErrInvalidRule, r.Name, r.Action)
	}
	when, err := program(r.When, cel.BoolType, costLimit)
	if err != nil {
		return nil, fmt.Errorf("%w: rule %q: when: %v", ErrInvalidRule, r.Name, err)
	}
	c := &compiledRule{Rule: r, when: when, params: map[string]tiered{}}
	for _, p := range spec.required {
		if _, ok := r.Params[p]; !ok {
			return nil, fmt.Errorf("%w: rule %q: action %s needs parameter %q", ErrInvalidRule, r.Name, r.Action, p)
		}
	}
	for name, src := range r.Params {
		if !slices.Contains(spec.required, name) && !slices.Contains(spec.optional, name) {
			return nil, fmt.Errorf("%w: rule %q: action %s has no parameter %q", ErrInvalidRule, r.Name, r.Action, name)
		}
		prg, err := program(src, cel.StringType, costLimit)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %q: parameter %s: %v", ErrInvalidRule, r.Name, name, err)
		}
		c.params[name] = prg
	}
	return c, nil
}

func program(src string, want *cel.Type, costLimit uint64) (tiered, error) {
	var t tiered
	ast, iss := celEnv.Compile(src)
	if iss.Err() != nil {
		return t, iss.Err()
	}
	if got := ast.OutputType(); !got.IsExactType(want) && !got.IsExactType(cel.DynType) {
		return t, fmt.Errorf("%q has type %s, want %s", src, got, want)
	}
	var fast cel.Program // the same for every tier that has one
	sound := soundEstimate(ast)
	for i, f := range costFactor {
		prg, err := celEnv.Program(ast, cel.CostLimit(costLimit*f), cel.EvalOptions(cel.OptOptimize))
		if err != nil {
			return t, err
		}
		t.tracked[i] = prg
		if !sound {
			continue
		}
		est, err := celEnv.EstimateCost(ast, tierSizes{uint64(costTiers[i])})
		if err != nil || est.Max > costLimit*f {
			continue
		}
		if fast == nil {
			if fast, err = celEnv.Program(ast, cel.EvalOptions(cel.OptOptimize)); err != nil {
				return t, err
			}
		}
		t.fast[i] = fast
	}
	return t, nil
}
