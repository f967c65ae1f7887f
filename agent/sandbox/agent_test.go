package sandbox_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
	"github.com/a2awebcap/a2awebcap/agent/sqlitestore"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

// timeLimit is the sandbox's wall-clock limit in these tests: the user takes longer to answer.
const timeLimit = 3 * time.Second

// notesAgent is an agent whose rule "save PATH" calls notes.save, a Starlark capability (held
// pre-approved) whose code writes the file through fs, held call-by-call: each write waits for
// the user. Its sandbox has two workers, one for each principal at most. It returns the host
// and the directory fs works in.
func notesAgent(t *testing.T) (*agent.Host, string) {
	t.Helper()
	def, dir := notesDef(t)
	return newHost(t, def, nil), dir
}

func newHost(t *testing.T, def *agent.Definition, opts *agent.HostOptions) *agent.Host {
	t.Helper()
	h, err := agent.NewHost(def, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// notesDef is notesAgent's definition, and the directory fs works in.
func notesDef(t *testing.T) (*agent.Definition, string) {
	t.Helper()
	pool := newPool(t, &sandbox.Options{Workers: 2, Limits: sandbox.Limits{Time: timeLimit}})
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := capability.FileSystem(dir, capability.Contract{Reads: []string{"file:*"}, Writes: []string{"file:notes/*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Revoke(nil) })
	m, err := capability.ParseManifest([]byte(`{"name": "notes", "version": "1", "description": "Keeps notes",
		"runtime": "starlark", "source": "capability.star", "contract": {"writes": ["file:notes/*"]},
		"strategy": {"minimum": "pre-approved", "recommended": "contract"},
		"methods": [{"name": "save", "description": "Save a note",
			"params": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path", "text"]},
			"result": {"type": "string"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	pkg := &capability.Package{Manifest: m, Files: map[string][]byte{"capability.star": []byte(`load("fs", "write")

def save(path, text):
    wrote = write(path = path, content = text)
    return "saved %d bytes to %s" % (wrote["bytes"], wrote["path"])
`)}}
	cat := capability.NewCatalog()
	for _, o := range []capability.Offer{
		capability.Offering(fs, capability.Strategies{Minimum: capability.PreApproved, Recommended: capability.CallByCall}),
		pkg.Offer(capability.Strategy{Kind: capability.PreApproved}, pool.Runtime(nil)),
	} {
		if err := cat.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	pol := &agent.Policy{Rules: []agent.Rule{
		{Name: "save", When: `command == "save"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"notes.save"`, "input": `"{\"path\": \"" + args + "\", \"text\": \"hello\"}"`}},
		{Name: "done", When: `last.action == "call" && last.status == "done"`, Action: agent.Reply, Reason: "say so",
			Params: map[string]string{"text": `"done: " + last.result`}},
		{Name: "not-done", When: `last.action == "call" && last.status != "done"`, Action: agent.Reply, Reason: "say so",
			Params: map[string]string{"text": `last.status + ": " + last.result`}},
	}}
	return &agent.Definition{Name: "notes", Policy: pol, Capabilities: cat, Preinstall: []string{"fs", "notes"}}, dir
}

// askQuestion checks the question of a Starlark capability's call waiting for the user: it
// names the package calling, the capability and method called and the arguments, and carries
// the approval as data. It returns the approval's ID.
func askedToWrite(t *testing.T, question string, approval map[string]any, path string) string {
	t.Helper()
	id, _ := approval["id"].(string)
	origin, _ := approval["origin"].(map[string]any)
	if want := `The agent (sandbox notes) wants to call fs.write with {"content":"hello","path":"` + path + `"}`; !strings.Contains(question, want) ||
		id == "" || !strings.Contains(question, "Approve "+id+"?") {
		t.Errorf("the question = %q, want %q and its approval", question, want)
	}
	if approval["capability"] != "fs" || approval["method"] != "write" || approval["kind"] != "call" ||
		origin["kind"] != "sandbox" || origin["name"] != "notes" {
		t.Errorf("the question's approval = %v, want fs.write asked by sandbox notes", approval)
	}
	return id
}

func wrote(t *testing.T, dir, path string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, path))
	return err == nil
}

// Over the Go API: a Starlark capability's call of a call-by-call capability waits for the
// user like the agent's own (the turn parks on the question, longer than the sandbox's time
// limit, and holding neither the instance nor its place in the sandbox: another task of hers
// runs Starlark meanwhile); yes runs it and the program goes on with its result; no fails it
// inside the program, and the rule sees the refusal. Bob can neither answer nor approve
// alice's question.
func TestStarlarkCallWaitsForTheUser(t *testing.T) {
	t.Parallel()
	h, dir := notesAgent(t)
	instance := func(name string) *agent.Agent {
		a, err := h.Instance(t.Context(), agent.Principal{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	alice, bob := instance("alice"), instance("bob")
	say := func(a *agent.Agent, task, text string) agent.Run {
		t.Helper()
		ev := agent.UserText(text)
		ev.Context = agent.Context{Task: task, Session: "s-" + task}
		run, err := a.Ask(t.Context(), ev)
		if err != nil {
			t.Fatalf("Ask(%q) = %v", text, err)
		}
		return run
	}

	run := say(alice, "t1", "save notes/a.txt")
	var approval map[string]any
	for _, e := range run.Log {
		if e.Kind == agent.EntryInput && e.Result["approval"] != "" {
			if err := json.Unmarshal([]byte(e.Result["approval"]), &approval); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := askedToWrite(t, run.Question, approval, "notes/a.txt")
	// Bob's yes on his own task t1, and bob's approval of alice's ID, reach nothing of alice's.
	say(bob, "t1", "yes")
	if r := say(bob, "t2", "/capability approve "+id); !strings.Contains(r.Reply, "no such") {
		t.Errorf("bob approving %s: %q", id, r.Reply)
	}
	// While t1 waits, alice's instance and her one place in the sandbox serve her other task.
	if r := say(alice, "t3", "save notes/b.txt"); !strings.Contains(r.Question, `fs.write with {"content":"hello","path":"notes/b.txt"}`) {
		t.Fatalf("alice's other task while t1 waits: %+v", r)
	}
	time.Sleep(timeLimit + time.Second) // alice takes longer than the sandbox's time limit
	if wrote(t, dir, "notes/a.txt") {
		t.Fatal("the file was written before alice said yes")
	}
	if r := say(alice, "t1", "yes"); r.Reply != "done: saved 5 bytes to notes/a.txt" {
		t.Errorf("after alice's yes: %q (question %q)", r.Reply, r.Question)
	}
	if !wrote(t, dir, "notes/a.txt") {
		t.Error("the approved file was not written")
	}

	r := say(alice, "t3", "no, not that one")
	if !strings.HasPrefix(r.Reply, "denied: capability notes.save: sandbox: the program failed: fs.write: capability: refused by the user (p2): not that one") {
		t.Errorf("after alice's no: %q", r.Reply)
	}
	if wrote(t, dir, "notes/b.txt") {
		t.Error("the refused file was written")
	}
	recs, _ := h.Audit().Records(t.Context(), capability.AuditQuery{Principal: "alice"})
	var outs []string
	for _, rec := range recs {
		if rec.Capability == "fs" && rec.Outcome != capability.OutcomeInstalled {
			outs = append(outs, string(rec.Outcome)+" by "+rec.Origin.String())
		}
	}
	if got, want := strings.Join(outs, "; "), "approval-required by sandbox notes; approval-required by sandbox notes; "+
		"approved by sandbox notes; denied by sandbox notes; denied by sandbox notes"; got != want {
		t.Errorf("alice's audit of fs:\n got %s\nwant %s", got, want)
	}
}

// Over the bindings, from stock A2A clients: the task goes input-required with the Starlark
// capability's call shown, as text and as data; bob, another principal, can neither answer it
// (alice's task does not exist for him) nor approve it; alice's yes runs the call and the
// program goes on; her no fails it inside the program; canceling the task ends the wait.
func TestStarlarkCallWaitsForTheUserOverBindings(t *testing.T) {
	t.Parallel()
	for _, b := range []client.Binding{client.BindingJSONRPC, client.BindingCapnweb, client.BindingREST, client.BindingCapnwebBatch} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			h, dir := notesAgent(t)
			authn := stacktest.Bearer(map[string]string{"alice-token": "alice", "bob-token": "bob"})
			srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h), HTTP: &binding.Options{Authenticate: authn}})
			connect := func(token string) *client.Client {
				c, err := client.New(t.Context(), srv.URL, &client.Options{Binding: b, Header: http.Header{"Authorization": {"Bearer " + token}}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Destroy() })
				return c
			}
			alice, bob := connect("alice-token"), connect("bob-token")
			send := func(c *client.Client, task *a2a.Task, text string) (*a2a.Task, error) {
				return a2atest.Send(t, c, task, text)
			}
			must := func(task *a2a.Task, err error) *a2a.Task {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				return task
			}
			task := must(send(alice, nil, "save notes/a.txt"))
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("the task: %s %q", task.Status.State, a2atest.Text(task.Status.Message))
			}
			approval, _ := task.Status.Message.Metadata[agent.ApprovalKey].(map[string]any)
			id := askedToWrite(t, a2atest.Text(task.Status.Message), approval, "notes/a.txt")

			if _, err := send(bob, task, "yes"); err == nil {
				t.Error("bob answered alice's question")
			}
			if r := must(send(bob, nil, "/capability approve "+id)); !strings.Contains(a2atest.Text(r.Status.Message), "no such") {
				t.Errorf("bob approving %s: %q", id, a2atest.Text(r.Status.Message))
			}
			if got := must(alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})); got.Status.State != a2a.TaskStateInputRequired || wrote(t, dir, "notes/a.txt") {
				t.Fatalf("after bob: alice's task is %s, the file written: %v", got.Status.State, wrote(t, dir, "notes/a.txt"))
			}
			task = must(send(alice, task, "yes"))
			if task.Status.State != a2a.TaskStateCompleted || a2atest.Text(task.Status.Message) != "done: saved 5 bytes to notes/a.txt" {
				t.Errorf("after yes: %s %q", task.Status.State, a2atest.Text(task.Status.Message))
			}
			if !wrote(t, dir, "notes/a.txt") {
				t.Error("the approved file was not written")
			}

			other := must(send(alice, nil, "save notes/b.txt"))
			other = must(send(alice, other, "no"))
			if other.Status.State != a2a.TaskStateCompleted ||
				!strings.Contains(a2atest.Text(other.Status.Message), "denied: capability notes.save: sandbox: the program failed: fs.write: capability: refused by the user") {
				t.Errorf("after no: %s %q", other.Status.State, a2atest.Text(other.Status.Message))
			}
			if wrote(t, dir, "notes/b.txt") {
				t.Error("the refused file was written")
			}

			// Canceling the task ends the wait, and the run: nothing is written, and the next
			// call has the sandbox's place again.
			third := must(send(alice, nil, "save notes/c.txt"))
			if third.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("the third task: %s %q", third.Status.State, a2atest.Text(third.Status.Message))
			}
			if got := must(alice.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: third.ID})); got.Status.State != a2a.TaskStateCanceled {
				t.Errorf("canceled while it waits: %s", got.Status.State)
			}
			if fourth := must(send(alice, nil, "save notes/d.txt")); fourth.Status.State != a2a.TaskStateInputRequired {
				t.Errorf("the next task after the cancel: %s %q", fourth.Status.State, a2atest.Text(fourth.Status.Message))
			}
			if wrote(t, dir, "notes/c.txt") {
				t.Error("the canceled call wrote its file")
			}
		})
	}
}

// A Starlark capability's question survives a restart as the agent's own do: the host closes
// while alice's question waits; on a new host on the same SQLite store her yes runs the turn
// again, the program asks the same call again, which the yes approves, and it runs once.
func TestStarlarkQuestionSurvivesTheHost(t *testing.T) {
	t.Parallel()
	def, dir := notesDef(t)
	path := filepath.Join(t.TempDir(), "agent.db")
	open := func() *agent.Host {
		st, err := sqlitestore.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return newHost(t, def, &agent.HostOptions{Store: st})
	}
	say := func(h *agent.Host, text string) agent.Run {
		t.Helper()
		a, err := h.Instance(t.Context(), agent.Principal{Name: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		ev := agent.UserText(text)
		ev.Context = agent.Context{Task: "t1", Session: "s1"}
		run, err := a.Ask(t.Context(), ev)
		if err != nil {
			t.Fatalf("Ask(%q) = %v", text, err)
		}
		return run
	}
	h1 := open()
	if run := say(h1, "save notes/a.txt"); !strings.Contains(run.Question, "(sandbox notes) wants to call fs.write") {
		t.Fatalf("the question: %+v", run)
	}
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}
	if wrote(t, dir, "notes/a.txt") {
		t.Fatal("the call ran before it was approved")
	}
	if run := say(open(), "yes"); run.Reply != "done: saved 5 bytes to notes/a.txt" {
		t.Errorf("after yes, past the restart: %+v", run)
	}
	if !wrote(t, dir, "notes/a.txt") {
		t.Error("the approved file was not written")
	}
}
