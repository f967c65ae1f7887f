package binding

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// TestMatrix runs the same behaviour tests over JSON-RPC, HTTP+JSON and gRPC,
// with a2a-go's own client, against NewHTTPHandler and NewGRPCServer.
func TestMatrix(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})

	for _, proto := range transports {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			c := ts.client(t, proto)

			t.Run("SendBlocking", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(t.Context(), userMessage("hello"))
				if err != nil {
					t.Fatal(err)
				}
				task, ok := res.(*a2a.Task)
				if !ok {
					t.Fatalf("result is %T, want *a2a.Task", res)
				}
				if task.Status.State != a2a.TaskStateCompleted {
					t.Errorf("state = %s, want completed", task.Status.State)
				}
				if len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text() != "echo: hello" {
					t.Errorf("artifacts = %+v, want one echo", task.Artifacts)
				}
			})

			t.Run("SendMessageResult", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(t.Context(), userMessage("message"))
				if err != nil {
					t.Fatal(err)
				}
				msg, ok := res.(*a2a.Message)
				if !ok {
					t.Fatalf("result is %T, want *a2a.Message", res)
				}
				if got := textOf(msg); got != "echo: message" {
					t.Errorf("text = %q", got)
				}
			})

			t.Run("SendReturnImmediately", func(t *testing.T) {
				t.Parallel()
				key := uuid.NewString()
				req := userMessage("wait:" + key)
				req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
				res, err := c.SendMessage(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				task, ok := res.(*a2a.Task)
				if !ok {
					t.Fatalf("result is %T, want *a2a.Task", res)
				}
				if task.Status.State.Terminal() {
					t.Fatalf("returnImmediately gave a %s task", task.Status.State)
				}
				ts.exec.release(key)
				waitState(t, c, task.ID, a2a.TaskStateCompleted)
			})

			t.Run("Streaming", func(t *testing.T) {
				t.Parallel()
				events, err := collect(c.SendStreamingMessage(t.Context(), userMessage("stream me")))
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"task(TASK_STATE_SUBMITTED)", "status(TASK_STATE_WORKING)", "artifact", "status(TASK_STATE_COMPLETED)"}
				if diff := cmp.Diff(want, eventKinds(events)); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})

			t.Run("GetHistoryLength", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(t.Context(), userMessage("history"))
				if err != nil {
					t.Fatal(err)
				}
				id := res.(*a2a.Task).ID
				full, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
				if err != nil {
					t.Fatal(err)
				}
				if len(full.History) < 2 {
					t.Fatalf("history has %d messages, want >= 2", len(full.History))
				}
				for _, n := range []int{0, 1} {
					got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id, HistoryLength: ptr(n)})
					if err != nil {
						t.Fatal(err)
					}
					if len(got.History) != n {
						t.Errorf("historyLength=%d: %d messages", n, len(got.History))
					}
					if n == 1 && got.History[0].ID != full.History[len(full.History)-1].ID {
						t.Errorf("historyLength=1 returned %q, want the most recent %q", got.History[0].ID, full.History[len(full.History)-1].ID)
					}
				}
			})

			t.Run("List", func(t *testing.T) {
				t.Parallel()
				ctxID := uuid.NewString()
				var ids []a2a.TaskID
				for i := range 2 {
					req := userMessage(fmt.Sprint("list ", i))
					req.Message.ContextID = ctxID
					res, err := c.SendMessage(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, res.(*a2a.Task).ID)
				}
				list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{ContextID: ctxID})
				if err != nil {
					t.Fatal(err)
				}
				got := map[a2a.TaskID]bool{}
				for _, task := range list.Tasks {
					got[task.ID] = true
				}
				if diff := cmp.Diff(map[a2a.TaskID]bool{ids[0]: true, ids[1]: true}, got); diff != "" {
					t.Errorf("listed tasks (-want +got):\n%s", diff)
				}
			})

			t.Run("Cancel", func(t *testing.T) {
				t.Parallel()
				req := userMessage("wait:" + uuid.NewString()) // never released
				req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
				res, err := c.SendMessage(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				id := res.(*a2a.Task).ID
				waitState(t, c, id, a2a.TaskStateWorking)
				task, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
				if err != nil {
					t.Fatal(err)
				}
				if task.Status.State != a2a.TaskStateCanceled {
					t.Errorf("state after cancel = %s", task.Status.State)
				}
				// Cancel is idempotent (§3.3.1).
				again, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
				if err != nil || again.Status.State != a2a.TaskStateCanceled {
					t.Errorf("second cancel: %v, %v; want the canceled task", again, err)
				}
			})

			t.Run("Subscribe", func(t *testing.T) {
				t.Parallel()
				key := uuid.NewString()
				req := userMessage("wait:" + key)
				req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
				res, err := c.SendMessage(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				id := res.(*a2a.Task).ID
				waitState(t, c, id, a2a.TaskStateWorking)
				var kinds []string
				for ev, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: id}) {
					if err != nil {
						t.Fatal(err)
					}
					kinds = append(kinds, eventKinds([]a2a.Event{ev})...)
					if len(kinds) == 1 {
						ts.exec.release(key) // the snapshot is in: let the task finish
					}
				}
				want := []string{"task(TASK_STATE_WORKING)", "artifact", "status(TASK_STATE_COMPLETED)"}
				if diff := cmp.Diff(want, kinds); diff != "" {
					t.Errorf("subscription (-want +got):\n%s", diff)
				}
				// Subscribing to a finished task is the handler's business; see
				// TestUpstreamGapSubscribeTerminalTask.
			})

			t.Run("PushConfigCRUD", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(t.Context(), userMessage("push"))
				if err != nil {
					t.Fatal(err)
				}
				id := res.(*a2a.Task).ID
				created, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: id, ID: "cfg-1", URL: "https://example.com/hook", Token: "tok"})
				if err != nil {
					t.Fatal(err)
				}
				want := &a2a.PushConfig{TaskID: id, ID: "cfg-1", URL: "https://example.com/hook", Token: "tok"}
				if diff := cmp.Diff(want, created); diff != "" {
					t.Errorf("created (-want +got):\n%s", diff)
				}
				got, err := c.GetTaskPushConfig(t.Context(), &a2a.GetTaskPushConfigRequest{TaskID: id, ID: "cfg-1"})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("got (-want +got):\n%s", diff)
				}
				list, err := c.ListTaskPushConfigs(t.Context(), &a2a.ListTaskPushConfigRequest{TaskID: id})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]*a2a.PushConfig{want}, list); diff != "" {
					t.Errorf("list (-want +got):\n%s", diff)
				}
				if err := c.DeleteTaskPushConfig(t.Context(), &a2a.DeleteTaskPushConfigRequest{TaskID: id, ID: "cfg-1"}); err != nil {
					t.Fatal(err)
				}
				// Deleting is idempotent (A2A 1.0 §3.1.10); on a task the caller cannot see, it
				// is still TaskNotFound.
				if err := c.DeleteTaskPushConfig(t.Context(), &a2a.DeleteTaskPushConfigRequest{TaskID: id, ID: "cfg-1"}); err != nil {
					t.Errorf("second delete: %v, want success", err)
				}
				if err := c.DeleteTaskPushConfig(t.Context(), &a2a.DeleteTaskPushConfigRequest{TaskID: "no-such-task", ID: "cfg-1"}); !errorsIs(err, a2a.ErrTaskNotFound) {
					t.Errorf("delete on a missing task: %v, want ErrTaskNotFound", err)
				}
				list, err = c.ListTaskPushConfigs(t.Context(), &a2a.ListTaskPushConfigRequest{TaskID: id})
				if err != nil {
					t.Fatal(err)
				}
				if len(list) != 0 {
					t.Errorf("after delete: %d configs", len(list))
				}
			})

			t.Run("TaskNotFound", func(t *testing.T) {
				t.Parallel()
				_, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "no-such-task"})
				if !errorsIs(err, a2a.ErrTaskNotFound) {
					t.Errorf("GetTask: %v, want ErrTaskNotFound", err)
				}
				if proto == a2a.TransportProtocolJSONRPC {
					// An error before the first event is a plain JSON-RPC error response (what
					// the conformance kit checks); a2a-go's client ends the stream on it without
					// reporting the error, so look at the wire.
					code := jsonrpcStreamErrorCode(t, ts.baseURL+DefaultJSONRPCPath, "SubscribeToTask", `{"id":"no-such-task"}`)
					if code != -32001 {
						t.Errorf("SubscribeToTask: JSON-RPC error code %d, want -32001 (TaskNotFound)", code)
					}
					return
				}
				_, err = collect(c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: "no-such-task"}))
				if !errorsIs(err, a2a.ErrTaskNotFound) {
					t.Errorf("SubscribeToTask: %v, want ErrTaskNotFound", err)
				}
			})

			t.Run("VersionUnknown", func(t *testing.T) {
				t.Parallel()
				c := ts.client(t, proto, withParams("A2A-Version", "9.9"))
				if _, err := c.SendMessage(t.Context(), userMessage("hello")); !errorsIs(err, a2a.ErrVersionNotSupported) {
					t.Errorf("SendMessage: %v, want ErrVersionNotSupported", err)
				}
				if _, err := collect(c.SendStreamingMessage(t.Context(), userMessage("hello"))); !errorsIs(err, a2a.ErrVersionNotSupported) {
					t.Errorf("SendStreamingMessage: %v, want ErrVersionNotSupported", err)
				}
			})

			t.Run("Version03WithoutCompat", func(t *testing.T) {
				t.Parallel()
				c := ts.client(t, proto, withParams("A2A-Version", "0.3"))
				if _, err := c.SendMessage(t.Context(), userMessage("hello")); !errorsIs(err, a2a.ErrVersionNotSupported) {
					t.Errorf("SendMessage: %v, want ErrVersionNotSupported", err)
				}
			})

			t.Run("VersionPatchIgnored", func(t *testing.T) {
				t.Parallel()
				c := ts.client(t, proto, withParams("A2A-Version", "1.0.7"))
				if _, err := c.SendMessage(t.Context(), userMessage("hello")); err != nil {
					t.Errorf("A2A-Version 1.0.7: %v", err)
				}
			})
		})
	}
}

// TestMatrixRequiredExtension: a card that marks an extension required makes
// every binding reject calls that do not declare it.
func TestMatrixRequiredExtension(t *testing.T) {
	t.Parallel()
	const ext = "https://example.com/ext/required/v1"
	card := testCard()
	card.Capabilities.Extensions = []a2a.AgentExtension{
		{URI: ext, Required: true},
		{URI: "https://example.com/ext/optional/v1"},
	}
	ts := startServer(t, serverConfig{card: card})

	for _, proto := range transports {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			plain := ts.client(t, proto)
			if _, err := plain.SendMessage(t.Context(), userMessage("hello")); !errorsIs(err, a2a.ErrExtensionSupportRequired) {
				t.Errorf("without the extension: %v, want ErrExtensionSupportRequired", err)
			}
			if _, err := collect(plain.SendStreamingMessage(t.Context(), userMessage("hello"))); !errorsIs(err, a2a.ErrExtensionSupportRequired) {
				t.Errorf("streaming without the extension: %v, want ErrExtensionSupportRequired", err)
			}
			// Declared in the spec's comma-separated form.
			declared := ts.client(t, proto, withParams("A2A-Extensions", "https://example.com/ext/optional/v1, "+ext))
			if _, err := declared.SendMessage(t.Context(), userMessage("hello")); err != nil {
				t.Errorf("with the extension: %v", err)
			}
			// Declared as separate values.
			ctx := a2aclient.AttachServiceParams(t.Context(), a2aclient.ServiceParams{"A2A-Extensions": {"urn:other", ext}})
			if _, err := plain.SendMessage(ctx, userMessage("hello")); err != nil {
				t.Errorf("with the extension as separate values: %v", err)
			}
		})
	}
}

// jsonrpcStreamErrorCode calls a streaming JSON-RPC method that must fail at once and returns
// the error code of the plain application/json response.
func jsonrpcStreamErrorCode(t *testing.T, url, method, params string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s error response Content-Type = %q, want application/json", method, ct)
	}
	var r struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: decoding the error response: %v", method, err)
	}
	return r.Error.Code
}
