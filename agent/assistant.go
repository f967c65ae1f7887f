package agent

import (
	"context"
	"slices"
	"time"
)

// Assistant is the policy of the agent `a2awebcap serve` runs by default: the [Notes] rules,
// plus
//
//	echo TEXT                   replies TEXT
//	time                        asks the "clock" tool (see [Clock]) and tells the time
//	help                        says what it understands
//	anything else               with a [Model]: consults it (Consult), the model may call the
//	                            agent's tools; without one: the help text
//
// Everything it does is rules: without a model it is a rule-only agent, with one the same rules
// run first and the model answers only what they leave unanswered.
func Assistant() *Policy {
	p := Notes()
	for i, r := range p.Axioms {
		if r.Name == "identity" {
			p.Axioms[i].Params = map[string]string{"text": `"I am " + self + ", an agent of the a2aWebCap runtime. I remember what you tell me, with where it came from; I echo and tell the time" + (state.model == 1 ? "; anything else I ask my language model about." : ".")`}
		}
	}
	help := `"I am " + self + ", a rule-driven agent. Tell me \"remember X is Y\", \"actually X is Y\", \"what do you know about X\", \"forget X\", \"echo TEXT\", \"time\" or \"who are you\"` +
		`" + (state.model == 1 ? "; anything else goes to my language model." : ". With a language model configured, I answer anything else with it.")`
	first := []Rule{
		{Name: "echo", Description: "Echoes your text back", When: `source == "user" && command == "echo"`, Action: Reply, Params: map[string]string{"text": `args`},
			Stop: true, Reason: "the user asked for an echo"},
		{Name: "time", Description: "Tells the time (UTC)", When: `source == "user" && command in ["time", "now", "date"] && args == ""`, Action: CallTool,
			Params: map[string]string{"tool": `"clock"`, "input": `""`}, Reason: "the user asked the time"},
		{Name: "tell-time", When: `kind == "tool-result" && "tool" in data && data.tool == "clock" && !("model-call" in data)`, Action: Reply,
			Params: map[string]string{"text": `"It is " + text + "."`}, Reason: "answer with what the clock said"},
		{Name: "tool-trouble", When: `last.action == "call" && last.status in ["no-such-tool", "failed"]`, Action: Reply,
			Params: map[string]string{"text": `"I could not use my " + last.subject + " tool (" + last.status + ")."`},
			Reason: "say when a tool did not work"},
	}
	var rules []Rule
	for _, r := range p.Rules {
		switch r.Name {
		case "help":
			rules = append(rules,
				Rule{Name: "consult", When: `state.fired == 0 && source == "user" && state.model == 1`, Action: Consult,
					Stop: true, Reason: "what my rules do not handle, I ask my language model about"},
				Rule{Name: "help", When: r.When, Action: Reply, Params: map[string]string{"text": help}, Reason: r.Reason})
		default:
			rules = append(rules, r)
		}
	}
	p.Rules = slices.Concat(first, rules)
	return p
}

// Clock is the "clock" tool of [Assistant]: it answers the current time in UTC (RFC 3339) and
// ignores its input. now nil means time.Now.
func Clock(now func() time.Time) Tool {
	if now == nil {
		now = time.Now
	}
	return func(context.Context, string) (string, error) {
		return now().UTC().Format(time.RFC3339), nil
	}
}
