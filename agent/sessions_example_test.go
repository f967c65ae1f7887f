package agent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/session"
)

// parrot is a model that says how many messages it was given and repeats the last one.
type parrot struct{}

func (parrot) Complete(_ context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, _ func(string)) (agent.ChatMessage, error) {
	return agent.ChatMessage{Role: "assistant", Content: fmt.Sprintf("(%d messages) you said: %s", len(msgs), msgs[len(msgs)-1].Content),
		Usage: &agent.Usage{InputTokens: 100, OutputTokens: 10}}, nil
}

// A chat session of an agent: its turns reach the model as chat messages, its budget warns and
// then ends it, and its affordances — history, metrics, fork — are the Host's sessions
// extension, as every binding serves it (docs/sessions.md runs this example).
func ExampleHost_Sessions() {
	ctx := context.Background()
	h, _ := agent.NewHost(&agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: parrot{},
		Sessions: session.Config{Budget: session.Budget{Turns: 3}}}, nil)
	defer h.Close()
	alice, _ := h.Instance(ctx, agent.Principal{Name: "alice"})
	say := func(text string) {
		ev := agent.UserText(text)
		ev.Context.Session = "trip"
		run, err := alice.Ask(ctx, ev)
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		fmt.Println(run.Reply)
	}
	say("I want to visit Lisbon in May.")
	say("What should I pack?")
	say("And for the evenings?")
	say("One more thing.")

	// The affordances, as alice (a binding puts the authenticated caller in the context).
	actx, cc := a2asrv.NewCallContext(ctx, nil)
	cc.User = a2asrv.NewAuthenticatedUser("alice", nil)
	sessions := h.Sessions()
	hist, _ := sessions.GetSessionHistory(actx, &session.HistoryRequest{ContextID: "trip"})
	for _, t := range hist.Turns {
		fmt.Printf("turn %d %s: %s\n", t.Number, t.Status, t.User.Content)
	}
	m, _ := sessions.GetSessionMetrics(actx, &session.Ref{ContextID: "trip"})
	fmt.Printf("%s after %d turns (%s budget): %d tokens in, %d out\n", m.State, m.Used.Turns, m.Collapse.Reason, m.Used.In, m.Used.Out)
	fork, _ := sessions.ForkSession(actx, &session.ForkRequest{ContextID: "trip", Turn: new(1), NewContextID: "trip-2"})
	fmt.Printf("fork %s: %s at turn %d, from %s\n", fork.ID, fork.State, fork.Turn, fork.Origin.Session)
	// Output:
	// (2 messages) you said: I want to visit Lisbon in May.
	// (4 messages) you said: What should I pack?
	// (6 messages) you said: And for the evenings?
	// refused: this operation is not supported: session trip is collapsed (turn budget spent at turn 3): fork it or start a new context
	// turn 1 completed: I want to visit Lisbon in May.
	// turn 2 completed: What should I pack?
	// turn 3 completed: And for the evenings?
	// collapsed after 3 turns (turns budget): 300 tokens in, 30 out
	// fork trip-2: waiting at turn 1, from trip
}

// The example in docs/sessions.md is ExampleHost_Sessions, word for word: the page cannot drift
// from what runs.
func TestSessionsDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/sessions.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("sessions_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- ExampleHost_Sessions -->\n```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	_, body, ok3 := strings.Cut(string(src), "func ExampleHost_Sessions() {\n")
	body, _, ok4 := strings.Cut(body, "\n}\n")
	if !ok || !ok2 || !ok3 || !ok4 {
		t.Fatal("the example is missing from docs/sessions.md or from this file")
	}
	var want []string
	for _, l := range strings.Split(body, "\n") {
		want = append(want, strings.TrimPrefix(l, "\t"))
	}
	if got := strings.TrimRight(block, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("docs/sessions.md's example differs from ExampleHost_Sessions:\n--- doc\n%s\n--- test\n%s", got, strings.Join(want, "\n"))
	}
}
