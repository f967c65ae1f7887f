package agent_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

// Over every binding, alice and bob each talk to their own instance of one agent: nothing alice
// says reaches bob's replies, recall, model prompt or task list, and bob's errors for alice's
// task are those for a task that does not exist.
func TestTwoPrincipalsOverEveryBinding(t *testing.T) {
	t.Parallel()
	model := &recorder{}
	h := newHost(t, &agent.Definition{Name: "helper", Policy: agent.Assistant(), Model: model}, nil)
	authn := stacktest.Bearer(map[string]string{"alice-token": "alice", "bob-token": "bob"})
	srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h),
		HTTP: &binding.Options{Authenticate: authn}, GRPC: &binding.GRPCOptions{Authenticate: authn}})
	for _, b := range []client.Binding{client.BindingJSONRPC, client.BindingREST, client.BindingGRPC, client.BindingCapnweb, client.BindingCapnwebBatch} {
		t.Run(string(b), func(t *testing.T) {
			connect := func(token string) *client.Client {
				c, err := client.New(t.Context(), srv.URL, &client.Options{Binding: b, Header: http.Header{"Authorization": {"Bearer " + token}}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Destroy() })
				return c
			}
			alice, bob := connect("alice-token"), connect("bob-token")
			say := func(c *client.Client, text string) *a2a.Task {
				t.Helper()
				res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
				if err != nil {
					t.Fatalf("SendMessage(%q) = %v", text, err)
				}
				task, ok := res.(*a2a.Task)
				if !ok {
					t.Fatalf("SendMessage(%q) = %T", text, res)
				}
				return task
			}
			reply := func(task *a2a.Task) string {
				if task.Status.Message == nil {
					return ""
				}
				var s []string
				for _, p := range task.Status.Message.Parts {
					if x, ok := p.Content.(a2a.Text); ok {
						s = append(s, string(x))
					}
				}
				return strings.Join(s, "")
			}
			name := strings.ReplaceAll(string(b), "-", "")
			secret := "zebra" + name
			at := say(alice, "remember my word for "+name+" is "+secret)
			if got := reply(at); got != "Noted: my word for "+name+" is "+secret+"." {
				t.Fatalf("alice: %q", got)
			}
			if got := reply(say(bob, "what do you know about my word for "+name)); got != "I know nothing about that." {
				t.Errorf("bob's recall: %q", got)
			}
			say(bob, "which word for "+name+" did I tell you")
			if p := model.last(); !strings.Contains(p, "which word for") || strings.Contains(p, secret) {
				t.Errorf("bob's prompt:\n%s", p)
			}
			say(alice, "which word for "+name+" did I tell you")
			if p := model.last(); !strings.Contains(p, secret) {
				t.Errorf("alice's prompt lacks her own memory:\n%s", p)
			}
			_, errAlice := bob.GetTask(t.Context(), &a2a.GetTaskRequest{ID: at.ID})
			none := a2a.NewTaskID()
			_, errNone := bob.GetTask(t.Context(), &a2a.GetTaskRequest{ID: none})
			if !errors.Is(errAlice, a2a.ErrTaskNotFound) || !errors.Is(errNone, a2a.ErrTaskNotFound) ||
				strings.ReplaceAll(errAlice.Error(), string(at.ID), "ID") != strings.ReplaceAll(errNone.Error(), string(none), "ID") {
				t.Errorf("bob gets alice's task: %v; a missing one: %v", errAlice, errNone)
			}
			list, err := bob.ListTasks(t.Context(), &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(list.Tasks, func(x *a2a.Task) bool { return x.ID == at.ID }) {
				t.Errorf("bob's task list has alice's task")
			}
			bi, _ := h.Instance(t.Context(), agent.Principal{Name: "bob"})
			if r, _ := bi.Recall(t.Context(), agent.Query{Text: secret}); len(r.Beliefs)+len(r.Observations)+len(r.Working) != 0 {
				t.Errorf("bob's instance recalls %+v", r)
			}
			ai, _ := h.Instance(t.Context(), agent.Principal{Name: "alice"})
			if r, _ := ai.Recall(t.Context(), agent.Query{Text: secret}); len(r.Beliefs) != 1 {
				t.Errorf("alice's instance recalls %+v", r)
			}
		})
	}
}
