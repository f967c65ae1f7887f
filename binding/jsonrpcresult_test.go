package binding

import (
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
)

// TestJSONRPCDeleteHasResult: a successful DeleteTaskPushNotificationConfig is a JSON-RPC
// response with a result (JSON-RPC 2.0 requires result or error): {} for 1.0 (the ProtoJSON of
// google.protobuf.Empty), null for 0.3; on the engine and on a2a-go's handler.
func TestJSONRPCDeleteHasResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		engine bool
	}{{"engine", true}, {"a2a-go", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, serverConfig{engine: tc.engine, opts: &Options{Serve03: true}})
			c := ts.client(t, a2a.TransportProtocolJSONRPC)
			res, err := c.SendMessage(t.Context(), userMessage("push"))
			if err != nil {
				t.Fatal(err)
			}
			id := res.(*a2a.Task).ID
			url := ts.baseURL + DefaultJSONRPCPath
			for _, v := range []struct {
				version, method, want string
				params                any
			}{
				{"1.0", "DeleteTaskPushNotificationConfig", `{}`, map[string]any{"taskId": id, "id": "cfg-1"}},
				{"0.3", "tasks/pushNotificationConfig/delete", `null`, map[string]any{"id": id, "pushNotificationConfigId": "cfg-1"}},
			} {
				if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: id, ID: "cfg-1", URL: "https://example.com/hook"}); err != nil {
					t.Fatal(err)
				}
				r := do(t, "POST", url, jsonrpcBody(v.method, v.params), "A2A-Version", v.version)
				var got map[string]json.RawMessage
				if err := json.Unmarshal(r.body, &got); err != nil {
					t.Fatalf("%s: %v: %s", v.method, err, r.body)
				}
				if _, isErr := got["error"]; isErr {
					t.Fatalf("%s: error response %s", v.method, r.body)
				}
				want := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": json.RawMessage(`"1"`), "result": json.RawMessage(v.want)}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s response (-want +got):\n%s", v.method, diff)
				}
			}
		})
	}
}
