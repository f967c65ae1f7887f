package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/client"
)

// fakeSessions is a session.Service over real sessions, kept by owner (tenant and user name,
// as the engine scopes tasks): what a runtime does, without a runtime.
type fakeSessions struct {
	mu  sync.Mutex
	by  map[string]map[string]*session.Session
	now time.Time
}

func newFakeSessions() *fakeSessions {
	return &fakeSessions{by: map[string]map[string]*session.Session{}, now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
}

func ownerOf(ctx context.Context, tenant string) string {
	name := ""
	if cc, ok := a2asrv.CallContextFrom(ctx); ok && cc.User != nil && cc.User.Authenticated {
		name = cc.User.Name
	}
	return tenant + "/" + name
}

// seed gives owner a session id with the turns (user, answer pairs).
func (f *fakeSessions) seed(t *testing.T, owner, id string, turns ...string) {
	t.Helper()
	s, _ := session.New(id, session.Config{Strategy: session.Sliding})
	for i := 0; i+1 < len(turns); i += 2 {
		if _, err := s.Offer(f.now, "task", session.User(turns[i])); err != nil {
			t.Fatal(err)
		}
		if _, err := s.End(f.now, session.Outcome{Status: session.Completed, Response: turns[i+1], Usage: &session.Usage{In: 3, Out: 2}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by[owner] == nil {
		f.by[owner] = map[string]*session.Session{}
	}
	f.by[owner][id] = s
}

func (f *fakeSessions) get(ctx context.Context, tenant, id string) (*session.Session, error) {
	s := f.by[ownerOf(ctx, tenant)][id]
	if s == nil {
		return nil, fmt.Errorf("%w %q", session.ErrNotFound, id)
	}
	return s, nil
}

func (f *fakeSessions) ListSessions(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := &session.ListResponse{Sessions: []session.Metrics{}}
	for _, s := range f.by[ownerOf(ctx, req.Tenant)] {
		res.Sessions = append(res.Sessions, s.Metrics(f.now))
	}
	slices.SortFunc(res.Sessions, func(a, b session.Metrics) int { return strings.Compare(a.ID, b.ID) })
	return res, nil
}

func (f *fakeSessions) GetSessionMetrics(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(ctx, req.Tenant, req.ContextID)
	if err != nil {
		return nil, err
	}
	m := s.Metrics(f.now)
	return &m, nil
}

func (f *fakeSessions) GetSessionHistory(ctx context.Context, req *session.HistoryRequest) (*session.History, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(ctx, req.Tenant, req.ContextID)
	if err != nil {
		return nil, err
	}
	h := s.History(req.From, req.Limit)
	return &h, nil
}

func (f *fakeSessions) GetSessionContext(ctx context.Context, req *session.Ref) (*session.Window, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(ctx, req.Tenant, req.ContextID)
	if err != nil {
		return nil, err
	}
	w, err := s.Context("You are a test agent.")
	return &w, err
}

func (f *fakeSessions) ResetSession(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(ctx, req.Tenant, req.ContextID)
	if err != nil {
		return nil, err
	}
	if err := s.Reset(f.now); err != nil {
		return nil, err
	}
	m := s.Metrics(f.now)
	return &m, nil
}

func (f *fakeSessions) ForkSession(ctx context.Context, req *session.ForkRequest) (*session.Metrics, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(ctx, req.Tenant, req.ContextID)
	if err != nil {
		return nil, err
	}
	at := s.Last()
	if req.Turn != nil {
		at = *req.Turn
	}
	id := req.NewContextID
	if id == "" {
		id = req.ContextID + "-fork"
	}
	fork, err := s.Fork(f.now, id, at)
	if err != nil {
		return nil, err
	}
	f.by[ownerOf(ctx, req.Tenant)][id] = fork
	m := fork.Metrics(f.now)
	return &m, nil
}

func (f *fakeSessions) MergeSession(ctx context.Context, req *session.MergeRequest) (*session.Metrics, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(ctx, req.Tenant, req.ContextID)
	if err != nil {
		return nil, err
	}
	from, err := f.get(ctx, req.Tenant, req.From)
	if err != nil {
		return nil, err
	}
	if _, err := s.Merge(f.now, from, req.Mode); err != nil {
		return nil, err
	}
	m := s.Metrics(f.now)
	return &m, nil
}

// sessionBindings are the bindings the sessions extension is tested over.
var sessionBindings = []client.Binding{client.BindingJSONRPC, client.BindingREST, client.BindingGRPC, client.BindingCapnweb, client.BindingCapnwebBatch}

// startSessionServer serves the extension on every binding, with tokenAuth (alice, bob).
func startSessionServer(t *testing.T) (*testServer, *fakeSessions) {
	t.Helper()
	f := newFakeSessions()
	ts := startServer(t, serverConfig{
		opts:  &Options{Authenticate: tokenAuth, Sessions: f},
		gopts: &GRPCOptions{Authenticate: tokenAuth, Sessions: f},
	})
	return ts, f
}

func sessionClient(t *testing.T, ts *testServer, b client.Binding, user string) *client.Sessions {
	t.Helper()
	return extClient(t, ts, b, user).Sessions()
}

// extClient is a client of ts over binding b, as user (a bearer token tokenAuth knows; "": none).
func extClient(t *testing.T, ts *testServer, b client.Binding, user string) *client.Client {
	t.Helper()
	h := http.Header{}
	if user != "" {
		h.Set("Authorization", "Bearer "+user)
	}
	return extClientWith(t, ts, b, h)
}

// TestSessionsEveryBinding: each affordance over every binding, as alice, on her sessions.
func TestSessionsEveryBinding(t *testing.T) {
	t.Parallel()
	for _, b := range sessionBindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ts, f := startSessionServer(t)
			f.seed(t, "/alice", "a1", "hello", "hi alice", "what is 2+2?", "4")
			f.seed(t, "/alice", "a2", "other", "topic")
			alice := sessionClient(t, ts, b, "alice")
			ctx := t.Context()

			list, err := alice.List(ctx, &session.ListRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Sessions) != 2 || list.Sessions[0].ID != "a1" || list.Sessions[0].Turn != 2 {
				t.Errorf("List() = %+v", list)
			}
			m, err := alice.Metrics(ctx, &session.Ref{ContextID: "a1"})
			if err != nil {
				t.Fatal(err)
			}
			if m.State != session.Waiting || m.Used.In != 6 || m.Turns[session.Completed] != 2 {
				t.Errorf("Metrics() = %+v", m)
			}
			h, err := alice.History(ctx, &session.HistoryRequest{ContextID: "a1", From: 2, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Turns) != 1 || h.Turns[0].User.Content != "what is 2+2?" || h.Total != 2 {
				t.Errorf("History() = %+v", h)
			}
			w, err := alice.Context(ctx, &session.Ref{ContextID: "a1"})
			if err != nil {
				t.Fatal(err)
			}
			want := []session.Message{{Role: session.RoleSystem, Content: "You are a test agent."},
				session.User("hello"), {Role: session.RoleAssistant, Content: "hi alice"},
				session.User("what is 2+2?"), {Role: session.RoleAssistant, Content: "4"}}
			if diff := cmp.Diff(want, w.Messages); diff != "" {
				t.Errorf("Context().Messages (-want +got):\n%s", diff)
			}
			fork, err := alice.Fork(ctx, &session.ForkRequest{ContextID: "a1", Turn: ptr(1), NewContextID: "a1-early"})
			if err != nil {
				t.Fatal(err)
			}
			if fork.ID != "a1-early" || fork.Turn != 1 || fork.Origin == nil || fork.Origin.Session != "a1" {
				t.Errorf("Fork() = %+v", fork)
			}
			merged, err := alice.Merge(ctx, &session.MergeRequest{ContextID: "a2", From: "a1-early", Mode: session.MergeTurns})
			if err != nil {
				t.Fatal(err)
			}
			if merged.ID != "a2" || merged.Turn != 2 {
				t.Errorf("Merge() = %+v", merged)
			}
			reset, err := alice.Reset(ctx, &session.Ref{ContextID: "a1"})
			if err != nil {
				t.Fatal(err)
			}
			if reset.State != session.Ready || !cmp.Equal(reset.Resets, []int{2}) {
				t.Errorf("Reset() = %+v", reset)
			}
		})
	}
}

// TestSessionsTwoPrincipals: bob cannot see or touch alice's sessions on any binding, and what he
// is told about them is exactly what he is told about a session that never existed.
func TestSessionsTwoPrincipals(t *testing.T) {
	t.Parallel()
	for _, b := range sessionBindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ts, f := startSessionServer(t)
			f.seed(t, "/alice", "secret", "my password hint is blue", "noted")
			f.seed(t, "/bob", "mine", "hi", "hello bob")
			bob := sessionClient(t, ts, b, "bob")
			ctx := t.Context()

			list, err := bob.List(ctx, &session.ListRequest{})
			if err != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != "mine" {
				t.Errorf("bob's List() = %+v, %v", list, err)
			}
			calls := map[string]func(id string) error{
				"metrics": func(id string) error { _, err := bob.Metrics(ctx, &session.Ref{ContextID: id}); return err },
				"history": func(id string) error { _, err := bob.History(ctx, &session.HistoryRequest{ContextID: id}); return err },
				"context": func(id string) error { _, err := bob.Context(ctx, &session.Ref{ContextID: id}); return err },
				"reset":   func(id string) error { _, err := bob.Reset(ctx, &session.Ref{ContextID: id}); return err },
				"fork":    func(id string) error { _, err := bob.Fork(ctx, &session.ForkRequest{ContextID: id}); return err },
				"merge into": func(id string) error {
					_, err := bob.Merge(ctx, &session.MergeRequest{ContextID: id, From: "mine", Mode: session.MergeTurns})
					return err
				},
				"merge from": func(id string) error {
					_, err := bob.Merge(ctx, &session.MergeRequest{ContextID: "mine", From: id, Mode: session.MergeTurns})
					return err
				},
			}
			for name, call := range calls {
				theirs, never := call("secret"), call("nothing")
				var et, en *client.ExtError
				if !errors.As(theirs, &et) || !errors.As(never, &en) || !errors.Is(theirs, session.ErrNotFound) {
					t.Errorf("%s: bob on alice's session: %v; on none: %v; want not found", name, theirs, never)
					continue
				}
				if et.Code != en.Code || et.Reason != en.Reason || strings.ReplaceAll(et.Message, "secret", "X") != strings.ReplaceAll(en.Message, "nothing", "X") {
					t.Errorf("%s: bob can tell alice's session from none: %+v vs %+v", name, et, en)
				}
			}
			// And alice's session is as it was.
			f.mu.Lock()
			got := f.by["/alice"]["secret"].Metrics(f.now)
			n := len(f.by["/bob"])
			f.mu.Unlock()
			if got.Turn != 1 || got.State != session.Waiting || n != 1 {
				t.Errorf("alice's session after bob: %+v; bob has %d sessions", got, n)
			}
		})
	}
}

// TestSessionsErrors: each error condition's code and reason, over every binding.
func TestSessionsErrors(t *testing.T) {
	t.Parallel()
	for _, b := range sessionBindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ts, f := startSessionServer(t)
			f.seed(t, "/alice", "a1", "hello", "hi")
			f.seed(t, "/alice", "empty")
			f.mu.Lock()
			f.by["/alice"]["a1"].Close(f.now, "test")
			f.mu.Unlock()
			alice := sessionClient(t, ts, b, "alice")
			nobody := sessionClient(t, ts, b, "")
			ctx := t.Context()
			tests := []struct {
				name   string
				call   func() error
				want   error
				reason string
				code   int
			}{
				{"reset collapsed", func() error { _, err := alice.Reset(ctx, &session.Ref{ContextID: "a1"}); return err }, session.ErrCollapsed, "SESSION_COLLAPSED", -32004},
				{"fork past the end", func() error {
					_, err := alice.Fork(ctx, &session.ForkRequest{ContextID: "a1", Turn: ptr(9)})
					return err
				}, a2a.ErrInvalidParams, "INVALID_PARAMS", -32602},
				{"merge nothing", func() error {
					_, err := alice.Merge(ctx, &session.MergeRequest{ContextID: "empty", From: "empty", Mode: session.MergeTurns})
					return err
				}, a2a.ErrInvalidParams, "INVALID_PARAMS", -32602},
				{"bad mode", func() error {
					_, err := alice.Merge(ctx, &session.MergeRequest{ContextID: "a1", From: "empty", Mode: "all"})
					return err
				}, a2a.ErrInvalidParams, "INVALID_PARAMS", -32602},
				{"no context", func() error { _, err := alice.Metrics(ctx, &session.Ref{}); return err }, a2a.ErrInvalidParams, "INVALID_PARAMS", -32602},
				{"no credentials", func() error { _, err := nobody.List(ctx, &session.ListRequest{}); return err }, a2a.ErrUnauthenticated, "UNAUTHENTICATED", -31401},
			}
			for _, tt := range tests {
				if tt.name == "no context" && b == client.BindingREST {
					// GET /sessions/ names no session: it is no route.
					tt.want, tt.reason, tt.code = a2a.ErrMethodNotFound, "METHOD_NOT_FOUND", -32601
				}
				err := tt.call()
				var ee *client.ExtError
				if !errors.Is(err, tt.want) || !errors.As(err, &ee) || ee.Reason != tt.reason || ee.Code != tt.code {
					t.Errorf("%s: %#v (%v), want %v, %s, %d", tt.name, err, err, tt.want, tt.reason, tt.code)
				}
			}
		})
	}
}

// TestSessionsWire: what the wire carries where a client library would hide it: strict
// requests, the card's declaration, HTTP statuses.
func TestSessionsWire(t *testing.T) {
	t.Parallel()
	ts, f := startSessionServer(t)
	f.seed(t, "/alice", "a1", "hello", "hi")
	auth := []string{"Authorization", "Bearer alice"}

	r := do(t, http.MethodGet, ts.baseURL+WellKnownCardPath, nil)
	var card a2a.AgentCard
	if err := json.Unmarshal(r.body, &card); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(card.Capabilities.Extensions, func(e a2a.AgentExtension) bool { return e.URI == session.ExtensionURI }); i < 0 || card.Capabilities.Extensions[i].Required {
		t.Errorf("card extensions = %+v, want %s, not required", card.Capabilities.Extensions, session.ExtensionURI)
	}

	for _, params := range []string{
		`{"contextId": "a1", "ContextId": "a2"}`, // case-insensitive match of Go's decoder
		`{"contextId": "a1", "contextId": "a1"}`,
		`{"contextId": "a1", "extra": 1}`,
		`["a1"]`,
	} {
		r := do(t, http.MethodPost, ts.baseURL+DefaultJSONRPCPath,
			[]byte(`{"jsonrpc":"2.0","id":7,"method":"GetSessionMetrics","params":`+params+`}`), auth...)
		if e := jsonrpcError(t, r); e.Code != -32602 {
			t.Errorf("params %s: %+v, want -32602", params, e)
		}
	}
	r = do(t, http.MethodGet, ts.baseURL+DefaultRESTPath+"/sessions/nope", nil, auth...)
	if e := restError(t, r); r.status != http.StatusNotFound || e.Reason != "SESSION_NOT_FOUND" || e.Status != "NOT_FOUND" {
		t.Errorf("GET /sessions/nope: %d %+v", r.status, e)
	}
	r = do(t, http.MethodGet, ts.baseURL+DefaultRESTPath+"/sessions/a1/history?limit=x", nil, auth...)
	if r.status != http.StatusBadRequest {
		t.Errorf("limit=x: HTTP %d %s", r.status, r.body)
	}
	r = do(t, http.MethodGet, ts.baseURL+DefaultRESTPath+"/sessions/a1", nil)
	if r.status != http.StatusUnauthorized {
		t.Errorf("no credentials: HTTP %d", r.status)
	}
	r = do(t, http.MethodGet, ts.baseURL+DefaultRESTPath+"/sessions/a1/history?limit=1", nil, auth...)
	var h session.History
	if err := json.Unmarshal(r.body, &h); r.status != http.StatusOK || err != nil || len(h.Turns) != 1 {
		t.Errorf("GET history: HTTP %d %s", r.status, r.body)
	}
	// A2A's own routes are untouched.
	r = do(t, http.MethodGet, ts.baseURL+DefaultRESTPath+"/tasks", nil, auth...)
	if r.status != http.StatusOK {
		t.Errorf("GET /tasks: HTTP %d %s", r.status, r.body)
	}
}

// TestSessionsNotServed: without Options.Sessions nothing of the extension is served.
func TestSessionsNotServed(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	r := do(t, http.MethodPost, ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("ListSessions", map[string]any{}))
	if e := jsonrpcError(t, r); e.Code != -32601 {
		t.Errorf("ListSessions without the extension: %+v, want method not found", e)
	}
	main := ts.dialCapnweb(t, "", nil).Main()
	p := main.Call("session", "x").Call("metrics")
	if _, err := p.Await(t.Context()); err == nil {
		t.Error("a Session capability worked without the extension")
	}
}
