package peer_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/internal/agentstest"
)

// chainAgents: writer and tight call researcher ("write X" sends "research X"); researcher
// calls writer for "research loop" and archive for "research deep"; archive calls index (which
// does not exist: the call fails before anything is sent). tight's budget is 2, archive's
// maxDepth 2.
const chainAgents = `[
 {"name": "writer", "policy": "none", "rules": [
   {"name": "write", "when": "source == \"user\" && command == \"write\"", "action": "call",
    "params": {"tool": "\"a2a.call\"", "input": "\"{\\\"agent\\\": \\\"%[1]s/agents/researcher/\\\", \\\"message\\\": \\\"research \" + args + \"\\\"}\""}, "reason": "delegate"}, %[2]s],
  "capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"},
   "a2a": {"allow": ["%[1]s"], "networks": ["127.0.0.1/32"]}}},
 {"name": "tight", "policy": "none", "rules": [
   {"name": "write", "when": "source == \"user\" && command == \"write\"", "action": "call",
    "params": {"tool": "\"a2a.call\"", "input": "\"{\\\"agent\\\": \\\"%[1]s/agents/researcher/\\\", \\\"message\\\": \\\"research \" + args + \"\\\"}\""}, "reason": "delegate"}, %[2]s],
  "capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"},
   "a2a": {"allow": ["%[1]s"], "networks": ["127.0.0.1/32"], "budget": 2}}},
 {"name": "researcher", "policy": "none", "rules": [
   {"name": "loop", "when": "source == \"user\" && command == \"research\" && args == \"loop\"", "action": "call",
    "params": {"tool": "\"a2a.call\"", "input": "\"{\\\"agent\\\": \\\"%[1]s/agents/writer\\\", \\\"message\\\": \\\"write again\\\"}\""}, "reason": "ask back"},
   {"name": "deep", "when": "source == \"user\" && command == \"research\" && args == \"deep\"", "action": "call",
    "params": {"tool": "\"a2a.call\"", "input": "\"{\\\"agent\\\": \\\"%[1]s/agents/archive/\\\", \\\"message\\\": \\\"index\\\"}\""}, "reason": "look deeper"}, %[2]s],
  "capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"},
   "a2a": {"allow": ["%[1]s"], "networks": ["127.0.0.1/32"]}}},
 {"name": "archive", "policy": "none", "rules": [
   {"name": "index", "when": "source == \"user\" && command == \"index\"", "action": "call",
    "params": {"tool": "\"a2a.call\"", "input": "\"{\\\"agent\\\": \\\"%[1]s/agents/index/\\\", \\\"message\\\": \\\"list\\\"}\""}, "reason": "look it up"}, %[2]s],
  "capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"},
   "a2a": {"allow": ["%[1]s"], "networks": ["127.0.0.1/32"], "maxDepth": 2}}}
]`

// reportRules answer with what a call returned or why it failed.
const reportRules = `
   {"name": "report", "when": "kind == \"tool-result\" && source == \"agent\"", "action": "reply",
    "params": {"text": "\"[\" + self + \" got: \" + text + \"]\""}, "reason": "say it"},
   {"name": "trouble", "when": "last.action == \"call\" && last.status != \"done\"", "action": "reply",
    "params": {"text": "\"[\" + self + \" call \" + last.status + \": \" + last.result + \"]\""}, "reason": "say it"}`

// Loops, depth and budget are stopped with their clear errors, across agents.
func TestChainLimits(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	defs, err := hosting.ParseDefinitions(fmt.Appendf(nil, chainAgents, origin, reportRules))
	if err != nil {
		t.Fatal(err)
	}
	hopts := &hosting.Options{A2A: func(d *hosting.Definition) (capability.Offer, error) {
		s, err := peer.ParseSettings(d.Capabilities.A2A)
		if err != nil {
			return capability.Offer{}, err
		}
		return peer.Offer(s, &peer.Options{Self: origin + "/agents/" + d.Name + "/"})
	}}
	srv := agentstest.Start(t, defs, &agentstest.Options{Listener: ln, Hosting: hopts})
	for _, tc := range []struct{ agent, text, want string }{
		{"writer", "write loop", "a2a: calling " + origin + "/agents/writer/ would close a loop: writer → researcher → writer"},
		{"writer", "write deep", "a2a: call depth 2 reached: writer → researcher → archive → index"},
		{"tight", "write deep", "a2a: call budget spent: the 0 calls this request allowed are used"},
	} {
		c := dial(t, srv.AgentURL(tc.agent), "")
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		st, text := final(events(t, ctx, c, tc.text, ""))
		cancel()
		if !strings.Contains(text, tc.want) {
			t.Errorf("%s %q: %s %q, want it to say %q", tc.agent, tc.text, st, text, tc.want)
		}
	}
}
