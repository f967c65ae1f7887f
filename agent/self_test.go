package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

func currentBelief(t *testing.T, a *Agent, subject string) string {
	t.Helper()
	v, err := a.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range v.Beliefs {
		if b.Subject == subject && b.current() {
			return b.Value
		}
	}
	return ""
}

func installed(t *testing.T, a *Agent) []string {
	t.Helper()
	set, release, err := a.Host().Capabilities(t.Context(), a.Principal())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var names []string
	for _, h := range set.Installed() {
		names = append(names, h.Name)
	}
	return names
}

func installAsUser(t *testing.T, a *Agent, name string) {
	t.Helper()
	set, release, err := a.Host().Capabilities(t.Context(), a.Principal())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := set.InstallOffered(t.Context(), name, "", nil, capability.Origin{Kind: capability.OriginUser, Name: "anonymous"}, "", "", nil); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointRestore(t *testing.T) {
	t.Parallel()
	store := NewMemoryStore()
	catalog := capability.NewCatalog()
	for _, o := range []capability.Offer{capability.ClockOffer(nil), capability.SelfOffer()} {
		if err := catalog.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	opts := &Options{Store: store, Capabilities: catalog}
	a := newNotes(t, "notes", opts)
	hello := say(t, a, "hello").Observation
	say(t, a, "remember sky is blue")
	installAsUser(t, a, "self")
	img, err := a.Checkpoint(t.Context(), "before")
	if err != nil {
		t.Fatal(err)
	}
	if img.Policy != 1 || len(img.Beliefs) != 1 || img.Observations != 2 {
		t.Fatalf("Checkpoint() = policy %d, %d beliefs, %d observations", img.Policy, len(img.Beliefs), img.Observations)
	}
	// Changes: a policy edit, a belief superseded, a new belief, a capability in, one out.
	if _, err := a.Propose(t.Context(), Proposal{Op: OpAdd, Rule: shout, Justification: "greet", Evidence: []string{hello}}); err != nil {
		t.Fatal(err)
	}
	say(t, a, "actually sky is grey")
	say(t, a, "remember grass is green")
	installAsUser(t, a, "clock")
	set, release, _ := a.Host().Capabilities(t.Context(), a.Principal())
	if err := set.Uninstall(t.Context(), "self", "test"); err != nil {
		t.Fatal(err)
	}
	release()
	if got := strings.Join(installed(t, a), ","); got != "clock,loader" {
		t.Fatalf("installed before the restore = %s", got)
	}

	rep, err := a.Restore(t.Context(), img)
	if err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	if rep.Policy != 1 || rep.Retired != 2 || rep.Restored != 1 || strings.Join(rep.Uninstalled, ",") != "clock" || len(rep.Missing) != 0 {
		t.Errorf("Restore() = %+v, want policy 1, the grey sky and the grass retired, the blue sky restored, clock uninstalled", rep)
	}
	check := func(when string) {
		t.Helper()
		if got := currentBelief(t, a, "sky"); got != "blue" {
			t.Errorf("%s: sky is %q, want blue", when, got)
		}
		if got := currentBelief(t, a, "grass"); got != "" {
			t.Errorf("%s: grass is %q, want forgotten", when, got)
		}
		if got := say(t, a, "hello").Reply; strings.Contains(got, "Hello!") {
			t.Errorf("%s: hello → %q, want the policy of the checkpoint", when, got)
		}
		if got := strings.Join(installed(t, a), ","); got != "loader,self" {
			t.Errorf("%s: installed = %s, want the checkpoint's", when, got)
		}
	}
	check("after the restore")
	v, _ := a.View(t.Context())
	if v.Version != 1 || len(v.History) != 2 {
		t.Errorf("policy version %d of %d, want 1 of 2 (versions are kept)", v.Version, len(v.History))
	}
	r, _ := a.Recall(t.Context(), Query{Text: "restored checkpoint", Limit: 5})
	if len(r.Observations) == 0 || r.Observations[0].Kind != "checkpoint" || r.Observations[0].ID != rep.Observation {
		t.Errorf("the restore is not in the log: %+v", r.Observations)
	}
	// It was committed: a new instance on the same store sees it.
	_ = a.Close()
	a = newNotes(t, "notes", opts)
	check("after a restart")

	// An image of another history is refused.
	img.Policy = 9
	if _, err := a.Restore(t.Context(), img); !errors.Is(err, ErrImage) {
		t.Errorf("Restore(policy 9) = %v, want ErrImage", err)
	}
}

func TestFork(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fs, err := capability.FileSystem(root, capability.Contract{Reads: []string{"file:*"}, Writes: []string{"file:*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	catalog := capability.NewCatalog()
	if err := catalog.Add(capability.Offering(fs, capability.Strategies{Minimum: capability.PreApproved, Recommended: capability.PreApproved})); err != nil {
		t.Fatal(err)
	}
	var calls sync.Map
	echo := func(_ context.Context, in string) (string, error) { calls.Store(in, true); return in, nil }
	pol := Notes()
	pol.Rules = append([]Rule{
		{Name: "write", When: `command == "write"`, Action: CallTool, Params: map[string]string{"tool": `"fs.write"`,
			"input": `"{\"path\":\"a.txt\",\"content\":\"" + args + "\"}"`}, Reason: "write"},
		{Name: "echo", When: `command == "echo"`, Action: CallTool, Params: map[string]string{"tool": `"echo"`, "input": "args"}, Reason: "echo"},
		{Name: "said", When: `command in ["write", "echo"]`, Action: Reply, Params: map[string]string{"text": "last.status"}, Stop: true, Reason: "say"},
	}, pol.Rules...)
	a := newNotes(t, "notes", &Options{Policy: pol, Capabilities: catalog, Tools: map[string]Tool{"echo": echo}})
	hello := say(t, a, "hello").Observation
	say(t, a, "remember sky is blue")
	installAsUser(t, a, "fs")
	if got := say(t, a, "write one").Reply; got != "done" {
		t.Fatalf("write in the instance: %q", got)
	}

	f, err := a.Fork(t.Context())
	if err != nil {
		t.Fatalf("Fork() = %v", err)
	}
	if got := currentBelief(t, f, "sky"); got != "blue" {
		t.Errorf("the fork's sky is %q, want the instance's memory", got)
	}
	d, err := f.Propose(t.Context(), Proposal{Op: OpAdd, Rule: shout, Justification: "try it", Evidence: []string{hello}})
	if err != nil || d.Version != 2 {
		t.Fatalf("Propose in the fork = %+v, %v", d, err)
	}
	if got := say(t, f, "hello").Reply; !strings.Contains(got, "Hello!") {
		t.Errorf("the fork after its edit: hello → %q", got)
	}
	say(t, f, "remember grass is green")
	if got := say(t, f, "write two").Reply; got != "refused" {
		t.Errorf("a write in the fork: %q, want refused (read-only)", got)
	}
	if got := say(t, f, "echo from-the-fork").Reply; got != "no-such-tool" {
		t.Errorf("the operator's tool in the fork: %q, want it absent", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Nothing reached the instance.
	if got := say(t, a, "hello").Reply; strings.Contains(got, "Hello!") {
		t.Errorf("the instance after the fork's edit: hello → %q", got)
	}
	if got := currentBelief(t, a, "grass"); got != "" {
		t.Errorf("the instance learned grass is %q in the fork", got)
	}
	if _, ok := calls.Load("from-the-fork"); ok {
		t.Error("the fork called the operator's tool")
	}
	set, release, _ := a.Host().Capabilities(t.Context(), a.Principal())
	defer release()
	out, err := set.Call(t.Context(), capability.Request{Capability: "fs", Method: "read", Args: json.RawMessage(`{"path":"a.txt"}`)})
	if err != nil || !strings.Contains(string(out), `"one"`) {
		t.Errorf("a.txt = %s, %v; want the instance's write only", out, err)
	}
}

// reflector is a fake model for reflect phases: it records the prompt and answers with
// answer.
type reflector struct {
	mu      sync.Mutex
	answer  string
	prompts []string
}

func (r *reflector) Complete(_ context.Context, msgs []ChatMessage, _ []ToolSpec, _ func(string)) (ChatMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prompts = append(r.prompts, msgs[len(msgs)-1].Content)
	return ChatMessage{Role: "assistant", Content: r.answer}, nil
}

func (r *reflector) set(answer string) { r.mu.Lock(); r.answer = answer; r.mu.Unlock() }

func (r *reflector) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.prompts) == 0 {
		return ""
	}
	return r.prompts[len(r.prompts)-1]
}

// colorRule is the agent's fallback: it does not know the color until it reflects.
var colorRule = Rule{Name: "fallback", When: `source == "user" && !command.startsWith("/")`, Action: Reply,
	Params: map[string]string{"text": `"I do not know."`}, Reason: "say so"}

// corrected has the user correct the color twice, and returns a proposal the model makes of
// it.
func corrected(t *testing.T, a *Agent) string {
	t.Helper()
	var ev []string
	for _, fix := range []string{"no, it is green", "wrong: green!"} {
		run := say(t, a, "color")
		if run.Reply != "I do not know." {
			t.Fatalf("color → %q", run.Reply)
		}
		ev = append(ev, run.Observation)
		say(t, a, fix)
	}
	green := Rule{Name: "color", When: `command == "color"`, Action: Reply, Params: map[string]string{"text": `"It is green."`},
		Reason: "the user corrected the color twice"}
	data, _ := json.Marshal(map[string]any{"proposals": []any{map[string]any{"op": "add", "rule": green,
		"justification": "the user said green twice", "evidence": ev}}})
	return "Here is what I propose:\n" + string(data)
}

func TestReflect(t *testing.T) {
	t.Parallel()
	for _, gated := range []bool{false, true} {
		model := &reflector{}
		pol := &Policy{Rules: []Rule{colorRule}}
		if gated {
			pol.Limits.Approval = []Action{Reply}
		}
		a := newNotes(t, "colors", &Options{Policy: pol, Model: model})
		if r, err := a.Reflect(t.Context()); err != nil || len(r.Findings) != 0 || r.Observation != "" {
			t.Fatalf("Reflect() with nothing to find = %+v, %v", r, err)
		}
		model.set(corrected(t, a))
		r, err := a.Reflect(t.Context())
		if err != nil {
			t.Fatalf("Reflect() = %v", err)
		}
		if len(r.Findings) != 2 || r.Findings[0].Kind != "correction" || !strings.Contains(model.last(), "no, it is green") {
			t.Errorf("findings = %+v; the model was shown %q", r.Findings, model.last())
		}
		if len(r.Proposals) != 1 || r.Proposals[0].Error != "" {
			t.Fatalf("proposals = %+v", r.Proposals)
		}
		d := r.Proposals[0].Decision
		if gated {
			if d.Pending == "" {
				t.Fatalf("a gated edit was not held: %+v", d)
			}
			if got := say(t, a, "color").Reply; strings.Contains(got, "green") {
				t.Errorf("held, not applied: color → %q", got)
			}
			if _, err := a.Approve(t.Context(), d.Pending, "the operator"); err != nil {
				t.Fatal(err)
			}
		} else if d.Version != 2 || len(d.Diff) != 2 {
			t.Errorf("decision = %+v, want version 2 with two differences", d)
		}
		if got := say(t, a, "color").Reply; !strings.Contains(got, "green") {
			t.Errorf("after the reflection (gated %v): color → %q", gated, got)
		}
		rec, _ := a.Recall(t.Context(), Query{Text: "reflected", Limit: 3})
		if len(rec.Observations) == 0 || rec.Observations[0].Kind != "reflection" {
			t.Errorf("no reflection observation: %+v", rec.Observations)
		}
		if v, err := a.Rollback(t.Context()); err != nil || v != 1 {
			t.Fatalf("Rollback() = %d, %v", v, err)
		}
		if got := say(t, a, "color").Reply; strings.Contains(got, "green") {
			t.Errorf("after the rollback: color → %q", got)
		}
	}
}

// A rule runs the reflect phase through the reflect capability; a schedule runs it too.
func TestReflectByRuleAndSchedule(t *testing.T) {
	t.Parallel()
	model := &reflector{}
	reflectRule := Rule{Name: "reflect", When: `command == "/reflect"`, Action: CallTool, Params: map[string]string{"tool": `"reflect.run"`, "input": `"{}"`}, Reason: "asked to reflect"}
	said := Rule{Name: "reflected", When: `command == "/reflect"`, Action: Reply, Params: map[string]string{"text": "last.status"}, Stop: true, Reason: "say"}
	h, err := NewHost(&Definition{Name: "colors", Policy: &Policy{Rules: []Rule{colorRule, reflectRule, said}}, Model: model,
		Reflect: &ReflectOptions{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	a, _ := h.Instance(t.Context(), Principal{Name: "alice"})
	model.set(corrected(t, a))
	if got := say(t, a, "/reflect").Reply; got != "done" {
		t.Fatalf("/reflect → %q", got)
	}
	if got := say(t, a, "color").Reply; !strings.Contains(got, "green") {
		t.Errorf("after /reflect: color → %q", got)
	}

	// On a schedule, for a principal whose log grew.
	h2, err := NewHost(&Definition{Name: "colors", Policy: &Policy{Rules: []Rule{colorRule}}, Model: model,
		Reflect: &ReflectOptions{Every: 20 * time.Millisecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Close() })
	b, _ := h2.Instance(t.Context(), Principal{Name: "bob"})
	model.set(corrected(t, b))
	// Generous: the schedule ticks every 20 ms; a loaded machine may take seconds.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(say(t, b, "color").Reply, "green") {
		if time.Now().After(deadline) {
			t.Fatal("no scheduled reflection applied the edit within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
