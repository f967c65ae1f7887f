package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/session"
)

// gate is a Model whose calls wait until released (or their context ends); it records every
// prompt it was sent and answers with its last user message echoed.
type gate struct {
	mu      sync.Mutex
	entered chan string // the user message of each call, as it starts
	release chan struct{}
	prompts []string
	ctxErr  []error
}

func newGate() *gate { return &gate{entered: make(chan string, 100), release: make(chan struct{})} }

func (g *gate) Complete(ctx context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, onText func(string)) (agent.ChatMessage, error) {
	var all []string
	for _, m := range msgs {
		all = append(all, m.Content)
	}
	user := msgs[len(msgs)-1].Content
	g.mu.Lock()
	g.prompts = append(g.prompts, strings.Join(all, "\n"))
	g.mu.Unlock()
	g.entered <- user
	select {
	case <-g.release:
	case <-ctx.Done():
		g.mu.Lock()
		g.ctxErr = append(g.ctxErr, context.Cause(ctx))
		g.mu.Unlock()
		return agent.ChatMessage{}, context.Cause(ctx)
	}
	onText("you said " + user)
	return agent.ChatMessage{Role: "assistant", Content: "you said " + user, Usage: &agent.Usage{InputTokens: 7, OutputTokens: 3}}, nil
}

func (g *gate) allPrompts() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.prompts, "\n---\n")
}

func newHost(t *testing.T, def *agent.Definition, opts *agent.HostOptions) *agent.Host {
	t.Helper()
	h, err := agent.NewHost(def, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func instance(t *testing.T, h *agent.Host, name string) *agent.Agent {
	t.Helper()
	a, err := h.Instance(t.Context(), agent.Principal{Tenant: "acme", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func ask(t *testing.T, a *agent.Agent, session, text string) agent.Run {
	t.Helper()
	ev := agent.UserText(text)
	ev.Context.Session = session
	run, err := a.Ask(t.Context(), ev)
	if err != nil {
		t.Fatalf("Ask(%q) = %v", text, err)
	}
	return run
}

// Nothing alice tells her instance reaches bob's: not his recall, his replies, his view, nor the
// model's prompt; the operator's knowledge reaches both and neither can change it.
func TestPrincipalsHaveTheirOwnInstances(t *testing.T) {
	t.Parallel()
	model := &recorder{}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: model,
		Knowledge: []agent.Fact{{Subject: "the office", Value: "in Paris", Reason: "the operator says so"}}}, nil)
	alice, bob := instance(t, h, "alice"), instance(t, h, "bob")
	if run := ask(t, alice, "s", "remember my name is Alice"); run.Reply != "Noted: my name is Alice." {
		t.Fatalf("alice: %q", run.Reply)
	}
	ask(t, alice, "s", "tell me a secret word: zebra")
	if run := ask(t, bob, "s", "what do you know about my name"); run.Reply != "I know nothing about that." {
		t.Errorf("bob asks about his name: %q", run.Reply)
	}
	ask(t, bob, "s", "what is my name?") // consults the model
	if p := model.last(); strings.Contains(p, "Alice") || strings.Contains(p, "zebra") {
		t.Errorf("bob's prompt holds alice's words:\n%s", p)
	}
	if !strings.Contains(model.last(), "in Paris") {
		t.Errorf("bob's prompt lacks the operator's knowledge:\n%s", model.last())
	}
	r, _ := bob.Recall(t.Context(), agent.Query{Text: "alice zebra"})
	if len(r.Observations) != 0 || len(r.Beliefs) != 0 || len(r.Working) != 0 {
		t.Errorf("bob recalls %+v", r)
	}
	v, _ := bob.View(t.Context())
	for _, b := range v.Beliefs {
		if strings.Contains(b.Value, "Alice") {
			t.Errorf("bob's view has alice's belief %+v", b)
		}
	}
	for _, a := range []*agent.Agent{alice, bob} {
		if run := ask(t, a, "s", "what do you know about the office"); !strings.Contains(run.Reply, "in Paris") {
			t.Errorf("%v asks about the office: %q", a.Principal(), run.Reply)
		}
		if run := ask(t, a, "s", "forget the office"); run.Reply != "I knew nothing about the office." {
			t.Errorf("%v forgets the office: %q", a.Principal(), run.Reply)
		}
	}
	if run := ask(t, bob, "s", "what do you know about the office"); !strings.Contains(run.Reply, "in Paris") {
		t.Errorf("the operator's knowledge was changed: %q", run.Reply)
	}
	r, _ = alice.Recall(t.Context(), agent.Query{Text: "name"})
	if len(r.Beliefs) != 1 || r.Beliefs[0].Value != "Alice" {
		t.Errorf("alice recalls %+v", r.Beliefs)
	}
}

// recorder is a Model that answers at once and records its prompts.
type recorder struct {
	mu      sync.Mutex
	prompts []string
}

func (r *recorder) Complete(_ context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, _ func(string)) (agent.ChatMessage, error) {
	var all []string
	for _, m := range msgs {
		all = append(all, m.Content)
	}
	r.mu.Lock()
	r.prompts = append(r.prompts, strings.Join(all, "\n"))
	r.mu.Unlock()
	return agent.ChatMessage{Role: "assistant", Content: "I cannot say."}, nil
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.prompts) == 0 {
		return ""
	}
	return r.prompts[len(r.prompts)-1]
}

// While a model call is in flight, the same instance answers other sessions' messages, shows its
// state and takes proposals; the consulting turn's writes are its own until it commits.
func TestEffectsDoNotBlockTheInstance(t *testing.T) {
	t.Parallel()
	g := newGate()
	pol := agent.Assistant()
	// Before consulting, remember the question: a write of the consulting turn.
	pol.Rules = append([]agent.Rule{{Name: "note-question", When: `source == "user" && text.endsWith("?")`, Action: agent.Remember,
		Params: map[string]string{"subject": `"last question"`, "value": `text`}, Reason: "questions are worth remembering"}}, pol.Rules...)
	for i, r := range pol.Rules {
		if r.Name == "consult" {
			pol.Rules[i].When = `source == "user" && state.model == 1 && text.endsWith("?")`
		}
	}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: pol, Model: g}, nil)
	a := instance(t, h, "alice")
	done := make(chan agent.Run, 1)
	go func() {
		ev := agent.UserText("why is the sky blue?")
		ev.Context.Session = "s1"
		run, _ := a.Ask(context.Background(), ev)
		done <- run
	}()
	<-g.entered
	if run := ask(t, a, "s2", "echo hello"); run.Reply != "hello" {
		t.Errorf("echo while a consult is in flight: %q", run.Reply)
	}
	if run := ask(t, a, "s2", "what do you know about the last question"); run.Reply != "I know nothing about that." {
		t.Errorf("another turn sees the consulting turn's uncommitted write: %q", run.Reply)
	}
	if _, err := a.View(t.Context()); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	run := <-done
	if !strings.HasSuffix(run.Reply, "you said why is the sky blue?") {
		t.Errorf("the consulting turn: %+v", run)
	}
	if run := ask(t, a, "s2", "what do you know about the last question"); !strings.Contains(run.Reply, "why is the sky blue?") {
		t.Errorf("after the commit: %q", run.Reply)
	}
}

// The turns of one session run one after the other, in order; the second says it waits.
func TestSessionOrder(t *testing.T) {
	t.Parallel()
	g := newGate()
	h := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: g}, nil)
	a := instance(t, h, "alice")
	first := make(chan agent.Run, 1)
	go func() {
		ev := agent.UserText("first question")
		ev.Context.Session = "s"
		run, _ := a.Ask(context.Background(), ev)
		first <- run
	}()
	<-g.entered
	ev := agent.UserText("echo second")
	ev.Context.Session = "s"
	var kinds []agent.EntryKind
	var second agent.Entry
	for e, err := range a.Stream(t.Context(), ev) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind)
		if e.Kind == agent.EntryQueued {
			if e.Result["scope"] != "session" {
				t.Errorf("queued entry %+v, want scope session", e)
			}
			select {
			case <-first:
				t.Fatal("the first turn ended before the second was queued")
			default:
			}
			close(g.release)
		}
		second = e
	}
	if len(kinds) == 0 || kinds[0] != agent.EntryQueued {
		t.Errorf("the second turn's entries %v, want queued first", kinds)
	}
	run := <-first
	if run.Reply != "you said first question" || second.Result["reply"] != "second" {
		t.Errorf("first %q, second %q", run.Reply, second.Result["reply"])
	}
	turns, _ := h.Store().Turns(t.Context(), agent.Key{Agent: "helper", Principal: a.Principal()}, "s")
	if len(turns) != 2 || turns[0].Reply != "you said first question" || turns[1].Number != 2 || turns[0].TokensIn != 7 || turns[0].Estimated {
		t.Errorf("turn records %+v", turns)
	}
}

// A turn that fails or is canceled commits nothing of memory: not its message, not what its
// rules wrote. Its session records it (failed, with no observation), as every turn of a session.
func TestFailedTurnsLeaveNoMemory(t *testing.T) {
	t.Parallel()
	failing := modelFunc(func(ctx context.Context) (agent.ChatMessage, error) {
		return agent.ChatMessage{}, errors.New("model down")
	})
	pol := &agent.Policy{Rules: []agent.Rule{
		{Name: "remember", When: `source == "user"`, Action: agent.Remember, Params: map[string]string{"subject": `"topic"`, "value": `text`}, Reason: "r"},
		{Name: "goal", When: `source == "user"`, Action: agent.Adopt, Params: map[string]string{"goal": `"answer " + text`}, Reason: "r"},
		{Name: "note", When: `source == "user"`, Action: agent.Note, Params: map[string]string{"subject": `"seen"`, "value": `text`}},
		{Name: "consult", When: `source == "user"`, Action: agent.Consult},
	}}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: pol, Model: failing}, nil)
	a := instance(t, h, "alice")
	run := ask(t, a, "s", "tides")
	if run.Failure == "" {
		t.Fatalf("the turn did not fail: %+v", run)
	}
	v, _ := a.View(t.Context())
	if v.Observations != 0 || len(v.Beliefs) != 0 || len(v.Goals) != 0 || len(v.Working) != 0 {
		t.Errorf("a failed turn left memory: %+v", v)
	}
	turns, _ := h.Store().Turns(t.Context(), agent.Key{Agent: "helper", Principal: a.Principal()}, "s")
	if len(turns) != 1 || turns[0].Status != agent.TurnFailed || turns[0].Observation != "" || turns[0].Detail == nil ||
		turns[0].Detail.Status != session.Failed || turns[0].Detail.User.Content != "tides" {
		t.Errorf("a failed turn's record: %+v", turns)
	}
	snap, _ := h.Store().Load(t.Context(), agent.Key{Agent: "helper", Principal: a.Principal()}, 0)
	if len(snap.Observations)+len(snap.Beliefs)+len(snap.Goals) != 0 {
		t.Errorf("a failed turn reached the store: %+v", snap)
	}
}

type modelFunc func(ctx context.Context) (agent.ChatMessage, error)

func (f modelFunc) Complete(ctx context.Context, _ []agent.ChatMessage, _ []agent.ToolSpec, _ func(string)) (agent.ChatMessage, error) {
	return f(ctx)
}

// A tool may ask the user mid-turn (AskUser): the turn parks, the next message on the task is
// the answer, and the same turn goes on and commits once.
func TestAskUserParksTheTurn(t *testing.T) {
	t.Parallel()
	var deleted atomic.Int32
	pol, tools := deleter(&deleted)
	h := newHost(t, &agent.Definition{Name: "helper", Policy: pol, Tools: tools}, nil)
	a := instance(t, h, "alice")
	send := func(task, text string) agent.Run {
		ev := agent.UserText(text)
		ev.Context = agent.Context{Task: task, Session: "s"}
		run, err := a.Ask(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	if run := send("t1", "delete notes.txt"); run.Question != "May I delete notes.txt?" {
		t.Fatalf("the parked turn: %+v", run)
	}
	if v, _ := a.View(t.Context()); v.Observations != 0 {
		t.Errorf("a parked turn committed %d observations", v.Observations)
	}
	if run := send("t1", "yes"); run.Reply != "deleted notes.txt" {
		t.Errorf("after yes: %+v", run)
	}
	r, _ := a.Recall(t.Context(), agent.Query{Text: "yes"})
	if len(r.Observations) != 1 || r.Observations[0].Kind != "input" || r.Observations[0].Data["question"] != "May I delete notes.txt?" {
		t.Errorf("the answer's observation: %+v", r.Observations)
	}
	send("t2", "delete all")
	if run := send("t2", "no"); run.Reply != "Not done: the user refused" {
		t.Errorf("after no: %+v", run)
	}
	turns, _ := h.Store().Turns(t.Context(), agent.Key{Agent: "helper", Principal: a.Principal()}, "s")
	if len(turns) != 2 {
		t.Errorf("turn records %+v, want one per turn", turns)
	}
}

// A bound on concurrent model calls queues the rest, and the queued turn says so.
func TestModelCallsAreBounded(t *testing.T) {
	t.Parallel()
	g := newGate()
	h := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: g}, &agent.HostOptions{Limiter: agent.NewLimiter(1, 0)})
	alice, bob := instance(t, h, "alice"), instance(t, h, "bob")
	first := make(chan agent.Run, 1)
	go func() { run, _ := alice.Ask(context.Background(), agent.UserText("one?")); first <- run }()
	<-g.entered
	var queued []agent.Entry
	for e, err := range bob.Stream(t.Context(), agent.UserText("two?")) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == agent.EntryQueued {
			queued = append(queued, e)
			close(g.release)
		}
	}
	if len(queued) != 1 || queued[0].Result["scope"] != "server" || queued[0].Result["ahead"] != "0" || queued[0].Result["bound"] != "1" {
		t.Errorf("queued entries %+v", queued)
	}
	if run := <-first; run.Reply == "" {
		t.Errorf("the first turn: %+v", run)
	}
}

// Idle instances are evicted and come back from the store as they were.
func TestIdleInstancesAreEvicted(t *testing.T) {
	t.Parallel()
	h := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Notes()}, &agent.HostOptions{IdleTimeout: 20 * time.Millisecond})
	a := instance(t, h, "alice")
	ask(t, a, "s", "remember the sky is blue")
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for h.Resident() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle instance was never evicted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if run := ask(t, a, "s", "what do you know about the sky"); !strings.Contains(run.Reply, "blue") {
		t.Errorf("after eviction: %q", run.Reply)
	}
	if ps, _ := h.Store().Instances(t.Context(), "helper"); !slices.Equal(ps, []agent.Principal{a.Principal()}) {
		t.Errorf("Instances = %v", ps)
	}
}

// sleeper is a Model that answers after d, or when its context ends.
type sleeper time.Duration

func (s sleeper) Complete(ctx context.Context, msgs []agent.ChatMessage, _ []agent.ToolSpec, _ func(string)) (agent.ChatMessage, error) {
	select {
	case <-time.After(time.Duration(s)):
		return agent.ChatMessage{Role: "assistant", Content: "done: " + msgs[len(msgs)-1].Content}, nil
	case <-ctx.Done():
		return agent.ChatMessage{}, context.Cause(ctx)
	}
}

// Twenty principals' consults of a model that takes 2 s run side by side: together they take
// about 2 s, not 40. The bound is 20 s: half the serial time, ten times the ideal, because the
// test machine is shared and loaded; a serial runtime cannot pass it.
func TestConsultsOfManyPrincipalsRunTogether(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes 2 s")
	}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: sleeper(2 * time.Second)}, nil)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			a, err := h.Instance(t.Context(), agent.Principal{Name: "p" + string(rune('a'+i))})
			if err != nil {
				errs <- err
				return
			}
			ev := agent.UserText("question?")
			ev.Context.Session = "s"
			run, err := a.Ask(t.Context(), ev)
			if err == nil && run.Reply != "done: question?" {
				err = errors.New("reply " + run.Reply)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("20 consults of 2 s took %v, want about 2 s", d)
	} else {
		t.Logf("20 consults of 2 s took %v", d)
	}
}
