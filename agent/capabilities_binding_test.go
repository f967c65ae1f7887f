package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// Call-by-call approval through input-required, from a stock A2A client over JSON-RPC and over
// capnweb: the task waits showing the call; the user's reply on the task approves or refuses
// it.
func TestCallByCallApprovalOverBindings(t *testing.T) {
	t.Parallel()
	for _, b := range []client.Binding{client.BindingJSONRPC, client.BindingCapnweb, client.BindingREST, client.BindingCapnwebBatch} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			cat, _, dir := notesFS(t, capability.Strategy{Kind: capability.CallByCall})
			h := newHost(t, &agent.Definition{Name: "helper", Policy: saver(), Capabilities: cat, Preinstall: []string{"fs"}}, nil)
			srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h)})
			c, err := client.New(t.Context(), srv.URL, &client.Options{Binding: b})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Destroy() })
			send := func(task *a2a.Task, text string) *a2a.Task {
				t.Helper()
				got, err := a2atest.Send(t, c, task, text)
				if err != nil {
					t.Fatalf("SendMessage(%q) = %v", text, err)
				}
				return got
			}
			task := send(nil, "save notes/a.txt")
			if task.Status.State != a2a.TaskStateInputRequired || !strings.Contains(a2atest.Text(task.Status.Message), "wants to call fs.write") {
				t.Fatalf("the task waits: %s %q", task.Status.State, a2atest.Text(task.Status.Message))
			}
			// The question carries the approval as data, for clients to show as buttons.
			approval, _ := task.Status.Message.Metadata[agent.ApprovalKey].(map[string]any)
			if approval["capability"] != "fs" || approval["method"] != "write" || approval["kind"] != "call" || approval["id"] == "" ||
				!strings.Contains(a2atest.Text(task.Status.Message), "Approve "+approval["id"].(string)+"?") {
				t.Errorf("the question's %s = %v", agent.ApprovalKey, task.Status.Message.Metadata)
			}
			task = send(task, "yes")
			if task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("after yes: %s %q", task.Status.State, a2atest.Text(task.Status.Message))
			}
			if data, _ := os.ReadFile(filepath.Join(dir, "notes", "a.txt")); string(data) != "hello" {
				t.Errorf("the file holds %q", data)
			}
			other := send(nil, "save notes/b.txt")
			other = send(other, "no")
			if other.Status.State != a2a.TaskStateCompleted || !strings.Contains(a2atest.Text(other.Status.Message), "denied: capability: refused by the user") {
				t.Errorf("after no: %s %q", other.Status.State, a2atest.Text(other.Status.Message))
			}
			if _, err := os.Stat(filepath.Join(dir, "notes", "b.txt")); err == nil {
				t.Error("the refused call wrote its file")
			}
		})
	}
}
