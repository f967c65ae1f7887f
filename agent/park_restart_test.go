package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/engine"
)

// deleter is a policy whose tool "rm" asks the user (AskUser) before it deletes; calls counts
// the deletions made.
func deleter(calls *atomic.Int32) (*agent.Policy, map[string]agent.Tool) {
	rm := func(ctx context.Context, in string) (string, error) {
		ans, err := agent.AskUser(ctx, "May I delete "+in+"?")
		if err != nil {
			return "", err
		}
		if ans != "yes" {
			return "", errors.New("the user refused")
		}
		calls.Add(1)
		return "deleted " + in, nil
	}
	pol := &agent.Policy{Rules: []agent.Rule{
		{Name: "delete", When: `command == "delete"`, Action: agent.CallTool, Params: map[string]string{"tool": `"rm"`, "input": `args`}, Reason: "r"},
		{Name: "done", When: `kind == "tool-result"`, Action: agent.Reply, Params: map[string]string{"text": `text`}, Reason: "r"},
		{Name: "refused", When: `last.action == "call" && last.status == "failed"`, Action: agent.Reply, Params: map[string]string{"text": `"Not done: " + last.result`}, Reason: "r"},
		{Name: "ack", When: `command != "delete" && kind == "message"`, Action: agent.Reply, Params: map[string]string{"text": `"ok"`}, Reason: "r"},
	}}
	return pol, map[string]agent.Tool{"rm": rm}
}

// sqliteHost is a host of def on the SQLite file path, closed with t (or before).
func sqliteHost(t *testing.T, path string, def *agent.Definition) *agent.Host {
	t.Helper()
	as, _, closeStores, err := stores(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := agent.NewHost(def, &agent.HostOptions{Store: as})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(); closeStores() })
	return h
}

// A turn parked on a question survives the host: alice's and bob's turns ask, the host closes,
// a new host on the same SQLite file takes each answer, runs the turn again from its message
// with it, and the turn completes as if it had never stopped — once, with its memory committed
// once, each principal's answer used for their own turn only.
func TestParkedTurnSurvivesTheHost(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/agent.db"
	var deleted atomic.Int32
	pol, tools := deleter(&deleted)
	def := &agent.Definition{Name: "helper", Policy: pol, Tools: tools}
	open := func() *agent.Host { return sqliteHost(t, path, def) }
	send := func(h *agent.Host, name, task, text string) agent.Run {
		t.Helper()
		ev := agent.UserText(text)
		ev.Context = agent.Context{Task: task, Session: "s"}
		run, err := instance(t, h, name).Ask(t.Context(), ev)
		if err != nil {
			t.Fatalf("%s: Ask(%q) = %v", name, text, err)
		}
		return run
	}
	h1 := open()
	if run := send(h1, "alice", "ta", "delete alice.txt"); run.Question != "May I delete alice.txt?" {
		t.Fatalf("alice's parked turn: %+v", run)
	}
	if run := send(h1, "bob", "tb", "delete bob.txt"); run.Question != "May I delete bob.txt?" {
		t.Fatalf("bob's parked turn: %+v", run)
	}
	if run := send(h1, "carol", "tc", "delete carol.txt"); run.Question != "May I delete carol.txt?" {
		t.Fatalf("carol's parked turn: %+v", run)
	}
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}

	h2 := open()
	m, err := h2.Sessions().GetSessionMetrics(callAs(t, "alice"), &session.Ref{Tenant: "acme", ContextID: "s"})
	if err != nil || m.State != session.Streaming || m.Running != 1 {
		t.Errorf("alice's session after the restart: %+v, %v; want turn 1 running", m, err)
	}
	if run := send(h2, "alice", "ta", "yes"); run.Reply != "deleted alice.txt" || endStatus(run) != "completed" {
		t.Errorf("alice's answer after the restart: %+v", run)
	}
	if run := send(h2, "bob", "tb", "no"); run.Reply != "Not done: the user refused" || endStatus(run) != "completed" {
		t.Errorf("bob's answer after the restart: %+v", run)
	}
	if n := deleted.Load(); n != 1 {
		t.Errorf("%d deletions, want alice's one", n)
	}
	for _, who := range []struct{ name, answer, question string }{{"alice", "yes", "May I delete alice.txt?"}, {"bob", "no", "May I delete bob.txt?"}} {
		a := instance(t, h2, who.name)
		r, _ := a.Recall(t.Context(), agent.Query{Text: who.answer})
		var inputs []string
		for _, o := range r.Observations {
			if o.Kind == "input" {
				inputs = append(inputs, o.Text+" to "+o.Data["question"])
			}
		}
		if want := who.answer + " to " + who.question; len(inputs) != 1 || inputs[0] != want {
			t.Errorf("%s's answers observed: %q, want [%q]", who.name, inputs, want)
		}
		hist, err := h2.Sessions().GetSessionHistory(callAs(t, who.name), &session.HistoryRequest{Tenant: "acme", ContextID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hist.Turns) != 1 || hist.Turns[0].Status != session.Completed || hist.Turns[0].User.Content != "delete "+who.name+".txt" {
			t.Errorf("%s's history: %+v", who.name, hist.Turns)
		}
		turns, _ := h2.Store().Turns(t.Context(), agent.Key{Agent: "helper", Principal: a.Principal()}, "s")
		if len(turns) != 1 {
			t.Errorf("%s's turn records %+v, want one", who.name, turns)
		}
	}
	// The session goes on.
	if run := send(h2, "alice", "ta2", "thanks"); run.Reply != "ok" {
		t.Errorf("the next turn: %+v", run)
	}
	// Carol sends a new message instead of answering: her parked turn ends, recorded failed
	// saying why, and the new message is her session's next turn.
	if run := send(h2, "carol", "tc2", "never mind"); run.Reply != "ok" {
		t.Errorf("carol's new message: %+v", run)
	}
	hist, err := h2.Sessions().GetSessionHistory(callAs(t, "carol"), &session.HistoryRequest{Tenant: "acme", ContextID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Turns) != 2 || hist.Turns[0].Status != session.Failed || !strings.Contains(hist.Turns[0].Error, "restarted while this turn waited for an answer") ||
		hist.Turns[1].Status != session.Completed || hist.Turns[1].Number != 2 {
		t.Errorf("carol's history: %+v", hist.Turns)
	}
	if n := deleted.Load(); n != 1 {
		t.Errorf("%d deletions, want alice's one", n)
	}
}

// Over A2A, on SQLite and on PostgreSQL: the task of a parked turn is still input-required after
// the server restarts (engine and host on the same store), and the user's answer, sent on the
// task, completes it with the answer used. Alice's and bob's tasks, in contexts of the same
// name, each get their own answer.
func TestParkedTaskSurvivesTheServer(t *testing.T) {
	t.Parallel()
	durableStores(t, "agent_park", parkedTaskSurvives)
}

func parkedTaskSurvives(t *testing.T, spec string) {
	var deleted atomic.Int32
	pol, tools := deleter(&deleted)
	def := &agent.Definition{Name: "helper", Policy: pol, Tools: tools}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	type server struct {
		h     *agent.Host
		e     *engine.Engine
		close func()
	}
	start := func() server {
		as, ts, closeStores, err := stores(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		h, err := agent.NewHost(def, &agent.HostOptions{Store: as})
		if err != nil {
			t.Fatal(err)
		}
		e := engine.New(agent.Executor(h), ts, nil)
		if _, err := e.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		var once atomic.Bool
		s := server{h, e, func() {
			if once.CompareAndSwap(false, true) {
				_ = e.Close(context.Background())
				_ = h.Close()
				closeStores()
			}
		}}
		t.Cleanup(s.close)
		return s
	}
	send := func(s server, name string, task *a2a.Task, text string) *a2a.Task {
		t.Helper()
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		m.ContextID = "ctx-1"
		if task != nil {
			m.TaskID = task.ID
		}
		res, err := s.e.SendMessage(callAs(t, name), &a2a.SendMessageRequest{Message: m})
		if err != nil {
			t.Fatalf("%s: SendMessage(%q) = %v", name, text, err)
		}
		got, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("%s: SendMessage(%q) = %T", name, text, res)
		}
		return got
	}
	text := func(task *a2a.Task) string {
		if task.Status.Message == nil {
			return ""
		}
		return messageText(task.Status.Message)
	}
	s1 := start()
	at := send(s1, "alice", nil, "delete alice.txt")
	bt := send(s1, "bob", nil, "delete bob.txt")
	for _, task := range []*a2a.Task{at, bt} {
		if task.Status.State != a2a.TaskStateInputRequired || !strings.HasPrefix(text(task), "May I delete") {
			t.Fatalf("the parked task: %s %q", task.Status.State, text(task))
		}
	}
	s1.close()

	s2 := start()
	for _, who := range []struct {
		name string
		task *a2a.Task
	}{{"alice", at}, {"bob", bt}} {
		got, err := s2.e.GetTask(callAs(t, who.name), &a2a.GetTaskRequest{ID: who.task.ID})
		if err != nil || got.Status.State != a2a.TaskStateInputRequired || text(got) != "May I delete "+who.name+".txt?" {
			t.Fatalf("%s's task after the restart: %+v, %v", who.name, got, err)
		}
	}
	if got := send(s2, "alice", at, "yes"); got.Status.State != a2a.TaskStateCompleted || text(got) != "deleted alice.txt" {
		t.Errorf("alice's answered task: %s %q", got.Status.State, text(got))
	}
	if got := send(s2, "bob", bt, "no"); got.Status.State != a2a.TaskStateCompleted || text(got) != "Not done: the user refused" {
		t.Errorf("bob's answered task: %s %q", got.Status.State, text(got))
	}
	if n := deleted.Load(); n != 1 {
		t.Errorf("%d deletions, want alice's one", n)
	}
}

func messageText(m *a2a.Message) string {
	var s []string
	for _, p := range m.Parts {
		if x, ok := p.Content.(a2a.Text); ok {
			s = append(s, string(x))
		}
	}
	return strings.Join(s, "")
}

// A call-by-call approval asked before a restart is answered after it: the turn runs again, its
// call asks the same approval, and the answer ("yes") approves that call, which runs once.
func TestParkedApprovalSurvivesTheHost(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/agent.db"
	cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
	def := &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}}
	open := func() *agent.Host { return sqliteHost(t, path, def) }
	h1 := open()
	if run := askTask(t, instance(t, h1, "alice"), "ta", "save notes/a.txt"); !strings.Contains(run.Question, "wants to call fs.write") {
		t.Fatalf("the parked turn: %+v", run)
	}
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "a.txt")); err == nil {
		t.Fatal("the call ran before it was approved")
	}
	h2 := open()
	run := askTask(t, instance(t, h2, "alice"), "ta", "yes")
	if endStatus(run) != "completed" || !strings.HasPrefix(run.Reply, "done") {
		t.Errorf("after yes, past the restart: %+v", run)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "notes", "a.txt")); string(data) != "hello" {
		t.Errorf("the file holds %q", data)
	}
}
