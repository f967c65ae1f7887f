package hosting

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
)

func TestParseDefinitionsRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, json, want string }{
		{"unknown key", `{"name": "a", "colour": "red"}`, `unknown key "colour"`},
		{"miscased key", `{"Name": "a"}`, `unknown key "Name"`},
		{"duplicate key", `{"name": "a", "name": "b"}`, `duplicate`},
		{"unknown key in a rule", `{"name": "a", "rules": [{"name": "r", "when": "true", "action": "reply", "params": {"text": "\"x\""}, "reason": "r", "Stop": true}]}`, `unknown key "rules[0].Stop"`},
		{"no name", `{"description": "x"}`, "name: required"},
		{"bad name", `{"name": "Research Agent"}`, "is not lower-case letters"},
		{"unknown policy", `{"name": "a", "policy": "oracle"}`, `policy: "oracle"`},
		{"unknown tool", `{"name": "a", "tools": ["shell"]}`, `no built-in tool "shell"`},
		{"model without a name", `{"name": "a", "model": {"url": "http://127.0.0.1:1/v1"}}`, "model.model: required"},
		{"model not http", `{"name": "a", "model": {"url": "file:///etc", "model": "m"}}`, "model.url"},
		{"key env not a name", `{"name": "a", "model": {"url": "http://x/v1", "model": "m", "apiKeyEnv": "A-B"}}`, "apiKeyEnv"},
		{"preinstall not offered", `{"name": "a", "capabilities": {"offer": ["self"], "preinstall": ["fetch"]}}`, `preinstall: "fetch" is not offered`},
		{"bad strategy", `{"name": "a", "capabilities": {"offer": ["self"], "strategies": {"self": "sometimes"}}}`, "strategies.self"},
		{"fetch settings, no fetch", `{"name": "a", "capabilities": {"offer": ["self"], "fetch": {"allow": ["https://x/*"]}}}`, "fetch is not offered"},
		{"bad duration", `{"name": "a", "limits": {"editWindow": 5}}`, "duration"},
		{"knowledge without value", `{"name": "a", "knowledge": [{"subject": "sky"}]}`, "knowledge 1"},
		{"two of one name", `[{"name": "a"}, {"name": "a"}]`, `two agents named "a"`},
		{"empty array", `[]`, "no agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDefinitions([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseDefinitions(%s) = %v, want an error with %q", tc.json, err, tc.want)
			}
		})
	}
}

func TestReadDefinitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("b.json", `[{"name": "b1", "limits": {"editWindow": "90m", "modelSteps": 2}}, {"name": "b2"}]`)
	write("a.json", `{"name": "a", "description": "first", "rules": [{"name": "r", "description": "d", "when": "command == \"x\"", "action": "reply", "params": {"text": "\"y\""}, "reason": "why"}]}`)
	write("notes.txt", `not a definition`)
	defs, err := ReadDefinitions(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name+"@"+filepath.Base(d.File))
	}
	if diff := cmp.Diff([]string{"a@a.json", "b1@b.json", "b2@b.json"}, names); diff != "" {
		t.Errorf("ReadDefinitions() names (-want +got):\n%s", diff)
	}
	want := agent.Rule{Name: "r", Description: "d", When: `command == "x"`, Action: agent.Reply, Params: map[string]string{"text": `"y"`}, Reason: "why"}
	if diff := cmp.Diff(want, defs[0].Rules[0]); diff != "" {
		t.Errorf("rule (-want +got):\n%s", diff)
	}
	if got := time.Duration(defs[1].Limits.EditWindow); got != 90*time.Minute {
		t.Errorf("editWindow = %v, want 1h30m", got)
	}

	write("c.json", `{"name": "a"}`)
	if _, err := ReadDefinitions(dir); err == nil || !strings.Contains(err.Error(), "a.json and c.json") {
		t.Errorf("ReadDefinitions() with two agents named a = %v, want an error naming both files", err)
	}
	write("c.json", `{"name": "c", "bogus": 1}`)
	if _, err := ReadDefinitions(dir); err == nil || !strings.Contains(err.Error(), "c.json") || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("ReadDefinitions() with a bad file = %v, want an error naming the file and the key", err)
	}
	if _, err := ReadDefinitions(filepath.Join(dir, "a.json")); err != nil {
		t.Errorf("ReadDefinitions(one file) = %v", err)
	}
	if _, err := ReadDefinitions(t.TempDir()); err == nil {
		t.Error("ReadDefinitions(empty directory) succeeded")
	}
}
