package binding

import (
	"encoding/json"
	"testing"
)

var jsonrpcResponses = []string{
	`{"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t","metadata":{"a2awebcap.seq":3,"error":1}}}}`,
	`{"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"task not found"}}`,
	`{"jsonrpc":"2.0","id":"1","error":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":"1","error":{"code":1},"error":null}`,
	`{"jsonrpc":"2.0","id":"1","Error":{"code":1}}`,
	`{"jsonrpc":"2.0","id":"1","\u0065rror":{"code":1}}`,
	`{"jsonrpc":"2.0","id":"1","error":"x"}`,
	`{"result":"{\"error\":1}"}`,
	` { "error" : [ ] } `,
	`[{"error":1}]`,
	`null`,
	`{}`,
}

// scanJSONRPCError answers as the decode it replaces wherever it answers, and answers for the
// responses the JSON-RPC handler writes.
func TestScanJSONRPCError(t *testing.T) {
	t.Parallel()
	for i, r := range jsonrpcResponses {
		checkScanJSONRPCError(t, []byte(r))
		if i < 2 {
			if _, ok := scanJSONRPCError([]byte(r)); !ok {
				t.Errorf("scanJSONRPCError(%s) left a handler's response to the decode", r)
			}
		}
	}
}

func checkScanJSONRPCError(t *testing.T, data []byte) {
	t.Helper()
	isErr, ok := scanJSONRPCError(data)
	if !ok {
		return
	}
	var resp struct {
		Error json.RawMessage `json:"error"`
	}
	want := json.Unmarshal(data, &resp) == nil && len(resp.Error) > 0 && string(resp.Error) != "null"
	if isErr != want {
		t.Errorf("scanJSONRPCError(%s) = %v; decoding gives %v", data, isErr, want)
	}
}

// FuzzScanJSONRPCError: on valid JSON (what the encoder writes), the scan answers as the decode.
func FuzzScanJSONRPCError(f *testing.F) {
	for _, r := range jsonrpcResponses {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if json.Valid(data) {
			checkScanJSONRPCError(t, data)
		}
	})
}
