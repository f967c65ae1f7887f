package hosting

import (
	"context"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
)

// quiet is a model that is never asked: the skills only need one to exist.
type quiet struct{}

func (quiet) Complete(context.Context, []agent.ChatMessage, []agent.ToolSpec, func(string)) (agent.ChatMessage, error) {
	return agent.ChatMessage{Role: "assistant", Content: "…"}, nil
}

func mustNew(t *testing.T, json string, opts *Options) *Agents {
	t.Helper()
	defs, err := ParseDefinitions([]byte(json))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(defs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

type skillView struct {
	ID, Description string
	Examples, Tags  []string
}

func skillsOf(c *a2a.AgentCard) []skillView {
	var out []skillView
	for _, s := range c.Skills {
		out = append(out, skillView{s.ID, s.Description, s.Examples, s.Tags})
	}
	return out
}

func TestSkillsAreDerivedFromRules(t *testing.T) {
	t.Parallel()
	a := mustNew(t, `{"name": "librarian", "capabilities": {"offer": ["fetch", "self"], "fetch": {"allow": ["https://library.example/*"]}},
	  "rules": [
	    {"name": "lookup", "description": "Looks a book up", "when": "source == \"user\" && command == \"lookup\" && args != \"\"",
	     "action": "call", "params": {"tool": "\"fetch.get\"", "input": "\"https://library.example/\" + args"}, "reason": "asked"},
	    {"name": "report", "when": "kind == \"tool-result\" && data.tool == \"fetch.get\"", "action": "reply", "params": {"text": "text"}, "reason": "say what was found"},
	    {"name": "hours", "when": "command in [\"hours\", \"open\"] && args == \"\"", "action": "reply", "params": {"text": "\"9 to 5\""}, "reason": "people ask when it opens"},
	    {"name": "greet", "when": "text.lowerAscii().trim() == \"hello\"", "action": "reply", "params": {"text": "\"hi\""}, "reason": "politeness"},
	    {"name": "thanks", "when": "source == \"user\" && text.matches(\"(?i)thank\")", "action": "reply", "params": {"text": "\"welcome\""}, "reason": "politeness too"},
	    {"name": "fallback", "when": "state.fired == 0 && source == \"user\"", "action": "reply", "params": {"text": "\"say lookup\""}, "reason": "help"}
	  ]}`, nil)
	want := []skillView{
		{"lookup", "Looks a book up", []string{"lookup …"}, []string{"call", "fetch"}},
		{"hours", "people ask when it opens", []string{"hours", "open"}, []string{"reply"}},
		{"greet", "politeness", []string{"hello"}, []string{"reply"}},
		{"thanks", "politeness too", nil, []string{"reply"}},
	}
	if diff := cmp.Diff(want, skillsOf(a.Get("librarian").Card)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

func TestSkillsOfAModel(t *testing.T) {
	t.Parallel()
	opts := &Options{NewModel: func(*Model, string) agent.Model { return quiet{} }, FetchAllow: []string{"https://*"}}
	withModel := mustNew(t, `{"name": "helper", "policy": "assistant", "model": {"url": "http://127.0.0.1:1/v1", "model": "tiny"},
	  "capabilities": {"offer": ["self", "fetch"]}}`, opts)
	var model *a2a.AgentSkill
	var ids []string
	for i, s := range withModel.Get("helper").Card.Skills {
		ids = append(ids, s.ID)
		if s.ID == "model" {
			model = &withModel.Get("helper").Card.Skills[i]
		}
	}
	if model == nil {
		t.Fatalf("skills %v: no model skill", ids)
	}
	for _, w := range []string{"tiny", "clock (", "self (", "fetch ("} {
		if !strings.Contains(model.Description, w) {
			t.Errorf("model skill %q does not name %q", model.Description, w)
		}
	}
	if diff := cmp.Diff([]string{"identity", "echo", "time", "remember", "ask-value", "correct", "recall", "forget", "model"}, ids); diff != "" {
		t.Errorf("assistant's skills (-want +got):\n%s", diff)
	}
	// No model, no model skill: the consult rule answers "no-model", and nothing can use fetch.
	without := mustNew(t, `{"name": "helper", "policy": "assistant", "capabilities": {"offer": ["self", "fetch"]}}`, opts)
	for _, s := range without.Get("helper").Card.Skills {
		if s.ID == "model" || strings.Contains(strings.Join(s.Tags, ","), "fetch") {
			t.Errorf("an agent without a model has skill %+v", s)
		}
	}
}

func TestIndiscernibleDefinitionsAreRefused(t *testing.T) {
	t.Parallel()
	rule := func(name, reply string) string {
		return `{"name": "` + name + `", "when": "command == \"go\"", "action": "reply", "params": {"text": "\"` + reply + `\""}, "reason": "` + name + ` because"}`
	}
	for _, tc := range []struct {
		name string
		a, b string
		want string // "" when they are distinct
	}{
		{"names and descriptions", `{"name": "writer", "description": "Writes."}`, `{"name": "editor", "description": "Edits."}`,
			"differ only in their card (name, description)"},
		{"rules renamed and reworded", `{"name": "a", "rules": [` + rule("r1", "x") + `]}`, `{"name": "b", "rules": [` + rule("r2", "x") + `]}`,
			"and the names or words of their rules"},
		{"a built-in policy written out", `{"name": "a", "policy": "notes"}`, `{"name": "b", "policy": "notes", "version": "2.0.0"}`,
			"(name, version)"},
		{"a rule that does something else", `{"name": "a", "rules": [` + rule("r", "x") + `]}`, `{"name": "b", "rules": [` + rule("r", "y") + `]}`, ""},
		{"other knowledge", `{"name": "a", "knowledge": [{"subject": "sky", "value": "blue"}]}`, `{"name": "b", "knowledge": [{"subject": "sky", "value": "grey"}]}`, ""},
		{"another model", `{"name": "a", "model": {"url": "http://127.0.0.1:1/v1", "model": "m1"}}`, `{"name": "b", "model": {"url": "http://127.0.0.1:1/v1", "model": "m2"}}`, ""},
		{"other capabilities", `{"name": "a"}`, `{"name": "b", "capabilities": {"offer": ["self", "fetch"], "fetch": {"allow": ["https://x.example/*"]}}}`, ""},
		{"another strategy", `{"name": "a", "capabilities": {"offer": ["self"], "strategies": {"self": "audit-only"}}}`, `{"name": "b"}`, ""},
		{"other limits", `{"name": "a", "limits": {"modelSteps": 2}}`, `{"name": "b"}`, ""},
		{"another tool", `{"name": "a", "tools": ["clock"]}`, `{"name": "b"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defs, err := ParseDefinitions([]byte("[" + tc.a + "," + tc.b + "]"))
			if err != nil {
				t.Fatal(err)
			}
			defs[0].File, defs[1].File = "/etc/agents/first.json", "/etc/agents/second.json"
			a, err := New(defs, &Options{NewModel: func(*Model, string) agent.Model { return quiet{} }})
			if a != nil {
				a.Close()
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New() = %v, want two agents", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "first.json and second.json define indiscernible agents")):
				t.Fatalf("New() = %v, want indiscernible agents, differing only in %q", err, tc.want)
			}
		})
	}
}
