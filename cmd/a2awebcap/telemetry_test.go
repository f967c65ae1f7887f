package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2awebcap/a2awebcap/client"
)

// serveObserved runs serve with args and a JSON log into log; it returns the base URL.
func serveObserved(t *testing.T, log *lockedBuffer, cfgHook func(*serveConfig), args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	c, err := parseServe(append([]string{"-addr", addr, "-db", "memory", "-no-push", "-log-format", "json"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	if cfgHook != nil {
		cfgHook(&c)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, c, c.ops.newLogger(log, slog.LevelInfo)) }()
	waitUp(t, addr)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + addr
}

// callAs sends "echo hi" and reads the task back over binding b, with API key key ("": none).
func callAs(t *testing.T, base string, b client.Binding, key string) error {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("X-API-Key", key)
	}
	c, err := client.New(t.Context(), base, &client.Options{Binding: b, Header: h})
	if err != nil {
		return err
	}
	defer c.Destroy()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo hi"))})
	if err != nil {
		return err
	}
	if task, ok := res.(*a2a.Task); ok {
		if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err != nil {
			return err
		}
	}
	return nil
}

// logRecords are the JSON log's records with msg.
func logRecords(t *testing.T, log string, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(log) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// Every A2A call, on every binding, is one request log line naming its principal, and the
// metrics count it by binding and method; /metrics is for operators when serve authenticates;
// a refused login is audited, without the credentials.
func TestServeRequestLogAndMetrics(t *testing.T) {
	t.Parallel()
	var log lockedBuffer
	grpcAddr := freeAddr(t)
	base := serveObserved(t, &log, nil, "-grpc-addr", grpcAddr, "-api-key", "k-alice-secret=alice", "-api-key", "k-bob-secret=bob",
		"-operators", "alice")
	bindings := []client.Binding{client.BindingJSONRPC, client.BindingREST, client.BindingGRPC, client.BindingCapnweb, client.BindingCapnwebBatch}
	for _, b := range bindings {
		if err := callAs(t, base, b, "k-alice-secret"); err != nil {
			t.Fatalf("alice over %s: %v", b, err)
		}
	}
	for _, b := range []client.Binding{client.BindingCapnweb, client.BindingJSONRPC} {
		if err := callAs(t, base, b, "k-bob-secret"); err != nil {
			t.Fatalf("bob over %s: %v", b, err)
		}
	}
	for _, b := range []client.Binding{client.BindingJSONRPC, client.BindingCapnweb} {
		c, err := client.New(t.Context(), base, &client.Options{Binding: b, Header: http.Header{"X-Api-Key": {"k-alice-secret"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range c.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo streamed"))}) {
			if err != nil {
				t.Fatalf("stream over %s: %v", b, err)
			}
		}
		c.Destroy()
	}
	if err := callAs(t, base, client.BindingJSONRPC, "k-mallory-guess"); err == nil {
		t.Fatal("a wrong key was accepted")
	}

	type key struct{ binding, method, principal string }
	seen := map[key]int{}
	var refused []string
	for _, rec := range logRecords(t, log.String(), "request") {
		if rec["method"] == "SendStreamingMessage" {
			continue
		}
		if rec["status"] != "ok" {
			// JSON-RPC refuses a login before it reads the body: the method is not known.
			refused = append(refused, fmt.Sprint(rec["binding"], " ", rec["method"], " ", rec["principal"], " ", rec["status"]))
			continue
		}
		if rec["duration"] == nil || rec["task"] == "" {
			t.Errorf("request record %v: want status ok, a duration and the task", rec)
		}
		seen[key{rec["binding"].(string), rec["method"].(string), rec["principal"].(string)}]++
	}
	for _, b := range []string{"jsonrpc", "rest", "grpc", "capnweb"} {
		for _, m := range []string{"SendMessage", "GetTask"} {
			want := 1
			if b == "capnweb" {
				want = 2 // WebSocket and batch
			}
			if got := seen[key{b, m, "alice"}]; got != want {
				t.Errorf("request log: %d lines for alice's %s over %s, want %d (all: %v)", got, m, b, want, seen)
			}
		}
	}
	for _, b := range []string{"capnweb", "jsonrpc"} {
		if seen[key{b, "SendMessage", "bob"}] != 1 {
			t.Errorf("request log: bob's SendMessage over %s is not there once (all: %v)", b, seen)
		}
	}
	if want := []string{"jsonrpc unknown - UNAUTHENTICATED"}; !slices.Equal(refused, want) {
		t.Errorf("refused calls in the request log: %q, want %q (mallory's)", refused, want)
	}
	if strings.Contains(log.String(), "secret") || strings.Contains(log.String(), "mallory-guess") {
		t.Errorf("the log shows a credential:\n%s", log.String())
	}
	audit := logRecords(t, log.String(), "audit")
	if len(audit) != 1 || audit[0]["event"] != "auth-failure" || audit[0]["binding"] != "jsonrpc" || audit[0]["remote"] != "127.0.0.1" {
		t.Errorf("audit records %v, want one auth-failure on jsonrpc from 127.0.0.1", audit)
	}

	scrape := func(key string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("anonymous GET /metrics: HTTP %d, want 401", code)
	}
	if code, _ := scrape("k-bob-secret"); code != http.StatusForbidden {
		t.Errorf("bob (no operator) GET /metrics: HTTP %d, want 403", code)
	}
	code, metrics := scrape("k-alice-secret")
	if code != http.StatusOK {
		t.Fatalf("alice (operator) GET /metrics: HTTP %d", code)
	}
	for _, want := range []string{
		`a2awebcap_requests_total{binding="jsonrpc",method="SendMessage",status="ok"} 2`,
		`a2awebcap_requests_total{binding="rest",method="SendMessage",status="ok"} 1`,
		`a2awebcap_requests_total{binding="grpc",method="SendMessage",status="ok"} 1`,
		`a2awebcap_requests_total{binding="grpc",method="GetTask",status="ok"} 1`,
		`a2awebcap_requests_total{binding="capnweb",method="SendMessage",status="ok"} 3`,
		`a2awebcap_requests_total{binding="capnweb",method="GetTask",status="ok"} 3`,
		`a2awebcap_request_duration_seconds_bucket{binding="rest",method="GetTask",le="+Inf"} 1`,
		`a2awebcap_request_duration_seconds_count{binding="capnweb",method="SendMessage"} 3`,
		`a2awebcap_auth_failures_total{binding="jsonrpc"} 1`,
		`a2awebcap_requests_total{binding="jsonrpc",method="unknown",status="UNAUTHENTICATED"} 1`,
		`a2awebcap_requests_total{binding="jsonrpc",method="SendStreamingMessage",status="ok"} 1`,
		`a2awebcap_requests_total{binding="capnweb",method="SendStreamingMessage",status="ok"} 1`,
		`a2awebcap_open_streams{binding="jsonrpc"} 0`,
		"a2awebcap_running_tasks 0",
		`a2awebcap_store_operation_duration_seconds_count{operation="create"} `,
		`a2awebcap_store_operation_duration_seconds_count{operation="get"} `,
		"go_goroutines ",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", metrics)
	}
}

// When the model fails, the operator's log has the endpoint and the error, the metrics count
// the failed call, and the caller sees that the model failed — never where it lives.
func TestServeModelFailureHidesEndpoint(t *testing.T) {
	t.Parallel()
	dead := freeAddr(t) // nothing listens there
	var log lockedBuffer
	base := serveObserved(t, &log, nil, "-llm-url", "http://"+dead+"/v1", "-llm-model", "m1")
	c, err := client.New(t.Context(), base, &client.Options{Binding: client.BindingJSONRPC})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("write me a poem about the sea"))})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage = %#v, want a task", res)
	}
	hl := 1000
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &hl})
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for ev, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			break // a finished task may refuse a subscription
		}
		b, _ := json.Marshal(ev)
		events = append(events, string(b))
	}
	seen, _ := json.Marshal(got)
	all := string(seen) + strings.Join(events, "\n")
	_, port, _ := strings.Cut(dead, ":")
	if strings.Contains(all, dead) || strings.Contains(all, ":"+port) {
		t.Errorf("the caller sees the model's address %s:\n%s", dead, all)
	}
	if !strings.Contains(all, "language model") {
		t.Errorf("the caller is not told that the model failed:\n%s", all)
	}
	var failed bool
	for _, rec := range logRecords(t, log.String(), "model call failed") {
		failed = failed || (strings.Contains(rec["endpoint"].(string), dead) && rec["model"] == "m1" && rec["err"] != "")
	}
	if !failed {
		t.Errorf("the operator's log lacks the failed model call with its endpoint:\n%s", log.String())
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `a2awebcap_model_requests_total{model="m1",status="error"} 1`; !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %q", want)
	}
}

// A capability installed by a principal reaches the operator's audit stream: -audit-log FILE,
// JSON lines.
func TestServeAuditLogFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	var log lockedBuffer
	base := serveObserved(t, &log, nil, "-capabilities", "fs", "-fs-root", t.TempDir(), "-audit-log", file)
	if out, err := verb(t, "send", base, "/capability install fs audit-only"); err != nil || !strings.Contains(out, "Installed fs") {
		t.Fatalf("install: %q, %v", out, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for line := range strings.Lines(string(data)) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		found = found || (rec["event"] == "capability" && rec["capability"] == "fs" && rec["outcome"] == "installed" && rec["principal"] != "")
	}
	if !found {
		t.Errorf("the audit log lacks the installation:\n%s", data)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode: %v, %v; want 0600", fi, err)
	}
	if len(logRecords(t, log.String(), "audit")) != 0 {
		t.Errorf("with -audit-log, audit records still go to the server's log")
	}
}

// One trace across an agent-to-agent call: a caller's span, the capnweb call to the writer
// agent (trace context in the call's parameters), the writer's a2a capability calling the
// researcher agent, and the researcher's server span — one trace id.
func TestServeOneTraceAcrossA2A(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freeAddr(t)
	origin := "http://" + addr
	a2aCaps := fmt.Sprintf(`"capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"}, "a2a": {"allow": ["%s"], "networks": ["127.0.0.1/32"]}}`, origin)
	input := fmt.Sprintf(`"\"{\\\"agent\\\": \\\"%s/agents/researcher/\\\", \\\"message\\\": \\\"research \" + args + \"\\\"}\""`, origin)
	defs := fmt.Sprintf(`[
	 {"name": "writer", "policy": "none", %[1]s, "rules": [
	  {"name": "write", "when": "command == \"write\"", "action": "call", "params": {"tool": "\"a2a.call\"", "input": %[2]s}, "reason": "delegate"},
	  {"name": "report", "when": "kind == \"tool-result\" && source == \"agent\"", "action": "reply", "params": {"text": "\"heard: \" + text"}, "reason": "say it"}]},
	 {"name": "researcher", "policy": "none", %[1]s, "rules": [
	  {"name": "research", "when": "command == \"research\"", "action": "reply", "params": {"text": "\"researching \" + args"}, "reason": "asked"}]}
	]`, a2aCaps, input)
	path := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(path, []byte(defs), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServe([]string{"-addr", addr, "-base-url", origin, "-db", "memory", "-no-push", "-agents", path})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cfg.ops.tp = tp
	stop, done := starter(t, cfg)()
	defer func() { stop(); <-done }()

	ctx, root := tp.Tracer("test").Start(t.Context(), "caller")
	c, err := client.New(ctx, origin+"/agents/writer", &client.Options{Binding: client.BindingCapnweb})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("write tides"))})
	root.End()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "researching tides") {
		t.Fatalf("the writer answered %s, want the researcher's answer", b)
	}
	// The researcher is called with a stream (the a2a capability relays the callee's events).
	var writer, researcher bool
	var all []string
	recorded := map[trace.SpanID]bool{}
	for _, s := range rec.Ended() {
		recorded[s.SpanContext().SpanID()] = true
	}
	for _, s := range rec.Ended() {
		all = append(all, s.Name()+" span "+s.SpanContext().SpanID().String()+" trace "+s.SpanContext().TraceID().String()+" parent "+s.Parent().SpanID().String())
		if !strings.HasPrefix(s.Name(), "a2a.") || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			continue
		}
		if s.Parent().SpanID() == root.SpanContext().SpanID() {
			writer = true
		} else if recorded[s.Parent().SpanID()] {
			researcher = true // a child of a span the writer's side recorded: linked
		}
	}
	if !writer || !researcher {
		t.Errorf("caller trace %s: writer's span %v, researcher's span (child of a recorded span) %v; spans:\n%s", root.SpanContext().TraceID(), writer, researcher, strings.Join(all, "\n"))
	}
}

// With -agents, each hosted agent's capability records reach the audit stream too.
func TestServeAgentsAudit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	defs := `[{"name": "solo", "policy": "none", "capabilities": {"offer": ["a2a"], "preinstall": ["a2a"], "strategies": {"a2a": "audit-only"},
	  "a2a": {"allow": ["http://127.0.0.1:1/*"], "networks": ["127.0.0.1/32"]}}, "rules": [
	  {"name": "hi", "when": "command == \"hi\"", "action": "reply", "params": {"text": "\"hello\""}, "reason": "greet"}]}]`
	path := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(path, []byte(defs), 0o600); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	base := serveObserved(t, &log, nil, "-agents", path)
	if out, err := verb(t, "send", base+"/agents/solo", "hi"); err != nil || !strings.Contains(out, "hello") {
		t.Fatalf("send: %q, %v", out, err)
	}
	for _, rec := range logRecords(t, log.String(), "audit") {
		if rec["event"] == "capability" && rec["capability"] == "a2a" && rec["outcome"] == "installed" {
			return
		}
	}
	t.Errorf("no audit record of the hosted agent's a2a installation:\n%s", log.String())
}

// -metrics-addr serves /metrics there only, to anyone; -pprof-addr serves pprof on its own
// listener; neither is on the main port; a port alone listens on loopback.
func TestServeMetricsAndPprofAddr(t *testing.T) {
	t.Parallel()
	maddr, paddr := freeAddr(t), freeAddr(t)
	_, mport, _ := strings.Cut(maddr, ":")
	var log lockedBuffer
	base := serveObserved(t, &log, nil, "-api-key", "k-secret=alice", "-metrics-addr", ":"+mport, "-pprof-addr", paddr)
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("http://127.0.0.1:" + mport + "/metrics"); code != http.StatusOK || !strings.Contains(body, "a2awebcap_running_tasks") {
		t.Errorf("GET -metrics-addr /metrics: HTTP %d", code)
	}
	if code, _ := get(base + "/metrics"); code == http.StatusOK {
		t.Errorf("/metrics is on the main port too")
	}
	if code, body := get("http://" + paddr + "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("GET -pprof-addr /debug/pprof/: HTTP %d", code)
	}
	if code, _ := get(base + "/debug/pprof/"); code == http.StatusOK {
		t.Errorf("pprof is on the main port")
	}
	for _, rec := range logRecords(t, log.String(), "serving") {
		if rec["metrics"] != "http://127.0.0.1:"+mport+"/metrics" {
			t.Errorf("banner metrics = %v", rec["metrics"])
		}
	}
}
