package binding

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// capnwebURL is the test server's capnweb URL for a WebSocket ("ws") or a batch ("http"),
// with query.
func (ts *testServer) capnwebURL(scheme, query string) string {
	return scheme + strings.TrimPrefix(ts.baseURL, "http") + DefaultCapnwebPath + query
}

// capnwebSessions opens a WebSocket and a batch session on the capnweb binding, the URL
// carrying query and the requests header.
func (ts *testServer) capnwebSessions(t *testing.T, query string, header http.Header) map[string]*capnweb.Session {
	t.Helper()
	batch := capnweb.NewBatchSession(ts.capnwebURL("http", query), nil, &capnweb.DialOptions{Header: header})
	t.Cleanup(func() { _ = batch.Close() })
	return map[string]*capnweb.Session{"websocket": ts.dialCapnweb(t, query, header), "batch": batch}
}

// A version (or a missing required extension) the connection declares does not refuse the
// connection — a stock capnweb client would see only "WebSocket connection failed" or "RPC
// request failed: 400" — but fails each A2A call with the A2A error; getAgentCard still
// answers, and a call may declare what it speaks itself.
func TestCapnwebRefusalReachesCalls(t *testing.T) {
	t.Parallel()
	const ext = "https://example.com/ext/required/v1"
	card := testCard()
	card.Capabilities.Extensions = []a2a.AgentExtension{{URI: ext, Required: true}}
	ts := startServer(t, serverConfig{card: card})
	for _, tc := range []struct {
		name, query    string
		code           float64
		reason         string
		fix            map[string]any
		metaKey, value string
	}{
		{"version", "?A2A-Version=9.9&A2A-Extensions=" + ext, -32009, "VERSION_NOT_SUPPORTED", map[string]any{"A2A-Version": "1.0"}, "supportedVersions", "1.0"},
		{"extension", "", -32008, "EXTENSION_SUPPORT_REQUIRED", map[string]any{"A2A-Extensions": ext}, "", ""},
	} {
		for _, transport := range []string{"websocket", "batch"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				t.Parallel()
				ws := ts.capnwebSessions(t, tc.query, nil)[transport].Main()
				// A batch session is one request: a new one for each call.
				main := func() *capnweb.Stub {
					if transport == "batch" {
						return ts.capnwebSessions(t, tc.query, nil)[transport].Main()
					}
					return ws
				}
				var got a2a.AgentCard
				if err := awaitInto(t.Context(), main().Call("getAgentCard"), &got); err != nil || got.Name != "echo" {
					t.Errorf("getAgentCard() = %q, %v; want the card", got.Name, err)
				}
				_, err := main().Call("getTask", map[string]any{"id": "x"}).Await(t.Context())
				if err == nil {
					t.Fatal("getTask() succeeded")
				}
				code, reason := a2aErr(t, err)
				if code != tc.code || reason != tc.reason {
					t.Errorf("getTask() = %v %s (%v), want %v %s", code, reason, err, tc.code, tc.reason)
				}
				if tc.metaKey != "" {
					var ce *capnweb.Error
					_ = errors.As(err, &ce)
					if !strings.Contains(fmt.Sprint(ce.Props["details"]), tc.value) {
						t.Errorf("error details %v do not name %s", ce.Props["details"], tc.value)
					}
				}
				// The same call, declaring what the server speaks, is served.
				if got := callReason(t, main().Call("getTask", map[string]any{"id": "x"}, tc.fix)); got != "TASK_NOT_FOUND" {
					t.Errorf("getTask() with %v = %s, want TASK_NOT_FOUND", tc.fix, got)
				}
			})
		}
	}
}

// Last-Event-ID in the URL query of the WebSocket or batch (browsers cannot set WebSocket
// headers) resumes the connection's subscriptions as the header does.
func TestCapnwebLastEventIDQuery(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	c := ts.client(t, a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(t.Context(), userMessage("hello"))
	if err != nil {
		t.Fatal(err)
	}
	id := string(res.(*a2a.Task).ID) // finished: seq 1 task, 2 working, 3 artifact, 4 completed
	for transport, s := range ts.capnwebSessions(t, "?Last-Event-ID=2", nil) {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var seqs []float64
			var kinds []string
			take := func(ev map[string]any) {
				for k, v := range ev {
					kinds = append(kinds, k)
					seq, _ := v.(map[string]any)["metadata"].(map[string]any)["a2awebcap.seq"].(float64)
					seqs = append(seqs, seq)
				}
			}
			v, err := s.Main().Call("subscribeToTask", map[string]any{"id": id}).Await(t.Context())
			if err != nil {
				t.Fatalf("subscribeToTask() = %v", err)
			}
			if transport == "batch" {
				for _, ev := range asMap(v)["events"].([]any) {
					take(asMap(ev))
				}
			} else {
				stream := asMap(v)["stream"].(*capnweb.ReadableStream)
				for ev, err := range stream.All(t.Context()) {
					if err != nil {
						t.Fatal(err)
					}
					take(asMap(ev))
				}
			}
			if diff := cmp.Diff([]string{"artifactUpdate", "statusUpdate"}, kinds); diff != "" || !slices.Equal(seqs, []float64{3, 4}) {
				t.Errorf("resumed after 2: %v with seqs %v, want the artifact (3) and the completed status (4)", kinds, seqs)
			}
		})
	}
}

// subscribeToPushNotifications over HTTP batch is UNSUPPORTED_OPERATION: the batch is answered
// before the task's events come, and the callback cannot be called after it.
func TestCapnwebPushSubscriptionNeedsWebSocket(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	id := string(waitingTask(t, ts, ts.client(t, a2a.TransportProtocolJSONRPC)))
	sessions := ts.capnwebSessions(t, "", nil)
	callback := func(map[string]any) {}
	if got := callReason(t, sessions["batch"].Main().Call("subscribeToPushNotifications", id, callback)); got != "UNSUPPORTED_OPERATION" {
		t.Errorf("over batch: %s, want UNSUPPORTED_OPERATION", got)
	}
	if got := callReason(t, sessions["websocket"].Main().Call("subscribeToPushNotifications", id, callback)); got != "ok" {
		t.Errorf("over a WebSocket: %s, want ok", got)
	}
}

// Credentials among a call's service parameters are refused, not ignored: the call would
// otherwise run as the connection's principal.
func TestCapnwebPerCallCredentials(t *testing.T) {
	t.Parallel()
	card := testCard()
	card.SecuritySchemes = a2a.NamedSecuritySchemes{
		"key":    a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-Agent-Key"},
		"qkey":   a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationQuery, Name: "agent_key"},
		"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"},
	}
	ts := startServer(t, serverConfig{card: card, engine: true, opts: &Options{Authenticate: tokenAuth}})
	for _, transport := range []string{"websocket", "batch"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			// A batch session is one request: a new one for each call.
			session := func() *capnweb.Session {
				return ts.capnwebSessions(t, "", http.Header{"Authorization": {"Bearer alice"}})[transport]
			}
			main := session().Main()
			for _, params := range []map[string]any{
				{"Authorization": "Bearer bob"},
				{"authorization": "Bearer bob"},
				{"Proxy-Authorization": "Basic x"},
				{"Cookie": "session=1"},
				{"X-Agent-Key": "k"},
				{"agent_key": "k"},
			} {
				if transport == "batch" {
					main = session().Main()
				}
				_, err := main.Call("listTasks", map[string]any{}, params).Await(t.Context())
				if err == nil {
					t.Errorf("listTasks with %v: served, want refused", params)
					continue
				}
				if code, reason := a2aErr(t, err); reason != "INVALID_PARAMS" || !strings.Contains(err.Error(), "authenticate") {
					t.Errorf("listTasks with %v = %v %s %q, want INVALID_PARAMS pointing to authenticate", params, code, reason, err)
				}
			}
			if transport == "batch" {
				main = session().Main()
			}
			if got := callReason(t, main.Call("listTasks", map[string]any{}, map[string]any{"A2A-Version": "1.0"})); got != "ok" {
				t.Errorf("listTasks with other parameters: %s", got)
			}
		})
	}
}

// A2A-Version/Last-Event-ID aside, a task that goes to input-required frees its task quota
// slot even when the send carried Last-Event-ID (a capnweb connection's query, or an HTTP
// header): the quota's own subscription to the task is not a resumed one.
func TestQuotaWatchIgnoresLastEventID(t *testing.T) {
	t.Parallel()
	q := &Quotas{Tasks: 1}
	ts := quotaServer(t, q)
	sends := map[string]func(t *testing.T, who, text string){
		"JSONRPC": func(t *testing.T, who, text string) {
			body := jsonrpcBody("SendMessage", map[string]any{"message": userMessageWire(text)["message"], "configuration": map[string]any{"returnImmediately": true}})
			resp := send(t, t.Context(), "POST", ts.baseURL+DefaultJSONRPCPath, body, "Authorization", "Bearer "+who, "Last-Event-ID", "1")
			resp.Body.Close()
		},
		"capnweb": func(t *testing.T, who, text string) {
			s := ts.dialCapnweb(t, "?Last-Event-ID=1", http.Header{"Authorization": {"Bearer " + who}})
			req := userMessageWire(text)
			req["configuration"] = map[string]any{"returnImmediately": true}
			if _, err := s.Main().Call("sendMessage", req).Await(t.Context()); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, sendAsk := range sends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			who := "lei-" + name
			sendAsk(t, who, "ask:"+who) // returned while the task works: the quota follows it
			waitHeld(t, q, quotaTasks, who, 1)
			ts.exec.release(who)
			// The slot goes within milliseconds of the task asking; 10 s is for a loaded machine.
			deadline := time.Now().Add(10 * time.Second)
			for {
				n, changed := q.state.inUse(quotaTasks, "user:"+who)
				if n == 0 {
					break
				}
				select {
				case <-changed:
				case <-time.After(time.Until(deadline)):
					t.Fatalf("%s still holds %d task slot(s) for a task waiting for input", who, n)
				}
			}
		})
	}
}

// A push subscription to a task that has ended (canceled just after subscribing, before the
// server follows it) gets the task's final state once, not silence.
func TestCapnwebPushSubscriptionToEndedTask(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	c := ts.client(t, a2a.TransportProtocolJSONRPC)
	id := waitingTask(t, ts, c)
	if _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	got := make(chan map[string]any, 4)
	callback := func(ev map[string]any) { got <- ev }
	ws := ts.capnwebSessions(t, "", nil)["websocket"]
	if got := callReason(t, ws.Main().Call("subscribeToPushNotifications", string(id), callback)); got != "ok" {
		t.Fatalf("subscribeToPushNotifications() = %s, want ok", got)
	}
	select {
	case ev := <-got:
		task, _ := ev["task"].(map[string]any)
		status, _ := task["status"].(map[string]any)
		if status["state"] != "TASK_STATE_CANCELED" {
			t.Errorf("the callback got %v, want the canceled task", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the callback of a subscription to an ended task was never called")
	}
	select {
	case ev := <-got:
		t.Errorf("a second event after the final state: %v", ev)
	case <-time.After(200 * time.Millisecond):
	}
}

// waitingTask starts, through c, a task that waits until the test ends.
func waitingTask(t *testing.T, ts *testServer, c *a2aclient.Client) a2a.TaskID {
	t.Helper()
	req := userMessage("wait:" + t.Name())
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	res, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.exec.release(t.Name()) })
	return res.(*a2a.Task).ID
}
