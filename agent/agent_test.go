package agent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

func newNotes(t *testing.T, name string, opts *Options) *Agent {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Policy == nil {
		opts.Policy = Notes()
	}
	a, err := New(t.Context(), name, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func say(t *testing.T, a *Agent, text string) Run {
	t.Helper()
	ev := UserText(text)
	ev.Context = Context{Task: "t1", Session: "s1"}
	run, err := a.Ask(t.Context(), ev)
	if err != nil {
		t.Fatalf("Ask(%q): %v", text, err)
	}
	return run
}

func TestNotesConversation(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	steps := []struct{ say, reply, question string }{
		{"remember the sky is blue", "Noted: the sky is blue.", ""},
		{"remember the sky is blue", "Noted: the sky is blue.", ""},
		{"what do you know about the sky", "I know: the sky is blue (confidence 0.95).", ""},
		{"remember the sky is green", `That contradicts what I knew: the sky is blue. I trust that less now; say "actually the sky is green" to correct it.`, ""},
		{"actually the sky is green", "Corrected: the sky is green.", ""},
		{"remember my cat", "", "What is my cat?"},
		{"Tom", "Noted: my cat is Tom.", ""},
		{"forget my cat", "Forgotten: my cat.", ""},
		{"my password is hunter2", "I do not keep secrets; nothing was stored.", ""},
		{"who are you", "I am notes, a note-taking agent. I remember what you tell me, with where it came from.", ""},
		{"hello", `Tell me "remember X is Y", "actually X is Y", "what do you know about X" or "forget X".`, ""},
	}
	for _, s := range steps {
		run := say(t, a, s.say)
		if run.Reply != s.reply || run.Question != s.question {
			t.Fatalf("Ask(%q) = reply %q question %q, want %q %q\nlog: %+v", s.say, run.Reply, run.Question, s.reply, s.question, run.Log)
		}
	}
	v, err := a.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range v.Beliefs {
		if strings.Contains(b.Value, "hunter2") {
			t.Errorf("a secret entered memory: %+v", b)
		}
	}
}

func TestProvenanceOnEveryBelief(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	for _, s := range []string{"remember a is 1", "remember b is 2", "remember a is 3", "actually a is 3", "remember c", "4", "forget b"} {
		say(t, a, s)
	}
	v, _ := a.View(t.Context())
	if len(v.Beliefs) == 0 {
		t.Fatal("no beliefs")
	}
	for _, b := range v.Beliefs {
		p := b.Provenance
		if p.Source.Kind == "" || len(p.Observations) == 0 || p.Reason == "" || p.Rule == "" || p.Context.Task == "" || b.Confidence <= 0 {
			t.Errorf("belief %s lacks provenance: %+v", b.ID, b)
		}
	}
}

func TestContradictionDemotesAndCorrectionSupersedes(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	say(t, a, "remember the door is red")
	say(t, a, "remember the door is blue")
	v, _ := a.View(t.Context())
	b := v.Beliefs[0]
	if b.Status != StatusDisputed || b.Confidence >= 0.9 || len(b.Provenance.Against) != 1 {
		t.Fatalf("after a contradiction: %+v, want disputed, lower confidence, one observation against", b)
	}
	if len(v.Working) != 1 || v.Working[0].Value != "blue" {
		t.Fatalf("the contradicting claim should wait in working memory: %+v", v.Working)
	}
	say(t, a, "actually the door is green")
	say(t, a, "actually the door is yellow")
	v, _ = a.View(t.Context())
	// The chain: red -> green -> yellow.
	chain := map[string]Belief{}
	for _, b := range v.Beliefs {
		chain[b.ID] = b
	}
	var values []string
	for id := v.Beliefs[0].ID; id != ""; id = chain[id].SupersededBy {
		values = append(values, chain[id].Value)
		if next := chain[id].SupersededBy; next != "" && chain[next].Supersedes != id {
			t.Errorf("%s.Supersedes = %q, want %q", next, chain[next].Supersedes, id)
		}
	}
	if got := strings.Join(values, ">"); got != "red>green>yellow" {
		t.Errorf("supersession chain = %s, want red>green>yellow", got)
	}
	r, _ := a.Recall(t.Context(), Query{Text: "door"})
	if len(r.Beliefs) != 1 || r.Beliefs[0].Value != "yellow" {
		t.Errorf("Recall(door) = %+v, want only the current belief", r.Beliefs)
	}
	r, _ = a.Recall(t.Context(), Query{Text: "door", History: true})
	if len(r.Beliefs) != 3 {
		t.Errorf("Recall(door, History) has %d beliefs, want 3", len(r.Beliefs))
	}
}

func TestRepeatedNotesArePromoted(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	say(t, a, "remember the door is red")
	for range 3 {
		say(t, a, "remember the door is blue")
	}
	r, _ := a.Recall(t.Context(), Query{Text: "door"})
	if len(r.Beliefs) != 1 || r.Beliefs[0].Value != "blue" || r.Beliefs[0].Supersedes == "" ||
		!strings.Contains(r.Beliefs[0].Provenance.Reason, "corroborated by 3") || len(r.Beliefs[0].Provenance.Observations) != 3 {
		t.Errorf("after three corroborations: %+v, want blue promoted over red", r.Beliefs)
	}
}

// The only way into an agent is its mailbox: what it hands out are copies.
func TestNoOutsideWrites(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	say(t, a, "remember the sky is blue")
	v, _ := a.View(t.Context())
	v.Beliefs[0].Value = "hacked"
	v.Beliefs[0].Provenance.Observations[0] = "forged"
	v.Policy.Axioms = nil
	v.Policy.Rules[0].When = "true"
	v.Policy.Rules[1].Params["subject"] = `"hacked"`
	v.History[0].Rules[1].Params["subject"] = `"hacked"`
	r, _ := a.Recall(t.Context(), Query{Text: "sky"})
	r.Beliefs[0].Value = "hacked"
	r.Observations[0].Text = "hacked"
	v2, _ := a.View(t.Context())
	r2, _ := a.Recall(t.Context(), Query{Text: "sky"})
	if v2.Beliefs[0].Value != "blue" || v2.Beliefs[0].Provenance.Observations[0] != "o1" || len(v2.Policy.Axioms) != 2 ||
		v2.Policy.Rules[0].When == "true" || v2.Policy.Rules[1].Params["subject"] == `"hacked"` ||
		v2.History[0].Rules[1].Params["subject"] == `"hacked"` || r2.Observations[0].Text != "remember the sky is blue" {
		t.Errorf("an outside write reached the agent: %+v %+v", v2, r2)
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	_ = a.Close()
	_ = a.Close()
	<-a.Done()
	if _, err := a.Ask(t.Context(), UserText("hi")); !errors.Is(err, ErrClosed) {
		t.Errorf("Ask after Close = %v, want ErrClosed", err)
	}
}

func TestRegistryRefusesIndiscernibles(t *testing.T) {
	t.Parallel()
	var reg Registry
	a := newNotes(t, "a", nil)
	b := newNotes(t, "b", nil)
	if err := reg.Register(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	err := reg.Register(t.Context(), b)
	if !errors.Is(err, ErrIndiscernible) || !strings.Contains(err.Error(), `as "a"`) {
		t.Fatalf("Register(twin) = %v, want ErrIndiscernible naming a", err)
	}
	say(t, b, "remember b is different")
	if err := reg.Register(t.Context(), b); err != nil {
		t.Errorf("Register(b after it learnt) = %v, want nil", err)
	}
	c := newNotes(t, "c", &Options{Tools: map[string]Tool{"clock": nil}})
	if err := reg.Register(t.Context(), c); err != nil {
		t.Errorf("Register(c with another capability) = %v, want nil", err)
	}
}

func TestPersistenceReloads(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	a := newNotes(t, "n", &Options{Store: st})
	say(t, a, "remember x is 1")
	say(t, a, "actually x is 2")
	_ = a.Close()
	b := newNotes(t, "n", &Options{Store: st})
	r, _ := b.Recall(t.Context(), Query{Text: "x"})
	if len(r.Beliefs) != 1 || r.Beliefs[0].Value != "2" {
		t.Fatalf("after reload Recall(x) = %+v", r.Beliefs)
	}
	run := say(t, b, "remember y is 3")
	if run.Observation != "o3" {
		t.Errorf("the log continues at %s, want o3", run.Observation)
	}
}

// Recall ranks observations by the terms they match, then by salience (cited by beliefs), then
// by recency.
func TestRecallRanking(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	say(t, a, "remember the garden is green") // o1: cited by a belief
	say(t, a, "the garden")                   // o2: not cited, more recent
	say(t, a, "garden garden hose")           // o3: most recent
	r, err := a.Recall(t.Context(), Query{Text: "garden green"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range r.Observations {
		got = append(got, o.ID)
	}
	if strings.Join(got, ",") != "o1,o3,o2" {
		t.Errorf("Recall order = %v, want o1 (two terms), o3, o2 (recency)", got)
	}
	r, _ = a.Recall(t.Context(), Query{Text: "garden"})
	got = got[:0]
	for _, o := range r.Observations {
		got = append(got, o.ID)
	}
	if strings.Join(got, ",") != "o1,o3,o2" {
		t.Errorf("Recall(garden) order = %v, want o1 (cited) then by recency", got)
	}
	if r, _ := a.Recall(t.Context(), Query{Limit: 1}); len(r.Observations) != 1 || r.Observations[0].ID != "o3" {
		t.Errorf("Recall(\"\", limit 1) = %v, want the latest", r.Observations)
	}
}

// Working memory is bounded by size, evicting the least used first, and by age.
func TestWorkingMemoryBounds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	pol := &Policy{Rules: []Rule{{Name: "note", When: `command == "note"`, Action: Note,
		Params: map[string]string{"subject": `args`, "value": `"seen"`}, Reason: "r"}},
		Limits: Limits{WorkingSize: 2, WorkingTTL: time.Minute, PromoteAfter: 10}}
	a := newNotes(t, "w", &Options{Policy: pol, Now: clock})
	for _, s := range []string{"note a", "note a", "note b", "note c"} {
		say(t, a, s)
		now = now.Add(time.Second)
	}
	v, _ := a.View(t.Context())
	var got []string
	for _, n := range v.Working {
		got = append(got, n.Subject)
	}
	if strings.Join(got, ",") != "a,c" {
		t.Errorf("working = %v, want a (used twice) and c (newest): b was least relevant", got)
	}
	now = now.Add(2 * time.Minute)
	say(t, a, "note d")
	if v, _ := a.View(t.Context()); len(v.Working) != 1 || v.Working[0].Subject != "d" {
		t.Errorf("after the TTL working = %+v, want only d", v.Working)
	}
}

// A relayed message is named after the callee's task and message, so the same message relayed
// twice (a callee's reply, then its final status) is one message of the caller's history.
func TestRelayedMessageKeepsItsIdentity(t *testing.T) {
	ec := &a2a.Task{ID: "caller", ContextID: "ctx"}
	said := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("found it"))
	raw, _ := json.Marshal(said)
	e := Entry{Kind: EntryRelay, Result: map[string]string{"task": "callee", "message": string(raw), "source": "agent x"}}
	first, second := relayEvent(ec, e), relayEvent(ec, e)
	a, b := first.(*a2a.TaskStatusUpdateEvent).Status.Message, second.(*a2a.TaskStatusUpdateEvent).Status.Message
	if want := "callee:" + string(said.ID); string(a.ID) != want || a.ID != b.ID {
		t.Errorf("relayed message IDs %q and %q, want both %q", a.ID, b.ID, want)
	}
}
