package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// A server protected by Any(JWT, API key in the query), end to end: the card declares both,
// refusals are 401/403 on the wire, capnweb's authenticate takes a real token, and each
// principal sees only its own tasks on every binding.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	jwtS := iss.jwtScheme(t, &JWTOptions{Scopes: []string{"a2a"}})
	keys, err := NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: "query", Name: "key"}, map[string]string{"k-carol": "carol"})
	if err != nil {
		t.Fatal(err)
	}
	card := a2atest.Card()
	Declare(card, jwtS, keys)
	srv := a2atest.Start(t, &a2atest.Options{
		Card:     card,
		HTTP:     &binding.Options{Authenticate: Any(jwtS, keys)},
		GRPC:     &binding.GRPCOptions{Authenticate: Any(jwtS, keys)},
		WrapHTTP: Middleware,
	})
	token := func(sub string, scope string) string {
		return iss.mint(t, iss.claims(sub), map[string]any{"scope": scope})
	}
	ctx := t.Context()

	t.Run("card", func(t *testing.T) {
		resp, err := http.Get(srv.URL + binding.WellKnownCardPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got a2a.AgentCard
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if len(got.SecuritySchemes) != 2 || len(got.SecurityRequirements) != 2 {
			t.Errorf("served card declares %v / %v, want the bearer and apiKey schemes", got.SecuritySchemes, got.SecurityRequirements)
		}
	})

	t.Run("jsonrpc status", func(t *testing.T) {
		for _, tt := range []struct {
			name, query string
			header      http.Header
			status      int
			code        float64
		}{
			{name: "none", status: 401, code: -31401},
			{name: "tampered", header: bearerHeader(tamper(token("alice", "a2a"))), status: 401, code: -31401},
			{name: "no scope", header: bearerHeader(token("alice", "read")), status: 403, code: -31403},
			{name: "wrong key", query: "?key=nope", status: 401, code: -31401},
			{name: "key", query: "?key=k-carol", status: 200},
			{name: "token", header: bearerHeader(token("alice", "a2a")), status: 200},
		} {
			body := `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+binding.DefaultJSONRPCPath+tt.query, strings.NewReader(body))
			for k, v := range tt.header {
				req.Header[k] = v
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("A2A-Version", "1.0")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Error *struct {
					Code    float64 `json:"code"`
					Message string  `json:"message"`
				} `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			var code float64
			if res.Error != nil {
				code = res.Error.Code
			}
			if resp.StatusCode != tt.status || code != tt.code {
				t.Errorf("%s: status %d code %v, want %d %v", tt.name, resp.StatusCode, code, tt.status, tt.code)
			}
		}
	})

	t.Run("capnweb authenticate", func(t *testing.T) {
		s, err := capnweb.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+binding.DefaultCapnwebPath, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		main := s.Main()
		msg := map[string]any{"message": map[string]any{"messageId": uuid.NewString(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}}
		if _, err := main.Call("sendMessage", msg).Await(ctx); capnwebReason(err) != "UNAUTHENTICATED" {
			t.Errorf("sendMessage before authenticate: %v, want UNAUTHENTICATED", err)
		}
		bad := main.Call("authenticate", map[string]any{"Authorization": "Bearer " + tamper(token("alice", "a2a"))})
		if _, err := bad.Await(ctx); capnwebReason(err) != "UNAUTHENTICATED" {
			t.Errorf("authenticate(tampered token): %v, want UNAUTHENTICATED", err)
		}
		weak := main.Call("authenticate", map[string]any{"Authorization": "Bearer " + token("alice", "read")})
		if _, err := weak.Await(ctx); capnwebReason(err) != "UNAUTHORIZED" {
			t.Errorf("authenticate(token without scope): %v, want UNAUTHORIZED", err)
		}
		session := main.Call("authenticate", map[string]any{"Authorization": "Bearer " + token("alice", "a2a")})
		if _, err := session.Call("sendMessage", msg).Await(ctx); err != nil {
			t.Errorf("sendMessage on the authenticated session: %v", err)
		}

		// An API key in the query of the upgrade (through Middleware) makes the main object
		// carol's session.
		byKey, err := capnweb.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+binding.DefaultCapnwebPath+"?key=k-carol", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = byKey.Close() })
		if _, err := byKey.Main().Call("sendMessage", msg).Await(ctx); err != nil {
			t.Errorf("sendMessage on a connection opened with an API key: %v", err)
		}
	})

	for _, b := range []client.Binding{client.BindingJSONRPC, client.BindingREST, client.BindingGRPC, client.BindingCapnweb, client.BindingCapnwebBatch} {
		t.Run("scoping over "+string(b), func(t *testing.T) {
			connect := func(sub string) *client.Client {
				c, err := client.New(ctx, srv.URL, &client.Options{Binding: b, Header: bearerHeader(token(sub, "a2a"))})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Destroy() })
				return c
			}
			alice, bob := connect("alice-"+string(b)), connect("bob-"+string(b))
			anon, err := client.New(ctx, srv.URL, &client.Options{Binding: b})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = anon.Destroy() })
			if _, err := anon.ListTasks(ctx, &a2a.ListTasksRequest{}); err == nil {
				t.Error("ListTasks without credentials succeeded")
			}
			res, err := alice.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("mine"))})
			if err != nil {
				t.Fatal(err)
			}
			task, ok := res.(*a2a.Task)
			if !ok {
				t.Fatalf("SendMessage() = %T, want a task", res)
			}
			if _, err := alice.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil {
				t.Errorf("owner GetTask: %v", err)
			}
			if _, err := bob.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("other principal GetTask: %v, want ErrTaskNotFound", err)
			}
			list, err := bob.ListTasks(ctx, &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tasks) != 0 {
				t.Errorf("bob lists %d tasks, want 0", len(list.Tasks))
			}
		})
	}
}

// capnwebReason is the A2A reason of a capnweb error, or "".
func capnwebReason(err error) string {
	var ce *capnweb.Error
	if !errors.As(err, &ce) {
		return ""
	}
	r, _ := ce.Props["reason"].(string)
	return r
}
