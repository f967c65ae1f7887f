package hosting_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/agentstest"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

const twoAgents = `[
  {"name": "researcher", "description": "Researches.", "policy": "notes",
   "rules": [{"name": "research", "description": "Research a topic", "when": "source == \"user\" && command == \"research\" && args != \"\"",
              "action": "reply", "params": {"text": "\"researching \" + args"}, "reason": "asked"}]},
  {"name": "writer", "description": "Writes.", "policy": "notes",
   "rules": [{"name": "write", "description": "Write about a topic", "when": "source == \"user\" && command == \"write\" && args != \"\"",
              "action": "reply", "params": {"text": "\"writing about \" + args"}, "reason": "asked"}]}
]`

var bindings = []client.Binding{client.BindingCapnweb, client.BindingCapnwebBatch, client.BindingJSONRPC, client.BindingREST, client.BindingGRPC}

func startTwo(t *testing.T) *agentstest.Server {
	t.Helper()
	defs, err := hosting.ParseDefinitions([]byte(twoAgents))
	if err != nil {
		t.Fatal(err)
	}
	auth := stacktest.Bearer(map[string]string{"ta": "alice", "tb": "bob"})
	return agentstest.Start(t, defs, &agentstest.Options{HTTP: &binding.Options{Authenticate: auth}, GRPC: &binding.GRPCOptions{Authenticate: auth}})
}

func dial(t *testing.T, url string, b client.Binding, token string) *client.Client {
	t.Helper()
	c, err := client.New(t.Context(), url, &client.Options{Binding: b, Header: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("client.New(%s, %s) = %v", url, b, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func send(t *testing.T, c *client.Client, text string) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		Config: &a2a.SendMessageConfig{ReturnImmediately: false}})
	if err != nil {
		t.Fatalf("SendMessage(%q) over %s = %v", text, c.Binding(), err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage(%q) = %T, want a task", text, res)
	}
	if task.Status.State != a2a.TaskStateCompleted {
		task = a2atest.WaitTask(t, c, task.ID, func(tk *a2a.Task) bool { return tk.Status.State.Terminal() })
	}
	return task
}

func reply(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	return a2atest.Text(task.Status.Message)
}

// Each agent is served, with its own card and tasks, on every binding; a caller's task of one
// agent is not found through another.
func TestAgentsOnEveryBinding(t *testing.T) {
	t.Parallel()
	srv := startTwo(t)
	for _, b := range bindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			researcher := dial(t, srv.AgentURL("researcher"), b, "ta")
			writer := dial(t, srv.AgentURL("writer"), b, "ta")
			if researcher.Card().Name != "researcher" || writer.Card().Name != "writer" {
				t.Fatalf("cards %q and %q", researcher.Card().Name, writer.Card().Name)
			}
			rt := send(t, researcher, "research the sea")
			wt := send(t, writer, "write about the sea")
			if got := reply(rt); got != "researching the sea" {
				t.Errorf("researcher replied %q", got)
			}
			if got := reply(wt); got != "writing about about the sea" {
				t.Errorf("writer replied %q", got)
			}
			if _, err := writer.GetTask(t.Context(), &a2a.GetTaskRequest{ID: rt.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("writer.GetTask(researcher's task) = %v, want TaskNotFound", err)
			}
			if _, err := writer.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: rt.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("writer.CancelTask(researcher's task) = %v, want TaskNotFound", err)
			}
			list, err := writer.ListTasks(t.Context(), &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range list.Tasks {
				if tk.ID == rt.ID {
					t.Errorf("writer lists researcher's task %s", rt.ID)
				}
			}
			if got, err := researcher.GetTask(t.Context(), &a2a.GetTaskRequest{ID: rt.ID}); err != nil || got.ID != rt.ID {
				t.Errorf("researcher.GetTask(its task) = %v, %v", got, err)
			}
		})
	}
}

// Each principal has its own instance of each agent: what alice tells the researcher, neither
// bob nor the writer knows.
func TestTwoPrincipalsTwoAgents(t *testing.T) {
	t.Parallel()
	srv := startTwo(t)
	aliceR := dial(t, srv.AgentURL("researcher"), client.BindingCapnweb, "ta")
	aliceW := dial(t, srv.AgentURL("writer"), client.BindingJSONRPC, "ta")
	bobR := dial(t, srv.AgentURL("researcher"), client.BindingGRPC, "tb")
	send(t, aliceR, "remember the sky is blue")
	for _, tc := range []struct {
		who  string
		c    *client.Client
		want string
	}{
		{"alice at the researcher", aliceR, "I know: the sky is blue"},
		{"alice at the writer", aliceW, "I know nothing about that."},
		{"bob at the researcher", bobR, "I know nothing about that."},
	} {
		if got := reply(send(t, tc.c, "what do you know about the sky")); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q…", tc.who, got, tc.want)
		}
	}
	// The sessions extension is the agent's own, on every binding: alice's session with the
	// researcher is not among her sessions with the writer.
	for _, b := range []client.Binding{client.BindingCapnweb, client.BindingGRPC, client.BindingREST} {
		r := dial(t, srv.AgentURL("researcher"), b, "ta")
		w := dial(t, srv.AgentURL("writer"), b, "ta")
		rl, err := r.Sessions().List(t.Context(), &session.ListRequest{})
		if err != nil {
			t.Fatalf("%s: researcher's sessions: %v", b, err)
		}
		wl, err := w.Sessions().List(t.Context(), &session.ListRequest{})
		if err != nil {
			t.Fatalf("%s: writer's sessions: %v", b, err)
		}
		if len(rl.Sessions) != 2 || len(wl.Sessions) != 1 {
			t.Errorf("%s: alice has %d sessions with the researcher and %d with the writer, want 2 and 1", b, len(rl.Sessions), len(wl.Sessions))
		}
	}
}

// A gRPC request's tenant names the agent; a tenant naming none is refused.
func TestGRPCTenantRouting(t *testing.T) {
	t.Parallel()
	srv := startTwo(t)
	c := dial(t, srv.AgentURL("writer"), client.BindingGRPC, "ta")
	if got := c.Interface().Tenant; got != "writer" {
		t.Errorf("writer's gRPC interface tenant = %q, want writer", got)
	}
	task := send(t, c, "write about tenants")
	// Tenant researcher/acme: the researcher, for tenant acme, where the writer's task is not.
	_, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID, Tenant: "researcher"})
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(tenant researcher) = %v, want TaskNotFound", err)
	}
	_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID, Tenant: "writer/acme"})
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(tenant writer/acme) = %v, want TaskNotFound", err)
	}
	if got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID, Tenant: "writer"}); err != nil || got.ID != task.ID {
		t.Errorf("GetTask(tenant writer) = %v, %v", got, err)
	}
	_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID, Tenant: "nobody"})
	if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), `no agent named "nobody"`) {
		t.Errorf("GetTask(tenant nobody) = %v, want InvalidParams naming it", err)
	}
}

func TestIndexAndRootCard(t *testing.T) {
	t.Parallel()
	srv := startTwo(t)
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get("/agents")
	if code != http.StatusOK {
		t.Fatalf("GET /agents = %d %s", code, body)
	}
	var index struct {
		Agents []struct{ Name, Description, URL, Card string }
	}
	if err := json.Unmarshal([]byte(body), &index); err != nil {
		t.Fatal(err)
	}
	want := []struct{ Name, Description, URL, Card string }{
		{"researcher", "Researches.", srv.AgentURL("researcher"), srv.AgentURL("researcher") + ".well-known/agent-card.json"},
		{"writer", "Writes.", srv.AgentURL("writer"), srv.AgentURL("writer") + ".well-known/agent-card.json"},
	}
	if diff := cmp.Diff(want, index.Agents); diff != "" {
		t.Errorf("GET /agents (-want +got):\n%s", diff)
	}
	if code, body := get(binding.WellKnownCardPath); code != http.StatusNotFound || !strings.Contains(body, "/agents") {
		t.Errorf("GET the root card = %d %q, want 404 naming /agents", code, body)
	}
	if code, _ := get("/agents/nobody/.well-known/agent-card.json"); code != http.StatusNotFound {
		t.Errorf("GET an unknown agent's card = %d, want 404", code)
	}
	if code, body := get("/agents/writer/.well-known/agent-card.json"); code != http.StatusOK || !strings.Contains(body, `"name":"writer"`) {
		t.Errorf("GET writer's card = %d %s", code, body)
	}
}

// A task left running by a process that died is settled by the agent that ran it: the engine's
// one executor asks each agent, and only the one with a turn committed for the task answers.
func TestRecoverTaskFindsItsAgent(t *testing.T) {
	t.Parallel()
	srv := startTwo(t)
	task := send(t, dial(t, srv.AgentURL("writer"), client.BindingJSONRPC, "ta"), "write about recovery")
	rec, ok := srv.Agents.Executor().(engine.Recoverer)
	if !ok {
		t.Fatal("the executor is not an engine.Recoverer")
	}
	evs, err := rec.RecoverTask(t.Context(), task)
	if err != nil || len(evs) != 1 {
		t.Fatalf("RecoverTask(writer's task) = %v, %v; want one event", evs, err)
	}
	st, ok := evs[0].(*a2a.TaskStatusUpdateEvent)
	if !ok || st.Status.State != a2a.TaskStateCompleted || a2atest.Text(st.Status.Message) != "writing about about recovery" {
		t.Errorf("RecoverTask(writer's task) = %#v, want the writer's completed reply", evs[0])
	}
	other := *task
	other.ID = a2a.NewTaskID()
	if evs, err := rec.RecoverTask(t.Context(), &other); err != nil || evs != nil {
		t.Errorf("RecoverTask(a task no agent ran) = %v, %v; want nothing", evs, err)
	}
}
