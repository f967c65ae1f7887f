package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// chat is a Model that records each call's messages (roles and contents) and answers
// "answer N", or waits on gate when it is set (until released or its context ends).
type chat struct {
	mu      sync.Mutex
	calls   [][]agent.ChatMessage
	gate    chan struct{}
	entered chan string
}

func newChat(gated bool) *chat {
	c := &chat{entered: make(chan string, 100)}
	if gated {
		c.gate = make(chan struct{}, 100)
	}
	return c
}

func (c *chat) Complete(ctx context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, onText func(string)) (agent.ChatMessage, error) {
	c.mu.Lock()
	c.calls = append(c.calls, append([]agent.ChatMessage(nil), msgs...))
	n := len(c.calls)
	c.mu.Unlock()
	user := msgs[len(msgs)-1].Content
	c.entered <- user
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return agent.ChatMessage{}, context.Cause(ctx)
		}
	}
	text := fmt.Sprintf("answer %d to %s", n, user)
	if onText != nil {
		onText(text)
	}
	return agent.ChatMessage{Role: "assistant", Content: text, Usage: &agent.Usage{InputTokens: 20, OutputTokens: 5}}, nil
}

func (c *chat) call(i int) []agent.ChatMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[i]
}

// consulting answers every user message with the model, and remembers "remember X is Y".
func consulting() *agent.Policy {
	return &agent.Policy{Rules: []agent.Rule{
		{Name: "remember", When: `source == "user" && command == "remember"`, Action: agent.Remember,
			Params: map[string]string{"subject": `args.split(" is ")[0]`, "value": `args.split(" is ")[1]`}, Reason: "told"},
		{Name: "ack", When: `last.status == "stored"`, Action: agent.Reply, Params: map[string]string{"text": `"Noted."`}, Stop: true},
		{Name: "consult", When: `source == "user"`, Action: agent.Consult},
	}}
}

func roles(msgs []agent.ChatMessage) string {
	var rs []string
	for _, m := range msgs {
		rs = append(rs, m.Role)
	}
	return strings.Join(rs, ",")
}

// A session's consults send its conversation as chat messages, not one message plus a log; its
// own messages stay out of the memory layers' observations; another session starts afresh.
func TestSessionTurnsAreChatMessages(t *testing.T) {
	t.Parallel()
	model := newChat(false)
	h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: model}, nil)
	alice := instance(t, h, "alice")
	ask(t, alice, "s1", "what is the capital of France?")
	ask(t, alice, "s1", "and of Italy?")
	second := model.call(1)
	if got := roles(second); got != "system,user,assistant,user" {
		t.Fatalf("the second consult's roles = %s, want system,user,assistant,user", got)
	}
	if second[1].Content != "what is the capital of France?" || !strings.HasPrefix(second[2].Content, "answer 1") || second[3].Content != "and of Italy?" {
		t.Errorf("the second consult: %+v", second)
	}
	if strings.Contains(second[0].Content, "capital of France") {
		t.Errorf("the system message repeats the conversation:\n%s", second[0].Content)
	}
	ask(t, alice, "s2", "hello")
	if got := roles(model.call(2)); got != "system,user" {
		t.Errorf("another session's first consult = %s, want system,user", got)
	}
	// The turns are recorded, with what the model reported.
	h1, err := h.Sessions().GetSessionHistory(callAs(t, "alice"), &session.HistoryRequest{Tenant: "acme", ContextID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(h1.Turns) != 2 || h1.Turns[1].User.Content != "and of Italy?" || !strings.HasPrefix(h1.Turns[1].Response.Content, "answer 2") ||
		h1.Turns[1].Usage != (session.Usage{In: 20, Out: 5}) || h1.Turns[1].ContextBefore == 0 || h1.Turns[1].Status != session.Completed {
		t.Errorf("history %+v", h1.Turns)
	}
}

// callAs is a context whose call is alice's, bob's, …, authenticated.
func callAs(t *testing.T, name string) context.Context {
	ctx, cc := a2asrv.NewCallContext(t.Context(), nil)
	cc.User = a2asrv.NewAuthenticatedUser(name, nil)
	return ctx
}

// A session persists: a new host on the same store goes on with its turns, in order.
func TestSessionSurvivesTheHost(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	model := newChat(false)
	h1, _ := agent.NewHost(&agent.Definition{Name: "helper", Policy: consulting(), Model: model}, &agent.HostOptions{Store: st})
	a1, _ := h1.Instance(t.Context(), agent.Principal{Tenant: "acme", Name: "alice"})
	ask(t, a1, "s", "first")
	ask(t, a1, "s", "second")
	_ = h1.Close()
	h2 := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: model}, &agent.HostOptions{Store: st})
	ask(t, instance(t, h2, "alice"), "s", "third")
	third := model.call(2)
	if got := roles(third); got != "system,user,assistant,user,assistant,user" {
		t.Errorf("after a restart the consult's roles = %s", got)
	}
	m, err := h2.Sessions().GetSessionMetrics(callAs(t, "alice"), &session.Ref{Tenant: "acme", ContextID: "s"})
	if err != nil || m.Turn != 3 || m.Used.Turns != 3 || m.Used.In != 60 {
		t.Errorf("metrics %+v, %v", m, err)
	}
}

// A turn budget collapses the session at the turn that spends it, which says so; the next
// message is refused, as UnsupportedOperation, before anything runs.
func TestSessionBudgetCollapses(t *testing.T) {
	t.Parallel()
	h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: newChat(false),
		Sessions: session.Config{Budget: session.Budget{Turns: 2, Warn: 0.5}}}, nil)
	a := instance(t, h, "alice")
	first := ask(t, a, "s", "one")
	if !hasSession(first, "warning") {
		t.Errorf("no warning with 1 turn of 2 left: %+v", first.Log)
	}
	second := ask(t, a, "s", "two")
	if !hasSession(second, "collapse") || !strings.HasPrefix(second.Reply, "answer 2") {
		t.Errorf("the turn that spent the budget: %+v", second)
	}
	ev := agent.UserText("three")
	ev.Context.Session = "s"
	_, err := a.Ask(t.Context(), ev)
	if !errors.Is(err, a2a.ErrUnsupportedOperation) || !errors.Is(err, session.ErrCollapsed) || !strings.Contains(err.Error(), "fork it") {
		t.Fatalf("a message to the collapsed session: %v", err)
	}
	if v, _ := a.View(t.Context()); v.Observations != 4 { // two messages and two answers
		t.Errorf("%d observations: the refused message reached memory", v.Observations)
	}
	// Another session is not affected; a fork goes on.
	ask(t, a, "other", "hello")
	f, err := h.Sessions().ForkSession(callAs(t, "alice"), &session.ForkRequest{Tenant: "acme", ContextID: "s", NewContextID: "s-more"})
	if err != nil || f.State != session.Waiting {
		t.Fatalf("fork: %+v, %v", f, err)
	}
	if run := ask(t, a, "s-more", "three"); !strings.HasPrefix(run.Reply, "answer") {
		t.Errorf("the fork's turn: %+v", run)
	}
}

func hasSession(run agent.Run, rule string) bool {
	for _, e := range run.Log {
		if e.Kind == agent.EntrySession && e.Rule == rule {
			return true
		}
	}
	return false
}

// askAsync starts an Ask on task in session s and returns where its run arrives.
func askAsync(t *testing.T, a *agent.Agent, s, task, text string) <-chan agent.Run {
	ch := make(chan agent.Run, 1)
	ev := agent.UserText(text)
	ev.Context.Session, ev.Context.Task = s, task
	go func() {
		run, err := a.Ask(context.WithoutCancel(t.Context()), ev)
		if err != nil {
			t.Errorf("Ask(%q) = %v", text, err)
		}
		ch <- run
	}()
	return ch
}

func endStatus(run agent.Run) string {
	if len(run.Log) == 0 {
		return ""
	}
	return run.Log[len(run.Log)-1].Result["status"]
}

// waitFor reads the next user message the model was given (generous bound: the machine is
// shared; this only fails a test that would otherwise hang).
func waitFor(t *testing.T, model *chat, want string) {
	t.Helper()
	select {
	case got := <-model.entered:
		if got != want {
			t.Fatalf("the model was given %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never given %q", want)
	}
}

// waitQueued waits until the session's second message waits (its task is counted).
func waitWaiting(t *testing.T, h *agent.Host, name, id string, n int) {
	t.Helper()
	for range 3000 {
		m, err := h.Sessions().GetSessionMetrics(callAs(t, name), &session.Ref{Tenant: "acme", ContextID: id})
		if err == nil && m.Waiting == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d messages never waited in session %s", n, id)
}

// The three interruption strategies, executed: a message that arrives while a turn streams is
// queued, aborts the turn, or restarts it merged — never slipped into it.
func TestSessionInterruption(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, mode session.Interruption) (*agent.Host, *agent.Agent, *chat) {
		model := newChat(true)
		h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: model,
			Sessions: session.Config{Interruption: mode}}, nil)
		return h, instance(t, h, "alice"), model
	}
	history := func(t *testing.T, h *agent.Host) []session.Turn {
		hist, err := h.Sessions().GetSessionHistory(callAs(t, "alice"), &session.HistoryRequest{Tenant: "acme", ContextID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		return hist.Turns
	}

	t.Run("complete", func(t *testing.T) {
		t.Parallel()
		h, a, model := setup(t, session.InterruptComplete)
		r1 := askAsync(t, a, "s", "t1", "one")
		waitFor(t, model, "one")
		r2 := askAsync(t, a, "s", "t2", "two")
		waitWaiting(t, h, "alice", "s", 1)
		model.gate <- struct{}{}
		if run := <-r1; !strings.HasSuffix(run.Reply, "to one") {
			t.Errorf("turn 1: %+v", run)
		}
		waitFor(t, model, "two") // only now
		model.gate <- struct{}{}
		if run := <-r2; !strings.HasSuffix(run.Reply, "to two") {
			t.Errorf("turn 2: %+v", run)
		}
		hist := history(t, h)
		if len(hist) != 2 || hist[0].User.Content != "one" || hist[1].User.Content != "two" || hist[1].Status != session.Completed {
			t.Errorf("history %+v", hist)
		}
	})

	t.Run("abort", func(t *testing.T) {
		t.Parallel()
		h, a, model := setup(t, session.InterruptAbort)
		r1 := askAsync(t, a, "s", "t1", "write an essay")
		waitFor(t, model, "write an essay")
		r2 := askAsync(t, a, "s", "t2", "never mind, say hi")
		run1 := <-r1 // aborted at once, its model call canceled
		if endStatus(run1) != "canceled" || !strings.Contains(run1.Failure, "Interrupted") {
			t.Errorf("the interrupted turn: %+v", run1)
		}
		waitFor(t, model, "never mind, say hi")
		model.gate <- struct{}{}
		if run := <-r2; !strings.HasSuffix(run.Reply, "to never mind, say hi") {
			t.Errorf("the interrupting turn: %+v", run)
		}
		hist := history(t, h)
		if len(hist) != 2 || hist[0].Status != session.Aborted || hist[1].Status != session.Completed {
			t.Errorf("history %+v", hist)
		}
		v, _ := a.View(t.Context())
		if v.Observations != 2 { // the second message and its answer: nothing of the aborted turn
			t.Errorf("%d observations: the aborted turn left memory", v.Observations)
		}
		// The aborted turn stays out of the next context.
		r3 := askAsync(t, a, "s", "t3", "bye")
		waitFor(t, model, "bye")
		model.gate <- struct{}{}
		<-r3
		if got := roles(model.call(2)); got != "system,user,assistant,user" {
			t.Errorf("the context after an aborted turn: %s", got)
		}
	})

	t.Run("merge", func(t *testing.T) {
		t.Parallel()
		h, a, model := setup(t, session.InterruptMerge)
		r1 := askAsync(t, a, "s", "t1", "book a table for two")
		waitFor(t, model, "book a table for two")
		r2 := askAsync(t, a, "s", "t2", "at eight")
		waitFor(t, model, "book a table for two\n\nat eight") // the turn starts again, with both
		model.gate <- struct{}{}
		run1, run2 := <-r1, <-r2
		if !strings.HasSuffix(run1.Reply, "to book a table for two\n\nat eight") || endStatus(run1) != "completed" {
			t.Errorf("the merged turn: %+v", run1)
		}
		if endStatus(run2) != "completed" || !strings.Contains(run2.Reply, "answer of task t1") {
			t.Errorf("the merged message's own task: %+v", run2)
		}
		hist := history(t, h)
		if len(hist) != 1 || hist[0].Attempts != 2 || !cmp.Equal(hist[0].Merged, []string{"t2"}) || hist[0].User.Content != "book a table for two\n\nat eight" {
			t.Errorf("history %+v", hist)
		}
		v, _ := a.View(t.Context())
		if v.Observations != 2 { // the merged message and the answer
			t.Errorf("%d observations: the first attempt left memory", v.Observations)
		}
	})
}

// Over A2A (the executor on the engine): a session's budget warning and its end are status
// messages of the turn's task; a message to the collapsed session is UnsupportedOperation and
// no task is made.
func TestSessionOverA2A(t *testing.T) {
	t.Parallel()
	h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: newChat(false),
		Sessions: session.Config{Budget: session.Budget{Turns: 2, Warn: 0.5}}}, nil)
	st := memory.New()
	e := engine.New(agent.Executor(h), st, nil)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	send := func(text string) ([]string, error) {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		m.ContextID = "ctx-1"
		var got []string
		for ev, err := range e.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
			if err != nil {
				return got, err
			}
			got = append(got, describeEvent(ev))
		}
		return got, nil
	}
	got, err := send("one")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "status working session warning: the session's turns budget is running low: 1 of 2 used") {
		t.Errorf("turn 1 events:\n%s", strings.Join(got, "\n"))
	}
	got, _ = send("two")
	want := "status working session collapse: This conversation has ended: session ctx-1 is collapsed (turn budget spent at turn 2): fork it or start a new context."
	if !slices.Contains(got, want) || !strings.HasPrefix(got[len(got)-1], "status completed end: answer 2") {
		t.Errorf("turn 2 events:\n%s", strings.Join(got, "\n"))
	}
	before, _ := e.ListTasks(ctx, &a2a.ListTasksRequest{})
	_, err = send("three")
	if !errors.Is(err, a2a.ErrUnsupportedOperation) || !strings.Contains(err.Error(), "session ctx-1 is collapsed") {
		t.Fatalf("a message to the collapsed session: %v", err)
	}
	after, _ := e.ListTasks(ctx, &a2a.ListTasksRequest{})
	if len(after.Tasks) != len(before.Tasks) {
		t.Errorf("the refused message made a task: %d tasks, then %d", len(before.Tasks), len(after.Tasks))
	}
}

// The affordances through the Host, as the bindings call them: a merge's turns, and the next
// message's, are numbered on from the session's; a fork and a reset are stored.
func TestSessionServiceNumbersAndStores(t *testing.T) {
	t.Parallel()
	st := agent.NewMemoryStore()
	h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: newChat(false)}, &agent.HostOptions{Store: st})
	a := instance(t, h, "alice")
	ask(t, a, "s1", "one")
	ask(t, a, "s1", "two")
	ask(t, a, "s2", "elsewhere")
	svc, ctx := h.Sessions(), callAs(t, "alice")
	if _, err := svc.MergeSession(ctx, &session.MergeRequest{Tenant: "acme", ContextID: "s1", From: "s2", Mode: session.MergeTurns}); err != nil {
		t.Fatal(err)
	}
	ask(t, a, "s1", "four")
	hist, _ := svc.GetSessionHistory(ctx, &session.HistoryRequest{Tenant: "acme", ContextID: "s1"})
	var nums []int
	for _, tr := range hist.Turns {
		nums = append(nums, tr.Number)
	}
	if !cmp.Equal(nums, []int{1, 2, 3, 4}) || hist.Turns[2].Origin == nil || hist.Turns[3].User.Content != "four" {
		t.Errorf("history after a merge: %v %+v", nums, hist.Turns)
	}
	if r, _ := a.Recall(t.Context(), agent.Query{Text: "four"}); len(r.Observations) == 0 || r.Observations[0].Context.Turn != 4 {
		t.Errorf("the message's observation is not of turn 4: %+v", r.Observations)
	}
	recs, _ := st.Turns(t.Context(), agent.Key{Agent: "helper", Principal: a.Principal()}, "s1")
	if len(recs) != 4 || recs[2].Number != 3 || recs[3].Number != 4 {
		t.Errorf("stored records %+v", recs)
	}
	if _, err := svc.ForkSession(ctx, &session.ForkRequest{Tenant: "acme", ContextID: "s1", Turn: ptr(2), NewContextID: "s3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ForkSession(ctx, &session.ForkRequest{Tenant: "acme", ContextID: "s1", NewContextID: "s3"}); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("a fork onto an existing session: %v", err)
	}
	if _, err := svc.ResetSession(ctx, &session.Ref{Tenant: "acme", ContextID: "s1"}); err != nil {
		t.Fatal(err)
	}
	// A new host reads them back as they were.
	h2 := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: newChat(false)}, &agent.HostOptions{Store: st})
	list, err := h2.Sessions().ListSessions(ctx, &session.ListRequest{Tenant: "acme"})
	if err != nil || len(list.Sessions) != 3 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	for _, m := range list.Sessions {
		switch m.ID {
		case "s1":
			if m.State != session.Ready || !cmp.Equal(m.Resets, []int{4}) {
				t.Errorf("s1 after the reset: %+v", m)
			}
		case "s3":
			if m.Turn != 2 || m.Origin == nil || m.Origin.Session != "s1" {
				t.Errorf("the fork: %+v", m)
			}
		}
	}
	// Bob has none of them.
	if l, _ := h2.Sessions().ListSessions(callAs(t, "bob"), &session.ListRequest{Tenant: "acme"}); len(l.Sessions) != 0 {
		t.Errorf("bob lists %+v", l.Sessions)
	}
}

func ptr[T any](v T) *T { return &v }

// summarizer is a model that writes summaries when asked for one (keeping the facts it is told
// to keep, unless lossy) and answers anything else.
type summarizer struct {
	mu        sync.Mutex
	lossy     bool
	summaries int
	last      []agent.ChatMessage
}

func (m *summarizer) Complete(_ context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, _ func(string)) (agent.ChatMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.HasPrefix(msgs[0].Content, "You write the running summary") {
		m.summaries++
		text := "The user planned a trip."
		if !m.lossy {
			for _, line := range strings.Split(msgs[0].Content, "\n- ")[1:] {
				text += " " + strings.SplitN(line, "\n", 2)[0] + "."
			}
		}
		return agent.ChatMessage{Role: "assistant", Content: text, Usage: &agent.Usage{InputTokens: 50, OutputTokens: 10}}, nil
	}
	m.last = msgs
	return agent.ChatMessage{Role: "assistant", Content: "Fine. " + strings.Repeat("More words to fill the window. ", 3),
		Usage: &agent.Usage{InputTokens: 30, OutputTokens: 20}}, nil
}

// A summarizing session asks the model for a summary when its context passes the high-water
// mark, and the next consults get it in the system message; under the coherent strategy a
// summary that lost a fact is refused, and the fact stays in the context (the facts list).
func TestSessionSummaries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		strategy session.Strategy
		lossy    bool
	}{{session.Summarize, false}, {session.Coherent, false}, {session.Coherent, true}} {
		t.Run(fmt.Sprintf("%s lossy=%v", tc.strategy, tc.lossy), func(t *testing.T) {
			t.Parallel()
			model := &summarizer{lossy: tc.lossy}
			h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: model,
				Sessions: session.Config{Strategy: tc.strategy, Window: 600}}, nil)
			a := instance(t, h, "alice")
			ask(t, a, "trip", "remember the hotel is Alfama") // a belief: a fact of the session
			for i := range 12 {
				ask(t, a, "trip", fmt.Sprintf("tell me about day %d of the trip in Lisbon", i+1))
			}
			m, err := h.Sessions().GetSessionMetrics(callAs(t, "alice"), &session.Ref{Tenant: "acme", ContextID: "trip"})
			if err != nil {
				t.Fatal(err)
			}
			model.mu.Lock()
			n, sys := model.summaries, model.last[0].Content
			model.mu.Unlock()
			if n == 0 {
				t.Fatal("no summary was asked for")
			}
			t.Logf("%d summaries asked for; in use: %+v; %d tokens in", n, m.Summary, m.Used.In)
			if tc.lossy {
				if n > 6 { // 2 attempts each time, and 3 turns between times: 12 turns past the mark
					t.Errorf("%d summaries asked for: a refused summary is not asked for again at once", n)
				}
				if m.Summary != nil {
					t.Errorf("a summary that lost the hotel was installed: %+v", m.Summary)
				}
				if !strings.Contains(sys, "hotel is Alfama") {
					t.Errorf("the fact left the context:\n%s", sys)
				}
				return
			}
			if m.Summary == nil || !strings.Contains(sys, "Summary of the conversation so far") {
				t.Errorf("no summary in use: metrics %+v\n%s", m.Summary, sys)
			}
			if n > 4 {
				t.Errorf("%d summaries in 13 turns: the hysteresis should space them", n)
			}
			if m.Used.In <= 13*30 {
				t.Errorf("tokens in %d: the summaries were not charged", m.Used.In)
			}
		})
	}
}
