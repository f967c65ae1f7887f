package binding

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/google/uuid"
)

// dialCapnweb opens a capnweb WebSocket session on the test server's binding.
func (ts *testServer) dialCapnweb(t *testing.T, query string, header http.Header) *capnweb.Session {
	t.Helper()
	url := "ws" + strings.TrimPrefix(ts.baseURL, "http") + DefaultCapnwebPath + query
	s, err := capnweb.Dial(t.Context(), url, nil, &capnweb.DialOptions{Header: header})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// awaitInto awaits p and decodes its value, a ProtoJSON object, into dst.
func awaitInto(ctx context.Context, p *capnweb.Promise, dst any) error {
	v, err := p.Await(ctx)
	if err != nil {
		return err
	}
	return fromWire(v, dst)
}

func userMessageWire(text string) map[string]any {
	return map[string]any{"message": map[string]any{
		"messageId": uuid.NewString(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}},
	}}
}

// callReason awaits p and returns "ok", or the reason of the capnweb error it failed with.
func callReason(t *testing.T, p *capnweb.Promise) string {
	t.Helper()
	_, err := p.Await(t.Context())
	if err == nil {
		return "ok"
	}
	_, reason := a2aErr(t, err)
	return reason
}

// a2aErr returns the code and reason properties of a capnweb error.
func a2aErr(t *testing.T, err error) (float64, string) {
	t.Helper()
	var ce *capnweb.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is no capnweb error", err, err)
	}
	code, _ := ce.Props["code"].(float64)
	reason, _ := ce.Props["reason"].(string)
	return code, reason
}

func TestCapnwebBinding(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	s := ts.dialCapnweb(t, "", nil)
	main := s.Main()
	ctx := t.Context()

	t.Run("AgentCard", func(t *testing.T) {
		t.Parallel()
		var card a2a.AgentCard
		if err := awaitInto(ctx, main.Call("getAgentCard"), &card); err != nil {
			t.Fatal(err)
		}
		if card.Name != "echo" || card.SupportedInterfaces[0].ProtocolBinding != ProtocolCapnweb {
			t.Errorf("card %s, first interface %+v", card.Name, card.SupportedInterfaces[0])
		}
	})

	t.Run("SendAndGetPipelined", func(t *testing.T) {
		t.Parallel()
		sent := main.Call("sendMessage", userMessageWire("hello"))
		got := main.Call("getTask", map[string]any{"id": sent.Get("task", "id")})
		var task a2a.Task
		if err := awaitInto(ctx, got, &task); err != nil {
			t.Fatal(err)
		}
		if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text() != "echo: hello" {
			t.Errorf("task = %+v", task)
		}
	})

	t.Run("MessageResult", func(t *testing.T) {
		t.Parallel()
		var res a2a.StreamResponse
		if err := awaitInto(ctx, main.Call("sendMessage", userMessageWire("message")), &res); err != nil {
			t.Fatal(err)
		}
		if m, ok := res.Event.(*a2a.Message); !ok || textOf(m) != "echo: message" {
			t.Errorf("result = %#v", res.Event)
		}
	})

	t.Run("StreamObserver", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var kinds []string
		observer := func(ev map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			for k := range ev {
				kinds = append(kinds, k)
			}
		}
		var final a2a.StreamResponse
		if err := awaitInto(ctx, main.Call("sendStreamingMessage", userMessageWire("stream"), observer), &final); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(kinds, ",") != "task,statusUpdate,artifactUpdate,statusUpdate" {
			t.Errorf("events = %v", kinds)
		}
		if task, ok := final.Event.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("final = %#v", final.Event)
		}
	})

	t.Run("StreamReadable", func(t *testing.T) {
		t.Parallel()
		res, err := main.Call("sendStreamingMessage", userMessageWire("readable")).Await(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := asMap(res)
		stream := m["stream"].(*capnweb.ReadableStream)
		handle := m["handle"].(*capnweb.Stub)
		defer handle.Release()
		var kinds []string
		for ev, err := range stream.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			for k := range asMap(ev) {
				kinds = append(kinds, k)
			}
		}
		if strings.Join(kinds, ",") != "task,statusUpdate,artifactUpdate,statusUpdate" {
			t.Errorf("events = %v", kinds)
		}
		var task a2a.Task
		if err := awaitInto(ctx, handle.Call("get"), &task); err != nil || task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("handle.get() = %+v, %v", task.Status, err)
		}
		if id, err := handle.Get("id").Await(ctx); err != nil || id != string(task.ID) {
			t.Errorf("handle.id = %v, %v; want %s", id, err, task.ID)
		}
	})

	t.Run("TaskHandleCancel", func(t *testing.T) {
		t.Parallel()
		var sent a2a.StreamResponse
		req := userMessageWire("wait:capnweb-cancel")
		req["configuration"] = map[string]any{"returnImmediately": true}
		if err := awaitInto(ctx, main.Call("sendMessage", req), &sent); err != nil {
			t.Fatal(err)
		}
		id := sent.Event.TaskInfo().TaskID
		var task a2a.Task
		if err := awaitInto(ctx, main.Call("task", string(id)).Call("cancel"), &task); err != nil {
			t.Fatal(err)
		}
		if task.Status.State != a2a.TaskStateCanceled {
			t.Errorf("state after cancel = %s", task.Status.State)
		}
		_, err := main.Call("task", "no-such-task").Call("cancel").Await(ctx)
		if code, reason := a2aErr(t, err); code != -32001 || reason != "TASK_NOT_FOUND" {
			t.Errorf("cancel of an unknown task: %v (code %v, reason %s)", err, code, reason)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		_, err := main.Call("getTask", map[string]any{"id": "no-such-task"}).Await(ctx)
		if code, reason := a2aErr(t, err); code != -32001 || reason != "TASK_NOT_FOUND" {
			t.Errorf("getTask(unknown): code %v reason %s", code, reason)
		}
		_, err = main.Call("subscribeToTask", map[string]any{"id": "no-such-task"}).Await(ctx)
		if code, _ := a2aErr(t, err); code != -32001 {
			t.Errorf("subscribeToTask(unknown): code %v", code)
		}
		_, err = main.Call("getTask", map[string]any{"id": main}).Await(ctx)
		if code, _ := a2aErr(t, err); code != -32602 {
			t.Errorf("getTask with a capability for id: code %v (%v)", code, err)
		}
		_, err = main.Call("getTask", map[string]any{"id": "x"}, map[string]any{"A2A-Version": "2.0"}).Await(ctx)
		if _, reason := a2aErr(t, err); reason != "VERSION_NOT_SUPPORTED" {
			t.Errorf("per-call version 2.0: %v", err)
		}
		_, err = main.Call("getTask", map[string]any{"id": "x"}, "not params").Await(ctx)
		if code, _ := a2aErr(t, err); code != -32602 {
			t.Errorf("bad params: %v", err)
		}
	})
}

func TestCapnwebBindingBatch(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	s := capnweb.NewBatchSession(ts.baseURL+DefaultCapnwebPath, nil, nil)
	defer s.Close()
	sent := s.Main().Call("sendMessage", userMessageWire("batch"))
	got := s.Main().Call("getTask", map[string]any{"id": sent.Get("task", "id")})
	var task a2a.Task
	if err := awaitInto(t.Context(), got, &task); err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("state = %s", task.Status.State)
	}
}

func TestCapnwebBindingAuthenticate(t *testing.T) {
	t.Parallel()
	auth := func(_ context.Context, h http.Header) (*a2asrv.User, error) {
		switch h.Get("Authorization") {
		case "Bearer alice":
			return a2asrv.NewAuthenticatedUser("alice", nil), nil
		case "":
			return nil, a2a.NewError(a2a.ErrUnauthenticated, "no credentials")
		}
		return nil, errors.New("bad token")
	}
	ts := startServer(t, serverConfig{opts: &Options{Authenticate: auth}})
	main := ts.dialCapnweb(t, "", nil).Main()
	ctx := t.Context()

	_, err := main.Call("sendMessage", userMessageWire("hello")).Await(ctx)
	if code, reason := a2aErr(t, err); code != -31401 || reason != "UNAUTHENTICATED" {
		t.Errorf("unauthenticated sendMessage: code %v reason %s", code, reason)
	}
	if _, err := main.Call("getAgentCard").Await(ctx); err != nil {
		t.Errorf("getAgentCard without credentials: %v", err)
	}
	_, err = main.Call("authenticate", map[string]any{"Authorization": "Bearer mallory"}).Await(ctx)
	if _, reason := a2aErr(t, err); reason != "UNAUTHENTICATED" {
		t.Errorf("wrong credentials: %v", err)
	}
	session := main.Call("authenticate", map[string]any{"Authorization": "Bearer alice"})
	var res a2a.StreamResponse
	if err := awaitInto(ctx, session.Call("sendMessage", userMessageWire("hello")), &res); err != nil {
		t.Fatalf("authenticated sendMessage: %v", err)
	}

	// Credentials on the upgrade make the main object alice's session.
	authed := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer alice"}}).Main()
	if _, err := authed.Call("sendMessage", userMessageWire("hello")).Await(ctx); err != nil {
		t.Errorf("sendMessage on an authenticated connection: %v", err)
	}
}

// A session can be attenuated (read-only, some tasks, an expiry) and the weaker capability
// revoked by the session it came from.
func TestCapnwebAttenuation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	main := ts.dialCapnweb(t, "", nil).Main()
	ctx := t.Context()
	taskID := func(text string) string {
		t.Helper()
		var res a2a.StreamResponse
		if err := awaitInto(ctx, main.Call("sendMessage", userMessageWire(text)), &res); err != nil {
			t.Fatal(err)
		}
		return string(res.Event.TaskInfo().TaskID)
	}
	a, b := taskID("a"), taskID("b")
	reasonOf := func(p *capnweb.Promise) string { t.Helper(); return callReason(t, p) }

	ro := main.Call("attenuate", map[string]any{"readOnly": true})
	if got := reasonOf(ro.Call("getTask", map[string]any{"id": a})); got != "ok" {
		t.Errorf("read-only getTask: %s", got)
	}
	for _, call := range []*capnweb.Promise{
		ro.Call("sendMessage", userMessageWire("nope")),
		ro.Call("cancelTask", map[string]any{"id": a}),
		ro.Call("task", a).Call("cancel"),
	} {
		if got := reasonOf(call); got != "UNAUTHORIZED" {
			t.Errorf("write on a read-only session: %s, want UNAUTHORIZED", got)
		}
	}

	one := main.Call("attenuate", map[string]any{"tasks": []any{a}})
	if got := reasonOf(one.Call("getTask", map[string]any{"id": a})); got != "ok" {
		t.Errorf("single-task session, its task: %s", got)
	}
	if got := reasonOf(one.Call("getTask", map[string]any{"id": b})); got != "TASK_NOT_FOUND" {
		t.Errorf("single-task session, another task: %s, want TASK_NOT_FOUND", got)
	}
	if got := reasonOf(one.Call("sendMessage", userMessageWire("new task"))); got != "TASK_NOT_FOUND" {
		t.Errorf("single-task session starting a task: %s, want TASK_NOT_FOUND", got)
	}
	var list a2a.ListTasksResponse
	if err := awaitInto(ctx, one.Call("listTasks", map[string]any{}), &list); err != nil || len(list.Tasks) != 1 || string(list.Tasks[0].ID) != a {
		t.Errorf("single-task session lists %+v, %v; want only %s", list.Tasks, err, a)
	}
	// Narrowing further keeps the limits: a read-only view of the single task.
	oneRO := one.Call("attenuate", map[string]any{"readOnly": true})
	if got := reasonOf(oneRO.Call("getTask", map[string]any{"id": b})); got != "TASK_NOT_FOUND" {
		t.Errorf("attenuated twice, another task: %s", got)
	}

	// Revocation: by the session it was made from, effective on the next call, for its
	// descendants too; a child cannot revoke its parent.
	if got := reasonOf(one.Call("revoke", main)); got != "UNAUTHORIZED" {
		t.Errorf("child revoking its parent: %s, want UNAUTHORIZED", got)
	}
	if _, err := main.Call("revoke", one).Await(ctx); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	for _, call := range []*capnweb.Promise{one.Call("getTask", map[string]any{"id": a}), oneRO.Call("getTask", map[string]any{"id": a})} {
		if got := reasonOf(call); got != "UNAUTHORIZED" {
			t.Errorf("revoked capability: %s, want UNAUTHORIZED", got)
		}
	}
	if got := reasonOf(ro.Call("getTask", map[string]any{"id": a})); got != "ok" {
		t.Errorf("revoking one capability affected a sibling: %s", got)
	}

	short := main.Call("attenuate", map[string]any{"expiresIn": 0.05})
	if got := reasonOf(short.Call("getTask", map[string]any{"id": a})); got != "ok" {
		t.Errorf("before expiry: %s", got)
	}
	time.Sleep(100 * time.Millisecond)
	if got := reasonOf(short.Call("getTask", map[string]any{"id": a})); got != "UNAUTHORIZED" {
		t.Errorf("after expiry: %s, want UNAUTHORIZED", got)
	}
}

// A blocking sendMessage over capnweb waits for its task without a goroutine of its own
// (engine.SendMessageFunc and a capnweb.Deferred): while n tasks run, the process holds the
// runs' goroutines (the engine's two per run) and no third one per call.
func TestCapnwebPendingSendsHoldNoGoroutine(t *testing.T) {
	h, exec := newEngineHandler(t)
	main := capnwebPipe(t, h).Main()
	ctx := t.Context()
	if err := sendAndCheck(ctx, main); err != nil { // the session's own goroutines start
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // idle pool workers end
	before := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	stacks := ms.StackInuse
	const n = 200
	var calls []*capnweb.Promise
	for range n {
		calls = append(calls, main.Call("sendMessage", userMessageWire("wait:pending")))
	}
	deadline := time.Now().Add(10 * time.Second)
	for exec.waiting.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks are running", exec.waiting.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	perCall := float64(runtime.NumGoroutine()-before) / n
	runtime.ReadMemStats(&ms)
	t.Logf("per pending sendMessage: %.2f goroutines, %d bytes of stack", perCall, (int64(ms.StackInuse)-int64(stacks))/n)
	exec.release("pending")
	for _, p := range calls {
		v, err := p.Await(ctx)
		p.Release()
		if err != nil {
			t.Fatal(err)
		}
		if st := asMap(v)["task"].(map[string]any)["status"].(map[string]any)["state"]; st != "TASK_STATE_COMPLETED" {
			t.Fatalf("state %v, want completed", st)
		}
	}
	if perCall > 2.5 {
		t.Errorf("%.2f goroutines per pending sendMessage, want the run's 2", perCall)
	}
}

// Pending sends whose connection goes away: their waits end with the session (each resolves
// a Deferred nobody reads), the tasks still complete, and nothing is left behind.
func TestCapnwebPendingSendsOutliveSession(t *testing.T) {
	h, exec := newEngineHandler(t)
	client := capnwebPipe(t, h)
	ctx := t.Context()
	if err := sendAndCheck(ctx, client.Main()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	const n = 20
	for range n {
		client.Main().Call("sendMessage", userMessageWire("wait:orphans"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for exec.waiting.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks are running", exec.waiting.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	client.Close()
	exec.release("orphans")
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after the tasks ended, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
	list, err := h.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, task := range list.Tasks {
		if task.Status.State == a2a.TaskStateCompleted {
			done++
		}
	}
	if done != n+1 {
		t.Errorf("%d tasks completed, want %d", done, n+1)
	}
}
