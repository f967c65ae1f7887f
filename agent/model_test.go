package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, strings.Repeat("x", 400): 100} {
		if got := EstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", s, got, want)
		}
	}
}

// The budget drops recent observations first (oldest first), then working notes, then beliefs
// (least relevant first); identity and message always stay, and too small a budget is an error.
func TestAssembleWithinBudget(t *testing.T) {
	t.Parallel()
	l := contextLayers{
		identity:     "I am x.",
		beliefs:      []string{"b-best", "b-worst"},
		working:      []string{"w-new", "w-old"},
		observations: []string{"o-new", "o-old"},
	}
	const msg = "hello"
	full := l.render(nil, l.beliefs, l.working, l.observations)
	cost := func(sys string) int { return EstimateTokens(sys) + EstimateTokens(msg) }
	tests := []struct {
		name   string
		budget int
		want   string
	}{
		{"everything fits", cost(full), full},
		{"oldest observation dropped", cost(full) - 1, l.render(nil, l.beliefs, l.working, l.observations[:1])},
		{"observations dropped", cost(l.render(nil, l.beliefs, l.working, nil)), l.render(nil, l.beliefs, l.working, nil)},
		{"oldest working note dropped", cost(l.render(nil, l.beliefs, l.working, nil)) - 1, l.render(nil, l.beliefs, l.working[:1], nil)},
		{"least relevant belief dropped", cost(l.render(nil, l.beliefs, nil, nil)) - 1, l.render(nil, l.beliefs[:1], nil, nil)},
		{"identity only", cost("I am x."), "I am x."},
	}
	for _, tt := range tests {
		got, err := l.assemble(msg, tt.budget)
		if err != nil || got != tt.want {
			t.Errorf("%s: assemble(budget %d) = %q, %v, want %q", tt.name, tt.budget, got, err, tt.want)
		}
		if err == nil && cost(got) > tt.budget {
			t.Errorf("%s: %d tokens, over the budget %d", tt.name, cost(got), tt.budget)
		}
	}
	if _, err := l.assemble(msg, cost("I am x.")-1); err == nil {
		t.Errorf("assemble under the identity's size = nil error, want one")
	}
}

// scripted is a Model that answers from a script and records what it was sent.
type scripted struct {
	mu      sync.Mutex
	answers []ChatMessage
	err     error
	got     [][]ChatMessage
	tools   []ToolSpec
}

func (s *scripted) Complete(_ context.Context, msgs []ChatMessage, tools []ToolSpec, onText func(string)) (ChatMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, append([]ChatMessage(nil), msgs...))
	s.tools = tools
	if s.err != nil {
		return ChatMessage{}, s.err
	}
	if len(s.answers) == 0 {
		return ChatMessage{Role: "assistant", ToolCalls: []ToolCall{{ID: "again", Name: "clock", Arguments: `{"input":""}`}}}, nil
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	for _, w := range strings.SplitAfter(a.Content, " ") {
		if w != "" {
			onText(w)
		}
	}
	return a, nil
}

func TestConsultRunsOnlyGrantedTools(t *testing.T) {
	t.Parallel()
	ran := map[string]int{}
	tool := func(name string) Tool {
		return func(_ context.Context, in string) (string, error) { ran[name]++; return name + "(" + in + ")", nil }
	}
	model := &scripted{answers: []ChatMessage{
		{Role: "assistant", ToolCalls: []ToolCall{
			{ID: "c1", Name: "lookup", Arguments: `{"input":"sky"}`},
			{ID: "c2", Name: "shell", Arguments: `{"input":"rm -rf /"}`},
			{ID: "c3", Name: "lookup", Arguments: `{"input":1}`},
		}},
		{Role: "assistant", Content: "The sky is blue."},
	}}
	a := newNotes(t, "c", &Options{Policy: Assistant(), Model: model, Tools: map[string]Tool{"lookup": tool("lookup")},
		ToolHelp: map[string]string{"lookup": "looks things up"}})
	if _, err := a.Ask(t.Context(), UserText("remember the sea is green")); err != nil {
		t.Fatal(err)
	}
	run, err := a.Ask(t.Context(), UserText("what colour is the sky?"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Reply != "The sky is blue." || run.Failure != "" {
		t.Errorf("Reply, Failure = %q, %q", run.Reply, run.Failure)
	}
	if ran["lookup"] != 1 || ran["shell"] != 0 {
		t.Errorf("tools ran %v, want lookup once and nothing else", ran)
	}
	var log []string
	for _, e := range run.Log {
		switch e.Kind {
		case EntryCall:
			log = append(log, "call "+cmpOr(e.Params["tool"], string(e.Action))+" "+e.Params["input"])
		case EntryResult:
			log = append(log, "result "+e.Result["status"])
		case EntryText:
			log = append(log, "text "+e.Text)
		case EntryOutput:
			log = append(log, "output "+e.Text)
		}
	}
	want := []string{"call consult ", "call lookup sky", "result done", "call shell rm -rf /", "result refused", "call lookup ",
		"result bad-arguments", "text The ", "text sky ", "text is ", "text blue.", "output The sky is blue.", "result answered"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	// The second request carries the tool results, the refusal among them.
	second := model.got[1]
	var tools []string
	for _, m := range second[2:] {
		if m.Role == "tool" {
			tools = append(tools, m.ToolCallID+": "+m.Content)
		}
	}
	wantTools := []string{"c1: lookup(sky)", `c2: error: no tool named "shell" is available`,
		`c3: error: the arguments must be a JSON object {"input": string}`}
	if diff := cmp.Diff(wantTools, tools); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
	if sys := second[0].Content; !strings.Contains(sys, "the sea is green (confidence 0.90, active; from user, observations o1; reason: the user told me)") ||
		!strings.Contains(sys, "safety: secrets must never enter memory") {
		t.Errorf("the system message lacks the belief with provenance or the axioms:\n%s", sys)
	}
	if diff := cmp.Diff([]ToolSpec{{Name: "lookup", Description: "looks things up"}}, model.tools); diff != "" {
		t.Errorf("tools offered (-want +got):\n%s", diff)
	}
	// The model wrote no belief: the tool's result and the answer are observations.
	v, err := a.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Beliefs) != 1 || v.Beliefs[0].Subject != "the sea" {
		t.Errorf("beliefs = %+v, want only the user's", v.Beliefs)
	}
	r, err := a.Recall(t.Context(), Query{Text: "blue"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Observations) != 1 || r.Observations[0].Source != (Source{Kind: SourceAgent, Name: "model"}) || r.Observations[0].Kind != "model-answer" {
		t.Errorf("observations of the answer = %+v", r.Observations)
	}
}

func TestConsultFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		model *scripted
		lim   Limits
		why   string
	}{
		{"model error", &scripted{err: errors.New("llm: bad response: HTTP status 500")}, Limits{}, "HTTP status 500"},
		{"steps exhausted", &scripted{}, Limits{ModelSteps: 2}, "did not answer within 2 steps"},
		{"budget too small", &scripted{}, Limits{ContextTokens: 5}, "more than the context budget of 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pol := Assistant()
			pol.Limits = tt.lim
			a := newNotes(t, "f", &Options{Policy: pol, Model: tt.model, Tools: map[string]Tool{"clock": Clock(nil)}})
			var end Entry
			var thoughts []string
			for e, err := range a.Stream(t.Context(), UserText("why is the sky blue?")) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Kind == EntryThought {
					thoughts = append(thoughts, e.Text)
				}
				end = e
			}
			if end.Result["status"] != "failed" || end.Result["failure"] == "" {
				t.Errorf("end = %+v, want failed with a failure", end.Result)
			}
			if !strings.Contains(strings.Join(thoughts, "\n"), tt.why) {
				t.Errorf("thoughts %q do not say %q", thoughts, tt.why)
			}
		})
	}
}

// With no model, the same policy answers through its rules alone.
func TestAssistantWithoutModel(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a := newNotes(t, "r", &Options{Policy: Assistant(), Tools: map[string]Tool{"clock": Clock(func() time.Time { return at })}})
	for _, tt := range []struct{ in, want string }{
		{"echo hi there", "hi there"},
		{"time", "It is 2026-05-01T12:00:00Z."},
		{"remember the sky is blue", "Noted: the sky is blue."},
		{"why is the sky blue?", `I am r, a rule-driven agent. Tell me "remember X is Y", "actually X is Y", "what do you know about X", "forget X", "echo TEXT", "time" or "who are you". With a language model configured, I answer anything else with it.`},
	} {
		run, err := a.Ask(t.Context(), UserText(tt.in))
		if err != nil || run.Reply != tt.want {
			t.Errorf("Ask(%q) = %q, %v, want %q", tt.in, run.Reply, err, tt.want)
		}
	}
	noClock := newNotes(t, "n", &Options{Policy: Assistant()})
	if run, _ := noClock.Ask(t.Context(), UserText("time")); run.Reply != "I could not use my clock tool (no-such-tool)." {
		t.Errorf("time without a clock = %q", run.Reply)
	}
}

func TestToolInput(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`{"input":"a"}`: "a", ` {"input" : ""} `: ""} {
		if got, err := toolInput(in); err != nil || got != want {
			t.Errorf("toolInput(%s) = %q, %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{``, `{}`, `[]`, `{"input":1}`, `{"Input":"a"}`, `{"input":"a","input":"b"}`, `{"input":"a","x":1}`, `{"input":"a"} {}`, `"a"`} {
		if got, err := toolInput(in); err == nil {
			t.Errorf("toolInput(%s) = %q, nil, want an error", in, got)
		}
	}
}

// blocking is a Model that waits for its context.
type blocking struct{ entered chan struct{} }

func (b blocking) Complete(ctx context.Context, _ []ChatMessage, _ []ToolSpec, _ func(string)) (ChatMessage, error) {
	close(b.entered)
	<-ctx.Done()
	return ChatMessage{}, context.Cause(ctx)
}

// Close cancels a model call in progress instead of waiting for the model.
func TestCloseCancelsModel(t *testing.T) {
	t.Parallel()
	m := blocking{entered: make(chan struct{})}
	a, err := New(t.Context(), "b", &Options{Policy: Assistant(), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan error, 1)
	go func() {
		run, err := a.Ask(context.Background(), UserText("why?"))
		if err == nil && run.Failure == "" {
			err = errors.New("the run neither failed nor saw the agent closed")
		}
		asked <- err
	}()
	<-m.entered
	closed := make(chan struct{})
	go func() { _ = a.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute): // a failure guard only
		t.Fatal("Close did not return while the model was called")
	}
	if err := <-asked; err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("Ask = %v, want a failed run or ErrClosed", err)
	}
}

// renderLen is the length of what render returns, trailing newlines trimmed, for any items.
func TestRenderLen(t *testing.T) {
	t.Parallel()
	for _, l := range []contextLayers{
		{identity: "I am x."},
		{identity: "I am x.\n", observations: []string{"o1 said\n\n"}},
		{identity: "I", knowledge: []string{"k"}, beliefs: []string{"b1", "b2"}, working: []string{"\n"}, observations: []string{"\n", "\n\n"}},
		{identity: "\n\n", working: []string{""}},
	} {
		for _, items := range [][4][]string{{l.knowledge, l.beliefs, l.working, l.observations}, {nil, l.beliefs, nil, nil}, {}} {
			want := len(l.render(items[0], items[1], items[2], items[3]))
			if got := l.renderLen(items[0], items[1], items[2], items[3]); got != want {
				t.Errorf("renderLen(%q, %q) = %d, want %d", l.identity, items, got, want)
			}
		}
	}
}
