package binding

// Where a2a-go v2.4.0's own adapters fall short of the A2A 1.0 spec. Each
// test first shows the shortfall on the bare a2a-go handler, then the same
// request through this package. If an upstream release closes a gap, the
// first half fails: the wrapper's fix can then go.

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// upstream serves h with a2a-go's handlers alone: JSON-RPC at /rpc, REST under
// /rest, the card at the well-known path.
func upstream(t *testing.T, h a2asrv.RequestHandler, card *a2a.AgentCard) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(h))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(h)))
	mux.Handle(WellKnownCardPath, a2asrv.NewStaticAgentCardHandler(card))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// ours serves h with NewHTTPHandler, JSON-RPC at /rpc, REST under /rest.
func ours(t *testing.T, h a2asrv.RequestHandler, card *a2a.AgentCard, opts *Options) string {
	t.Helper()
	o := Options{JSONRPCPath: "/rpc", RESTPath: "/rest"}
	if opts != nil {
		o = *opts
		o.JSONRPCPath, o.RESTPath = "/rpc", "/rest"
	}
	srv := httptest.NewServer(NewHTTPHandler(h, card, &o))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Gap 1 (§8.6): the card handler sends no Cache-Control and no ETag, so
// clients cannot cache or revalidate; HEAD is refused.
func TestUpstreamGapCardCaching(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	up := upstream(t, h, testCard())
	r := do(t, "GET", up+WellKnownCardPath, nil)
	if r.header.Get("Cache-Control") != "" || r.header.Get("ETag") != "" {
		t.Errorf("upstream card now has Cache-Control %q, ETag %q", r.header.Get("Cache-Control"), r.header.Get("ETag"))
	}
	if r := do(t, "HEAD", up+WellKnownCardPath, nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("upstream HEAD: HTTP %d", r.status)
	}

	ou := ours(t, h, testCard(), nil)
	r = do(t, "GET", ou+WellKnownCardPath, nil)
	if r.header.Get("Cache-Control") == "" || r.header.Get("ETag") == "" {
		t.Fatalf("ours: Cache-Control %q, ETag %q", r.header.Get("Cache-Control"), r.header.Get("ETag"))
	}
	if r := do(t, "GET", ou+WellKnownCardPath, nil, "If-None-Match", r.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("ours revalidation: HTTP %d", r.status)
	}
	if r := do(t, "HEAD", ou+WellKnownCardPath, nil); r.status != http.StatusOK {
		t.Errorf("ours HEAD: HTTP %d", r.status)
	}
}

// Gap 2 (§3.6.2): no binding looks at A2A-Version: a request declaring an
// unknown version (or 0.3, whose wire format differs) is served with 1.0
// semantics instead of getting VersionNotSupportedError. The query-parameter
// form (§3.6.1) is ignored as well.
func TestUpstreamGapVersionIgnored(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	up := upstream(t, h, testCard())
	ou := ours(t, h, testCard(), nil)

	body := jsonrpcBody("SendMessage", userMessage("hello"))
	if r := do(t, "POST", up+"/rpc", body, "A2A-Version", "9.9"); strings.Contains(string(r.body), `"error"`) {
		t.Errorf("upstream JSON-RPC now rejects 9.9: %s", r.body)
	}
	if r := do(t, "GET", up+"/rest/tasks?pageSize=1&A2A-Version=9.9", nil); r.status != http.StatusOK {
		t.Errorf("upstream REST now rejects ?A2A-Version=9.9: HTTP %d", r.status)
	}
	if got := jsonrpcError(t, do(t, "POST", ou+"/rpc", body, "A2A-Version", "9.9")).Code; got != -32009 {
		t.Errorf("ours JSON-RPC: code %d", got)
	}
	if got := restError(t, do(t, "GET", ou+"/rest/tasks?pageSize=1&A2A-Version=9.9", nil)).Reason; got != "VERSION_NOT_SUPPORTED" {
		t.Errorf("ours REST: %s", got)
	}

	// gRPC: the bare adapter serves 9.9 too.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bare := grpc.NewServer()
	a2agrpc.NewHandler(h).RegisterWith(bare)
	go func() { _ = bare.Serve(lis) }()
	t.Cleanup(bare.Stop)
	c, err := a2aclient.NewFromEndpoints(t.Context(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(lis.Addr().String(), a2a.TransportProtocolGRPC)},
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
		withParams("A2A-Version", "9.9"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	if _, err := c.SendMessage(t.Context(), userMessage("hello")); err != nil {
		t.Errorf("upstream gRPC now rejects 9.9: %v", err)
	}
	// Ours: TestMatrix/GRPC/VersionUnknown.
}

// Gap 3 (§3.2.6, §9.2): A2A-Extensions is meant to be one comma-separated
// header; a2a-go keeps it as one opaque value. Its own required-extension
// check (a2asrv.WithCapabilityChecks) then rejects a client that did
// declare the extension, and a2asrv.ExtensionsFrom(ctx).Requested misses it.
// Without WithCapabilityChecks no binding enforces required extensions at all.
func TestUpstreamGapExtensionList(t *testing.T) {
	t.Parallel()
	const ext = "urn:ext:required"
	card := testCard()
	card.Capabilities.Extensions = []a2a.AgentExtension{{URI: ext, Required: true}}
	checked, _ := newA2AHandler(a2asrv.WithCapabilityChecks(&card.Capabilities))
	body := jsonrpcBody("SendMessage", userMessage("hello"))

	up := upstream(t, checked, card)
	if got := jsonrpcError(t, do(t, "POST", up+"/rpc", body, "A2A-Extensions", "urn:other, "+ext)); got.Code != -32008 {
		t.Errorf("upstream now accepts a comma-separated declaration: %+v", got)
	}
	ou := ours(t, checked, card, nil)
	if r := do(t, "POST", ou+"/rpc", body, "A2A-Extensions", "urn:other, "+ext); strings.Contains(string(r.body), `"error"`) {
		t.Errorf("ours rejects a comma-separated declaration: %s", r.body)
	}

	unchecked, _ := newA2AHandler()
	up = upstream(t, unchecked, card)
	if r := do(t, "POST", up+"/rpc", body); strings.Contains(string(r.body), `"error"`) {
		t.Errorf("upstream now enforces required extensions by itself: %s", r.body)
	}
	ou = ours(t, unchecked, card, nil)
	if got := jsonrpcError(t, do(t, "POST", ou+"/rpc", body)); got.Code != -32008 {
		t.Errorf("ours: %+v", got)
	}
}

// Gap 4: request bodies are decoded whatever their size (a 5 MiB GetTask
// is read to the end and answered).
func TestUpstreamGapNoBodyLimit(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	body := jsonrpcBody("GetTask", map[string]any{"id": "nope", "padding": strings.Repeat("x", 5<<20)})
	if got := jsonrpcError(t, do(t, "POST", upstream(t, h, testCard())+"/rpc", body)); got.Code != -32001 {
		t.Errorf("upstream now limits bodies: %+v", got)
	}
	if got := jsonrpcError(t, do(t, "POST", ours(t, h, testCard(), nil)+"/rpc", body)); got.Code != -32600 {
		t.Errorf("ours: %+v", got)
	}
}

// Gap 5 (a2a.proto additional_bindings): NewRESTHandler has no
// /{tenant}/... routes ("TODO: handle tenant") and NewTenantRESTHandler has
// only those; no a2a-go handler serves both forms on one base path.
func TestUpstreamGapRESTTenantRoutes(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	b, _ := json.Marshal(userMessage("hello"))
	if r := do(t, "POST", upstream(t, h, testCard())+"/rest/acme/message:send", b); r.status != http.StatusNotFound {
		t.Errorf("upstream now routes /{tenant}/message:send: HTTP %d", r.status)
	}
	ou := ours(t, h, testCard(), nil)
	for _, path := range []string{"/rest/acme/message:send", "/rest/message:send"} {
		if r := do(t, "POST", ou+path, b); r.status != http.StatusOK {
			t.Errorf("ours %s: HTTP %d %s", path, r.status, r.body)
		}
	}
}

// Gap 6 (§11.1): REST responses are always application/json, never the
// application/a2a+json the binding specifies, whatever the client accepts.
func TestUpstreamGapRESTMediaType(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	r := do(t, "GET", upstream(t, h, testCard())+"/rest/tasks/nope", nil, "Accept", mediaA2AJSON)
	if ct := r.header.Get("Content-Type"); ct != mediaJSON {
		t.Errorf("upstream Content-Type now %q", ct)
	}
	r = do(t, "GET", ours(t, h, testCard(), nil)+"/rest/tasks/nope", nil, "Accept", mediaA2AJSON)
	if ct := r.header.Get("Content-Type"); ct != mediaA2AJSON {
		t.Errorf("ours Content-Type %q", ct)
	}
}

// Gap 7 (§11.6, §11.7): a REST stream that fails before its first event is
// a 200 text/event-stream holding `data: {"error":...}` — the HTTP status says
// success — and stream errors carry no SSE event type, which @a2a-js/sdk's
// client needs ("event: error") to recognise them.
func TestUpstreamGapRESTStreamErrors(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	r := do(t, "POST", upstream(t, h, testCard())+"/rest/tasks/nope:subscribe", nil, "Accept", mediaSSE)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != mediaSSE || strings.Contains(string(r.body), "event: error") {
		t.Errorf("upstream now answers HTTP %d %s %q", r.status, r.header.Get("Content-Type"), r.body)
	}
	r = do(t, "POST", ours(t, h, testCard(), nil)+"/rest/tasks/nope:subscribe", nil, "Accept", mediaSSE)
	if got := restError(t, r); got.Code != http.StatusNotFound || got.Reason != "TASK_NOT_FOUND" {
		t.Errorf("ours: %+v", got)
	}
	// The mid-stream case: TestRESTStreamErrors.
}

// Gap 8: SSE keep-alives exist (a2asrv.WithTransportKeepAlive) but are off
// by default, so proxies drop quiet streams; ours default to 15 s.
func TestUpstreamGapKeepAliveOff(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	body := jsonrpcBody("SendStreamingMessage", userMessage("sleep:200ms"))
	r := do(t, "POST", upstream(t, h, testCard())+"/rpc", body, "Accept", mediaSSE)
	if strings.Contains(string(r.body), "keep-alive") {
		t.Errorf("upstream now sends keep-alives by default")
	}
	r = do(t, "POST", ours(t, h, testCard(), &Options{KeepAlive: 30 * time.Millisecond})+"/rpc", body, "Accept", mediaSSE)
	if !strings.Contains(string(r.body), ": keep-alive") {
		t.Errorf("ours: no keep-alive in %q", r.body)
	}
}

// Gap 9: one JSON-RPC URL cannot serve 0.3 and 1.0 clients: the 1.0 handler
// answers 0.3 method names with MethodNotFound and the a2av0 handler is a
// separate endpoint. Ours dispatches on A2A-Version (and on a 0.3 method
// name when the header is absent) — see TestServe03.
func TestUpstreamGapOneURLTwoVersions(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	legacy := []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}`)
	if got := jsonrpcError(t, do(t, "POST", upstream(t, h, testCard())+"/rpc", legacy, "A2A-Version", "0.3")); got.Code != -32601 {
		t.Errorf("upstream: %+v", got)
	}
	if got := jsonrpcError(t, do(t, "POST", ours(t, h, testCard(), &Options{Serve03: true})+"/rpc", legacy, "A2A-Version", "0.3")); got.Code != -32001 {
		t.Errorf("ours: %+v, want the 0.3 TaskNotFound", got)
	}
}

// Gap 10 (handler, not binding): SubscribeToTask on a finished task answers
// TaskNotFound; §9.4.6 wants UnsupportedOperationError. The binding passes
// the handler's error through; our engine, which replaces a2a-go's default
// handler, has to get this right.
func TestUpstreamGapSubscribeTerminalTask(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	res, err := h.SendMessage(t.Context(), userMessage("done"))
	if err != nil {
		t.Fatal(err)
	}
	// Right after completion the execution may still be winding down and the
	// subscription replays it; once it is gone the error shows.
	deadline := time.Now().Add(5 * time.Second)
	for {
		events, err := collect(h.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: res.(*a2a.Task).ID}))
		if err != nil {
			if !errorsIs(err, a2a.ErrTaskNotFound) || errorsIs(err, a2a.ErrUnsupportedOperation) {
				t.Errorf("default handler now answers %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscribing to a completed task keeps succeeding: %v", eventKinds(events))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Gap 11 (client): a2aclient's REST transport decodes an error body only
// when its Content-Type starts with application/json. Errors sent as
// application/a2a+json — the spec's own example (§11.6) — become an opaque
// ErrServerError. That is why REST responses are application/json for clients
// whose Accept header prefers it (as a2a-go's does).
func TestUpstreamGapClientA2AJSONErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", mediaA2AJSON)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":404,"status":"NOT_FOUND","message":"no","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`))
	}))
	t.Cleanup(srv.Close)
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolHTTPJSON)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	_, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "nope"})
	if errorsIs(err, a2a.ErrTaskNotFound) || !errorsIs(err, a2a.ErrServerError) {
		t.Errorf("a2aclient now decodes application/a2a+json errors: %v", err)
	}
}

// Gap 12: a2a-go decodes any body as JSON whatever its Content-Type.
func TestUpstreamGapContentType(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()
	b, _ := json.Marshal(userMessage("hi"))
	if r := do(t, "POST", upstream(t, h, testCard())+"/rest/message:send", b, "Content-Type", "text/plain"); r.status != http.StatusOK {
		t.Errorf("upstream now checks Content-Type: HTTP %d", r.status)
	}
	r := do(t, "POST", ours(t, h, testCard(), nil)+"/rest/message:send", b, "Content-Type", "text/plain")
	if got := restError(t, r).Reason; got != "CONTENT_TYPE_NOT_SUPPORTED" {
		t.Errorf("ours: %s", got)
	}
}
