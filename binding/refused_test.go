package binding

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/telemetry"
)

// observedServer serves the engine with tokenAuth (alice, bob), q, rl and the memory
// extension, observed by a request log, metrics and spans (returned), on every binding.
func observedServer(t *testing.T, q *Quotas, rl *RateLimit) (*testServer, *lockedLog, *prometheus.Registry, *tracetest.SpanRecorder) {
	t.Helper()
	var log lockedLog
	reg := prometheus.NewRegistry()
	spans := tracetest.NewSpanRecorder()
	obs := telemetry.New(&telemetry.Options{Logger: slog.New(slog.NewJSONHandler(&log, nil)), Registerer: reg,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))})
	mem := &fakeMemory{}
	ts := startServer(t, serverConfig{engine: true,
		opts:  &Options{Authenticate: tokenAuth, Quotas: q, RateLimit: rl, Memory: mem, Telemetry: obs},
		gopts: &GRPCOptions{Authenticate: tokenAuth, Quotas: q, RateLimit: rl, Memory: mem, Telemetry: obs}})
	return ts, &log, reg, spans
}

// requestLines are the request log's lines as "binding method principal status".
func requestLines(t *testing.T, log *lockedLog) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(log.String()) {
		var rec struct{ Msg, Binding, Method, Principal, Status string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("request log line %q: %v", line, err)
		}
		if rec.Msg == "request" {
			out = append(out, strings.Join([]string{rec.Binding, rec.Method, rec.Principal, rec.Status}, " "))
		}
	}
	slices.Sort(out)
	return out
}

// requestCount is a2awebcap_requests_total for the labels, from reg.
func requestCount(t *testing.T, reg *prometheus.Registry, binding, method, status string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "a2awebcap_requests_total" {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			want := map[string]string{"binding": binding, "method": method, "status": status}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// On every binding, calls refused before the handler — alice over her task quota, a caller
// without credentials, a version the server does not speak — are in the request log and the
// metrics with their A2A status, as alice where she is known; bob's call beside hers goes
// through; the memory extension's calls are observed as the A2A operations are.
func TestRefusalsObserved(t *testing.T) {
	t.Parallel()
	for _, b := range sessionBindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ts, log, reg, spans := observedServer(t, &Quotas{Tasks: 1}, nil)
			name := bindingName(b)
			ctx := t.Context()
			const trace, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
			alice := extClientWith(t, ts, b, http.Header{"Authorization": {"Bearer alice"}, "Traceparent": {"00-" + trace + "-" + parent + "-01"}})
			bob, anon := extClient(t, ts, b, "bob"), extClient(t, ts, b, "")
			key := "refused-" + string(b)
			t.Cleanup(func() { ts.exec.release(key) })
			waiting := userMessage("wait:" + key)
			waiting.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
			if _, err := alice.SendMessage(ctx, waiting); err != nil {
				t.Fatalf("alice's first task: %v", err)
			}
			if _, err := alice.SendMessage(ctx, userMessage("one more")); err == nil {
				t.Fatal("alice over her quota: no error")
			}
			if _, err := bob.SendMessage(ctx, userMessage("hello")); err != nil {
				t.Fatalf("bob beside alice: %v", err)
			}
			if _, err := anon.ListTasks(ctx, &a2a.ListTasksRequest{}); err == nil {
				t.Fatal("ListTasks without credentials: no error")
			}
			if _, err := alice.Memory().Get(ctx, "", false); err != nil {
				t.Fatalf("alice's memory: %v", err)
			}
			old := extClientWith(t, ts, b, http.Header{"Authorization": {"Bearer alice"}}, withVersion("0.9"))
			if _, err := old.GetTask(ctx, &a2a.GetTaskRequest{ID: "t1"}); !errorsIs(err, a2a.ErrVersionNotSupported) {
				t.Fatalf("GetTask as A2A 0.9 = %v, want VERSION_NOT_SUPPORTED", err)
			}

			// JSON-RPC authenticates before it reads the body, so a refused login's method is
			// not known; gRPC checks the version before the credentials.
			anonMethod, versionWho := "ListTasks", "alice"
			switch b {
			case client.BindingJSONRPC:
				anonMethod = unknownMethod
			case client.BindingGRPC:
				versionWho = "-"
			}
			want := []string{
				name + " GetMemory alice ok",
				name + " GetTask " + versionWho + " VERSION_NOT_SUPPORTED",
				name + " " + anonMethod + " - UNAUTHENTICATED",
				name + " SendMessage alice QUOTA_EXCEEDED",
				name + " SendMessage alice ok",
				name + " SendMessage bob ok",
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, requestLines(t, log)); diff != "" {
				t.Errorf("request log (-want +got):\n%s\n%s", diff, log.String())
			}
			for _, c := range []struct{ method, status string }{{"SendMessage", "QUOTA_EXCEEDED"}, {"SendMessage", "ok"}, {anonMethod, "UNAUTHENTICATED"}, {"GetMemory", "ok"}} {
				n := 1.0
				if c.status == "ok" && c.method == "SendMessage" {
					n = 2
				}
				if got := requestCount(t, reg, name, c.method, c.status); got != n {
					t.Errorf("a2awebcap_requests_total{binding=%q,method=%q,status=%q} = %v, want %v", name, c.method, c.status, got, n)
				}
			}
			// alice's calls, refused or not, and her extension call continue her trace.
			var traced []string
			for _, s := range spans.Ended() {
				if s.SpanContext().TraceID().String() == trace && s.Parent().SpanID().String() == parent {
					traced = append(traced, s.Name()+" "+s.Status().Code.String())
				}
			}
			slices.Sort(traced)
			if diff := cmp.Diff([]string{"a2a.GetMemory Unset", "a2a.SendMessage Error", "a2a.SendMessage Unset"}, traced); diff != "" {
				t.Errorf("spans of alice's trace (-want +got):\n%s", diff)
			}
		})
	}
}

// On every binding, alice's call over her rate is logged and counted as hers, RATE_LIMITED;
// bob's beside it goes through.
func TestRateLimitRefusalObserved(t *testing.T) {
	t.Parallel()
	for _, b := range sessionBindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ts, log, reg, _ := observedServer(t, nil, &RateLimit{PerSecond: 0.001, Burst: 2})
			name := bindingName(b)
			alice, bob := extClient(t, ts, b, "alice"), extClient(t, ts, b, "bob")
			for i := range 3 {
				_, err := alice.ListTasks(t.Context(), &a2a.ListTasksRequest{})
				if (err == nil) != (i < 2) {
					t.Fatalf("alice's ListTasks %d: %v", i+1, err)
				}
			}
			if _, err := bob.ListTasks(t.Context(), &a2a.ListTasksRequest{}); err != nil {
				t.Fatalf("bob beside alice: %v", err)
			}
			method := "ListTasks"
			if b == client.BindingJSONRPC {
				method = unknownMethod // the rate is checked before the body is read
			}
			want := []string{name + " ListTasks alice ok", name + " ListTasks alice ok", name + " ListTasks bob ok", name + " " + method + " alice RATE_LIMITED"}
			slices.Sort(want)
			if diff := cmp.Diff(want, requestLines(t, log)); diff != "" {
				t.Errorf("request log (-want +got):\n%s", diff)
			}
			if got := requestCount(t, reg, name, method, "RATE_LIMITED"); got != 1 {
				t.Errorf("a2awebcap_requests_total{binding=%q,method=%q,status=RATE_LIMITED} = %v, want 1", name, method, got)
			}
		})
	}
}

// bindingName is the request log's name of a client's binding.
func bindingName(b client.Binding) string {
	return map[client.Binding]string{client.BindingJSONRPC: bindingJSONRPC, client.BindingREST: bindingREST,
		client.BindingGRPC: bindingGRPC, client.BindingCapnweb: bindingCapnweb, client.BindingCapnwebBatch: bindingCapnweb}[b]
}

// withVersion makes a client declare A2A-Version v on every call.
func withVersion(v string) a2aclient.CallInterceptor {
	return paramsInterceptor{params: map[string][]string{"A2A-Version": {v}}}
}

// extClientWith is extClient with headers of its own and call interceptors.
func extClientWith(t *testing.T, ts *testServer, b client.Binding, h http.Header, ic ...a2aclient.CallInterceptor) *client.Client {
	t.Helper()
	c, err := client.New(t.Context(), ts.baseURL, &client.Options{Binding: b, Header: h, Interceptors: ic})
	if err != nil {
		t.Fatalf("client.New(%s) = %v", b, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// Refusals of the HTTP bindings that come before the body is read, or without a route, are
// logged with what is known of the call: a JSON-RPC body over the limit (method unknown), a
// REST path that is no route (as bob, method unknown), a REST body that is not JSON; and so
// are the ones a2a-go's handlers make without calling the RequestHandler: JSON that does not
// parse, an unknown method, parameters that do not decode.
func TestHTTPRefusalsObserved(t *testing.T) {
	t.Parallel()
	var log lockedLog
	obs := telemetry.New(&telemetry.Options{Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Authenticate: tokenAuth, MaxBodyBytes: 512, Telemetry: obs}})
	big := jsonrpcBody("GetTask", map[string]any{"id": strings.Repeat("x", 1024)})
	if r := do(t, "POST", ts.baseURL+DefaultJSONRPCPath, big, "Authorization", "Bearer alice", "Content-Type", "application/json"); jsonrpcError(t, r).Reason != "INVALID_REQUEST" {
		t.Errorf("a body over the limit: HTTP %d %s", r.status, r.body)
	}
	if r := do(t, "GET", ts.baseURL+DefaultRESTPath+"/nowhere", nil, "Authorization", "Bearer bob"); r.status != http.StatusNotFound {
		t.Errorf("GET /nowhere: HTTP %d %s", r.status, r.body)
	}
	if r := do(t, "POST", ts.baseURL+DefaultRESTPath+"/message:send", []byte(`{}`), "Authorization", "Bearer alice", "Content-Type", "text/plain"); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("POST message:send as text/plain: HTTP %d %s", r.status, r.body)
	}
	// Another site's POST, and its preflight.
	if r := do(t, "POST", ts.baseURL+DefaultRESTPath+"/message:send", []byte(`{}`), "Origin", "http://evil.example", "Content-Type", "application/json"); r.status != http.StatusForbidden {
		t.Errorf("a cross-site POST: HTTP %d %s", r.status, r.body)
	}
	if r := do(t, "OPTIONS", ts.baseURL+DefaultRESTPath+"/tasks", nil, "Origin", "http://evil.example", "Access-Control-Request-Method", "GET"); r.status != http.StatusForbidden {
		t.Errorf("a cross-site preflight: HTTP %d %s", r.status, r.body)
	}
	// Refused by a2a-go's handlers themselves, which never call the RequestHandler.
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":`, `{"jsonrpc":"2.0","id":2,"method":"Nope","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":5}}`} {
		if r := do(t, "POST", ts.baseURL+DefaultJSONRPCPath, []byte(body), "Authorization", "Bearer alice", "Content-Type", "application/json"); r.status != http.StatusOK || !strings.Contains(string(r.body), `"error"`) {
			t.Errorf("POST %s: HTTP %d %s", body, r.status, r.body)
		}
	}
	if r := do(t, "POST", ts.baseURL+DefaultRESTPath+"/message:send", []byte(`{"message":`), "Authorization", "Bearer bob", "Content-Type", "application/json"); r.status != http.StatusBadRequest {
		t.Errorf("POST message:send with a truncated body: HTTP %d %s", r.status, r.body)
	}
	want := []string{"jsonrpc GetTask alice INVALID_PARAMS", "jsonrpc unknown alice INVALID_REQUEST", "jsonrpc unknown alice METHOD_NOT_FOUND", "jsonrpc unknown alice PARSE_ERROR",
		"rest SendMessage - CROSS_ORIGIN_REQUEST", "rest SendMessage alice CONTENT_TYPE_NOT_SUPPORTED", "rest SendMessage bob PARSE_ERROR",
		"rest unknown - CROSS_ORIGIN_REQUEST", "rest unknown bob METHOD_NOT_FOUND"}
	slices.Sort(want)
	if diff := cmp.Diff(want, requestLines(t, &log)); diff != "" {
		t.Errorf("request log (-want +got):\n%s", diff)
	}
}

// A capnweb authenticate() that fails is a refused call of its own (Authenticate), beside the
// calls the unauthenticated session makes, which are refused as theirs; one that succeeds is no
// line, and the session's next call is logged as its principal.
func TestCapnwebAuthenticateRefusalObserved(t *testing.T) {
	t.Parallel()
	ts, log, _, _ := observedServer(t, nil, nil)
	main := ts.dialCapnweb(t, "", nil).Main()
	if _, err := main.Call("listTasks", map[string]any{}).Await(t.Context()); err == nil {
		t.Fatal("listTasks before authenticate: no error")
	}
	if _, err := main.Call("authenticate", map[string]any{"Authorization": "Bearer carol"}).Await(t.Context()); err == nil {
		t.Fatal("authenticate as carol: no error")
	}
	alice := main.Call("authenticate", map[string]any{"Authorization": "Bearer alice"})
	if _, err := alice.Call("listTasks", map[string]any{}).Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"capnweb Authenticate - UNAUTHORIZED", "capnweb ListTasks - UNAUTHENTICATED", "capnweb ListTasks alice ok"}
	if diff := cmp.Diff(want, requestLines(t, log)); diff != "" {
		t.Errorf("request log (-want +got):\n%s", diff)
	}
}
