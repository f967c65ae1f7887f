package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// notesFS is a catalog offering a file system on a fresh directory (reads everything, writes
// notes/*), the clock and the self view; the file system's default strategy is st.
func notesFS(t *testing.T, st capability.Strategy) (*capability.Catalog, *capability.Capability, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := capability.FileSystem(dir, capability.Contract{Reads: []string{"file:*"}, Writes: []string{"file:notes/*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Revoke(nil) })
	cat := capability.NewCatalog()
	o := capability.Offering(fs, capability.Strategies{Minimum: capability.PreApproved, Recommended: capability.ContractBased})
	o.Strategy = st
	for _, o := range []capability.Offer{o, capability.ClockOffer(nil), capability.SelfOffer()} {
		if err := cat.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return cat, fs, dir
}

// saver is a policy that writes files through fs and says how it went.
func saver() *agent.Policy {
	return &agent.Policy{Rules: []agent.Rule{
		{Name: "save", When: `command == "save"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"fs.write"`, "input": `"{\"path\": \"" + args + "\", \"content\": \"hello\"}"`}},
		{Name: "read", When: `command == "read"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"fs.read"`, "input": `args`}},
		{Name: "done", When: `last.action == "call" && last.status == "done"`, Action: agent.Reply, Reason: "say so",
			Params: map[string]string{"text": `"done: " + last.result`}},
		{Name: "not-done", When: `last.action == "call" && last.status != "done"`, Action: agent.Reply, Reason: "say so",
			Params: map[string]string{"text": `last.status + ": " + last.result`}},
	}}
}

func askTask(t *testing.T, a *agent.Agent, task, text string) agent.Run {
	t.Helper()
	ev := agent.UserText(text)
	ev.Context = agent.Context{Task: task, Session: "s1"}
	run, err := a.Ask(t.Context(), ev)
	if err != nil {
		t.Fatalf("Ask(%q) = %v", text, err)
	}
	return run
}

// Under call-by-call, each call of a rule waits for the user: the turn parks on the question
// (the task is input-required), "yes" runs exactly that call, "no" refuses it; each decision is
// an observation from the user and a record in the audit log.
func TestCallByCallApproval(t *testing.T) {
	t.Parallel()
	cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
	h := newHost(t, &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}}, nil)
	alice := instance(t, h, "alice")

	run := askTask(t, alice, "t1", "save notes/a.txt")
	if !strings.Contains(run.Question, `wants to call fs.write with {"content":"hello","path":"notes/a.txt"}`) ||
		!strings.Contains(run.Question, "Approve p1? Answer yes or no.") {
		t.Fatalf("the question: %q", run.Question)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "a.txt")); err == nil {
		t.Fatal("the file was written before the user said yes")
	}
	if run := askTask(t, alice, "t1", "yes"); run.Reply != `done: {"bytes":5,"path":"notes/a.txt"}` {
		t.Fatalf("after yes: %+v", run)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "notes", "a.txt")); string(data) != "hello" {
		t.Errorf("the file holds %q", data)
	}
	askTask(t, alice, "t2", "save notes/b.txt")
	if run := askTask(t, alice, "t2", "no, not that one"); !strings.HasPrefix(run.Reply, "denied: capability: refused by the user (p2): not that one") {
		t.Errorf("after no: %+v", run)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "b.txt")); err == nil {
		t.Error("the refused file was written")
	}
	r, _ := alice.Recall(t.Context(), agent.Query{Text: "approved refused fs.write", Limit: 20})
	var decisions []string
	for _, o := range r.Observations {
		if o.Kind == "capability" {
			decisions = append(decisions, o.Source.Name+" "+o.Data["outcome"]+" "+o.Data["pending"])
		}
	}
	slices.Sort(decisions)
	if want := []string{"alice@acme approved p1", "alice@acme denied p2"}; !slices.Equal(decisions, want) {
		t.Errorf("decisions observed: %q, want %q", decisions, want)
	}
	recs, _ := h.Audit().Records(t.Context(), capability.AuditQuery{Principal: "alice@acme"})
	var outs []string
	for _, rec := range recs {
		outs = append(outs, string(rec.Outcome))
	}
	if want := []string{"installed", "approval-required", "approved", "approval-required", "denied", "denied"}; !slices.Equal(outs, want) {
		t.Errorf("audit outcomes %q, want %q", outs, want)
	}
}

// A call outside the contract is refused, recorded, and observed; what the rule sees says so.
func TestContractViolationIsRefused(t *testing.T) {
	t.Parallel()
	cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.PreApproved})
	h := newHost(t, &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}}, nil)
	alice := instance(t, h, "alice")
	for _, path := range []string{"secret.txt", "../escape.txt", "notes/../secret.txt"} {
		run := askTask(t, alice, "t-"+path, "save "+path)
		if !strings.HasPrefix(run.Reply, "refused: ") && !strings.HasPrefix(run.Reply, "failed: capability: bad path") {
			t.Errorf("save %s: %q", path, run.Reply)
		}
	}
	for _, f := range []string{"secret.txt", "../escape.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	recs, _ := h.Audit().Records(t.Context(), capability.AuditQuery{Principal: "alice@acme"})
	if last := recs[len(recs)-1]; last.Outcome != capability.OutcomeRefused || last.Origin.Kind != capability.OriginRule || last.Origin.Name != "save" {
		t.Errorf("the last record: %+v", last)
	}
	r, _ := alice.Recall(t.Context(), agent.Query{Text: "refused", Limit: 20})
	if !slices.ContainsFunc(r.Observations, func(o agent.Observation) bool {
		return o.Kind == "capability" && o.Data["outcome"] == "refused" && o.Source == agent.Source{Kind: agent.SourceSelf, Name: "capabilities"}
	}) {
		t.Errorf("no observation of the refusal: %+v", r.Observations)
	}
}

// The user runs the loader with commands: install under a budget, which runs out with a clear
// error; the audit log they read is theirs alone; what they installed survives a restart.
func TestCapabilityCommandsBudgetAndRestart(t *testing.T) {
	t.Parallel()
	cat, _, _ := notesFS(t, capability.Strategy{Kind: capability.ContractBased})
	store := agent.NewMemoryStore()
	def := &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat}
	h, err := agent.NewHost(def, &agent.HostOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := instance(t, h, "alice"), instance(t, h, "bob")
	if run := askTask(t, alice, "t1", "save notes/a.txt"); !strings.HasPrefix(run.Reply, "no-such-tool: ") {
		t.Errorf("before installing: %q", run.Reply)
	}
	list := askTask(t, alice, "t2", "/capabilities").Reply
	if !strings.Contains(list, "Installed:\n- loader (pre-approved)") || !strings.Contains(list, "Available:\n- clock 1") ||
		!strings.Contains(list, "- fs 1: Files in a directory the operator chose. Contract: reads file:*; writes file:notes/*. Default strategy: contract.") {
		t.Errorf("/capabilities:\n%s", list)
	}
	if run := askTask(t, alice, "t3", "/capability install fs budget:calls=2"); run.Reply != "Installed fs under budget:calls=2. Its contract allows: reads file:*; writes file:notes/*." {
		t.Fatalf("install: %q", run.Reply)
	}
	askTask(t, bob, "t1", "/capability install clock")
	for i, want := range []string{"done: ", "done: ", "exhausted: capability: budget exhausted: capability fs: 2 of 2 calls used"} {
		if run := askTask(t, alice, "t4", "save notes/a.txt"); !strings.HasPrefix(run.Reply, want) {
			t.Errorf("call %d: %q, want %q…", i+1, run.Reply, want)
		}
	}
	audit := askTask(t, alice, "t5", "/capability audit").Reply
	if !strings.Contains(audit, "alice@acme installed fs under budget:calls=2") || !strings.Contains(audit, "fs.write: exhausted") ||
		strings.Contains(audit, "clock") {
		t.Errorf("alice's audit:\n%s", audit)
	}
	all, _ := h.Audit().Records(t.Context(), capability.AuditQuery{All: true})
	if !slices.ContainsFunc(all, func(r capability.Record) bool { return r.Principal == "bob@acme" && r.Capability == "clock" }) {
		t.Errorf("the operator does not see bob's install: %+v", all)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// A new host on the same store: alice still holds fs, its budget still spent.
	h2 := newHost(t, def, &agent.HostOptions{Store: store})
	alice2 := instance(t, h2, "alice")
	if run := askTask(t, alice2, "t6", "save notes/b.txt"); !strings.HasPrefix(run.Reply, "exhausted: ") {
		t.Errorf("after the restart: %q", run.Reply)
	}
	if run := askTask(t, alice2, "t7", "/capability strategy fs contract"); run.Reply != "fs is now under contract in every session." {
		t.Errorf("strategy: %q", run.Reply)
	}
	if run := askTask(t, alice2, "t8", "save notes/b.txt"); !strings.HasPrefix(run.Reply, "done: ") {
		t.Errorf("under contract, approved at install: %q", run.Reply)
	}
	if run := askTask(t, alice2, "t9", "/capability uninstall fs"); run.Reply != "Uninstalled fs." {
		t.Errorf("uninstall: %q", run.Reply)
	}
	if run := askTask(t, alice2, "t10", "/capability fly"); !strings.HasPrefix(run.Reply, "Commands: ") {
		t.Errorf("an unknown command: %q", run.Reply)
	}
}

// capModel is a model that follows a script of tool calls and records the tools it was offered.
type capModel struct {
	mu      sync.Mutex
	script  []agent.ChatMessage
	offered [][]string
	results []string
}

func (m *capModel) Complete(_ context.Context, msgs []agent.ChatMessage, tools []agent.ToolSpec, _ func(string)) (agent.ChatMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	m.offered = append(m.offered, names)
	if last := msgs[len(msgs)-1]; last.Role == "tool" {
		m.results = append(m.results, last.Content)
	}
	if len(m.script) == 0 {
		return agent.ChatMessage{Role: "assistant", Content: "done"}, nil
	}
	next := m.script[0]
	m.script = m.script[1:]
	return next, nil
}

// The model installs a capability through the loader (the user approves), then calls it; its
// tool schemas are the capability's; the symbol table shows which rules use what.
func TestModelInstallsAndCalls(t *testing.T) {
	t.Parallel()
	cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.ContractBased})
	if err := os.WriteFile(filepath.Join(dir, "notes", "todo.txt"), []byte("buy milk"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string) agent.ChatMessage {
		return agent.ChatMessage{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: id, Name: name, Arguments: args}}}
	}
	model := &capModel{script: []agent.ChatMessage{
		call("c1", "fs__read", `{"path":"notes/todo.txt"}`),
		call("c2", "loader__install", `{"name":"fs"}`),
		call("c3", "fs__read", `{"path":"notes/todo.txt"}`),
		call("c4", "self__capabilities", `{}`),
	}}
	pol := agent.Assistant()
	pol.Limits.ModelSteps = 6
	pol.Rules = append(pol.Rules, agent.Rule{Name: "look", When: `command == "look"`, Action: agent.CallTool, Reason: "r",
		Params: map[string]string{"tool": `"fs.read"`, "input": `args`}})
	h := newHost(t, &agent.Definition{Name: "helper", Policy: pol, Model: model, Capabilities: cat, Preinstall: []string{"self"}}, nil)
	alice := instance(t, h, "alice")
	run := askTask(t, alice, "t1", "what is on my todo list?")
	if !strings.Contains(run.Question, "wants to install the capability fs under the strategy contract") {
		t.Fatalf("the question: %+v", run)
	}
	if run := askTask(t, alice, "t1", "yes"); run.Reply != "done" {
		t.Fatalf("after yes: %+v", run)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.results) != 4 || !strings.Contains(model.results[0], `no tool named "fs__read"`) ||
		!strings.Contains(model.results[1], `"approved":true`) || !strings.Contains(model.results[2], "buy milk") {
		t.Fatalf("results: %q", model.results)
	}
	var table struct{ Capabilities []capability.Symbol }
	if err := json.Unmarshal([]byte(model.results[3]), &table); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(table.Capabilities, func(s capability.Symbol) bool { return s.Name == "fs" })
	if i < 0 || !slices.Contains(table.Capabilities[i].UsedBy, "look") || !slices.Contains(table.Capabilities[i].UsedBy, "consult") ||
		!table.Capabilities[i].Approved || table.Capabilities[i].Depth != 2 {
		t.Errorf("the symbol table: %+v", table.Capabilities)
	}
	if !slices.Contains(model.offered[0], "loader__install") || slices.Contains(model.offered[0], "fs__read") ||
		!slices.Contains(model.offered[2], "fs__read") || !slices.Contains(model.offered[2], "fs__write") {
		t.Errorf("tools offered: %q", model.offered)
	}
}

// Revoking the operator's capability stops every instance's copy at once; the model is no
// longer offered it.
func TestOperatorRevocation(t *testing.T) {
	t.Parallel()
	cat, fs, _ := notesFS(t, capability.Strategy{Kind: capability.PreApproved})
	h := newHost(t, &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}}, nil)
	alice, bob := instance(t, h, "alice"), instance(t, h, "bob")
	for _, a := range []*agent.Agent{alice, bob} {
		if run := askTask(t, a, "t1", "save notes/x.txt"); !strings.HasPrefix(run.Reply, "done: ") {
			t.Fatalf("before: %q", run.Reply)
		}
	}
	fs.Revoke(errors.New("the share is closed"))
	for _, a := range []*agent.Agent{alice, bob} {
		if run := askTask(t, a, "t2", "save notes/x.txt"); !strings.HasPrefix(run.Reply, "revoked: capability: revoked: fs: the share is closed") {
			t.Errorf("after: %q", run.Reply)
		}
	}
}

// A sub-agent holds a derived subset of its parent's capabilities: contracts inherited (here
// read-only), revoked with the parent's.
func TestSubagents(t *testing.T) {
	t.Parallel()
	cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.PreApproved})
	if err := os.WriteFile(filepath.Join(dir, "notes", "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := saver()
	pol.Rules = slices.Insert(pol.Rules, 2,
		agent.Rule{Name: "spawn", When: `command == "spawn"`, Action: agent.CallTool, Reason: "r",
			Params: map[string]string{"tool": `"agents.spawn"`, "input": `"{\"name\": \"helper\", \"capabilities\": [\"" + args + "\"], \"readOnly\": true}"`}},
		agent.Rule{Name: "delegate", When: `command == "delegate"`, Action: agent.CallTool, Reason: "r",
			Params: map[string]string{"tool": `"agents.ask"`, "input": `"{\"name\": \"helper\", \"message\": \"" + args + "\"}"`}},
	)
	def := &agent.Definition{Name: "helper", Policy: pol, Capabilities: cat, Preinstall: []string{"fs", "agents"}}
	if err := cat.Add(agent.SubagentOffer(def)); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, def, nil)
	alice := instance(t, h, "alice")
	if run := askTask(t, alice, "t0", "spawn loader"); !strings.HasPrefix(run.Reply, "bad-arguments: ") {
		t.Errorf("lending the loader: %q", run.Reply)
	}
	if run := askTask(t, alice, "t1", "spawn fs"); !strings.HasPrefix(run.Reply, `done: {"capabilities":["fs"],"name":"helper"}`) {
		t.Fatalf("spawn: %q", run.Reply)
	}
	if run := askTask(t, alice, "t2", "delegate read notes/a.txt"); !strings.Contains(run.Reply, `alpha`) {
		t.Errorf("the child reads: %q", run.Reply)
	}
	if run := askTask(t, alice, "t3", "delegate save notes/b.txt"); !strings.Contains(run.Reply, "refused: capability: outside the contract: writes file:notes/b.txt") {
		t.Errorf("the child writes, read-only: %q", run.Reply)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "b.txt")); err == nil {
		t.Error("the read-only child wrote")
	}
	askTask(t, alice, "t4", "/capability uninstall fs")
	if run := askTask(t, alice, "t5", "delegate read notes/a.txt"); !strings.Contains(run.Reply, "revoked: capability: revoked") {
		t.Errorf("after the parent let go of fs: %q", run.Reply)
	}
	askTask(t, alice, "t6", "/capability uninstall agents")
	if run := askTask(t, alice, "t7", "/capability install agents"); !strings.HasPrefix(run.Reply, "Installed agents") {
		t.Fatalf("reinstall: %q", run.Reply)
	}
	if run := askTask(t, alice, "t8", "delegate read notes/a.txt"); !strings.Contains(run.Reply, "no child named helper") {
		t.Errorf("the child outlived its parent's agents capability: %q", run.Reply)
	}
}
