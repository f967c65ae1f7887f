package binding

import (
	"bufio"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpcv0 "github.com/a2aproject/a2a-go/v2/a2agrpc/v0"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestCard(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{opts: &Options{CardMaxAge: 90 * time.Second}})
	url := ts.baseURL + WellKnownCardPath

	first := do(t, "GET", url, nil)
	if first.status != http.StatusOK {
		t.Fatalf("GET card: HTTP %d", first.status)
	}
	etag := first.header.Get("ETag")
	gotHeaders := map[string]string{
		"Content-Type":  first.header.Get("Content-Type"),
		"Cache-Control": first.header.Get("Cache-Control"),
		"Strong ETag":   boolString(strings.HasPrefix(etag, `"`) && strings.HasSuffix(etag, `"`) && len(etag) > 2),
	}
	wantHeaders := map[string]string{"Content-Type": "application/json", "Cache-Control": "public, max-age=90", "Strong ETag": "true"}
	if diff := cmp.Diff(wantHeaders, gotHeaders); diff != "" {
		t.Errorf("card headers (-want +got):\n%s", diff)
	}

	var card a2a.AgentCard
	if err := json.Unmarshal(first.body, &card); err != nil {
		t.Fatal(err)
	}
	wantIfaces := []*a2a.AgentInterface{
		{URL: ts.baseURL + DefaultCapnwebPath, ProtocolBinding: ProtocolCapnweb, ProtocolVersion: "1.0"},
		{URL: ts.baseURL + DefaultJSONRPCPath, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"},
		{URL: ts.baseURL + DefaultRESTPath, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: "1.0"},
		{URL: ts.grpcAddr, ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: "1.0"},
	}
	if diff := cmp.Diff(wantIfaces, card.SupportedInterfaces); diff != "" {
		t.Errorf("supportedInterfaces (-want +got):\n%s", diff)
	}

	again := do(t, "GET", url, nil)
	if again.header.Get("ETag") != etag {
		t.Errorf("ETag changed between identical requests: %s, %s", etag, again.header.Get("ETag"))
	}

	for _, tc := range []struct {
		name        string
		method      string
		ifNoneMatch string
		wantStatus  int
		wantBody    bool
	}{
		{"revalidate", "GET", etag, http.StatusNotModified, false},
		{"revalidate weak", "GET", "W/" + etag, http.StatusNotModified, false},
		{"revalidate list", "GET", `"other", ` + etag, http.StatusNotModified, false},
		{"revalidate star", "GET", "*", http.StatusNotModified, false},
		{"stale etag", "GET", `"other"`, http.StatusOK, true},
		{"HEAD", "HEAD", "", http.StatusOK, false},
		{"HEAD revalidate", "HEAD", etag, http.StatusNotModified, false},
		{"POST", "POST", "", http.StatusMethodNotAllowed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hdr []string
			if tc.ifNoneMatch != "" {
				hdr = []string{"If-None-Match", tc.ifNoneMatch}
			}
			r := do(t, tc.method, url, nil, hdr...)
			if r.status != tc.wantStatus {
				t.Errorf("HTTP %d, want %d", r.status, tc.wantStatus)
			}
			if got := len(r.body) > 0; got != tc.wantBody {
				t.Errorf("body present = %v, want %v", got, tc.wantBody)
			}
			if tc.wantStatus != http.StatusMethodNotAllowed && r.header.Get("ETag") != etag {
				t.Errorf("ETag = %q, want %q", r.header.Get("ETag"), etag)
			}
			if tc.method == "HEAD" && tc.wantStatus == http.StatusOK && r.header.Get("Content-Length") != first.header.Get("Content-Length") {
				t.Errorf("HEAD Content-Length %q, GET %q", r.header.Get("Content-Length"), first.header.Get("Content-Length"))
			}
		})
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestCardOptions(t *testing.T) {
	t.Parallel()
	h, _ := newA2AHandler()

	t.Run("NoCacheAndBaseURL", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(NewHTTPHandler(h, testCard(), &Options{CardMaxAge: -1, BaseURL: "https://agent.example.com/"}))
		t.Cleanup(srv.Close)
		r := do(t, "GET", srv.URL+WellKnownCardPath, nil)
		if got := r.header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("Cache-Control = %q", got)
		}
		var card a2a.AgentCard
		if err := json.Unmarshal(r.body, &card); err != nil {
			t.Fatal(err)
		}
		want := []string{"https://agent.example.com/a2a/capnweb", "https://agent.example.com/a2a/jsonrpc", "https://agent.example.com/a2a/rest"}
		if diff := cmp.Diff(want, urls(card.SupportedInterfaces)); diff != "" {
			t.Errorf("URLs (-want +got):\n%s", diff)
		}
	})

	t.Run("PathsFromCard", func(t *testing.T) {
		t.Parallel()
		card := testCard()
		card.SupportedInterfaces = []*a2a.AgentInterface{
			{URL: "https://agent.example.com/rest", ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: "1.0"},
			{URL: "https://agent.example.com/rpc", ProtocolBinding: a2a.TransportProtocolJSONRPC}, // version filled in
		}
		srv := httptest.NewServer(NewHTTPHandler(h, card, nil))
		t.Cleanup(srv.Close)
		card.Name = "changed later" // not retained

		var served a2a.AgentCard
		if err := json.Unmarshal(do(t, "GET", srv.URL+WellKnownCardPath, nil).body, &served); err != nil {
			t.Fatal(err)
		}
		want := []*a2a.AgentInterface{
			{URL: srv.URL + DefaultCapnwebPath, ProtocolBinding: ProtocolCapnweb, ProtocolVersion: "1.0"},
			{URL: "https://agent.example.com/rest", ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: "1.0"},
			{URL: "https://agent.example.com/rpc", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"},
		}
		if diff := cmp.Diff(want, served.SupportedInterfaces); diff != "" {
			t.Errorf("served interfaces (-want +got):\n%s", diff)
		}
		if served.Name != "echo" {
			t.Errorf("served name %q: the handler retained the caller's card", served.Name)
		}
		if r := do(t, "POST", srv.URL+"/rpc", jsonrpcBody("GetTask", map[string]any{"id": "x"}), "A2A-Version", "1.0"); jsonrpcError(t, r).Reason != "TASK_NOT_FOUND" {
			t.Errorf("JSON-RPC at the card's path: %s", r.body)
		}
		if r := do(t, "GET", srv.URL+"/rest/tasks/x", nil); r.status != http.StatusNotFound || restError(t, r).Reason != "TASK_NOT_FOUND" {
			t.Errorf("REST at the card's path: HTTP %d %s", r.status, r.body)
		}
		// The card given is not modified.
		if card.SupportedInterfaces[1].ProtocolVersion != "" || len(card.SupportedInterfaces) != 2 {
			t.Errorf("caller's card was modified: %+v", card.SupportedInterfaces)
		}
	})

	t.Run("RelativeURLsFollowHost", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(NewHTTPHandler(h, testCard(), nil))
		t.Cleanup(srv.Close)
		a := do(t, "GET", srv.URL+WellKnownCardPath, nil)
		b := do(t, "GET", srv.URL+WellKnownCardPath, nil, "Host", "other.example:8080")
		var card a2a.AgentCard
		if err := json.Unmarshal(b.body, &card); err != nil {
			t.Fatal(err)
		}
		if got := card.SupportedInterfaces[1].URL; got != "http://other.example:8080/a2a/jsonrpc" {
			t.Errorf("URL for Host other.example:8080 = %q", got)
		}
		if a.header.Get("ETag") == b.header.Get("ETag") {
			t.Errorf("different cards share ETag %s", a.header.Get("ETag"))
		}
	})
}

func urls(ifaces []*a2a.AgentInterface) []string {
	var out []string
	for _, in := range ifaces {
		out = append(out, in.URL)
	}
	return out
}

// TestWireErrors checks the codes each binding puts on the wire, per the
// spec's error table (§5.4).
func TestWireErrors(t *testing.T) {
	t.Parallel()
	card := testCard()
	const ext = "urn:ext:required"
	card.Capabilities.Extensions = []a2a.AgentExtension{{URI: ext, Required: true}}
	ts := startServer(t, serverConfig{card: card, opts: &Options{MaxBodyBytes: 1024}, gopts: &GRPCOptions{MaxMessageBytes: 1024}})
	rpc := ts.baseURL + DefaultJSONRPCPath
	rest := ts.baseURL + DefaultRESTPath
	big := strings.Repeat("x", 2048)

	type row struct {
		name     string
		jsonrpc  func() rawResponse
		rest     func() rawResponse
		grpcCall func(ctx context.Context, c a2apb.A2AServiceClient) error
		grpcMD   []string
		want     [3]wireError // JSON-RPC, REST, gRPC (Code = codes.Code)
	}
	send := func(ctx context.Context, c a2apb.A2AServiceClient, text string) error {
		req, _ := pbconv.ToProtoSendMessageRequest(userMessage(text))
		_, err := c.SendMessage(ctx, req)
		return err
	}
	rows := []row{
		{
			name: "TaskNotFound",
			jsonrpc: func() rawResponse {
				return do(t, "POST", rpc, jsonrpcBody("GetTask", map[string]any{"id": "nope"}), "A2A-Extensions", ext)
			},
			rest: func() rawResponse { return do(t, "GET", rest+"/tasks/nope", nil, "A2A-Extensions", ext) },
			grpcCall: func(ctx context.Context, c a2apb.A2AServiceClient) error {
				_, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "nope"})
				return err
			},
			grpcMD: []string{"a2a-extensions", ext},
			want:   [3]wireError{{-32001, "", "TASK_NOT_FOUND"}, {404, "NOT_FOUND", "TASK_NOT_FOUND"}, {int(codes.NotFound), "", "TASK_NOT_FOUND"}},
		},
		{
			name: "VersionNotSupported",
			jsonrpc: func() rawResponse {
				return do(t, "POST", rpc, jsonrpcBody("GetTask", map[string]any{"id": "x"}), "A2A-Version", "9.9", "A2A-Extensions", ext)
			},
			rest: func() rawResponse {
				return do(t, "GET", rest+"/tasks/x", nil, "A2A-Version", "9.9", "A2A-Extensions", ext)
			},
			grpcCall: func(ctx context.Context, c a2apb.A2AServiceClient) error {
				_, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"})
				return err
			},
			grpcMD: []string{"a2a-version", "9.9", "a2a-extensions", ext},
			want:   [3]wireError{{-32009, "", "VERSION_NOT_SUPPORTED"}, {400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"}, {int(codes.FailedPrecondition), "", "VERSION_NOT_SUPPORTED"}},
		},
		{
			name: "VersionMalformed",
			jsonrpc: func() rawResponse {
				return do(t, "POST", rpc, jsonrpcBody("GetTask", map[string]any{"id": "x"}), "A2A-Version", "v1", "A2A-Extensions", ext)
			},
			rest: func() rawResponse {
				return do(t, "GET", rest+"/tasks/x?A2A-Version=latest", nil, "A2A-Extensions", ext)
			},
			grpcCall: func(ctx context.Context, c a2apb.A2AServiceClient) error {
				_, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"})
				return err
			},
			grpcMD: []string{"a2a-version", "one", "a2a-extensions", ext},
			want:   [3]wireError{{-32009, "", "VERSION_NOT_SUPPORTED"}, {400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"}, {int(codes.FailedPrecondition), "", "VERSION_NOT_SUPPORTED"}},
		},
		{
			name: "ExtensionSupportRequired",
			jsonrpc: func() rawResponse {
				return do(t, "POST", rpc, jsonrpcBody("GetTask", map[string]any{"id": "x"}), "A2A-Extensions", "urn:other")
			},
			rest: func() rawResponse { return do(t, "GET", rest+"/tasks/x", nil) },
			grpcCall: func(ctx context.Context, c a2apb.A2AServiceClient) error {
				_, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"})
				return err
			},
			want: [3]wireError{{-32008, "", "EXTENSION_SUPPORT_REQUIRED"}, {400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED"}, {int(codes.FailedPrecondition), "", "EXTENSION_SUPPORT_REQUIRED"}},
		},
		{
			name: "BodyTooLarge",
			jsonrpc: func() rawResponse {
				return do(t, "POST", rpc, jsonrpcBody("SendMessage", userMessage(big)), "A2A-Extensions", ext)
			},
			rest: func() rawResponse {
				b, _ := json.Marshal(userMessage(big))
				return do(t, "POST", rest+"/message:send", b, "A2A-Extensions", ext)
			},
			grpcCall: func(ctx context.Context, c a2apb.A2AServiceClient) error { return send(ctx, c, big) },
			grpcMD:   []string{"a2a-extensions", ext},
			want:     [3]wireError{{-32600, "", "INVALID_REQUEST"}, {413, "RESOURCE_EXHAUSTED", "INVALID_REQUEST"}, {int(codes.ResourceExhausted), "", ""}},
		},
	}
	gconn, err := grpc.NewClient(ts.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gconn.Close() })
	gclient := a2apb.NewA2AServiceClient(gconn)

	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.jsonrpc()
			if r.status != http.StatusOK {
				t.Errorf("JSON-RPC: HTTP %d, want 200", r.status)
			}
			var got [3]wireError
			got[0] = jsonrpcError(t, r)
			got[1] = restError(t, tc.rest())
			ctx := metadata.AppendToOutgoingContext(t.Context(), tc.grpcMD...)
			got[2] = grpcWireError(tc.grpcCall(ctx, gclient))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("JSON-RPC, REST, gRPC errors (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("ContentType", func(t *testing.T) {
		t.Parallel()
		b, _ := json.Marshal(userMessage("hi"))
		r := do(t, "POST", rest+"/message:send", b, "Content-Type", "text/plain", "A2A-Extensions", ext)
		if diff := cmp.Diff(wireError{415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"}, restError(t, r)); diff != "" {
			t.Errorf("REST text/plain (-want +got):\n%s", diff)
		}
		r = do(t, "POST", rpc, jsonrpcBody("SendMessage", userMessage("hi")), "Content-Type", "text/plain", "A2A-Extensions", ext)
		if diff := cmp.Diff(wireError{-32005, "", "CONTENT_TYPE_NOT_SUPPORTED"}, jsonrpcError(t, r)); diff != "" {
			t.Errorf("JSON-RPC text/plain (-want +got):\n%s", diff)
		}
		for _, ct := range []string{"application/a2a+json", "application/json; charset=utf-8"} {
			r = do(t, "POST", rest+"/message:send", b, "Content-Type", ct, "A2A-Extensions", ext)
			if r.status != http.StatusOK {
				t.Errorf("REST %s: HTTP %d %s", ct, r.status, r.body)
			}
			r = do(t, "POST", rpc, jsonrpcBody("SendMessage", userMessage("hi")), "Content-Type", ct, "A2A-Extensions", ext)
			if strings.Contains(string(r.body), `"error"`) {
				t.Errorf("JSON-RPC %s: %s", ct, r.body)
			}
		}
	})

	t.Run("NoRoute", func(t *testing.T) {
		t.Parallel()
		r := do(t, "GET", rest+"/nothing/here/at/all", nil, "A2A-Extensions", ext)
		if diff := cmp.Diff(wireError{404, "NOT_FOUND", "METHOD_NOT_FOUND"}, restError(t, r)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("StreamingJSONRPCErrorIsSSE", func(t *testing.T) {
		t.Parallel()
		r := do(t, "POST", rpc, jsonrpcBody("SendStreamingMessage", userMessage("hi")), "A2A-Version", "2.0", "A2A-Extensions", ext)
		if ct := r.header.Get("Content-Type"); ct != mediaSSE {
			t.Errorf("Content-Type = %q, want %s", ct, mediaSSE)
		}
		if got := jsonrpcError(t, r); got.Code != -32009 {
			t.Errorf("code = %d", got.Code)
		}
	})
}

func grpcWireError(err error) wireError {
	st := status.Convert(err)
	we := wireError{Code: int(st.Code())}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			we.Reason = info.Reason
		}
	}
	return we
}

// TestKeepAlive: slow streams carry ": keep-alive" comments at the
// configured interval on both HTTP bindings.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	// A quiet stream of 1 s with a comment due every 20 ms: at least 3 arrive however late a
	// loaded machine runs the timers.
	ts := startServer(t, serverConfig{opts: &Options{KeepAlive: 20 * time.Millisecond}})
	slow, _ := json.Marshal(userMessage("sleep:1s"))
	for name, req := range map[string]func() rawResponse{
		"JSONRPC": func() rawResponse {
			return do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("SendStreamingMessage", userMessage("sleep:1s")), "Accept", mediaSSE)
		},
		"HTTP+JSON": func() rawResponse {
			return do(t, "POST", ts.baseURL+DefaultRESTPath+"/message:stream", slow, "Accept", mediaSSE)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := req()
			if ct := r.header.Get("Content-Type"); ct != mediaSSE {
				t.Fatalf("Content-Type %q: %s", ct, r.body)
			}
			var keepAlives, events int
			sc := bufio.NewScanner(strings.NewReader(string(r.body)))
			for sc.Scan() {
				switch line := sc.Text(); {
				case strings.HasPrefix(line, ":") && strings.Contains(line, "keep-alive"):
					keepAlives++
				case strings.HasPrefix(line, "data:"):
					events++
				}
			}
			if keepAlives < 3 {
				t.Errorf("%d keep-alive comments in a 1s stream at 20ms", keepAlives)
			}
			if events != 4 {
				t.Errorf("%d events, want 4", events)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	got := (*Options)(nil).withDefaults()
	want := Options{CardMaxAge: 5 * time.Minute, KeepAlive: 15 * time.Second, MaxBodyBytes: 4 << 20, ObserverWindow: 16}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestRESTMediaType: REST speaks application/a2a+json to clients that ask for it, and
// application/json otherwise; JSON-RPC stays application/json.
func TestRESTMediaType(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	b, _ := json.Marshal(userMessage("hi"))
	for _, tc := range []struct {
		accept string
		want   string
	}{
		{"", mediaJSON},
		{"*/*", mediaJSON},
		{"application/a2a+json, application/json", mediaA2AJSON},
		{"application/json", mediaJSON},
		{"application/json, application/a2a+json;q=0.5", mediaJSON},
		{"application/a2a+json;q=0.9, */*;q=0.1", mediaA2AJSON},
	} {
		t.Run("Accept="+tc.accept, func(t *testing.T) {
			t.Parallel()
			ok := do(t, "POST", ts.baseURL+DefaultRESTPath+"/message:send", b, "Accept", tc.accept, "Content-Type", mediaA2AJSON)
			missing := do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/nope", nil, "Accept", tc.accept)
			got := []string{ok.header.Get("Content-Type"), missing.header.Get("Content-Type")}
			if diff := cmp.Diff([]string{tc.want, tc.want}, got); diff != "" {
				t.Errorf("Content-Type of a result and of an error (-want +got):\n%s", diff)
			}
			if ok.status != http.StatusOK || missing.status != http.StatusNotFound {
				t.Errorf("HTTP %d and %d", ok.status, missing.status)
			}
		})
	}
	r := do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("GetTask", map[string]any{"id": "x"}), "Accept", mediaA2AJSON)
	if ct := r.header.Get("Content-Type"); ct != mediaJSON {
		t.Errorf("JSON-RPC Content-Type = %q, want application/json", ct)
	}
}

// TestRESTTenant: the /{tenant}/... forms of every REST route reach the
// handler with the tenant set, for raw requests and a2a-go's client.
func TestRESTTenant(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	rest := ts.baseURL + DefaultRESTPath
	b, _ := json.Marshal(userMessage("tenanted"))

	r := do(t, "POST", rest+"/acme/message:send", b)
	if r.status != http.StatusOK {
		t.Fatalf("POST /acme/message:send: HTTP %d %s", r.status, r.body)
	}
	var res struct {
		Task a2a.Task `json:"task"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	if got := res.Task.Artifacts[0].Metadata["tenant"]; got != "acme" {
		t.Errorf("tenant seen by the agent = %v, want acme", got)
	}
	for _, path := range []string{
		"/acme/tasks/" + string(res.Task.ID),
		"/acme/tasks?pageSize=10",
		"/acme/tasks/" + string(res.Task.ID) + "/pushNotificationConfigs",
	} {
		if r := do(t, "GET", rest+path, nil); r.status != http.StatusOK {
			t.Errorf("GET %s: HTTP %d %s", path, r.status, r.body)
		}
	}

	// a2a-go's client puts the interface's tenant in front of every path.
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{
		{URL: rest, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: "1.0", Tenant: "globex"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	events, err := collect(c.SendStreamingMessage(t.Context(), userMessage("tenanted stream")))
	if err != nil {
		t.Fatal(err)
	}
	var tenant any
	for _, ev := range events {
		if art, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			tenant = art.Artifact.Metadata["tenant"]
		}
	}
	if tenant != "globex" {
		t.Errorf("tenant over the client = %v, want globex", tenant)
	}
}

// TestRESTStreamErrors: a REST stream that fails before its first event is an
// HTTP error; one that fails later carries an SSE "error" event.
func TestRESTStreamErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	rest := ts.baseURL + DefaultRESTPath

	for _, method := range []string{"POST", "GET"} { // §11.3.2 says POST, a2a.proto GET
		r := do(t, method, rest+"/tasks/nope:subscribe", nil, "Accept", mediaSSE)
		if diff := cmp.Diff(wireError{404, "NOT_FOUND", "TASK_NOT_FOUND"}, restError(t, r)); diff != "" {
			t.Errorf("%s :subscribe unknown task (-want +got):\n%s", method, diff)
		}
	}

	// A handler whose stream fails after its first event.
	h, _ := newA2AHandler()
	srv := httptest.NewServer(NewHTTPHandler(midStreamFailure{h}, testCard(), nil))
	t.Cleanup(srv.Close)
	b, _ := json.Marshal(userMessage("hi"))
	r := do(t, "POST", srv.URL+DefaultRESTPath+"/message:stream", b, "Accept", mediaSSE)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != mediaSSE {
		t.Fatalf("HTTP %d %s", r.status, r.header.Get("Content-Type"))
	}
	var blocks []string
	for block := range strings.SplitSeq(strings.TrimSpace(string(r.body)), "\n\n") {
		blocks = append(blocks, block)
	}
	last := blocks[len(blocks)-1]
	if !strings.HasPrefix(last, "event: error\n") || !strings.Contains(last, `data: {"error":`) {
		t.Errorf("last event %q is not an SSE error event", last)
	}
	if len(blocks) < 2 {
		t.Errorf("no events before the error: %q", r.body)
	}
}

// midStreamFailure streams one task snapshot, then fails.
type midStreamFailure struct{ a2asrv.RequestHandler }

func (midStreamFailure) SendStreamingMessage(_ context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		task := &a2a.Task{ID: a2a.NewTaskID(), ContextID: a2a.NewContextID(), Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
		if yield(task, nil) {
			yield(nil, a2a.NewError(a2a.ErrInternalError, "backend went away"))
		}
	}
}

// TestServe03: with Serve03, 0.3 clients are served on the same endpoints
// through a2a-go's a2av0 layer, on every binding.
func TestServe03(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{opts: &Options{Serve03: true}, gopts: &GRPCOptions{Serve03: true}})

	var card a2a.AgentCard
	r := do(t, "GET", ts.baseURL+WellKnownCardPath, nil)
	if err := json.Unmarshal(r.body, &card); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, in := range card.SupportedInterfaces {
		versions = append(versions, string(in.ProtocolBinding)+" "+string(in.ProtocolVersion))
	}
	want := []string{string(ProtocolCapnweb) + " 1.0", "JSONRPC 1.0", "HTTP+JSON 1.0", "GRPC 1.0", "JSONRPC 0.3", "HTTP+JSON 0.3", "GRPC 0.3"}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("card interfaces (-want +got):\n%s", diff)
	}
	var legacy struct {
		ProtocolVersion    string `json:"protocolVersion"`
		URL                string `json:"url"`
		PreferredTransport string `json:"preferredTransport"`
	}
	if err := json.Unmarshal(r.body, &legacy); err != nil || legacy.ProtocolVersion != "0.3" || legacy.URL != ts.baseURL+DefaultJSONRPCPath {
		t.Errorf("0.3 card fields: %+v (%v)", legacy, err)
	}

	for name, opt := range map[string]a2aclient.FactoryOption{
		"JSONRPC":   a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{}),
		"HTTP+JSON": a2av0.WithRESTTransport(a2av0.RESTTransportConfig{}),
		"GRPC":      a2agrpcv0.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := a2aclient.NewFromCard(t.Context(), &card, a2aclient.WithDefaultsDisabled(), opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Destroy() })
			res, err := c.SendMessage(t.Context(), userMessage("old client"))
			if err != nil {
				t.Fatalf("0.3 SendMessage: %v", err)
			}
			task, ok := res.(*a2a.Task)
			if !ok || task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("0.3 result %T %+v", res, res)
			}
			events, err := collect(c.SendStreamingMessage(t.Context(), userMessage("old stream")))
			if err != nil || len(events) == 0 {
				t.Errorf("0.3 stream: %d events, %v", len(events), err)
			}
			if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err != nil {
				t.Errorf("0.3 GetTask: %v", err)
			}
			// 1.0 clients keep working next to them.
			if _, err := ts.client(t, transportOf(name)).GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err != nil {
				t.Errorf("1.0 GetTask: %v", err)
			}
		})
	}

	t.Run("HeaderlessLegacyMethod", func(t *testing.T) {
		t.Parallel()
		body := []byte(`{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"no header"}]}}}`)
		r := do(t, "POST", ts.baseURL+DefaultJSONRPCPath, body)
		var resp struct {
			Result struct {
				Kind   string `json:"kind"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"result"`
		}
		if err := json.Unmarshal(r.body, &resp); err != nil || resp.Result.Kind != "task" || resp.Result.Status.State != "completed" {
			t.Errorf("0.3 request without A2A-Version: %s", r.body)
		}
	})

	t.Run("UnknownVersionListsSupported", func(t *testing.T) {
		t.Parallel()
		r := do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/x", nil, "A2A-Version", "0.2")
		if !strings.Contains(string(r.body), `"supportedVersions":"1.0,0.3"`) {
			t.Errorf("error does not list the supported versions: %s", r.body)
		}
	})
}

func transportOf(name string) a2a.TransportProtocol { return a2a.TransportProtocol(name) }

// TestEmptyVersion03: EmptyVersion "0.3" without Serve03 rejects requests
// that declare no version, as the spec reads an empty version as 0.3.
func TestEmptyVersion03(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{opts: &Options{EmptyVersion: "0.3"}})
	r := do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/x", nil)
	if got := restError(t, r).Reason; got != "VERSION_NOT_SUPPORTED" {
		t.Errorf("reason = %s", got)
	}
	r = do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/x", nil, "A2A-Version", "1.0")
	if got := restError(t, r).Reason; got != "TASK_NOT_FOUND" {
		t.Errorf("with 1.0: reason = %s", got)
	}
}

func TestInvalidOptionsPanic(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]*Options{
		"EmptyVersion": {EmptyVersion: "2.0"},
		"BaseURL":      {BaseURL: "agent.example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			h, _ := newA2AHandler()
			NewHTTPHandler(h, testCard(), opts)
		})
	}
}
