package agent

import (
	"context"
	"strings"
	"testing"
)

// A tool's answer is an observation from the tool, integrated by the agent's own rules: the tool
// cannot write memory, a rule decides to remember what it said.
func TestToolResultsAreObservations(t *testing.T) {
	t.Parallel()
	pol := &Policy{Rules: []Rule{
		{Name: "look-up", When: `command == "capital" && source == "user"`, Action: CallTool,
			Params: map[string]string{"tool": `"atlas"`, "input": `args`}, Reason: "the atlas knows capitals"},
		{Name: "learn", When: `kind == "tool-result" && source == "tool"`, Action: Remember,
			Params: map[string]string{"subject": `"capital of " + data.input`, "value": `text`}, Reason: "the atlas said so"},
		{Name: "tell", When: `last.status == "stored"`, Action: Reply,
			Params: map[string]string{"text": `last.subject + " is " + last.value`}, Reason: "answer"},
	}}
	atlas := func(_ context.Context, in string) (string, error) {
		return map[string]string{"france": "Paris"}[strings.ToLower(in)], nil
	}
	a := newNotes(t, "geo", &Options{Policy: pol, Tools: map[string]Tool{"atlas": atlas}})
	run := say(t, a, "capital france")
	if run.Reply != "capital of france is Paris" {
		t.Fatalf("reply = %q, log %+v", run.Reply, run.Log)
	}
	r, _ := a.Recall(t.Context(), Query{Text: "capital france"})
	if len(r.Beliefs) != 1 {
		t.Fatalf("beliefs = %+v", r.Beliefs)
	}
	p := r.Beliefs[0].Provenance
	if p.Source != (Source{Kind: SourceTool, Name: "atlas"}) || p.Observations[0] != "o2" || p.Reason != "the atlas said so" || p.Context.Task != "t1" {
		t.Errorf("provenance = %+v, want the tool's observation o2", p)
	}
	if r.Beliefs[0].Confidence != 0.8 {
		t.Errorf("confidence = %v, want 0.8 for a tool", r.Beliefs[0].Confidence)
	}
}
