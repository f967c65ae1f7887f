package binding

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// echoExecutor is the agent of these tests. For a message whose first text
// part is
//
//	"message"     it answers with a Message (no task);
//	"wait:KEY"    it creates a task, reports working, and blocks until
//	              release(KEY) or cancelation, then echoes;
//	"sleep:DUR"   the same, sleeping DUR (a time.Duration) instead;
//	"ask:KEY"     it creates a task, reports working, blocks until release(KEY), then asks
//	              for input (input-required);
//	anything else it creates a task, reports working, echoes the text as an
//	              artifact and completes.
//
// Artifacts carry the request's tenant in their metadata.
type echoExecutor struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	waiting atomic.Int64 // runs waiting on a gate ("wait:key")
}

func newEchoExecutor() *echoExecutor { return &echoExecutor{gates: map[string]chan struct{}{}} }

func (e *echoExecutor) gate(key string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.gates[key]
	if !ok {
		g = make(chan struct{})
		e.gates[key] = g
	}
	return g
}

func (e *echoExecutor) release(key string) { close(e.gate(key)) }

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	for _, p := range m.Parts {
		if t := p.Text(); t != "" {
			return t
		}
	}
	return ""
}

func (e *echoExecutor) Execute(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := textOf(execCtx.Message)
		if text == "message" {
			yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("echo: message")), nil)
			return
		}
		if execCtx.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(execCtx, execCtx.Message), nil) {
				return
			}
		}
		working := a2a.NewMessageForTask(a2a.MessageRoleAgent, execCtx, a2a.NewTextPart("working"))
		if !yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateWorking, working), nil) {
			return
		}
		if key, ok := strings.CutPrefix(text, "ask:"); ok {
			select {
			case <-e.gate(key):
			case <-ctx.Done():
				return
			}
			q := a2a.NewMessageForTask(a2a.MessageRoleAgent, execCtx, a2a.NewTextPart("your name?"))
			yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateInputRequired, q), nil)
			return
		}
		if key, ok := strings.CutPrefix(text, "wait:"); ok {
			e.waiting.Add(1)
			defer e.waiting.Add(-1)
			select {
			case <-e.gate(key):
			case <-ctx.Done():
				return
			}
		}
		if d, ok := strings.CutPrefix(text, "sleep:"); ok {
			dur, _ := time.ParseDuration(d)
			select {
			case <-time.After(dur):
			case <-ctx.Done():
				return
			}
		}
		art := a2a.NewArtifactEvent(execCtx, a2a.NewTextPart("echo: "+text))
		art.Artifact.Metadata = map[string]any{"tenant": execCtx.Tenant}
		if !yield(art, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCompleted, nil), nil)
	}
}

func (e *echoExecutor) Cancel(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCanceled, nil), nil)
	}
}

// testServer is NewHTTPHandler and NewGRPCServer on 127.0.0.1:0 in front of
// a2a-go's default handler and an echoExecutor.
type testServer struct {
	exec     *echoExecutor
	handler  a2asrv.RequestHandler
	baseURL  string // http://127.0.0.1:port
	grpcAddr string
}

type serverConfig struct {
	card  *a2a.AgentCard // nil: testCard()
	opts  *Options
	gopts *GRPCOptions // Card defaults to the card
	// engine: serve this project's engine (on a memory store), whose stream events carry
	// their sequence numbers, instead of a2a-go's default handler.
	engine bool
	// extended: the engine serves an extended card: the card named "<name> (extended)",
	// without interfaces.
	extended bool
}

func testCard() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "echo",
		Description:        "echoes",
		Version:            "1.0.0",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echo", Tags: []string{"echo"}}},
	}
}

// newA2AHandler is a2a-go's default handler around a new echoExecutor, with
// in-memory task and push-config stores.
func newA2AHandler(opts ...a2asrv.RequestHandlerOption) (a2asrv.RequestHandler, *echoExecutor) {
	exec := newEchoExecutor()
	// The in-memory store lists only an authenticated user's tasks: everyone is "tester" here.
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return "tester", nil },
	})
	opts = append([]a2asrv.RequestHandlerOption{
		a2asrv.WithLogger(slog.New(slog.DiscardHandler)),
		a2asrv.WithTaskStore(store),
		a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(nil)),
	}, opts...)
	return a2asrv.NewHandler(exec, opts...), exec
}

// newEngineHandler is the engine around a new echoExecutor, on a memory store, closed by
// t.Cleanup.
func newEngineHandler(t testing.TB) (a2asrv.RequestHandler, *echoExecutor) {
	t.Helper()
	return newEngineHandlerWith(t, nil)
}

// newEngineHandlerWith is newEngineHandler with options (nil: defaults); the logger is discarded.
func newEngineHandlerWith(t testing.TB, opts *engine.Options) (a2asrv.RequestHandler, *echoExecutor) {
	t.Helper()
	exec := newEchoExecutor()
	st := memory.New()
	var o engine.Options
	if opts != nil {
		o = *opts
	}
	o.Logger = slog.New(slog.DiscardHandler)
	eng := engine.New(exec, st, &o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := eng.Close(ctx); err != nil {
			t.Errorf("Engine.Close() = %v", err)
		}
		st.Close()
	})
	return eng, exec
}

func startServer(t *testing.T, cfg serverConfig) *testServer {
	t.Helper()
	var handler a2asrv.RequestHandler
	var exec *echoExecutor
	card := cfg.card
	if card == nil {
		card = testCard()
	}
	switch {
	case cfg.engine && cfg.extended:
		ext := *card
		ext.Name += " (extended)"
		ext.SupportedInterfaces = nil
		handler, exec = newEngineHandlerWith(t, &engine.Options{ExtendedCard: func(context.Context) (*a2a.AgentCard, error) { return &ext, nil }})
	case cfg.engine:
		handler, exec = newEngineHandler(t)
	default:
		handler, exec = newA2AHandler()
	}

	glis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gopts := GRPCOptions{Card: card}
	if cfg.gopts != nil {
		gopts = *cfg.gopts
		if gopts.Card == nil {
			gopts.Card = card
		}
	}
	gsrv := NewGRPCServer(handler, &gopts)
	go func() { _ = gsrv.Serve(glis) }()
	t.Cleanup(gsrv.Stop)

	var opts Options
	if cfg.opts != nil {
		opts = *cfg.opts
	}
	opts.GRPCAddress = glis.Addr().String()
	hlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hsrv := &http.Server{Handler: NewHTTPHandler(handler, card, &opts), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hsrv.Serve(hlis) }()
	t.Cleanup(func() { _ = hsrv.Close() })

	return &testServer{exec: exec, handler: handler, baseURL: "http://" + hlis.Addr().String(), grpcAddr: glis.Addr().String()}
}

var transports = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC}

// client resolves the served card and connects with a2a-go's client over proto.
func (ts *testServer) client(t *testing.T, proto a2a.TransportProtocol, extra ...a2aclient.FactoryOption) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(nil).Resolve(t.Context(), ts.baseURL)
	if err != nil {
		t.Fatalf("resolve card: %v", err)
	}
	opts := append([]a2aclient.FactoryOption{
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{proto}}),
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}, extra...)
	c, err := a2aclient.NewFromCard(t.Context(), card, opts...)
	if err != nil {
		t.Fatalf("client over %s: %v", proto, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// paramsInterceptor overrides service parameters (A2A-Version included,
// which a2aclient otherwise sets itself) on every call.
type paramsInterceptor struct {
	a2aclient.PassthroughInterceptor
	params map[string][]string
}

func (p paramsInterceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	for k, v := range p.params {
		for existing := range req.ServiceParams {
			if strings.EqualFold(existing, k) {
				delete(req.ServiceParams, existing)
			}
		}
		req.ServiceParams[k] = v
	}
	return ctx, nil, nil
}

func withParams(kv ...string) a2aclient.FactoryOption {
	p := paramsInterceptor{params: map[string][]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		p.params[kv[i]] = append(p.params[kv[i]], kv[i+1])
	}
	return a2aclient.WithCallInterceptors(p)
}

func userMessage(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

// collect drains an event stream.
func collect(seq iter.Seq2[a2a.Event, error]) ([]a2a.Event, error) {
	var out []a2a.Event
	for ev, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// eventKinds names events for comparison: "task(STATE)", "status(STATE)", "artifact", "message".
func eventKinds(events []a2a.Event) []string {
	var out []string
	for _, ev := range events {
		switch v := ev.(type) {
		case *a2a.Task:
			out = append(out, "task("+string(v.Status.State)+")")
		case *a2a.TaskStatusUpdateEvent:
			out = append(out, "status("+string(v.Status.State)+")")
		case *a2a.TaskArtifactUpdateEvent:
			out = append(out, "artifact")
		case *a2a.Message:
			out = append(out, "message")
		default:
			out = append(out, "?")
		}
	}
	return out
}

// waitState polls GetTask until the task reaches state.
func waitState(t *testing.T, c *a2aclient.Client, id a2a.TaskID, state a2a.TaskState) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("GetTask(%s): %v", id, err)
		}
		if task.Status.State == state {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s in state %s, want %s", id, task.Status.State, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rawResponse is a decoded HTTP response of a raw request.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// do sends a raw HTTP request (see send) and reads the response.
func do(t *testing.T, method, url string, body []byte, header ...string) rawResponse {
	t.Helper()
	resp := send(t, t.Context(), method, url, body, header...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
}

// send sends a raw HTTP request, a JSON body when body is not nil, with the header fields
// given as name, value pairs ("Host" sets the request's host). The caller closes the body of
// the response.
func send(t *testing.T, ctx context.Context, method, url string, body []byte, header ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

// jsonrpcBody builds a JSON-RPC request.
func jsonrpcBody(method string, params any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "1", "method": method, "params": params})
	return b
}

// wireError is what the bindings put on the wire for an error, reduced to
// what the tests compare.
type wireError struct {
	Code   int    // JSON-RPC code, or HTTP status for REST
	Status string // google.rpc.Status status (REST only)
	Reason string // ErrorInfo reason
}

// jsonrpcError extracts the error of a JSON-RPC response; an SSE body is
// read as its first event.
func jsonrpcError(t *testing.T, r rawResponse) wireError {
	t.Helper()
	body := r.body
	if strings.HasPrefix(r.header.Get("Content-Type"), mediaSSE) {
		body = firstSSEData(t, body)
	}
	var resp struct {
		Error *struct {
			Code int `json:"code"`
			Data []struct {
				Type   string `json:"@type"`
				Reason string `json:"reason"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || resp.Error == nil {
		t.Fatalf("not a JSON-RPC error (HTTP %d): %s", r.status, r.body)
	}
	we := wireError{Code: resp.Error.Code}
	for _, d := range resp.Error.Data {
		if strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") {
			we.Reason = d.Reason
		}
	}
	return we
}

// restError extracts a google.rpc.Status error body.
func restError(t *testing.T, r rawResponse) wireError {
	t.Helper()
	var resp struct {
		Error *struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Details []struct {
				Type   string `json:"@type"`
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &resp); err != nil || resp.Error == nil {
		t.Fatalf("not a REST error (HTTP %d): %s", r.status, r.body)
	}
	if resp.Error.Code != r.status {
		t.Errorf("error.code %d differs from HTTP status %d", resp.Error.Code, r.status)
	}
	we := wireError{Code: r.status, Status: resp.Error.Status}
	for _, d := range resp.Error.Details {
		if strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") {
			we.Reason = d.Reason
		}
	}
	return we
}

func firstSSEData(t *testing.T, body []byte) []byte {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			return []byte(strings.TrimSpace(d))
		}
	}
	t.Fatalf("no SSE data in %q", body)
	return nil
}

// errorsIs reports errors.Is for a list of sentinels, for readable failures.
func errorsIs(err error, target error) bool { return errors.Is(err, target) }

func ptr[T any](v T) *T { return &v }

// sseEvent is an event of an SSE stream that carries data.
type sseEvent struct {
	id    string // the value of its id line
	hasID bool
	data  string
}

// sseEvents reads the events that carry data from an SSE stream as they arrive; comments and
// events without data are skipped.
func sseEvents(body io.Reader) iter.Seq2[sseEvent, error] {
	return func(yield func(sseEvent, error) bool) {
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				if ev.data != "" && !yield(ev, nil) {
					return
				}
				ev = sseEvent{}
				continue
			}
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "id":
				ev.id, ev.hasID = value, true
			case "data":
				ev.data += value
			}
		}
		if err := sc.Err(); err != nil {
			yield(sseEvent{}, err)
		}
	}
}

// asMap is a received capnweb object as a map, the objects in it maps too (capnwebtest.Maps),
// or nil.
func asMap(v any) map[string]any {
	m, _ := capnwebtest.Maps(v).(map[string]any)
	return m
}
