package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve -agents: an agent holding a2a (capabilities.a2a) calls another agent of the same server
// and answers with what it said; a loop back to it is stopped, the chain naming each agent by
// its URL under -base-url.
func TestServeAgentsA2A(t *testing.T) {
	dir := t.TempDir()
	addr, gaddr := freeAddr(t), freeAddr(t)
	origin := "http://" + addr
	call := func(agent, msg string) string {
		return fmt.Sprintf(`"\"{\\\"agent\\\": \\\"%s/agents/%s/\\\", \\\"message\\\": \\\"%s \" + args + \"\\\"}\""`, origin, agent, msg)
	}
	report := `{"name": "report", "when": "kind == \"tool-result\" && source == \"agent\"", "action": "reply", "params": {"text": "\"heard: \" + text"}, "reason": "say it"},
	  {"name": "trouble", "when": "last.action == \"call\" && last.status != \"done\"", "action": "reply", "params": {"text": "\"call \" + last.status + \": \" + last.result"}, "reason": "say it"}`
	a2a := fmt.Sprintf(`"capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"}, "a2a": {"allow": ["%s"], "networks": ["127.0.0.1/32"]}}`, origin)
	defs := fmt.Sprintf(`[
	 {"name": "writer", "policy": "none", %[1]s, "rules": [
	  {"name": "write", "when": "command == \"write\"", "action": "call", "params": {"tool": "\"a2a.call\"", "input": %[2]s}, "reason": "delegate"}, %[4]s]},
	 {"name": "researcher", "policy": "none", %[1]s, "rules": [
	  {"name": "research", "when": "command == \"research\" && args != \"back\"", "action": "reply", "params": {"text": "\"researching \" + args"}, "reason": "asked"},
	  {"name": "back", "when": "command == \"research\" && args == \"back\"", "action": "call", "params": {"tool": "\"a2a.call\"", "input": %[3]s}, "reason": "ask back"}, %[4]s]}
	]`, a2a, call("researcher", "research"), call("writer", "write"), report)
	path := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(path, []byte(defs), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServe([]string{"-addr", addr, "-grpc-addr", gaddr, "-base-url", origin, "-db", filepath.Join(dir, "a.db"), "-no-push", "-agents", path})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := starter(t, cfg)()
	defer func() { stop(); <-done }()
	writer := origin + "/agents/writer"
	if out, err := verb(t, "send", writer, "write tides"); err != nil || !strings.Contains(out, "researching tides") {
		t.Errorf("writer delegating: %q, %v", out, err)
	}
	want := "would close a loop: writer → researcher → writer"
	if out, err := verb(t, "send", writer, "write back"); err != nil || !strings.Contains(out, want) {
		t.Errorf("writer, researcher, writer: %q, %v; want %q", out, err, want)
	}
}

func TestA2AFlags(t *testing.T) {
	if _, err := parseServe([]string{"-agent", "runtime", "-capabilities", "a2a", "-a2a-allow", "https://agents.example/*", "-a2a-networks", "10.0.0.0/8"}); err != nil {
		t.Errorf("parseServe(-capabilities a2a -a2a-allow …) = %v", err)
	}
	c, err := parseServe([]string{"-agent", "runtime", "-capabilities", "a2a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.caps.builtin("a2a", nil); err == nil || !strings.Contains(err.Error(), "-a2a-allow") {
		t.Errorf("-capabilities a2a without -a2a-allow: %v, want an error naming -a2a-allow", err)
	}
	c.caps.a2a.allow, c.caps.a2a.networks = "https://agents.example/*", "not-a-cidr"
	if _, err := c.caps.builtin("a2a", nil); err == nil || !strings.Contains(err.Error(), "networks") {
		t.Errorf("-a2a-networks not-a-cidr: %v, want an error naming networks", err)
	}
}
