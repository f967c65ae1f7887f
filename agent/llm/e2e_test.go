package llm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/llm"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// describe renders an A2A event as "kind state entry-kind rule[ tool]: text" for comparison.
func describe(ev a2a.Event) string {
	text := func(parts []*a2a.Part) string {
		var s []string
		for _, p := range parts {
			if t, ok := p.Content.(a2a.Text); ok {
				s = append(s, string(t))
			}
		}
		return strings.Join(s, " ")
	}
	switch ev := ev.(type) {
	case *a2a.Task:
		return "task " + string(ev.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		s := "status " + string(ev.Status.State)
		if m, ok := ev.Metadata[agent.MetaKey].(map[string]any); ok {
			s += fmt.Sprintf(" %v", m["kind"])
			if r, ok := m["rule"]; ok {
				s += fmt.Sprintf(" %v", r)
			}
			if p, ok := m["params"].(map[string]any); ok && p["tool"] != nil {
				s += fmt.Sprintf(" %v(%v)", p["tool"], p["input"])
			}
		}
		if ev.Status.Message != nil {
			s += ": " + text(ev.Status.Message.Parts)
		}
		return s
	case *a2a.TaskArtifactUpdateEvent:
		s := "artifact " + ev.Artifact.Name
		if ev.Append {
			s += " append"
		}
		return s + ": " + text(ev.Artifact.Parts)
	}
	return fmt.Sprintf("%T", ev)
}

// llmAgent starts an Assistant agent on the model at url, with a "lookup" tool, that already
// knows one thing; the test closes it.
func llmAgent(t *testing.T, model agent.Model) *agent.Agent {
	t.Helper()
	opts := &agent.Options{Policy: agent.Assistant(), Tools: map[string]agent.Tool{
		"lookup": func(_ context.Context, in string) (string, error) { return in + ": blue, says the almanac", nil },
	}}
	if model != nil {
		opts.Model = model
	}
	a, err := agent.New(t.Context(), "sky", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if _, err := a.Ask(t.Context(), agent.UserText("remember the sea is green")); err != nil {
		t.Fatal(err)
	}
	return a
}

// serve serves a on every binding (internal/a2atest) and returns a function that streams a
// message to it over binding b and returns the events.
func serve(t *testing.T, a *agent.Agent, b client.Binding) func(text string) []a2a.Event {
	t.Helper()
	srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(a.Host())})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a failure guard only
	t.Cleanup(cancel)
	c, err := client.New(ctx, srv.URL, &client.Options{Binding: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return func(text string) []a2a.Event {
		t.Helper()
		evs, err := a2atest.Collect(c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}))
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
}

// The whole LLM path through the engine and every binding: the model streams a tool call (its
// arguments split over chunks), gets the tool's result in its next request, and streams the
// answer; the A2A events follow the agent's working log in order, the same on each binding.
func TestLLMAgentEndToEnd(t *testing.T) {
	t.Parallel()
	for _, b := range []client.Binding{client.BindingJSONRPC, client.BindingREST, client.BindingGRPC, client.BindingCapnweb, client.BindingCapnwebBatch} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			s := &sse{bodies: []string{
				events(toolCallChunks("call_7", "lookup", "sky colour")...),
				events(textChunk("The sky "), textChunk("is blue.")),
			}}
			a := llmAgent(t, llm.New(s.start(t), "tiny", nil))
			evs := serve(t, a, b)("what colour is the sky?")
			var got []string
			for _, ev := range evs {
				got = append(got, describe(ev))
			}
			want := []string{
				"task TASK_STATE_SUBMITTED",
				"status TASK_STATE_WORKING thought consult",
				"status TASK_STATE_WORKING call consult",
				"status TASK_STATE_WORKING call consult lookup(sky colour)",
				"artifact call result: consult: call done",
				"artifact answer: The sky ",
				"artifact answer append: is blue.",
				"status TASK_STATE_WORKING output consult: The sky is blue.",
				"artifact consult result: consult: consult answered",
				"status TASK_STATE_WORKING step consult",
				"status TASK_STATE_COMPLETED end: The sky is blue.",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			reqs := s.requests()
			if len(reqs) != 2 {
				t.Fatalf("the model got %d requests, want 2", len(reqs))
			}
			msgs := func(i int) []any { return reqs[i]["messages"].([]any) }
			sys := msgs(0)[0].(map[string]any)["content"].(string)
			for _, want := range []string{"You are sky", "the sea is green (confidence 0.90, active; from user, observations o1; reason: the user told me)",
				"o1 message from user: remember the sea is green"} {
				if !strings.Contains(sys, want) {
					t.Errorf("the first request's context lacks %q:\n%s", want, sys)
				}
			}
			second := msgs(1)
			wantTail := []any{
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_7", "type": "function",
					"function": map[string]any{"name": "lookup", "arguments": `{"input":"sky colour"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": "call_7", "content": "sky colour: blue, says the almanac"},
			}
			if diff := cmp.Diff(wantTail, second[len(second)-2:]); diff != "" {
				t.Errorf("the second request's tool exchange (-want +got):\n%s", diff)
			}
			// The answer and the tool result are observations; the model wrote no belief.
			v, err := a.View(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Beliefs) != 1 || v.Observations != 4 {
				t.Errorf("beliefs %d, observations %d; want 1 (the user's) and 4 (two messages, a tool result, an answer)", len(v.Beliefs), v.Observations)
			}
		})
	}
}

// A failing endpoint fails the task with a clear message, and does not hang it.
func TestLLMAgentFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    *sse
		opts *llm.Options
	}{
		{"500", &sse{bodies: []string{events(textChunk("internal detail"))}, status: 500}, nil},
		{"malformed chunk", &sse{bodies: []string{events(`{"choices":[`)}}, nil},
		{"oversized", &sse{bodies: []string{events(textChunk(strings.Repeat("a", 100)), textChunk(strings.Repeat("b", 100)))}}, &llm.Options{MaxResponseBytes: 200}},
		{"timeout", &sse{bodies: []string{""}, hang: true}, &llm.Options{Timeout: 100 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := llmAgent(t, llm.New(tt.s.start(t), "tiny", tt.opts))
			evs := serve(t, a, client.BindingJSONRPC)("what colour is the sky?")
			last := describe(evs[len(evs)-1])
			if want := "status TASK_STATE_FAILED end: I could not get an answer from my language model."; last != want {
				t.Errorf("last event = %q, want %q", last, want)
			}
		})
	}
}

// The same agent with no model answers through its rules alone.
func TestRuleOnlyAgentEndToEnd(t *testing.T) {
	t.Parallel()
	send := serve(t, llmAgent(t, nil), client.BindingCapnweb)
	for in, want := range map[string]string{
		"what do you know about the sea": "I know: the sea is green (confidence 0.90).",
		"what colour is the sky?":        "With a language model configured, I answer anything else with it.",
	} {
		evs := send(in)
		last := describe(evs[len(evs)-1])
		if !strings.HasPrefix(last, "status TASK_STATE_COMPLETED end: ") || !strings.Contains(last, want) {
			t.Errorf("%q: last event = %q, want completed with %q", in, last, want)
		}
	}
}
