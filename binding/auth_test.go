package binding

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"
)

// tokenAuth accepts "Bearer <name>" for alice and bob; anything else is refused, and carol is
// known but not allowed.
func tokenAuth(_ context.Context, h http.Header) (*a2asrv.User, error) {
	switch h.Get("Authorization") {
	case "Bearer alice":
		return a2asrv.NewAuthenticatedUser("alice", nil), nil
	case "Bearer bob":
		return a2asrv.NewAuthenticatedUser("bob", nil), nil
	case "Bearer carol":
		return nil, a2a.NewError(a2a.ErrUnauthorized, "carol may not use this agent")
	case "":
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "credentials required")
	}
	return nil, errors.New("unknown token")
}

// bearer is an a2aclient option sending Authorization: Bearer name.
func bearer(name string) a2aclient.FactoryOption {
	return withParams("Authorization", "Bearer "+name)
}

// On JSON-RPC, HTTP+JSON and gRPC alike: no credentials is UNAUTHENTICATED, a refused
// principal UNAUTHORIZED, and a principal sees only its own tasks.
func TestAuthenticateEveryBinding(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Authenticate: tokenAuth}, gopts: &GRPCOptions{Authenticate: tokenAuth}})
	for _, proto := range transports {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			anon := ts.client(t, proto)
			if _, err := anon.GetTask(ctx, &a2a.GetTaskRequest{ID: "x"}); !isAuthError(proto, err, a2a.ErrUnauthenticated, "401") {
				t.Errorf("no credentials: %v, want ErrUnauthenticated", err)
			}
			carol := ts.client(t, proto, bearer("carol"))
			if _, err := carol.GetTask(ctx, &a2a.GetTaskRequest{ID: "x"}); !isAuthError(proto, err, a2a.ErrUnauthorized, "403") {
				t.Errorf("refused principal: %v, want ErrUnauthorized", err)
			}
			alice := ts.client(t, proto, bearer("alice"))
			res, err := alice.SendMessage(ctx, userMessage("mine"))
			if err != nil {
				t.Fatal(err)
			}
			id := res.(*a2a.Task).ID
			if _, err := alice.GetTask(ctx, &a2a.GetTaskRequest{ID: id}); err != nil {
				t.Errorf("owner GetTask: %v", err)
			}
			bob := ts.client(t, proto, bearer("bob"))
			if _, err := bob.GetTask(ctx, &a2a.GetTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("other principal GetTask: %v, want ErrTaskNotFound", err)
			}
			list, err := bob.ListTasks(ctx, &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range list.Tasks {
				if task.ID == id {
					t.Errorf("bob lists alice's task %s", id)
				}
			}
		})
	}
}

// isAuthError reports whether err is the sentinel. a2a-go's JSON-RPC client does not read the
// JSON-RPC error of a 401/403 response (TestAuthenticateHTTPStatus checks the body): it
// reports the HTTP status.
func isAuthError(proto a2a.TransportProtocol, err, sentinel error, status string) bool {
	if proto == a2a.TransportProtocolJSONRPC && err != nil && strings.Contains(err.Error(), "HTTP status: "+status) {
		return true
	}
	return errors.Is(err, sentinel)
}

func TestAuthenticateHTTPStatus(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Authenticate: tokenAuth}})
	r := do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("GetTask", map[string]any{"id": "x"}))
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" || jsonrpcError(t, r).Reason != "UNAUTHENTICATED" {
		t.Errorf("JSON-RPC without credentials: HTTP %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
	r = do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/x", nil, "Authorization", "Bearer carol")
	if r.status != http.StatusForbidden || restError(t, r).Reason != "UNAUTHORIZED" {
		t.Errorf("REST refused principal: HTTP %d %s", r.status, r.body)
	}
	// The public card needs no credentials.
	if r := do(t, "GET", ts.baseURL+WellKnownCardPath, nil); r.status != http.StatusOK {
		t.Errorf("card without credentials: HTTP %d", r.status)
	}
}

// Each principal has its own request budget, on every binding; over it, the request is refused
// before the handler runs, with the binding's form of RESOURCE_EXHAUSTED.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	limit := &RateLimit{PerSecond: 0.001, Burst: 2} // two requests, then about 17 minutes to wait
	ts := startServer(t, serverConfig{engine: true,
		opts:  &Options{Authenticate: tokenAuth, RateLimit: limit},
		gopts: &GRPCOptions{Authenticate: tokenAuth, RateLimit: limit}})
	get := func(who string) rawResponse {
		return do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("GetTask", map[string]any{"id": "x"}), "Authorization", "Bearer "+who)
	}
	for i := range 2 {
		if r := get("alice"); r.status != http.StatusOK {
			t.Fatalf("alice's request %d: HTTP %d %s", i+1, r.status, r.body)
		}
	}
	r := get("alice")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || jsonrpcError(t, r).Reason != "RATE_LIMITED" {
		t.Errorf("alice's third request: HTTP %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	r = do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/x", nil, "Authorization", "Bearer alice")
	if r.status != http.StatusTooManyRequests || restError(t, r).Reason != "RATE_LIMITED" {
		t.Errorf("alice over REST after her budget: HTTP %d %s", r.status, r.body)
	}
	// Bob's budget is his own: one JSON-RPC request, then capnweb calls count against it too.
	if r := get("bob"); r.status != http.StatusOK {
		t.Errorf("bob's first request: HTTP %d", r.status)
	}
	bob := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer bob"}}).Main()
	if _, err := bob.Call("getTask", map[string]any{"id": "x"}).Await(t.Context()); err == nil {
		t.Fatal("getTask of an unknown task succeeded")
	} else if _, reason := a2aErr(t, err); reason != "TASK_NOT_FOUND" {
		t.Errorf("bob's second request (capnweb): %v", err)
	}
	_, err := bob.Call("getTask", map[string]any{"id": "x"}).Await(t.Context())
	if code, reason := a2aErr(t, err); code != -32000 || reason != "RATE_LIMITED" {
		t.Errorf("bob's third request (capnweb): code %v reason %s", code, reason)
	}
	// gRPC counts on its own server: alice has a fresh budget there.
	c := ts.client(t, a2a.TransportProtocolGRPC, bearer("alice"))
	for i := range 2 {
		if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"}); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("alice's gRPC request %d: %v, want TaskNotFound", i+1, err)
		}
	}
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "x"}); err == nil || !strings.Contains(err.Error(), "too many requests") {
		t.Errorf("alice's third gRPC request: %v, want the rate limit", err)
	}
}

// A 401 challenges with every scheme the card declares, in its order; a refused bearer token
// is invalid_token (RFC 6750), a bearer token of a principal refused is insufficient_scope.
func TestAuthenticateChallenges(t *testing.T) {
	t.Parallel()
	card := testCard()
	card.Name = `echo "agent"`
	card.SecuritySchemes = a2a.NamedSecuritySchemes{
		"basic":  a2a.HTTPAuthSecurityScheme{Scheme: "Basic"},
		"jwt":    a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"},
		"oidc":   a2a.OpenIDConnectSecurityScheme{OpenIDConnectURL: "https://id.example/.well-known/openid-configuration"},
		"key":    a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key"},
		"mtls":   a2a.MutualTLSSecurityScheme{},
		"oauth2": a2a.OAuth2SecurityScheme{Flows: a2a.ClientCredentialsOAuthFlow{TokenURL: "https://id.example/token"}},
	}
	card.SecurityRequirements = a2a.SecurityRequirementsOptions{{"key": {}}, {"jwt": {}}, {"basic": {}}, {"oidc": {}}, {"mtls": {}}}
	ts := startServer(t, serverConfig{card: card, opts: &Options{Authenticate: tokenAuth}})
	const realm = `realm="echo \"agent\""`
	all := func(bearerErr string) []string {
		return []string{
			`APIKey ` + realm + `, in="header", name="X-API-Key"`,
			`Bearer ` + realm + bearerErr,
			`Basic ` + realm + `, charset="UTF-8"`,
		}
	}
	for _, tt := range []struct {
		name   string
		header []string
		status int
		want   []string
	}{
		{"none", nil, 401, all("")},
		{"bad bearer", []string{"Authorization", "Bearer forged"}, 401, all(`, error="invalid_token"`)},
		{"bad basic", []string{"Authorization", "Basic Zm9vOmJhcg=="}, 401, all("")},
		{"refused bearer principal", []string{"Authorization", "Bearer carol"}, 403, []string{`Bearer ` + realm + `, error="insufficient_scope"`}},
	} {
		for _, target := range []struct{ method, url string }{
			{"POST", ts.baseURL + DefaultJSONRPCPath},
			{"GET", ts.baseURL + DefaultRESTPath + "/tasks/x"},
		} {
			var body []byte
			if target.method == "POST" {
				body = jsonrpcBody("GetTask", map[string]any{"id": "x"})
			}
			r := do(t, target.method, target.url, body, tt.header...)
			if r.status != tt.status {
				t.Errorf("%s %s: HTTP %d, want %d", tt.name, target.url, r.status, tt.status)
			}
			if diff := cmp.Diff(tt.want, r.header.Values("WWW-Authenticate")); diff != "" {
				t.Errorf("%s %s: WWW-Authenticate (-want +got):\n%s", tt.name, target.url, diff)
			}
		}
	}

	// A card that declares nothing: a Bearer challenge, as before.
	plain := startServer(t, serverConfig{opts: &Options{Authenticate: tokenAuth}})
	r := do(t, "GET", plain.baseURL+DefaultRESTPath+"/tasks/x", nil)
	if got := r.header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != `Bearer realm="echo"` {
		t.Errorf("undeclared: WWW-Authenticate = %q", got)
	}
}
