package binding

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// nameAuth accepts "Bearer NAME" as principal NAME: each quota test has principals of its own.
func nameAuth(_ context.Context, h http.Header) (*a2asrv.User, error) {
	name, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || name == "" {
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "credentials required")
	}
	return a2asrv.NewAuthenticatedUser(name, nil), nil
}

// quotaServer serves the engine with q shared by the HTTP and gRPC servers.
func quotaServer(t *testing.T, q *Quotas) *testServer {
	return startServer(t, serverConfig{engine: true,
		opts:  &Options{Authenticate: nameAuth, Quotas: q},
		gopts: &GRPCOptions{Authenticate: nameAuth, Quotas: q}})
}

// waitHeld waits until who holds want slots of quota.
func waitHeld(t *testing.T, q *Quotas, quota, who string, want int) {
	t.Helper()
	for {
		n, changed := q.state.inUse(quota, "user:"+who)
		if n == want {
			return
		}
		select {
		case <-changed:
		case <-t.Context().Done():
			t.Fatalf("%s holds %d %s slots, want %d", who, n, quota, want)
		}
	}
}

// quotaRefusal checks that err is the binding's QUOTA_EXCEEDED error for quota.
func quotaRefusal(t *testing.T, proto string, err error, quota string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: over the %s quota: no error", proto, quota)
	}
	switch {
	case strings.HasPrefix(proto, "capnweb"):
		if code, reason := a2aErr(t, err); code != -32000 || reason != "QUOTA_EXCEEDED" {
			t.Fatalf("%s: over the %s quota: code %v reason %s (%v)", proto, quota, code, reason, err)
		}
	case proto == "GRPC":
		if !strings.Contains(err.Error(), "(quota ") {
			t.Fatalf("%s: over the %s quota: %v", proto, quota, err)
		}
	case err.Error() != "QUOTA_EXCEEDED "+quota:
		t.Fatalf("%s: over the %s quota: %v", proto, quota, err)
	}
}

// rawRefusal reads a refused raw HTTP response into an error naming its status, reason and
// quota, for quotaRefusal.
func rawRefusal(t *testing.T, resp *http.Response, jsonrpc bool) error {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	r := rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
	if r.status != http.StatusTooManyRequests {
		return fmt.Errorf("HTTP %d %s", r.status, b)
	}
	var we wireError
	if jsonrpc {
		we = jsonrpcError(t, r)
		if we.Code != -32000 {
			return fmt.Errorf("JSON-RPC code %d", we.Code)
		}
	} else {
		we = restError(t, r)
		if we.Status != "RESOURCE_EXHAUSTED" {
			return fmt.Errorf("REST status %s", we.Status)
		}
	}
	quota := "?"
	for _, q := range []string{quotaTasks, quotaStreams} {
		if strings.Contains(string(b), `"quota":"`+q+`"`) {
			quota = q
		}
	}
	return fmt.Errorf("%s %s", we.Reason, quota)
}

// opener opens a stream on task id as who and returns once its first event arrived, with the
// function that drops it abruptly.
type opener func(t *testing.T, ts *testServer, who string, id a2a.TaskID) (drop func(), err error)

// sseOpen sends an SSE request and reads up to its first event.
func sseOpen(t *testing.T, method, url string, body []byte, jsonrpc bool, who string) (func(), error) {
	ctx, cancel := context.WithCancel(t.Context())
	resp := send(t, ctx, method, url, body, "Authorization", "Bearer "+who)
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		return nil, rawRefusal(t, resp, jsonrpc)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") {
			if strings.Contains(sc.Text(), `"error"`) {
				t.Fatalf("stream opened with an error: %s", sc.Text())
			}
			return func() { cancel(); _ = resp.Body.Close() }, nil
		}
	}
	cancel()
	t.Fatalf("stream ended before its first event: %v", sc.Err())
	return nil, nil
}

// capnwebOpen dials a session for who, calls method, and waits for the first event; dropping
// closes the connection.
func capnwebOpen(t *testing.T, ts *testServer, who string, call func(main *capnweb.Stub, first chan<- struct{}) (any, error)) (func(), error) {
	s := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer " + who}})
	first := make(chan struct{}, 1)
	errc := make(chan error, 1)
	result := make(chan any, 1) // keeps the result until the drop: a stub no longer referenced is released
	go func() {
		res, err := call(s.Main(), first)
		result <- res
		errc <- err
	}()
	drop := func() {
		_ = s.Close()
		runtime.KeepAlive(result)
	}
	// A push subscription's call settles before its first event; an observer's after the last.
	for {
		select {
		case <-first:
			return drop, nil
		case err := <-errc:
			if err != nil {
				_ = s.Close()
				return nil, err
			}
			errc = nil
		case <-t.Context().Done():
			t.Fatal("no first event")
		}
	}
}

var streamOpeners = map[string]opener{
	"JSONRPC": func(t *testing.T, ts *testServer, who string, id a2a.TaskID) (func(), error) {
		return sseOpen(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("SubscribeToTask", map[string]any{"id": id}), true, who)
	},
	"HTTP+JSON": func(t *testing.T, ts *testServer, who string, id a2a.TaskID) (func(), error) {
		return sseOpen(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/"+string(id)+":subscribe", nil, false, who)
	},
	"GRPC": func(t *testing.T, ts *testServer, who string, id a2a.TaskID) (func(), error) {
		ctx, cancel := context.WithCancel(t.Context())
		c := ts.client(t, a2a.TransportProtocolGRPC, bearer(who))
		next, stop := iter.Pull2(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}))
		if _, err, ok := next(); err != nil || !ok {
			stop()
			cancel()
			return nil, err
		}
		return func() { cancel(); stop() }, nil
	},
	"capnweb-readable": func(t *testing.T, ts *testServer, who string, id a2a.TaskID) (func(), error) {
		return capnwebOpen(t, ts, who, func(main *capnweb.Stub, first chan<- struct{}) (any, error) {
			res, err := main.Call("subscribeToTask", map[string]any{"id": string(id)}).Await(t.Context())
			if err != nil {
				return nil, err
			}
			if _, err := asMap(res)["stream"].(*capnweb.ReadableStream).Read(t.Context()); err != nil {
				return nil, err
			}
			first <- struct{}{}
			return res, nil
		})
	},
	"capnweb-observer": func(t *testing.T, ts *testServer, who string, id a2a.TaskID) (func(), error) {
		return capnwebOpen(t, ts, who, func(main *capnweb.Stub, first chan<- struct{}) (any, error) {
			observer := func(any) {
				select {
				case first <- struct{}{}:
				default:
				}
			}
			return main.Call("subscribeToTask", map[string]any{"id": string(id)}, observer).Await(t.Context())
		})
	},
	"capnweb-push": func(t *testing.T, ts *testServer, who string, id a2a.TaskID) (func(), error) {
		return capnwebOpen(t, ts, who, func(main *capnweb.Stub, first chan<- struct{}) (any, error) {
			callback := func(any) {
				select {
				case first <- struct{}{}:
				default:
				}
			}
			return main.Call("subscribeToPushNotifications", string(id), callback).Await(t.Context())
		})
	},
}

// startWaiting starts a task for who that runs until ts.exec.release(key).
func startWaiting(t *testing.T, ts *testServer, who, key string) a2a.TaskID {
	t.Helper()
	s := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer " + who}})
	req := userMessageWire("wait:" + key)
	req["configuration"] = map[string]any{"returnImmediately": true}
	var sent a2a.StreamResponse
	if err := awaitInto(t.Context(), s.Main().Call("sendMessage", req), &sent); err != nil {
		t.Fatal(err)
	}
	return sent.Event.TaskInfo().TaskID
}

// On every binding, a principal holds at most Streams open streams; dropping them abruptly
// gives every slot back, so as many open again, and no more.
func TestQuotaStreams(t *testing.T) {
	t.Parallel()
	const n = 3
	q := &Quotas{Streams: n}
	ts := quotaServer(t, q)
	for name, open := range streamOpeners {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			who := "streams-" + name
			id := startWaiting(t, ts, who, who)
			other := who + "-other"
			otherID := startWaiting(t, ts, other, who)
			t.Cleanup(func() { ts.exec.release(who) })
			for round := range 2 {
				var drops []func()
				for i := range n {
					drop, err := open(t, ts, who, id)
					if err != nil {
						t.Fatalf("round %d: stream %d of %d: %v", round, i+1, n, err)
					}
					drops = append(drops, drop)
				}
				_, err := open(t, ts, who, id)
				quotaRefusal(t, name, err, quotaStreams)
				// Another principal has streams of its own.
				if drop, err := open(t, ts, other, otherID); err != nil {
					t.Fatalf("another principal's stream: %v", err)
				} else {
					drop()
				}
				for _, drop := range drops {
					drop()
				}
				waitHeld(t, q, quotaStreams, who, 0)
			}
		})
	}
}

// A principal runs at most Tasks tasks at once, on every binding; a task gives its slot back
// when it ends, also when the client that started it over a stream went away.
func TestQuotaTasks(t *testing.T) {
	t.Parallel()
	q := &Quotas{Tasks: 2}
	ts := quotaServer(t, q)
	sends := map[string]func(t *testing.T, who, text string) error{
		"JSONRPC": func(t *testing.T, who, text string) error {
			body := jsonrpcBody("SendMessage", map[string]any{"message": userMessageWire(text)["message"], "configuration": map[string]any{"returnImmediately": true}})
			resp := send(t, t.Context(), "POST", ts.baseURL+DefaultJSONRPCPath, body, "Authorization", "Bearer "+who)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return rawRefusal(t, resp, true)
			}
			return nil
		},
		"HTTP+JSON": func(t *testing.T, who, text string) error {
			body := []byte(fmt.Sprintf(`{"message":{"messageId":"%s","role":"ROLE_USER","parts":[{"text":%q}]},"configuration":{"returnImmediately":true}}`, who+text, text))
			resp := send(t, t.Context(), "POST", ts.baseURL+DefaultRESTPath+"/message:send", body, "Authorization", "Bearer "+who)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return rawRefusal(t, resp, false)
			}
			return nil
		},
		"GRPC": func(t *testing.T, who, text string) error {
			c := ts.client(t, a2a.TransportProtocolGRPC, bearer(who))
			req := userMessage(text)
			req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
			_, err := c.SendMessage(t.Context(), req)
			return err
		},
		"capnweb": func(t *testing.T, who, text string) error {
			s := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer " + who}})
			req := userMessageWire(text)
			req["configuration"] = map[string]any{"returnImmediately": true}
			_, err := s.Main().Call("sendMessage", req).Await(t.Context())
			return err
		},
	}
	for name, sendMsg := range sends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			who := "tasks-" + name
			k1, k2, k3 := who+"-1", who+"-2", who+"-3"
			t.Cleanup(func() { ts.exec.release(k2); ts.exec.release(k3) })
			// A message answered without a task holds no slot past the call.
			for range 3 {
				if err := sendMsg(t, who, "message"); err != nil {
					t.Fatalf("a send answered by a message: %v", err)
				}
			}
			if n, _ := q.state.inUse(quotaTasks, "user:"+who); n != 0 {
				t.Fatalf("slots held after sends answered by messages = %d, want 0", n)
			}
			for _, k := range []string{k1, k2} {
				if err := sendMsg(t, who, "wait:"+k); err != nil {
					t.Fatalf("task %s: %v", k, err)
				}
			}
			quotaRefusal(t, name, sendMsg(t, who, "wait:"+k3), quotaTasks)
			ts.exec.release(k1)
			waitHeld(t, q, quotaTasks, who, 1)
			if err := sendMsg(t, who, "wait:"+k3); err != nil {
				t.Fatalf("after a task ended: %v", err)
			}
			waitHeld(t, q, quotaTasks, who, 2)
		})
	}

	t.Run("FailedSend", func(t *testing.T) {
		t.Parallel()
		who := "tasks-failed"
		for _, target := range []struct {
			method string
			stream bool
		}{{"SendMessage", false}, {"SendStreamingMessage", true}} {
			msg := userMessageWire("follow-up")["message"].(map[string]any)
			msg["taskId"] = "no-such-task"
			r := do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody(target.method, map[string]any{"message": msg}), "Authorization", "Bearer "+who)
			if we := jsonrpcError(t, r); we.Reason != "TASK_NOT_FOUND" {
				t.Errorf("%s to an unknown task: %+v", target.method, we)
			}
			if n, _ := q.state.inUse(quotaTasks, "user:"+who); n != 0 {
				t.Errorf("slots held after a failed %s = %d, want 0", target.method, n)
			}
		}
	})

	t.Run("StreamDropped", func(t *testing.T) {
		t.Parallel()
		who, key := "tasks-dropped", "tasks-dropped"
		body := jsonrpcBody("SendStreamingMessage", map[string]any{"message": userMessageWire("wait:" + key)["message"]})
		drop, err := sseOpen(t, "POST", ts.baseURL+DefaultJSONRPCPath, body, true, who)
		if err != nil {
			t.Fatal(err)
		}
		drop()
		// The task runs on without its client, and keeps its slot until it ends.
		if n, _ := q.state.inUse(quotaTasks, "user:"+who); n != 1 {
			t.Errorf("slots held after the client went away = %d, want 1", n)
		}
		ts.exec.release(key)
		waitHeld(t, q, quotaTasks, who, 0)
	})
}

// A capnweb session has at most CapnwebCalls calls pending; a settled call gives its slot back.
func TestQuotaCapnwebCalls(t *testing.T) {
	t.Parallel()
	ts := quotaServer(t, &Quotas{CapnwebCalls: 2})
	s := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer calls"}})
	main := s.Main()
	ctx := t.Context()
	p1 := main.Call("sendMessage", userMessageWire("wait:calls-1"))
	p2 := main.Call("sendMessage", userMessageWire("wait:calls-2"))
	_, err := main.Call("getTask", map[string]any{"id": "x"}).Await(ctx)
	quotaRefusal(t, "capnweb", err, quotaCapnwebCalls)
	// Another connection has its own count.
	other := ts.dialCapnweb(t, "", http.Header{"Authorization": {"Bearer calls"}})
	if _, err := other.Main().Call("getTask", map[string]any{"id": "x"}).Await(ctx); !errorsIs(err, a2a.ErrTaskNotFound) {
		if _, reason := a2aErr(t, err); reason != "TASK_NOT_FOUND" {
			t.Errorf("another session's call: %v", err)
		}
	}
	ts.exec.release("calls-1")
	ts.exec.release("calls-2")
	for _, p := range []*capnweb.Promise{p1, p2} {
		if _, err := p.Await(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // the settled calls gave their slots back
		if _, err := main.Call("getTask", map[string]any{"id": "x"}).Await(ctx); err != nil {
			if _, reason := a2aErr(t, err); reason != "TASK_NOT_FOUND" {
				t.Fatalf("call after the others settled: %v", err)
			}
		}
	}
}

func TestQuotasNegative(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("NewHTTPHandler with Quotas.Streams = -1 did not panic")
		}
	}()
	h, _ := newA2AHandler()
	NewHTTPHandler(h, testCard(), &Options{Quotas: &Quotas{Streams: -1}})
}
