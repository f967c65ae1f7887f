package agent_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
)

// The ready note-taking agent: everything it does comes from its rules.
func Example() {
	ctx := context.Background()
	a, err := agent.New(ctx, "notes", &agent.Options{Policy: agent.Notes()})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	for _, text := range []string{
		"remember the sky is blue",
		"remember the sky is green",
		"actually the sky is green",
		"what do you know about the sky",
	} {
		run, _ := a.Ask(ctx, agent.UserText(text))
		fmt.Println(run.Reply)
	}
	// Output:
	// Noted: the sky is blue.
	// That contradicts what I knew: the sky is blue. I trust that less now; say "actually the sky is green" to correct it.
	// Corrected: the sky is green.
	// I know: the sky is green (confidence 0.90).
}

// A policy of your own: a CEL predicate, an action and its parameters per rule.
func ExampleRule() {
	ctx := context.Background()
	pol := &agent.Policy{
		Axioms: []agent.Rule{{
			Name: "no-shouting", When: `text == text.upperAscii() && text.size() > 3`, Action: agent.Reply,
			Params: map[string]string{"text": `"Please don't shout."`}, Stop: true, Reason: "be calm",
		}},
		Rules: []agent.Rule{
			{Name: "likes", When: `command == "i" && args.startsWith("like ")`, Action: agent.Remember,
				Params: map[string]string{"subject": `"user likes " + args.substring(5)`, "value": `"yes"`},
				Reason: "users state their tastes"},
			{Name: "ack", When: `last.status == "stored"`, Action: agent.Reply,
				Params: map[string]string{"text": `"I'll remember that " + last.subject.replace("user likes", "you like") + "."`},
				Reason: "confirm"},
		},
	}
	a, err := agent.New(ctx, "tastes", &agent.Options{Policy: pol})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	for _, text := range []string{"I like tea", "HELLO THERE"} {
		run, _ := a.Ask(ctx, agent.UserText(text))
		fmt.Println(run.Reply)
	}
	r, _ := a.Recall(ctx, agent.Query{Text: "tea"})
	p := r.Beliefs[0].Provenance
	fmt.Printf("%s: source %s, observations %v, rule %s, reason %q\n", r.Beliefs[0].Subject, p.Source.Kind, p.Observations, p.Rule, p.Reason)
	// Output:
	// I'll remember that you like tea.
	// Please don't shout.
	// user likes tea: source user, observations [o1], rule likes, reason "users state their tastes"
}

// An agent changes its mutable rules only by a proposal that passes replay; it can be rolled back.
func ExampleAgent_Propose() {
	ctx := context.Background()
	a, _ := agent.New(ctx, "notes", &agent.Options{Policy: agent.Notes()})
	defer a.Close()
	hello, _ := a.Ask(ctx, agent.UserText("hello"))

	_, err := a.Propose(ctx, agent.Proposal{Op: agent.OpRemove, Rule: agent.Rule{Name: "safety"},
		Justification: "in the way", Evidence: []string{hello.Observation}})
	fmt.Println(err)

	d, err := a.Propose(ctx, agent.Proposal{
		Op: agent.OpAdd,
		Rule: agent.Rule{Name: "greet", When: `command == "hello"`, Action: agent.Reply,
			Params: map[string]string{"text": `"Hello to you too."`}, Reason: "users greet"},
		Justification: "a greeting got the help text",
		Evidence:      []string{hello.Observation},
	})
	fmt.Println(d.Version, err)
	for _, diff := range d.Diff {
		fmt.Printf("%s: %s -> %s\n", diff.Observation, strings.Join(diff.Before, ", "), strings.Join(diff.After, ", "))
	}
	v, _ := a.Rollback(ctx)
	fmt.Println("back to version", v)
	// Output:
	// agent: proposal rejected: frozen: "safety" is an axiom
	// 2 <nil>
	// o1: help: reply sent -> help: reply sent, greet: reply sent
	// back to version 1
}

// Chosen rule classes change only with a human's approval: the proposal is held, and approval
// re-checks it against the policy then in force and records who approved it.
func ExampleAgent_Approve() {
	ctx := context.Background()
	pol := agent.Notes()
	pol.Limits.Approval = []agent.Action{agent.Forget, agent.Revise, agent.Reply}
	a, _ := agent.New(ctx, "notes", &agent.Options{Policy: pol})
	defer a.Close()
	hello, _ := a.Ask(ctx, agent.UserText("hello"))
	greet := agent.Proposal{Op: agent.OpAdd,
		Rule: agent.Rule{Name: "greet", When: `command == "hello"`, Action: agent.Reply,
			Params: map[string]string{"text": `"Hello to you too."`}, Reason: "users greet"},
		Justification: "a greeting got the help text", Evidence: []string{hello.Observation}}

	d, err := a.Propose(ctx, greet)
	fmt.Println("version", d.Version, "pending", d.Pending, err)
	d, err = a.Approve(ctx, d.Pending, "alice")
	fmt.Println("version", d.Version, err)

	d, _ = a.Propose(ctx, agent.Proposal{Op: agent.OpRemove, Rule: agent.Rule{Name: "greet"},
		Justification: "the help text is enough", Evidence: []string{hello.Observation}})
	r, _ := a.Reject(ctx, d.Pending, "bob", "greetings are polite")
	fmt.Println(r.ID, r.Status, "by", r.Reviewer+":", r.Reason)
	_, err = a.Approve(ctx, r.ID, "alice")
	fmt.Println(err)

	_, err = a.Propose(ctx, agent.Proposal{Op: agent.OpRemove, Rule: agent.Rule{Name: "limits.approval"},
		Justification: "approval is slow", Evidence: []string{hello.Observation}})
	fmt.Println(err)
	_, err = a.Approve(ctx, "r9", "alice")
	fmt.Println(err)

	v, _ := a.View(ctx)
	fmt.Println("version", v.Version, "approved by", v.History[1].Approver)
	for _, r := range v.Reviews {
		fmt.Println(r.ID, r.Proposal.Op, r.Proposal.Rule.Name, r.Status, r.Reviewer)
	}
	// Output:
	// version 1 pending r1 <nil>
	// version 2 <nil>
	// r2 rejected by bob: greetings are polite
	// agent: review already decided: r2 was rejected by bob
	// agent: proposal rejected: frozen: "limits.approval" names the validation rules
	// agent: no such review: "r9"
	// version 2 approved by alice
	// r1 add greet approved alice
	// r2 remove greet rejected bob
}

// thinker is a stand-in for a language model (package agent/llm is a real one): it calls the
// "clock" tool once, then answers with what the tool said.
type thinker struct{}

func (thinker) Complete(_ context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, onText func(string)) (agent.ChatMessage, error) {
	last := msgs[len(msgs)-1]
	if last.Role != "tool" {
		return agent.ChatMessage{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c1", Name: "clock", Arguments: `{"input": ""}`}}}, nil
	}
	answer := "Time for lunch: it is " + last.Content + "."
	onText(answer)
	return agent.ChatMessage{Role: "assistant", Content: answer}, nil
}

// Assistant runs its rules first and consults its model about the rest; the model may call the
// agent's tools, and what it says is an observation, not a memory.
func ExampleAssistant() {
	ctx := context.Background()
	noon := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	a, err := agent.New(ctx, "helper", &agent.Options{Policy: agent.Assistant(), Model: thinker{},
		Tools: map[string]agent.Tool{"clock": agent.Clock(noon)}})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	for _, text := range []string{"remember lunch is at noon", "is it lunch time?"} {
		run, _ := a.Ask(ctx, agent.UserText(text))
		fmt.Println(run.Reply)
	}
	v, _ := a.View(ctx)
	fmt.Println(len(v.Beliefs), "belief,", v.Observations, "observations")
	// Output:
	// Noted: lunch is at noon.
	// Time for lunch: it is 2026-05-01T12:00:00Z.
	// 1 belief, 4 observations
}
