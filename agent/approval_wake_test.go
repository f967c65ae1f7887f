package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

// eventually is how long a test waits for what should happen at once, on a loaded machine.
const eventually = 45 * time.Second

// approvalServer is a call-by-call file system agent served over every HTTP binding to alice
// and bob (bearer tokens "alice-token", "bob-token"), capnweb capabilities() included.
type approvalServer struct {
	h   *agent.Host
	srv *a2atest.Server
	dir string
}

func newApprovalServer(t *testing.T, opts *agent.HostOptions) *approvalServer {
	t.Helper()
	cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
	h := newHost(t, &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}}, opts)
	authn := stacktest.Bearer(map[string]string{"alice-token": "alice", "bob-token": "bob"})
	srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h),
		HTTP: &binding.Options{Authenticate: authn, AgentCapabilities: h.CallerCapabilities}})
	return &approvalServer{h: h, srv: srv, dir: dir}
}

func (s *approvalServer) client(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.New(t.Context(), s.srv.URL, &client.Options{Binding: client.BindingJSONRPC,
		Header: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// waiting sends text as a new task and returns the task, which must wait for an approval, and
// the approval's ID.
func waiting(t *testing.T, c *client.Client, text string) (*a2a.Task, string) {
	t.Helper()
	task, err := a2atest.Send(t, c, nil, text)
	if err != nil {
		t.Fatalf("SendMessage(%q) = %v", text, err)
	}
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SendMessage(%q): the task is %s %q, want input-required", text, task.Status.State, a2atest.Text(task.Status.Message))
	}
	approval, _ := task.Status.Message.Metadata[agent.ApprovalKey].(map[string]any)
	id, _ := approval["id"].(string)
	if id == "" {
		t.Fatalf("the question carries no approval: %v", task.Status.Message.Metadata)
	}
	return task, id
}

// settled waits until the task leaves input-required (and working) and returns it.
func settled(t *testing.T, c *client.Client, task *a2a.Task) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask() = %v", err)
		}
		switch got.Status.State {
		case a2a.TaskStateInputRequired, a2a.TaskStateWorking, a2a.TaskStateSubmitted:
		default:
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the task is still %s %q", eventually, got.Status.State, a2atest.Text(got.Status.Message))
		}
		time.Sleep(20 * time.Millisecond) // polling a bounded wait, not a synchronization
	}
}

// A question nobody answers within ParkTimeout ends the wait: the call fails with that
// reason, the turn goes on and ends (its outcome and reply recorded in the instance's memory),
// its task leaves input-required with that reply, and the session takes its next message.
func TestUnansweredApprovalEndsTheTurnAndItsTask(t *testing.T) {
	t.Parallel()
	const why = "unapproved: capability: approval required: p1 (call), and it could not be asked: agent: no answer came in time"
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
		h := newHost(t, &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}},
			&agent.HostOptions{ParkTimeout: 2 * time.Second})
		alice := instance(t, h, "alice")
		if run := askTask(t, alice, "t1", "save notes/a.txt"); !strings.Contains(run.Question, "Approve p1?") {
			t.Fatalf("the question: %+v", run)
		}
		// The next message of the session waits for the turn, which ends once the question
		// expires: it runs then.
		ctx, cancel := context.WithTimeout(t.Context(), eventually)
		defer cancel()
		ev := agent.UserText("hello")
		ev.Context = agent.Context{Task: "t2", Session: "s1"}
		run, err := alice.Ask(ctx, ev)
		if err != nil || run.Question != "" || run.Log[len(run.Log)-1].Result["status"] != "completed" {
			t.Fatalf("the session's next message: %+v, %v", run, err)
		}
		rec, _, err := h.Store().TurnByTask(t.Context(), "helper", "t1")
		if err != nil || rec == nil || rec.Status != agent.TurnStatus("completed") || rec.Reply != why {
			t.Errorf("the expired turn's record: %+v, %v; want completed, replying %q", rec, err, why)
		}
		if _, err := os.Stat(filepath.Join(dir, "notes", "a.txt")); err == nil {
			t.Error("the unapproved call wrote its file")
		}
		// The answer, too late, is told so.
		ev = agent.UserText("yes")
		ev.Context = agent.Context{Task: "t1", Session: "s1"}
		if _, err := alice.Ask(t.Context(), ev); !errors.Is(err, agent.ErrNotWaiting) || !strings.Contains(err.Error(), "no answer came in time") {
			t.Errorf("an answer after the question expired: %v, want ErrNotWaiting", err)
		}
	})
	t.Run("jsonrpc", func(t *testing.T) {
		t.Parallel()
		s := newApprovalServer(t, &agent.HostOptions{ParkTimeout: 2 * time.Second})
		alice := s.client(t, "alice-token")
		task, _ := waiting(t, alice, "save notes/a.txt")
		got := settled(t, alice, task)
		if got.Status.State != a2a.TaskStateCompleted || a2atest.Text(got.Status.Message) != why {
			t.Fatalf("the task ended %s %q, want completed %q", got.Status.State, a2atest.Text(got.Status.Message), why)
		}
		rec, _, err := s.h.Store().TurnByTask(t.Context(), "helper", string(task.ID))
		if err != nil || rec == nil || rec.Status != agent.TurnStatus("completed") || rec.Reply != why {
			t.Errorf("the expired turn's record: %+v, %v; want completed, replying %q", rec, err, why)
		}
		// The answer, too late, is refused: the task waits for nothing.
		if _, err := a2atest.Send(t, alice, task, "yes"); err == nil || !strings.Contains(err.Error(), "accepts no more messages") {
			t.Errorf("an answer after the task ended: %v", err)
		}
		// The session is free: its next message runs.
		next, err := a2atest.Send(t, alice, &a2a.Task{ContextID: task.ContextID}, "hello")
		if err != nil || next.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("the session's next message: %v, %v", next, err)
		}
		if _, err := os.Stat(filepath.Join(s.dir, "notes", "a.txt")); err == nil {
			t.Error("the unapproved call wrote its file")
		}
	})
}

// A decision on a call's approval made another way — the Go API (Set.Decide), capnweb's
// capabilities().decide, or the /capability approve command in another task — wakes the turn
// waiting for it at once, with that decision: its task leaves input-required and ends with the
// call's outcome; the answer on the task afterwards is refused, the task being over. Bob can
// decide alice's approval by no path: his decision finds no such approval, and hers waits on.
func TestApprovalDecidedElsewhereWakesTheWaitingTurn(t *testing.T) {
	t.Parallel()
	// A ParkTimeout far beyond the test: only the decision can wake the turn.
	s := newApprovalServer(t, &agent.HostOptions{ParkTimeout: time.Hour})
	decide := map[string]func(t *testing.T, token, id string, approve bool) error{
		"go": func(t *testing.T, token, id string, approve bool) error {
			name := strings.TrimSuffix(token, "-token")
			set, release, err := s.h.Capabilities(t.Context(), agent.Principal{Name: name})
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			return set.Decide(t.Context(), id, capability.Decision{Approve: approve, By: name})
		},
		"capnweb": func(t *testing.T, token, id string, approve bool) error {
			sess, err := capnweb.Dial(t.Context(), "ws"+strings.TrimPrefix(s.srv.URL, "http")+binding.DefaultCapnwebPath, nil,
				&capnweb.DialOptions{Header: http.Header{"Authorization": {"Bearer " + token}}})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			var out json.RawMessage
			return sess.Main().Call("capabilities").Call("decide", id, approve, "decided on the page").Decode(t.Context(), &out)
		},
		"jsonrpc": func(t *testing.T, token, id string, approve bool) error {
			cmd := "/capability refuse " + id + " not that one"
			if approve {
				cmd = "/capability approve " + id
			}
			task, err := a2atest.Send(t, s.client(t, token), nil, cmd)
			if err != nil {
				t.Fatalf("SendMessage(%q) = %v", cmd, err)
			}
			if reply := a2atest.Text(task.Status.Message); !strings.HasPrefix(reply, "Recorded: ") {
				return errors.New(reply)
			}
			return nil
		},
	}
	for _, path := range []string{"go", "capnweb", "jsonrpc"} {
		for _, approve := range []bool{true, false} {
			name := path + "-no"
			if approve {
				name = path + "-yes"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				alice := s.client(t, "alice-token")
				file := "notes/" + name + ".txt"
				task, id := waiting(t, alice, "save "+file)

				if err := decide[path](t, "bob-token", id, approve); err == nil || !strings.Contains(err.Error(), "no such pending approval") {
					t.Errorf("bob decides alice's %s: %v, want no such pending approval", id, err)
				}
				if got, err := alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateInputRequired {
					t.Fatalf("after bob's decision alice's task is %v, %v; want it still waiting", got, err)
				}

				if err := decide[path](t, "alice-token", id, approve); err != nil {
					t.Fatalf("alice decides %s: %v", id, err)
				}
				got := settled(t, alice, task)
				reply := a2atest.Text(got.Status.Message)
				_, statErr := os.Stat(filepath.Join(s.dir, file))
				switch {
				case got.Status.State != a2a.TaskStateCompleted:
					t.Errorf("the task ended %s %q, want completed", got.Status.State, reply)
				case approve && (reply != `done: {"bytes":5,"path":"`+file+`"}` || statErr != nil):
					t.Errorf("approved: the task's reply %q, the file: %v", reply, statErr)
				case !approve && (!strings.HasPrefix(reply, "denied: capability: refused by the user ("+id+")") || statErr == nil):
					t.Errorf("refused: the task's reply %q, the file: %v", reply, statErr)
				}
				if _, err := a2atest.Send(t, alice, task, "yes"); err == nil || !strings.Contains(err.Error(), "accepts no more messages") {
					t.Errorf("an answer after the decision: %v", err)
				}
			})
		}
	}
}

// Over the Go API: a decision made through the set wakes the turn waiting for it; the answer
// on its task afterwards is told that the approval was decided already; bob's set knows
// nothing of alice's approval.
func TestApprovalDecidedElsewhereOverTheGoAPI(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "yes", false: "no"}[approve], func(t *testing.T) {
			t.Parallel()
			cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
			h := newHost(t, &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}},
				&agent.HostOptions{ParkTimeout: time.Hour})
			alice := instance(t, h, "alice")
			if run := askTask(t, alice, "t1", "save notes/a.txt"); !strings.Contains(run.Question, "Approve p1?") {
				t.Fatalf("the question: %+v", run)
			}
			setOf := func(name string) *capability.Set {
				set, release, err := h.Capabilities(t.Context(), agent.Principal{Tenant: "acme", Name: name})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(release)
				return set
			}
			if err := setOf("bob").Decide(t.Context(), "p1", capability.Decision{Approve: approve, By: "bob@acme"}); !errors.Is(err, capability.ErrNoPending) {
				t.Errorf("bob decides alice's p1: %v, want ErrNoPending", err)
			}
			if err := setOf("alice").Decide(t.Context(), "p1", capability.Decision{Approve: approve, By: "alice@acme"}); err != nil {
				t.Fatalf("alice decides p1: %v", err)
			}
			// The session's next message waits for the woken turn, then runs.
			ctx, cancel := context.WithTimeout(t.Context(), eventually)
			defer cancel()
			ev := agent.UserText("hello")
			ev.Context = agent.Context{Task: "t2", Session: "s1"}
			if run, err := alice.Ask(ctx, ev); err != nil || run.Question != "" {
				t.Fatalf("the session's next message: %+v, %v", run, err)
			}
			rec, _, err := h.Store().TurnByTask(t.Context(), "helper", "t1")
			want := `done: {"bytes":5,"path":"notes/a.txt"}`
			if !approve {
				want = "denied: capability: refused by the user (p1)"
			}
			if err != nil || rec == nil || rec.Status != agent.TurnStatus("completed") || !strings.HasPrefix(rec.Reply, want) {
				t.Errorf("the woken turn's record: %+v, %v; want completed, replying %q", rec, err, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "notes", "a.txt")); (err == nil) != approve {
				t.Errorf("approved %v: the file: %v", approve, err)
			}
			ev = agent.UserText("yes")
			ev.Context = agent.Context{Task: "t1", Session: "s1"}
			if _, err := alice.Ask(t.Context(), ev); !errors.Is(err, agent.ErrNotWaiting) || !strings.Contains(err.Error(), "already decided: p1") {
				t.Errorf("an answer after the decision: %v, want ErrNotWaiting", err)
			}
		})
	}
}

// Closing the host while a turn of a session waits for an answer and a message of the session
// waits behind it: the question outlives the host, the message's turn ends (it would be
// refused at the restart), and Close returns instead of waiting for it forever.
func TestCloseWithAQuestionAndAMessageBehindIt(t *testing.T) {
	t.Parallel()
	cat, _, _ := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
	h, err := agent.NewHost(&agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}},
		&agent.HostOptions{ParkTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	alice := instance(t, h, "alice")
	askTask(t, alice, "t1", "save notes/a.txt")
	ev := agent.UserText("hello")
	ev.Context = agent.Context{Task: "t2", Session: "s1"}
	if err := alice.Send(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close() = %v", err)
		}
	case <-time.After(eventually):
		t.Fatal("Close did not return: it waits for the message behind the question")
	}
}

// A task whose question stopped waiting (decided another way) and whose turn then ended asking
// again takes the user's next message as a new turn: the earlier question's end is forgotten
// once the task asks anew.
func TestTaskAsksAgainAfterItsQuestionStoppedWaiting(t *testing.T) {
	t.Parallel()
	pol := saver()
	pol.Rules[len(pol.Rules)-1] = agent.Rule{Name: "retry", When: `last.action == "call" && last.status != "done"`,
		Action: agent.AskInput, Reason: "ask again", Params: map[string]string{"subject": `"path"`, "text": `"Try another path?"`}}
	cat, _, _ := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
	h := newHost(t, &agent.Definition{Name: "helper", Policy: pol, Capabilities: cat, Preinstall: []string{"fs"}},
		&agent.HostOptions{ParkTimeout: time.Hour})
	alice := instance(t, h, "alice")
	if run := askTask(t, alice, "t1", "save notes/a.txt"); !strings.Contains(run.Question, "Approve p1?") {
		t.Fatalf("the question: %+v", run)
	}
	set, release, err := h.Capabilities(t.Context(), agent.Principal{Tenant: "acme", Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := set.Decide(t.Context(), "p1", capability.Decision{Approve: false, By: "alice@acme"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventually)
	for {
		rec, _, err := h.Store().TurnByTask(t.Context(), "helper", "t1")
		if err == nil && rec != nil && rec.Status == agent.TurnStatus("input-required") && rec.Question == "Try another path?" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused call's turn never asked again: %+v, %v", rec, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), eventually)
	defer cancel()
	ev := agent.UserText("save notes/b.txt")
	ev.Context = agent.Context{Task: "t1", Session: "s1"}
	run, err := alice.Ask(ctx, ev)
	if err != nil || !strings.Contains(run.Question, "Approve p2?") {
		t.Errorf("the answer to the new question: %+v, %v; want a new turn asking to approve p2", run, err)
	}
}
