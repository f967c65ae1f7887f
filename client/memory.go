package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// memoryGRPCService is the gRPC service of the memory extension (binding.MemoryGRPCService).
const memoryGRPCService = "a2awebcap.memory.v1.MemoryService"

// memoryOps are the operations of the memory extension.
var memoryOps = map[string]bool{"GetMemory": true, "ForgetMemory": true}

// Memory calls the memory extension (docs/sessions.md, "Your memory") of the agent the client is
// connected to, over the client's binding: what the agent remembers about the caller, and
// asking it to forget. Results are the extension's JSON objects.
func (c *Client) Memory() *Memory { return &Memory{c: c} }

// Memory is the memory extension of one agent; see Client.Memory.
type Memory struct{ c *Client }

// Get returns the caller's beliefs (every one ever held with history, else the current ones),
// working notes and observation count, of tenant's instance when tenant is not "".
func (m *Memory) Get(ctx context.Context, tenant string, history bool) (json.RawMessage, error) {
	req := map[string]any{"tenant": tenant}
	if history {
		req["history"] = true
	}
	return rawExtCall(ctx, m.c, "GetMemory", req)
}

// Forget asks the caller's instance to forget belief, for reason (may be empty); the result says
// whether it did, what the agent answered, and the belief after.
func (m *Memory) Forget(ctx context.Context, tenant, belief, reason string) (json.RawMessage, error) {
	req := map[string]any{"tenant": tenant, "belief": belief}
	if reason != "" {
		req["reason"] = reason
	}
	return rawExtCall(ctx, m.c, "ForgetMemory", req)
}

// restMemory calls a memory operation over HTTP+JSON: GET /memory?history=true, or POST
// /memory:forget with the request as the body (under /{tenant} for a tenant).
func restMemory(ctx context.Context, hc *http.Client, base, op string, params []byte) ([]byte, error) {
	var f map[string]any
	if err := json.Unmarshal(params, &f); err != nil {
		return nil, err
	}
	path := strings.TrimSuffix(base, "/")
	if t, _ := f["tenant"].(string); t != "" {
		path += "/" + url.PathEscape(t)
	}
	delete(f, "tenant")
	method, body := http.MethodGet, []byte(nil)
	if op == "GetMemory" {
		path += "/memory"
		if f["history"] == true {
			path += "?history=true"
		}
	} else {
		path += "/memory:forget"
		method = http.MethodPost
		body, _ = json.Marshal(f)
	}
	b, status, err := httpExt(ctx, hc, method, path, body)
	if err != nil {
		return nil, err
	}
	if status >= 300 {
		return nil, restError(b, status)
	}
	return bytes.TrimSpace(b), nil
}
