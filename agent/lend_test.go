package agent_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// document is a client's capability: the document it has open.
type document struct {
	capnweb.Target
	reads atomic.Int64
}

func (d *document) Read(args map[string]any) string {
	d.reads.Add(1)
	return "Once upon a time, in " + args["section"].(string)
}

const documentDescription = `{"name": "document", "description": "the document the user has open",
  "methods": [{"name": "read", "description": "read a section",
    "params": {"type": "object", "properties": {"section": {"type": "string"}}, "required": ["section"]},
    "result": {"type": "string"},
    "effects": [{"access": "reads", "resource": "doc:{section}"}]}],
  "contract": {"reads": ["doc:public/*"]}}`

// A capnweb client lends the agent a capability of its own; the agent's rules call it (within
// its declared contract: a call outside never reaches the client); revoking the lease, or
// dropping the connection, takes it away.
func TestClientLendsACapability(t *testing.T) {
	t.Parallel()
	pol := &agent.Policy{Rules: []agent.Rule{
		{Name: "read", When: `command == "read"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"document.read"`, "input": `args`}},
		{Name: "say", When: `last.action == "call"`, Action: agent.Reply, Reason: "say so",
			Params: map[string]string{"text": `last.status + ": " + last.result`}},
	}}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: pol}, nil)
	srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h), HTTP: &binding.Options{AgentCapabilities: h.CallerCapabilities}})
	dial := func() *capnweb.Session {
		s, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(srv.URL, "http")+binding.DefaultCapnwebPath, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	anon, err := h.Instance(t.Context(), agent.Principal{})
	if err != nil {
		t.Fatal(err)
	}
	read := func(section string) string {
		return askTask(t, anon, "t-"+section, "read "+section).Reply
	}

	s := dial()
	doc := &document{}
	caps := s.Main().Call("capabilities")
	lease := caps.Call("lend", json.RawMessage(documentDescription), doc)
	var name string
	if err := lease.Get("name").Decode(t.Context(), &name); err != nil || name != "document" {
		t.Fatalf("lease.name = %q, %v", name, err)
	}
	if got := read("public/intro"); got != "done: Once upon a time, in public/intro" {
		t.Errorf("read public/intro: %q", got)
	}
	if got := read("private/diary"); !strings.HasPrefix(got, "refused: capability: outside the contract: reads doc:private/diary") {
		t.Errorf("read private/diary: %q", got)
	}
	if n := doc.reads.Load(); n != 1 {
		t.Errorf("the client's object was called %d times, want once", n)
	}
	var installed []map[string]any
	if err := caps.Call("installed").Decode(t.Context(), &installed); err != nil || len(installed) != 2 {
		t.Errorf("installed = %v, %v", installed, err)
	}
	if _, err := lease.Call("revoke").Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := read("public/intro"); !strings.HasPrefix(got, "no-such-tool: ") {
		t.Errorf("after revoke: %q", got)
	}

	// Lent again on a second connection, then the connection drops: the capability goes with it.
	s2 := dial()
	lease2 := s2.Main().Call("capabilities").Call("lend", json.RawMessage(documentDescription), &document{})
	if _, err := lease2.Get("name").Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := read("public/again"); !strings.HasPrefix(got, "done: ") {
		t.Errorf("lent again: %q", got)
	}
	_ = s2.Close()
	deadline := time.Now().Add(time.Minute) // generous: the server notices the closed socket, then disposes
	for {
		got := read("public/later")
		if strings.HasPrefix(got, "no-such-tool: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the connection closed: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
