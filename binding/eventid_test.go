package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/backlog"
)

// streamRequest is a raw HTTP request whose response is an event stream.
type streamRequest struct {
	method, path string // path below the server's base URL
	body         []byte // nil: none
	header       []string
}

// streamBinding is an HTTP binding, in one protocol version, that streams task events.
type streamBinding struct {
	name string
	// send streams a message with the given text (SendStreamingMessage); subscribe subscribes
	// to a task (SubscribeToTask).
	send      func(text string) streamRequest
	subscribe func(id string) streamRequest
	// completed is the state of a completed task on the wire.
	completed string
}

var streamBindings = []streamBinding{
	{
		name: "JSONRPC",
		send: func(text string) streamRequest {
			return streamRequest{"POST", DefaultJSONRPCPath, jsonrpcBody("SendStreamingMessage", userMessage(text)), nil}
		},
		subscribe: func(id string) streamRequest {
			return streamRequest{"POST", DefaultJSONRPCPath, jsonrpcBody("SubscribeToTask", map[string]any{"id": id}), nil}
		},
		completed: "TASK_STATE_COMPLETED",
	},
	{
		name: "HTTP+JSON",
		send: func(text string) streamRequest {
			b, _ := json.Marshal(userMessage(text))
			return streamRequest{"POST", DefaultRESTPath + "/message:stream", b, nil}
		},
		subscribe: func(id string) streamRequest {
			// GET, as a browser's EventSource does.
			return streamRequest{"GET", DefaultRESTPath + "/tasks/" + id + ":subscribe", nil, nil}
		},
		completed: "TASK_STATE_COMPLETED",
	},
	{
		name: "JSONRPC 0.3",
		send: func(text string) streamRequest {
			msg := map[string]any{"kind": "message", "messageId": uuid.NewString(), "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
			return streamRequest{"POST", DefaultJSONRPCPath, jsonrpcBody("message/stream", map[string]any{"message": msg}), []string{hdrVersion, Version03}}
		},
		subscribe: func(id string) streamRequest {
			return streamRequest{"POST", DefaultJSONRPCPath, jsonrpcBody("tasks/resubscribe", map[string]any{"id": id}), []string{hdrVersion, Version03}}
		},
		completed: "completed",
	},
	{
		name: "HTTP+JSON 0.3",
		send: func(text string) streamRequest {
			b, _ := json.Marshal(map[string]any{"message": map[string]any{"messageId": uuid.NewString(), "role": "ROLE_USER", "content": []any{map[string]any{"text": text}}}})
			return streamRequest{"POST", DefaultRESTPath + "/v1/message:stream", b, []string{hdrVersion, Version03}}
		},
		subscribe: func(id string) streamRequest {
			return streamRequest{"GET", DefaultRESTPath + "/v1/tasks/" + id + ":subscribe", nil, []string{hdrVersion, Version03}}
		},
		completed: "TASK_STATE_COMPLETED",
	},
}

// openStream sends r and returns the events of the stream as they arrive. The connection
// closes when the caller stops ranging or the server ends the stream.
func (ts *testServer) openStream(t *testing.T, r streamRequest, header ...string) iter.Seq2[sseEvent, error] {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	header = append(append([]string{"Accept", mediaSSE}, r.header...), header...)
	resp := send(t, ctx, r.method, ts.baseURL+r.path, r.body, header...)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != mediaSSE {
		resp.Body.Close()
		t.Fatalf("%s %s: HTTP %d %s, want an event stream", r.method, r.path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return func(yield func(sseEvent, error) bool) {
		defer resp.Body.Close()
		defer cancel()
		for ev, err := range sseEvents(resp.Body) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// take returns the first n events of a stream (all of them for n < 0), then drops it.
func take(t *testing.T, events iter.Seq2[sseEvent, error], n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	if n == 0 {
		return out
	}
	for ev, err := range events {
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if out = append(out, ev); len(out) == n {
			break
		}
	}
	return out
}

var (
	seqPattern    = regexp.MustCompile(`"` + regexp.QuoteMeta(engine.SeqKey) + `":\s*(\d+)`)
	taskIDPattern = regexp.MustCompile(`"taskId":"([^"]+)"`)
)

// eventIDs checks that every event has an id line equal to the sequence number in its
// metadata, and that the ids increase strictly; it returns them.
func eventIDs(t *testing.T, events []sseEvent) []int64 {
	t.Helper()
	var ids []int64
	for i, ev := range events {
		seqs := seqPattern.FindAllStringSubmatch(ev.data, -1)
		if len(seqs) != 1 {
			t.Fatalf("event %d has %d sequence numbers, want 1: %s", i, len(seqs), ev.data)
		}
		if !ev.hasID || ev.id != seqs[0][1] {
			t.Errorf("event %d: id %q (present: %t), want its sequence number %s", i, ev.id, ev.hasID, seqs[0][1])
		}
		id, err := strconv.ParseInt(ev.id, 10, 64)
		if err != nil {
			t.Fatalf("event %d: id %q is not a number", i, ev.id)
		}
		if len(ids) > 0 && id <= ids[len(ids)-1] {
			t.Errorf("event %d: id %d after %d", i, id, ids[len(ids)-1])
		}
		ids = append(ids, id)
	}
	return ids
}

// startTask streams "wait:KEY" and drops the stream after the task and its working status
// (whose ids it checks); the task finishes on ts.exec.release(key). It returns the task's id
// and the last event id received.
func (ts *testServer) startTask(t *testing.T, b streamBinding, key string) (string, int64) {
	t.Helper()
	first := take(t, ts.openStream(t, b.send("wait:"+key)), 2)
	ids := eventIDs(t, first)
	m := taskIDPattern.FindStringSubmatch(first[1].data)
	if m == nil {
		t.Fatalf("the second event has no task id: %s", first[1].data)
	}
	return m[1], ids[1]
}

// TestSSE: on both HTTP bindings, in both versions, each streamed event has an SSE id equal to
// its sequence number, SendStreamingMessage and SubscribeToTask alike, and a client that lost
// its stream resubscribes with the id of the last event it received as Last-Event-ID, as a
// browser's EventSource does, and gets exactly the events it missed.
func TestSSE(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Serve03: true}})
	for _, b := range streamBindings {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			t.Run("SendStreamingMessage", func(t *testing.T) {
				t.Parallel()
				if ids := eventIDs(t, take(t, ts.openStream(t, b.send("ids")), -1)); len(ids) != 4 {
					t.Errorf("ids %v, want 4 (task, working, artifact, completed)", ids)
				}
			})

			t.Run("SubscribeToTask", func(t *testing.T) {
				t.Parallel()
				key := uuid.NewString()
				id, last := ts.startTask(t, b, key)
				var events []sseEvent
				for ev, err := range ts.openStream(t, b.subscribe(id)) {
					if err != nil {
						t.Fatal(err)
					}
					if events = append(events, ev); len(events) == 1 {
						ts.exec.release(key) // the snapshot is in: let the task finish
					}
				}
				if diff := cmp.Diff([]int64{last, last + 1, last + 2}, eventIDs(t, events)); diff != "" {
					t.Errorf("ids of the snapshot and the rest (-want +got):\n%s", diff)
				}
			})

			t.Run("Resume", func(t *testing.T) {
				t.Parallel()
				key := uuid.NewString()
				id, last := ts.startTask(t, b, key)
				ts.exec.release(key) // the task finishes while nobody listens
				waitState(t, ts.client(t, a2a.TransportProtocolJSONRPC), a2a.TaskID(id), a2a.TaskStateCompleted)

				missed := take(t, ts.openStream(t, b.subscribe(id), "Last-Event-ID", fmt.Sprint(last)), -1)
				if diff := cmp.Diff([]int64{last + 1, last + 2}, eventIDs(t, missed)); diff != "" {
					t.Fatalf("resumed ids (-want +got):\n%s", diff)
				}
				state := regexp.MustCompile(`"state":\s*"` + b.completed + `"`)
				if final := missed[len(missed)-1].data; !state.MatchString(final) {
					t.Errorf("the last resumed event is not the completed status: %s", final)
				}
			})
		})
	}
}

// TestSSEResumePastEnd: an EventSource that reconnects to a finished task's subscription after
// its last event gets an error response, not an event stream, so it stops reconnecting.
func TestSSEResumePastEnd(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	b := streamBindings[1] // HTTP+JSON, GET, as EventSource
	events := take(t, ts.openStream(t, b.send("done")), -1)
	id := taskIDPattern.FindStringSubmatch(events[1].data)[1]
	last := events[len(events)-1].id
	r := b.subscribe(id)
	got := do(t, r.method, ts.baseURL+r.path, nil, "Accept", mediaSSE, "Last-Event-ID", last)
	if got.status == http.StatusOK || got.header.Get("Content-Type") == mediaSSE {
		t.Errorf("resuming after the last event: HTTP %d %s, want an error response", got.status, got.header.Get("Content-Type"))
	}
}

// The package does not import engine for the key; they must agree.
func TestSeqKeyIsEngines(t *testing.T) {
	t.Parallel()
	if seqKey != engine.SeqKey {
		t.Errorf("seqKey = %q, want engine.SeqKey %q", seqKey, engine.SeqKey)
	}
}

func TestWithEventID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		jsonrpc bool
		in      string
		want    string
	}{
		{"keep-alive", false, ": keep-alive\n\n", ": keep-alive\n\n"},
		{"REST status", false,
			"id: 5a0c\ndata: {\"statusUpdate\":{\"taskId\":\"t\",\"metadata\":{\"a2awebcap.seq\":7}}}\n\n",
			"id: 7\ndata: {\"statusUpdate\":{\"taskId\":\"t\",\"metadata\":{\"a2awebcap.seq\":7}}}\n\n"},
		{"REST task", false,
			"data: {\"task\":{\"id\":\"t\",\"metadata\":{\"a2awebcap.seq\":12}}}\n\n",
			"id: 12\ndata: {\"task\":{\"id\":\"t\",\"metadata\":{\"a2awebcap.seq\":12}}}\n\n"},
		{"JSON-RPC artifact", true,
			"id: 5a0c\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"artifactUpdate\":{\"metadata\":{\"a2awebcap.seq\":3}}}}\n\n",
			"id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"artifactUpdate\":{\"metadata\":{\"a2awebcap.seq\":3}}}}\n\n"},
		{"JSON-RPC 0.3 event", true,
			"id: 5a0c\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"status-update\",\"metadata\":{\"a2awebcap.seq\":4}}}\n\n",
			"id: 4\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"status-update\",\"metadata\":{\"a2awebcap.seq\":4}}}\n\n"},
		{"JSON-RPC error", true,
			"id: 5a0c\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"error\":{\"code\":-32001}}\n\n",
			"data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"error\":{\"code\":-32001}}\n\n"},
		{"no seq", false,
			"id: 5a0c\nevent: message\ndata: {\"message\":{\"messageId\":\"m\"}}\n\n",
			"event: message\ndata: {\"message\":{\"messageId\":\"m\"}}\n\n"},
		{"seq of a nested message only", false,
			"id\ndata: {\"statusUpdate\":{\"status\":{\"message\":{\"metadata\":{\"a2awebcap.seq\":9}}}}}\n\n",
			"data: {\"statusUpdate\":{\"status\":{\"message\":{\"metadata\":{\"a2awebcap.seq\":9}}}}}\n\n"},
		{"seq not a count", false,
			"data: {\"task\":{\"metadata\":{\"a2awebcap.seq\":-1.5}}}\n\n",
			"data: {\"task\":{\"metadata\":{\"a2awebcap.seq\":-1.5}}}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(withEventID([]byte(tc.in), tc.jsonrpc)); got != tc.want {
				t.Errorf("withEventID(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// flushRecorder records what reaches the client: the bytes of each flush.
type flushRecorder struct {
	h       http.Header
	pending []byte
	flushes []string
}

func (f *flushRecorder) Header() http.Header { return f.h }
func (f *flushRecorder) WriteHeader(int)     {}
func (f *flushRecorder) Write(b []byte) (int, error) {
	f.pending = append(f.pending, b...)
	return len(b), nil
}
func (f *flushRecorder) Flush() {
	f.flushes = append(f.flushes, string(f.pending))
	f.pending = nil
}

// With a backlog hint, an event whose producer has the next one in hand already is not
// flushed on its own: a burst leaves in one flush, the first event at once, and no more than
// maxHeld bytes wait.
func TestEventIDWriterHoldsBursts(t *testing.T) {
	t.Parallel()
	rec := &flushRecorder{h: http.Header{"Content-Type": {mediaSSE}}}
	hint := &backlog.Hint{}
	iw := &eventIDWriter{w: rec, hint: hint}
	event := func(seq int, more bool) {
		hint.More.Store(more)
		fmt.Fprintf(iw, "data: {\"statusUpdate\":{\"metadata\":{\"a2awebcap.seq\":%d}}}\n\n", seq)
		iw.Flush()
	}
	event(1, true) // the first: at once, though more follow
	event(2, true)
	event(3, true)
	event(4, false) // the last in hand: 2-4 together
	event(5, false) // alone
	counts := []int{}
	for _, f := range rec.flushes {
		counts = append(counts, strings.Count(f, "data:"))
	}
	if diff := cmp.Diff([]int{1, 3, 1}, counts); diff != "" {
		t.Errorf("events per flush (-want +got):\n%s", diff)
	}

	// A long burst is flushed every maxHeld bytes.
	rec.flushes = nil
	n := 3 * maxHeld / 60 // events of about 60 bytes
	for i := range n {
		event(10+i, true)
	}
	if len(rec.flushes) < 2 {
		t.Errorf("%d events held in %d flushes: maxHeld not kept", n, len(rec.flushes))
	}
	for _, f := range rec.flushes {
		if len(f) > maxHeld*5/4 { // maxHeld of events as written, and the ids they get
			t.Errorf("a flush of %d bytes, over maxHeld", len(f))
		}
	}
}
