package agent_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

// slowModel answers at once, except a message that starts with "slow": that call waits for its
// context to end, or for giveUp (a bound, so that a runtime that never interrupts the call
// fails the test instead of hanging it), then answers.
type slowModel struct {
	giveUp      time.Duration
	interrupted atomic.Int32 // slow calls that ended with their context
}

func (m *slowModel) Complete(ctx context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, _ func(string)) (agent.ChatMessage, error) {
	user := msgs[len(msgs)-1].Content
	if strings.HasPrefix(user, "slow") {
		select {
		case <-ctx.Done():
			m.interrupted.Add(1)
			return agent.ChatMessage{}, context.Cause(ctx)
		case <-time.After(m.giveUp):
		}
	}
	return agent.ChatMessage{Role: "assistant", Content: "answer to " + user, Usage: &agent.Usage{InputTokens: 20, OutputTokens: 5}}, nil
}

// wallConfig: every session has 4 s of wall time and warns with half of it left (at 2 s).
var wallConfig = session.Config{Budget: session.Budget{Wall: 4 * time.Second, Warn: 0.5}}

const wallFailure = "Interrupted: this conversation's wall-time budget (4s) ran out during this turn."

// sessionsOf reads sessions as one caller: metrics and history of a context.
type sessionsOf struct {
	metrics func(id string) (*session.Metrics, error)
	history func(id string) (*session.History, error)
}

// hostSessions reads name's sessions (tenant acme) through the Host, as a binding calls it.
func hostSessions(t *testing.T, h *agent.Host, name string) sessionsOf {
	ctx, svc := callAs(t, name), h.Sessions()
	return sessionsOf{
		metrics: func(id string) (*session.Metrics, error) {
			return svc.GetSessionMetrics(ctx, &session.Ref{Tenant: "acme", ContextID: id})
		},
		history: func(id string) (*session.History, error) {
			return svc.GetSessionHistory(ctx, &session.HistoryRequest{Tenant: "acme", ContextID: id})
		},
	}
}

// checkWallSpent checks that session id of who collapsed for its wall time at turn 1, which is
// recorded aborted with the reason, after the warning; and that session other of otherWho (a
// session of someone else, or of who's own) took its turn and goes on unaffected.
func checkWallSpent(t *testing.T, who sessionsOf, id string, otherWho sessionsOf, other string) {
	t.Helper()
	m, err := who.metrics(id)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != session.Collapsed || m.Collapse == nil || m.Collapse.Reason != session.ReasonWall || m.Collapse.Turn != 1 ||
		len(m.Warnings) != 1 || m.Warnings[0].Budget != session.ReasonWall {
		t.Errorf("the session over its wall time: state %s, collapse %+v, warnings %+v", m.State, m.Collapse, m.Warnings)
	}
	hist, err := who.history(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Turns) != 1 || hist.Turns[0].Status != session.Aborted || hist.Turns[0].Error != wallFailure {
		t.Errorf("its history: %+v", hist.Turns)
	}
	o, err := otherWho.metrics(other)
	if err != nil {
		t.Fatal(err)
	}
	if o.State != session.Waiting || o.Collapse != nil || len(o.Warnings) != 0 || o.Used.Turns != 1 {
		t.Errorf("the other session: state %s, collapse %+v, warnings %+v, %d turns", o.State, o.Collapse, o.Warnings, o.Used.Turns)
	}
}

// A session's wall-time budget runs out in the middle of a turn whose model call would go on:
// the call is interrupted at once, the budget's warning is given while the turn runs, the turn
// is recorded aborted (none of its memory writes) and its task fails saying why, and the
// session collapses. Sessions of another principal, and the principal's other sessions, go on.
func TestSessionWallTimeInterruptsTheTurn(t *testing.T) {
	t.Parallel()
	model := &slowModel{giveUp: 40 * time.Second}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: model, Sessions: wallConfig}, nil)
	alice, bob := instance(t, h, "alice"), instance(t, h, "bob")
	start := time.Now()
	long := askAsync(t, alice, "long", "t1", "slow: write an essay")
	if run := ask(t, bob, "quick", "hello"); run.Reply != "answer to hello" {
		t.Errorf("bob's turn while alice's runs: %+v", run)
	}
	if run := ask(t, alice, "other", "hi"); run.Reply != "answer to hi" {
		t.Errorf("alice's other session's turn: %+v", run)
	}
	var run agent.Run
	select {
	case run = <-long:
	case <-time.After(60 * time.Second):
		t.Fatal("the turn over its wall time never ended")
	}
	if took := time.Since(start); took >= 30*time.Second {
		t.Errorf("the turn ended after %v: not interrupted at its 4 s wall time", took)
	}
	if endStatus(run) != "failed" || run.Failure != wallFailure || model.interrupted.Load() != 1 {
		t.Errorf("the interrupted turn: status %q, failure %q, %d model calls interrupted", endStatus(run), run.Failure, model.interrupted.Load())
	}
	warned, ended := -1, -1
	for i, e := range run.Log {
		switch {
		case e.Kind == agent.EntrySession && e.Rule == "warning" && strings.Contains(e.Text, "wall budget is running low") && warned < 0:
			warned = i
		case e.Kind == agent.EntrySession && e.Rule == "collapse":
			ended = i
		}
	}
	if warned < 0 || ended < warned {
		t.Errorf("the warning (entry %d) and the collapse (entry %d), in this log: %+v", warned, ended, run.Log)
	}
	if end := run.Log[len(run.Log)-1]; !strings.Contains(end.Result["warning"], "wall budget is running low") || !strings.Contains(end.Result["collapse"], "wall-time budget spent at turn 1") {
		t.Errorf("the end's result: %+v", end.Result)
	}
	checkWallSpent(t, hostSessions(t, h, "alice"), "long", hostSessions(t, h, "bob"), "quick")
	checkWallSpent(t, hostSessions(t, h, "alice"), "long", hostSessions(t, h, "alice"), "other")
	if v, _ := alice.View(t.Context()); v.Observations != 2 { // "hi" and its answer: nothing of the aborted turn
		t.Errorf("alice has %d observations: the aborted turn left memory", v.Observations)
	}
	ev := agent.UserText("still there?")
	ev.Context.Session = "long"
	if _, err := alice.Ask(t.Context(), ev); !errors.Is(err, session.ErrCollapsed) {
		t.Errorf("a message to the collapsed session: %v", err)
	}
}

// The same over JSON-RPC, alice and bob authenticated: alice's task streams the warning as a
// working status while its model call runs, then fails saying why; the sessions extension shows
// her session collapsed and bob's, used meanwhile, unaffected.
func TestSessionWallTimeOverJSONRPC(t *testing.T) {
	t.Parallel()
	model := &slowModel{giveUp: 40 * time.Second}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: consulting(), Model: model, Sessions: wallConfig}, nil)
	authn := stacktest.Bearer(map[string]string{"alice-token": "alice", "bob-token": "bob"})
	srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h),
		HTTP: &binding.Options{Authenticate: authn, Sessions: h.Sessions()}})
	connect := func(token string) *client.Client {
		c, err := client.New(t.Context(), srv.URL, &client.Options{Binding: client.BindingJSONRPC, Header: http.Header{"Authorization": {"Bearer " + token}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Destroy() })
		return c
	}
	alice, bob := connect("alice-token"), connect("bob-token")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	send := func(c *client.Client, contextID, text string) []string {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		m.ContextID = contextID
		var got []string
		for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
			if err != nil {
				t.Errorf("SendStreamingMessage(%q) = %v", text, err)
				break
			}
			got = append(got, describeEvent(ev))
		}
		return got
	}
	done := make(chan []string, 1)
	go func() { done <- send(alice, "long", "slow: write an essay") }()
	if got := send(bob, "quick", "hello"); len(got) == 0 || got[len(got)-1] != "status completed end: answer to hello" {
		t.Errorf("bob's task while alice's runs:\n%s", strings.Join(got, "\n"))
	}
	got := <-done
	warning, last := -1, len(got)-1
	for i, s := range got {
		if strings.HasPrefix(s, "status working session warning: the session's wall budget is running low") {
			warning = i
		}
	}
	if warning < 0 || last < 0 || got[last] != "status failed end: "+wallFailure {
		t.Errorf("alice's task:\n%s", strings.Join(got, "\n"))
	}
	over := func(c *client.Client) sessionsOf {
		svc := c.Sessions()
		return sessionsOf{
			metrics: func(id string) (*session.Metrics, error) { return svc.Metrics(ctx, &session.Ref{ContextID: id}) },
			history: func(id string) (*session.History, error) {
				return svc.History(ctx, &session.HistoryRequest{ContextID: id})
			},
		}
	}
	checkWallSpent(t, over(alice), "long", over(bob), "quick")
	if _, err := over(bob).metrics("long"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("bob asks for alice's session: %v", err)
	}
}
