package agent_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
)

// memoryOf is GetMemory of name's instance (tenant acme), as "id subject=value status" lines.
func memoryOf(t *testing.T, m *agent.Memory, name string, history bool) (beliefs []string, r agent.MemoryReport) {
	t.Helper()
	res, err := m.GetMemory(callAs(t, name), "acme", history)
	if err != nil {
		t.Fatalf("GetMemory(%s) = %v", name, err)
	}
	r = *res.(*agent.MemoryReport)
	for _, b := range r.Beliefs {
		beliefs = append(beliefs, b.ID+" "+b.Subject+"="+b.Value+" "+string(b.Status))
	}
	return beliefs, r
}

// The memory extension: each principal sees its own beliefs, with provenance; forgetting is an
// event the instance integrates by its rules (logged from the user, with the reason); a belief
// that is not one of the caller's current ones is invalid; the history keeps what was forgotten.
func TestMemoryService(t *testing.T) {
	t.Parallel()
	h := newHost(t, &agent.Definition{Name: "notes", Policy: agent.Notes()}, nil)
	alice, bob := instance(t, h, "alice"), instance(t, h, "bob")
	ask(t, alice, "trip", "remember my city is Lisbon")
	ask(t, alice, "trip", "remember my dog is Rex")
	ask(t, bob, "", "remember my car is red")
	m := h.Memory()

	got, r := memoryOf(t, m, "alice", false)
	if want := []string{"b1 my city=Lisbon active", "b2 my dog=Rex active"}; !slices.Equal(got, want) {
		t.Fatalf("alice's memory = %q, want %q", got, want)
	}
	p := r.Beliefs[0].Provenance
	if p.Source.Kind != agent.SourceUser || p.Rule != "remember" || p.Reason != "the user told me" || p.Context.Session != "trip" || len(p.Observations) != 1 || r.Beliefs[0].Confidence <= 0 {
		t.Errorf("alice's first belief's provenance = %+v (confidence %v)", p, r.Beliefs[0].Confidence)
	}
	if got, _ := memoryOf(t, m, "bob", false); !slices.Equal(got, []string{"b1 my car=red active"}) {
		t.Errorf("bob's memory = %q", got)
	}

	// bob's b2 is nobody's; bob's b1 is his own car, never alice's city.
	if _, err := m.ForgetMemory(callAs(t, "bob"), "acme", "b2", ""); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("bob forgets b2: %v, want invalid params", err)
	}
	res, err := m.ForgetMemory(callAs(t, "alice"), "acme", "b2", "he was a cat")
	if err != nil {
		t.Fatal(err)
	}
	fr := res.(*agent.ForgetResult)
	if !fr.Forgotten || fr.Reply != "Forgotten: my dog." || fr.Belief.Status != agent.StatusForgotten {
		t.Errorf("ForgetMemory() = %+v", fr)
	}
	if got, _ := memoryOf(t, m, "alice", false); !slices.Equal(got, []string{"b1 my city=Lisbon active"}) {
		t.Errorf("alice's memory after forgetting = %q", got)
	}
	if got, _ := memoryOf(t, m, "alice", true); !slices.Equal(got, []string{"b1 my city=Lisbon active", "b2 my dog=Rex forgotten"}) {
		t.Errorf("alice's memory with history = %q", got)
	}
	if _, err := m.ForgetMemory(callAs(t, "alice"), "acme", "b2", ""); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("forgetting a forgotten belief: %v, want invalid params", err)
	}
	if got, _ := memoryOf(t, m, "bob", false); !slices.Equal(got, []string{"b1 my car=red active"}) {
		t.Errorf("bob's memory after alice forgot = %q", got)
	}

	// The request is in alice's log: an observation from the user, of kind forget, with why.
	rec, err := alice.Recall(t.Context(), agent.Query{Text: "dog cat", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rec.Observations, func(o agent.Observation) bool { return o.Kind == agent.ForgetKind })
	if i < 0 || rec.Observations[i].Source.Kind != agent.SourceUser || rec.Observations[i].Data["reason"] != "he was a cat" || rec.Observations[i].Data["belief"] != "b2" {
		t.Errorf("the forget request in the log: %+v", rec.Observations)
	}
	// The result is plain JSON, lists as lists.
	b, _ := json.Marshal(res)
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil || wire["forgotten"] != true {
		t.Errorf("ForgetResult as JSON = %s", b)
	}
}

// Forgetting is the rules' decision: a policy without a rule that forgets keeps the belief, and
// says so.
func TestMemoryForgetIsTheRulesDecision(t *testing.T) {
	t.Parallel()
	pol := agent.Notes()
	pol.Rules = slices.DeleteFunc(pol.Rules, func(r agent.Rule) bool { return r.Name == "forget" })
	h := newHost(t, &agent.Definition{Name: "stubborn", Policy: pol}, nil)
	ask(t, instance(t, h, "alice"), "", "remember the sky is green")
	res, err := h.Memory().ForgetMemory(callAs(t, "alice"), "acme", "b1", "")
	if err != nil {
		t.Fatal(err)
	}
	if fr := res.(*agent.ForgetResult); fr.Forgotten || fr.Belief.Status != agent.StatusActive {
		t.Errorf("ForgetMemory() without a forget rule = %+v", fr)
	}
	if got, _ := memoryOf(t, h.Memory(), "alice", false); !slices.Equal(got, []string{"b1 the sky=green active"}) {
		t.Errorf("the memory = %q", got)
	}
	// An anonymous caller has the anonymous instance, which holds nothing here.
	if res, err := h.Memory().GetMemory(t.Context(), "acme", false); err != nil || len(res.(*agent.MemoryReport).Beliefs) != 0 {
		t.Errorf("the anonymous memory = %+v, %v", res, err)
	}
}
