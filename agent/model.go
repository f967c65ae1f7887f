package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// Model is a chat model the agent may consult: a rule with the [Consult] action hands it the
// working context and the agent's tools. Package agent/llm provides one for OpenAI-compatible
// endpoints. The model never touches memory: what it says and what its tool calls return are
// observations the agent's rules integrate.
type Model interface {
	// Complete sends the conversation and the tools the model may call. It reports the answer's
	// text to onText as it arrives (in the caller's goroutine) and returns the whole answer: its
	// text, its tool calls, or both.
	Complete(ctx context.Context, msgs []ChatMessage, tools []ToolSpec, onText func(string)) (ChatMessage, error)
}

// ChatMessage is one message of a conversation with a [Model].
type ChatMessage struct {
	// Role is "system", "user", "assistant" or "tool".
	Role    string
	Content string
	// ToolCalls are the tool calls of an assistant message.
	ToolCalls []ToolCall
	// ToolCallID is the call a "tool" message answers.
	ToolCallID string
	// Usage is what the call that produced this answer cost, as the endpoint reported it, on
	// the message a Model returns; nil when it reported nothing (the runtime then estimates it
	// with EstimateTokens and marks the turn's record so).
	Usage *Usage
}

// Usage is the token usage of one model call.
type Usage struct {
	InputTokens, OutputTokens int
}

// ToolCall is a model's request to call a tool. Arguments is a JSON object {"input": string}.
type ToolCall struct {
	ID, Name, Arguments string
}

// ToolSpec describes a granted tool to a model: a capability's method, or a definition's tool.
type ToolSpec struct {
	Name, Description string
	// Parameters is the JSON Schema of the tool's arguments; nil means one string argument,
	// "input" (a definition's tool).
	Parameters json.RawMessage
}

// EstimateTokens is the runtime's token estimate of s: its length in bytes divided by four,
// rounded up. It is deterministic and needs no tokenizer; it overestimates for English text with
// most tokenizers, so a budget in these units is a safe bound.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// contextLayers is the working context the runtime gives a model, layer by layer, highest
// priority first. Identity and the message are always kept; the rest fit the budget.
type contextLayers struct {
	identity     string   // who the agent is and the axioms it is bound by
	knowledge    []string // the operator's knowledge
	beliefs      []string // relevant long-term beliefs with provenance, best first
	working      []string // working memory, most recent first
	observations []string // recent observations, most recent first
}

// assemble renders the layers as the system message within budget tokens (counting the system
// message and msg). It drops the lowest-priority items first: recent observations (oldest
// first), then working notes (oldest first), then beliefs (least relevant first), then the
// operator's knowledge (last first). It fails when
// the identity and the message alone exceed the budget.
func (l contextLayers) assemble(msg string, budget int) (string, error) {
	know, beliefs, working, obs, err := l.fit(msg, budget)
	if err != nil {
		return "", err
	}
	if know == nil && beliefs == nil && working == nil && obs == nil {
		return l.identity, nil
	}
	return l.render(know, beliefs, working, obs), nil
}

// size is the size, in EstimateTokens units, of what assemble returns, without building it.
func (l contextLayers) size(msg string, budget int) (int, error) {
	know, beliefs, working, obs, err := l.fit(msg, budget)
	if err != nil {
		return 0, err
	}
	return (l.renderLen(know, beliefs, working, obs)+3)/4 + EstimateTokens(msg), nil
}

// fit returns the items that fit the budget; all nil when only the identity does.
func (l contextLayers) fit(msg string, budget int) (know, beliefs, working, obs []string, err error) {
	fixed := EstimateTokens(l.identity) + EstimateTokens(msg)
	if fixed > budget {
		return nil, nil, nil, nil, fmt.Errorf("agent: the identity and the message need %d tokens, more than the context budget of %d", fixed, budget)
	}
	know, beliefs, working, obs = l.knowledge, l.beliefs, l.working, l.observations
	for {
		if (l.renderLen(know, beliefs, working, obs)+3)/4+EstimateTokens(msg) <= budget {
			return know, beliefs, working, obs, nil
		}
		switch {
		case len(obs) > 0:
			obs = obs[:len(obs)-1]
		case len(working) > 0:
			working = working[:len(working)-1]
		case len(beliefs) > 0:
			beliefs = beliefs[:len(beliefs)-1]
		case len(know) > 0:
			know = know[:len(know)-1]
		default: // the section headers alone do not fit: identity only
			return nil, nil, nil, nil, nil
		}
	}
}

var contextTitles = [4]string{
	"What your operator wants you to know:",
	"What you believe (long-term memory, with where it came from):",
	"Working memory:",
	"Recent observations, newest first:",
}

// pieces calls f on each piece of the rendering, in order (before trailing newlines are trimmed).
func (l contextLayers) pieces(know, beliefs, working, obs []string, f func(string)) {
	f(l.identity)
	for i, items := range [4][]string{know, beliefs, working, obs} {
		if len(items) == 0 {
			continue
		}
		f("\n\n")
		f(contextTitles[i])
		f("\n")
		for _, it := range items {
			f("- ")
			f(it)
			f("\n")
		}
	}
}

func (l contextLayers) render(know, beliefs, working, obs []string) string {
	var b strings.Builder
	b.Grow(l.renderLen(know, beliefs, working, obs) + 1)
	l.pieces(know, beliefs, working, obs, func(s string) { b.WriteString(s) })
	return strings.TrimRight(b.String(), "\n")
}

// renderLen is len(l.render(know, beliefs, working, obs)), computed without rendering.
func (l contextLayers) renderLen(know, beliefs, working, obs []string) int {
	n, trailing := 0, 0 // trailing counts the newlines ending what was seen so far
	l.pieces(know, beliefs, working, obs, func(s string) {
		n += len(s)
		t := len(s) - len(strings.TrimRight(s, "\n"))
		if t == len(s) {
			trailing += t
		} else {
			trailing = t
		}
	})
	return n - trailing
}

// Context sizes: how many items of each layer are candidates before the budget is applied.
const (
	contextBeliefs      = 20
	contextObservations = 20
)

// workingContext gathers the layers for a consultation about prompt, caused by observation o.
func (m *mind) workingContext(o Observation, prompt string) contextLayers {
	var l contextLayers
	var id strings.Builder
	id.WriteString("You are " + m.name + ", an agent of the a2aWebCap runtime. Answer the user's message. " +
		"You cannot change your memory yourself: what you say and what your tools return are observations your rules may integrate.")
	axioms := slices.DeleteFunc(slices.Clone(m.pol.rules), func(r *compiledRule) bool { return !r.axiom })
	if len(axioms) > 0 {
		id.WriteString("\nAxioms you are bound by:")
		for _, r := range axioms {
			id.WriteString("\n- " + r.Name + ": " + r.Reason)
		}
	}
	l.identity = id.String()
	for _, b := range m.v.base.knowledge.beliefs {
		l.knowledge = append(l.knowledge, b.Subject+" is "+b.Value+" ("+b.Provenance.Reason+")")
	}
	for _, b := range m.v.recallBeliefs(Query{Text: prompt, Limit: contextBeliefs}) {
		if b.Provenance.Source.Kind == SourceOperator {
			continue // in its own layer
		}
		p := b.Provenance
		src := string(p.Source.Kind)
		if p.Source.Name != "" {
			src += " " + p.Source.Name
		}
		s := fmt.Sprintf("%s is %s (confidence %.2f, %s; from %s, observations %s; reason: %s)",
			b.Subject, b.Value, b.Confidence, b.Status, src, strings.Join(p.Observations, " "), p.Reason)
		l.beliefs = append(l.beliefs, s)
		if m.t != nil && m.t.sess {
			m.t.cited = append(m.t.cited, beliefFact(b))
		}
	}
	w := m.v.working()
	for i := len(w) - 1; i >= 0; i-- {
		n := w[i]
		l.working = append(l.working, n.Subject+": "+n.Value+" (seen "+strconv.Itoa(n.Uses)+" times)")
	}
	m.v.recent(contextObservations, func(x Observation) bool {
		if x.ID == o.ID || x.Text == "" {
			return false
		}
		if m.conversation != "" && x.Context.Session == m.conversation {
			return false // the conversation itself comes as chat messages
		}
		src := string(x.Source.Kind)
		if x.Source.Name != "" {
			src += " " + x.Source.Name
		}
		l.observations = append(l.observations, x.ID+" "+x.Kind+" from "+src+": "+x.Text)
		return true
	})
	return l
}

// contextSize is the size of the working context a consult about prompt would send now.
func (m *mind) contextSize(o Observation, prompt string) int {
	n, err := m.workingContext(o, prompt).size(prompt, m.pol.src.Limits.ContextTokens)
	if err != nil {
		return 0
	}
	return n
}

// consult runs the model loop for observation o: the model answers, or calls granted tools
// whose results go back to it, for at most Limits.ModelSteps rounds. Each model call and tool
// call is an effect of the turn: the instance goes on serving others meanwhile. Tool results
// and the answer are logged as observations and integrated by the rules at depth+1.
func (m *mind) consult(ctx context.Context, r *compiledRule, o Observation, p map[string]string, run *Run, depth int) map[string]string {
	res := map[string]string{"action": string(Consult)}
	switch {
	case m.tools == nil: // a replay
		res["status"] = "replayed"
		return res
	case m.model == nil:
		res["status"] = "no-model"
		return res
	}
	lim := m.pol.src.Limits
	prompt := cmpOr(p["prompt"], o.Text)
	var msgs []ChatMessage
	if m.t.sess {
		var err error
		if msgs, err = m.sessionContext(ctx, o, prompt); err != nil {
			return m.consultFailed(run, r, res, err)
		}
	} else {
		sys, err := m.workingContext(o, prompt).assemble(prompt, lim.ContextTokens)
		if err != nil {
			return m.consultFailed(run, r, res, err)
		}
		m.t.consulted(o, prompt, EstimateTokens(sys)+EstimateTokens(prompt))
		msgs = []ChatMessage{{Role: "system", Content: sys}, {Role: "user", Content: prompt}}
	}
	onText := func(s string) { m.record(run, Entry{Kind: EntryText, Rule: r.Name, Text: s}) }
	for step := 1; step <= lim.ModelSteps; step++ {
		// Each step offers what the instance holds now: a capability installed (or revoked) by
		// the previous step's calls is offered (or not) in the next.
		ans, err := m.t.complete(ctx, m.model, msgs, m.toolSpecs(), onText)
		if err != nil {
			return m.consultFailed(run, r, res, err)
		}
		if len(ans.ToolCalls) == 0 {
			res["status"], res["result"] = "answered", ans.Content
			answer := m.observe(Event{Kind: "model-answer", Source: Source{Kind: SourceAgent, Name: "model"}, Context: o.Context,
				Text: ans.Content, Data: map[string]string{"consult": o.ID}})
			m.record(run, Entry{Kind: EntryOutput, Rule: r.Name, Text: ans.Content})
			run.Reply = joinLine(run.Reply, ans.Content)
			if depth < maxToolDepth {
				_ = m.integrateDepth(ctx, answer, run, depth+1)
			}
			return res
		}
		msgs = append(msgs, ChatMessage{Role: "assistant", Content: ans.Content, ToolCalls: slices.Clone(ans.ToolCalls)})
		for _, tc := range ans.ToolCalls {
			out := m.modelToolCall(ctx, r, o, tc, run, depth)
			msgs = append(msgs, ChatMessage{Role: "tool", ToolCallID: tc.ID, Content: out})
		}
	}
	return m.consultFailed(run, r, res, fmt.Errorf("agent: the model did not answer within %d steps", lim.ModelSteps))
}

// modelToolCall runs one tool call of the model, only through a granted tool, and returns what
// goes back to the model.
func (m *mind) modelToolCall(ctx context.Context, r *compiledRule, o Observation, tc ToolCall, run *Run, depth int) string {
	_, legacy := m.t.in.h.def.toolCaps[tc.Name]
	input, err := tc.Arguments, error(nil)
	if legacy || !strings.Contains(tc.Name, "__") { // a definition's tool: exactly {"input": string}, as before
		input, err = toolInput(tc.Arguments)
	}
	m.record(run, Entry{Kind: EntryCall, Rule: r.Name, Action: CallTool, Params: map[string]string{"tool": tc.Name, "input": input, "id": tc.ID}})
	res := map[string]string{"action": string(CallTool), "subject": tc.Name, "value": tc.ID}
	var prov *provenance
	req, rerr := m.request(tc.Name, tc.Arguments, true)
	switch {
	case rerr != nil || !slices.ContainsFunc(m.toolSpecs(), func(s ToolSpec) bool { return s.Name == tc.Name }):
		res["status"], res["result"] = "refused", "error: no tool named "+strconv.Quote(tc.Name)+" is available"
	case err != nil:
		res["status"], res["result"] = "bad-arguments", "error: "+err.Error()
	default:
		req.Session = o.Context.Session
		req.Origin = capability.Origin{Kind: capability.OriginModel, Name: tc.ID, Task: o.Context.Task}
		var out json.RawMessage
		out, prov, err = m.t.callCapability(ctx, req)
		if err != nil {
			res["status"], res["result"] = callStatus(err), "error: "+err.Error()
		} else {
			res["status"], res["result"] = "done", resultText(out)
		}
	}
	m.record(run, Entry{Kind: EntryResult, Rule: r.Name, Action: CallTool, Result: maps.Clone(res)})
	if res["status"] == "done" {
		follow := m.observe(prov.event(tc.Name, res["result"], o.Context,
			map[string]string{"call": o.ID, "input": input, "tool": tc.Name, "model-call": tc.ID}))
		if depth < maxToolDepth {
			_ = m.integrateDepth(ctx, follow, run, depth+1)
		}
	}
	return res["result"]
}

func (m *mind) consultFailed(run *Run, r *compiledRule, res map[string]string, err error) map[string]string {
	m.record(run, Entry{Kind: EntryThought, Rule: r.Name, Text: "consulting the model failed: " + err.Error()})
	res["status"], res["result"] = "failed", err.Error()
	run.Failure = "I could not get an answer from my language model."
	return res
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// toolInput reads a tool call's arguments strictly: a JSON object whose only key is "input", a
// string.
func toolInput(args string) (string, error) {
	bad := errors.New(`the arguments must be a JSON object {"input": string}`)
	dec := json.NewDecoder(strings.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", bad
	}
	var input string
	seen := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil || k != "input" || seen {
			return "", bad
		}
		seen = true
		v, err := dec.Token()
		s, ok := v.(string)
		if err != nil || !ok {
			return "", bad
		}
		input = s
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') || !seen {
		return "", bad
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", bad
	}
	return input, nil
}
