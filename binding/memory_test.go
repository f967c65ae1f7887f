package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/client"
)

// fakeMemory is a MemoryService keeping beliefs by owner (tenant and user name, as the engine
// scopes tasks): what a runtime does, without a runtime.
type fakeMemory struct {
	mu sync.Mutex
	by map[string][]map[string]any
}

func (f *fakeMemory) seed(owner string, subjects ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = map[string][]map[string]any{}
	}
	for _, s := range subjects {
		id := fmt.Sprintf("b%d", len(f.by[owner])+1)
		f.by[owner] = append(f.by[owner], map[string]any{"id": id, "subject": s, "value": "v", "status": "active"})
	}
}

func (f *fakeMemory) GetMemory(ctx context.Context, tenant string, history bool) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	beliefs := []map[string]any{}
	for _, b := range f.by[ownerOf(ctx, tenant)] {
		if history || b["status"] == "active" {
			beliefs = append(beliefs, b)
		}
	}
	return map[string]any{"beliefs": beliefs, "working": []any{}, "observations": len(beliefs)}, nil
}

func (f *fakeMemory) ForgetMemory(ctx context.Context, tenant, id, reason string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.by[ownerOf(ctx, tenant)] {
		if b["id"] == id && b["status"] == "active" {
			b["status"] = "forgotten"
			return map[string]any{"forgotten": true, "reply": "Forgotten: " + b["subject"].(string) + " (" + reason + ").", "belief": b}, nil
		}
	}
	return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("memory: no current belief %q", id))
}

func startMemoryServer(t *testing.T) (*testServer, *fakeMemory) {
	t.Helper()
	f := &fakeMemory{}
	ts := startServer(t, serverConfig{
		opts:  &Options{Authenticate: tokenAuth, Memory: f},
		gopts: &GRPCOptions{Authenticate: tokenAuth, Memory: f},
	})
	return ts, f
}

type memoryReport struct {
	Beliefs []struct{ ID, Subject, Status string }
}

func subjectsOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var r memoryReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("GetMemory() = %s: %v", raw, err)
	}
	var out []string
	for _, b := range r.Beliefs {
		out = append(out, b.ID+" "+b.Subject+" "+b.Status)
	}
	return out
}

// TestMemoryEveryBinding: alice lists her memory, forgets a belief, and lists it again (with and
// without history), over every binding; bob, beside her, sees and forgets only his own, and
// forgetting what is not one of his current beliefs is INVALID_PARAMS.
func TestMemoryEveryBinding(t *testing.T) {
	t.Parallel()
	for _, b := range sessionBindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ts, f := startMemoryServer(t)
			f.seed("/alice", "my city", "my dog")
			f.seed("/bob", "my car")
			alice, bob := extClient(t, ts, b, "alice").Memory(), extClient(t, ts, b, "bob").Memory()
			ctx := t.Context()

			got, err := alice.Get(ctx, "", false)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"b1 my city active", "b2 my dog active"}; !slices.Equal(subjectsOf(t, got), want) {
				t.Errorf("alice's memory = %q, want %q", subjectsOf(t, got), want)
			}
			res, err := alice.Forget(ctx, "", "b2", "not true")
			if err != nil {
				t.Fatal(err)
			}
			var fr struct {
				Forgotten bool
				Reply     string
			}
			if err := json.Unmarshal(res, &fr); err != nil || !fr.Forgotten || fr.Reply != "Forgotten: my dog (not true)." {
				t.Errorf("Forget() = %s, %v", res, err)
			}
			got, _ = alice.Get(ctx, "", false)
			if want := []string{"b1 my city active"}; !slices.Equal(subjectsOf(t, got), want) {
				t.Errorf("alice's memory after forgetting = %q, want %q", subjectsOf(t, got), want)
			}
			got, _ = alice.Get(ctx, "", true)
			if want := []string{"b1 my city active", "b2 my dog forgotten"}; !slices.Equal(subjectsOf(t, got), want) {
				t.Errorf("alice's memory with history = %q, want %q", subjectsOf(t, got), want)
			}

			got, _ = bob.Get(ctx, "", false)
			if want := []string{"b1 my car active"}; !slices.Equal(subjectsOf(t, got), want) {
				t.Errorf("bob's memory = %q, want %q", subjectsOf(t, got), want)
			}
			for _, id := range []string{"b2", "b9"} {
				_, err := bob.Forget(ctx, "", id, "")
				var ee *client.ExtError
				if !errors.As(err, &ee) || ee.Code != -32602 || ee.Reason != "INVALID_PARAMS" {
					t.Errorf("bob forgets %s: %v, want INVALID_PARAMS", id, err)
				}
			}
			if _, err := bob.Forget(ctx, "", "", ""); err == nil {
				t.Error("Forget without a belief succeeded")
			}
			got, _ = alice.Get(ctx, "", false)
			if want := []string{"b1 my city active"}; !slices.Equal(subjectsOf(t, got), want) {
				t.Errorf("alice's memory after bob = %q, want %q", subjectsOf(t, got), want)
			}
		})
	}
}

// TestMemoryWire: the card declares the extension; requests are decoded strictly; the REST
// routes; a read-only capnweb session may read but not forget, one limited to tasks reaches
// nothing; without credentials nothing is answered.
func TestMemoryWire(t *testing.T) {
	t.Parallel()
	ts, f := startMemoryServer(t)
	f.seed("/alice", "my city")
	auth := []string{"Authorization", "Bearer alice"}

	r := do(t, http.MethodGet, ts.baseURL+WellKnownCardPath, nil)
	var card a2a.AgentCard
	if err := json.Unmarshal(r.body, &card); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(card.Capabilities.Extensions, func(e a2a.AgentExtension) bool { return e.URI == MemoryExtensionURI }); i < 0 || card.Capabilities.Extensions[i].Required {
		t.Errorf("card extensions = %+v, want %s, not required", card.Capabilities.Extensions, MemoryExtensionURI)
	}
	for _, params := range []string{
		`{"belief": "b1", "Belief": "b2"}`,
		`{"belief": "b1", "belief": "b1"}`,
		`{"belief": "b1", "extra": 1}`,
		`{"belief": 1}`,
		`["b1"]`,
	} {
		r := do(t, http.MethodPost, ts.baseURL+DefaultJSONRPCPath,
			[]byte(`{"jsonrpc":"2.0","id":7,"method":"ForgetMemory","params":`+params+`}`), auth...)
		if e := jsonrpcError(t, r); e.Code != -32602 {
			t.Errorf("params %s: %+v, want -32602", params, e)
		}
	}
	r = do(t, http.MethodGet, ts.baseURL+DefaultRESTPath+"/memory?history=maybe", nil, auth...)
	if r.status != http.StatusBadRequest {
		t.Errorf("history=maybe: HTTP %d %s", r.status, r.body)
	}
	r = do(t, http.MethodGet, ts.baseURL+DefaultRESTPath+"/memory", nil)
	if r.status != http.StatusUnauthorized {
		t.Errorf("no credentials: HTTP %d", r.status)
	}
	r = do(t, http.MethodPost, ts.baseURL+DefaultRESTPath+"/memory:forget", []byte(`{"belief": "b7"}`), append(auth, "Content-Type", "application/json")...)
	if e := restError(t, r); r.status != http.StatusBadRequest || e.Reason != "INVALID_PARAMS" {
		t.Errorf("POST /memory:forget b7: %d %+v", r.status, e)
	}

	main := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer alice"}}).Main()
	ro := main.Call("attenuate", map[string]any{"readOnly": true})
	if got := callReason(t, ro.Call("memory").Call("get")); got != "ok" {
		t.Errorf("read-only memory().get(): %s", got)
	}
	if got := callReason(t, ro.Call("memory").Call("forget", map[string]any{"belief": "b1"})); got != "UNAUTHORIZED" {
		t.Errorf("read-only memory().forget(): %s, want UNAUTHORIZED", got)
	}
	limited := main.Call("attenuate", map[string]any{"tasks": []any{"t1"}})
	if got := callReason(t, limited.Call("memory").Call("get")); got != "UNAUTHORIZED" {
		t.Errorf("memory().get() limited to tasks: %s, want UNAUTHORIZED", got)
	}
	f.mu.Lock()
	status := f.by["/alice"][0]["status"]
	f.mu.Unlock()
	if status != "active" {
		t.Errorf("alice's belief after the refused calls: %v", status)
	}
}

// TestMemoryNotServed: without Options.Memory nothing of the extension is served.
func TestMemoryNotServed(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	r := do(t, http.MethodPost, ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("GetMemory", map[string]any{}))
	if e := jsonrpcError(t, r); e.Code != -32601 {
		t.Errorf("GetMemory without the extension: %+v, want method not found", e)
	}
	main := ts.dialCapnweb(t, "", nil).Main()
	if got := callReason(t, main.Call("memory").Call("get")); got != "UNSUPPORTED_OPERATION" {
		t.Errorf("memory().get() without the extension: %s", got)
	}
}
