package main

// The capnweb load client: the capnweb Go client (capnweb.Dial) on the capnweb binding of
// ours-memory. One WebSocket per measurement carries every in-flight call of it, as a capnweb
// client uses the binding; the JSON-RPC client has one connection per worker instead.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// dialCapnweb opens a capnweb session on the binding at url, declaring A2A 1.0 on the upgrade.
func dialCapnweb(ctx context.Context, url string) (*capnweb.Session, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// No polling for answers (ReadSpin), as bench/capnweb's load client: a polling thread takes
	// one of the two cores the server under test needs.
	return capnweb.Dial(dctx, url, nil, &capnweb.DialOptions{Header: http.Header{"A2A-Version": {"1.0"}}, ReadSpin: -1})
}

// capnwebSetup dials one session for the measurement and returns op's call function on its main
// object; the cleanup closes the session.
func capnwebSetup(ctx context.Context, c *contender, op func(main *capnweb.Stub) callFunc) (callFunc, func(), error) {
	s, err := dialCapnweb(ctx, c.srv.wsURL)
	if err != nil {
		return nil, nil, err
	}
	return op(s.Main()), func() { s.Close() }, nil
}

// userMessage is a SendMessageRequest as the capnweb binding takes it: the ProtoJSON object, with
// a fresh messageId.
func userMessage(text string) map[string]any {
	return map[string]any{"message": map[string]any{
		"messageId": "bench-" + strconv.FormatUint(reqSeq.Add(1), 10),
		"role":      "ROLE_USER",
		"parts":     []any{map[string]any{"text": text}},
	}}
}

// field walks a received ProtoJSON tree: object keys, or array indexes given as ints.
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := wire.Fields(v)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// checkTask checks the cheap way (as the JSON-RPC client's byte checks do) that task is a
// completed task echoing text in its one artifact.
func checkTask(task any, text string) error {
	if st := field(task, "status", "state"); st != "TASK_STATE_COMPLETED" {
		return fmt.Errorf("task in state %v, want TASK_STATE_COMPLETED: %.300v", st, task)
	}
	if got := field(task, "artifacts", 0, "parts", 0, "text"); got != text {
		return fmt.Errorf("task artifact %v, want %q: %.300v", got, text, task)
	}
	return nil
}

// capnwebSendOp is sendOp over capnweb: one sendMessage, awaited and checked. As the JSON-RPC
// client does, it sends the request as JSON built by appending bytes (a json.RawMessage, which
// capnweb copies into the push) and checks the answer's JSON with a byte scan (the result read
// as a json.RawMessage: capnweb hands over the JSON it received, without building a tree).
func capnwebSendOp(main *capnweb.Stub, kind string) callFunc {
	text, want := replyText, [][]byte{wantMessage, wantReplyEcho}
	if kind == "task" {
		text, want = taskText, [][]byte{wantTask, wantCompleted, wantTaskEcho}
	}
	return func(ctx context.Context, _ *worker) (int, time.Duration, error) {
		p := main.Call("sendMessage", json.RawMessage(sendParams(nil, text)))
		var res json.RawMessage
		err := p.Decode(ctx, &res)
		p.Release()
		if err != nil {
			return 0, 0, err
		}
		for _, x := range want {
			if !bytes.Contains(res, x) {
				return 0, 0, fmt.Errorf("%s answer lacks %s: %.300s", kind, x, res)
			}
		}
		return 1, 0, nil
	}
}

// streamCheck counts the events of one stream, times the first and checks the stream's shape
// as streamOp does: it opens with the Task, carries n+2 events and ends with the completed
// status. Opening and end go by the events' sequence numbers: the server has several observer
// calls in flight, and this Go client runs a call that takes over a millisecond alongside the
// next ones, so calls may finish out of order.
type streamCheck struct {
	mu          sync.Mutex // the observer runs in the session's goroutines
	t0          time.Time
	n           int
	events      int
	ttfe        time.Duration
	first, last any
	firstSeq    float64
	lastSeq     float64
}

func (c *streamCheck) event(ev any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := eventSeq(ev)
	if c.events == 0 {
		c.ttfe = time.Since(c.t0)
	}
	if c.events == 0 || seq < c.firstSeq {
		c.first, c.firstSeq = ev, seq
	}
	if c.events == 0 || seq >= c.lastSeq { // without numbers: the last to arrive
		c.last, c.lastSeq = ev, seq
	}
	c.events++
	return nil
}

// eventSeq is a StreamResponse's sequence number (metadata "a2awebcap.seq"), or -1.
func eventSeq(ev any) float64 {
	m, _ := wire.Fields(ev)
	for _, v := range m {
		if seq, ok := field(v, "metadata", "a2awebcap.seq").(float64); ok {
			return seq
		}
	}
	return -1
}

func (c *streamCheck) end() (int, time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.events != c.n+2 {
		return c.events, c.ttfe, fmt.Errorf("stream of %d events, want %d (the Task, %d artifact updates, completed)", c.events, c.n+2, c.n)
	}
	if field(c.first, "task") == nil {
		return c.events, c.ttfe, fmt.Errorf("stream opens without the Task: %.300v", c.first)
	}
	if st := field(c.last, "statusUpdate", "status", "state"); st != "TASK_STATE_COMPLETED" {
		return c.events, c.ttfe, fmt.Errorf("stream ends without the completed status: %.300v", c.last)
	}
	return c.events, c.ttfe, nil
}

// capnwebStreamOp is streamOp over capnweb: sendStreamingMessage "<cmd> n", its events taken
// by an observer function (the server keeps up to binding.DefaultObserverWindow calls
// unanswered, then waits for the oldest) or, when readable, read from the ReadableStream the
// call returns (capnweb's flow control). The time to first event runs from just before the
// call to the first event's arrival in the observer or the reader.
func capnwebStreamOp(main *capnweb.Stub, cmd string, n int, readable bool) callFunc {
	text := cmd + " " + strconv.Itoa(n)
	return func(ctx context.Context, _ *worker) (int, time.Duration, error) {
		sc := &streamCheck{t0: time.Now(), n: n}
		if !readable {
			p := main.Call("sendStreamingMessage", userMessage(text), sc.event)
			v, err := p.Await(ctx)
			p.Release()
			if err != nil {
				return sc.events, sc.ttfe, err
			}
			if st := field(v, "task", "status", "state"); st != "TASK_STATE_COMPLETED" {
				return sc.events, sc.ttfe, fmt.Errorf("stream result %.300v, want the completed task", v)
			}
			return sc.end()
		}
		p := main.Call("sendStreamingMessage", userMessage(text))
		v, err := p.Await(ctx)
		p.Release()
		if err != nil {
			return 0, 0, err
		}
		if h, ok := field(v, "handle").(*capnweb.Stub); ok {
			h.Release()
		}
		rs, ok := field(v, "stream").(*capnweb.ReadableStream)
		if !ok {
			return 0, 0, fmt.Errorf("sendStreamingMessage without observer: %.300v, want {stream, handle}", v)
		}
		for ev, err := range rs.All(ctx) {
			if err == nil {
				err = sc.event(ev)
			}
			if err != nil {
				rs.Cancel(err)
				return sc.events, sc.ttfe, err
			}
		}
		return sc.end()
	}
}

// capnwebDepOp is the dependent sequence sendMessage → getTask(the sent task's id) →
// getTask(the got task's id). pipelined: the three calls are sent at once, each naming the
// previous one's result through a promise, and only the last is awaited (one round trip);
// otherwise each is awaited before the next is sent (three). The pipelined sequence sends and
// reads JSON as capnwebSendOp does, the single call it is compared with.
func capnwebDepOp(main *capnweb.Stub, pipelined bool) callFunc {
	return func(ctx context.Context, _ *worker) (int, time.Duration, error) {
		if pipelined {
			sent := main.Call("sendMessage", json.RawMessage(sendParams(nil, taskText)))
			id := sent.Get("task", "id")
			got := main.Call("getTask", map[string]any{"id": id})
			gid := got.Get("id")
			again := main.Call("getTask", map[string]any{"id": gid})
			var res json.RawMessage
			err := again.Decode(ctx, &res)
			for _, p := range []*capnweb.Promise{again, gid, got, id, sent} {
				p.Release()
			}
			if err != nil {
				return 0, 0, err
			}
			if !bytes.Contains(res, wantCompleted) || !bytes.Contains(res, wantTaskEcho) {
				return 0, 0, fmt.Errorf("getTask answer: %.300s", res)
			}
			return 1, 0, nil
		}
		await := func(method string, arg any) (any, error) {
			p := main.Call(method, arg)
			defer p.Release()
			return p.Await(ctx)
		}
		v, err := await("sendMessage", userMessage(taskText))
		if err != nil {
			return 0, 0, err
		}
		for range 2 {
			id, ok := field(v, "task", "id").(string)
			if !ok {
				id, ok = field(v, "id").(string)
			}
			if !ok {
				return 0, 0, fmt.Errorf("no task id in %.300v", v)
			}
			if v, err = await("getTask", map[string]any{"id": id}); err != nil {
				return 0, 0, err
			}
		}
		return 1, 0, checkTask(v, taskText)
	}
}

// verifyContender checks a contender's answers in full before it is measured: verify for
// JSON-RPC, the same checks on the capnweb binding's results, decoded as ProtoJSON.
func verifyContender(ctx context.Context, c *contender, hc *http.Client) error {
	if c.via == viaJSONRPC {
		return verify(ctx, hc, c.srv.url)
	}
	s, err := dialCapnweb(ctx, c.srv.wsURL)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, kind := range []string{"reply", "task"} {
		text := replyText
		if kind == "task" {
			text = taskText
		}
		p := s.Main().Call("sendMessage", userMessage(text))
		v, err := p.Await(ctx)
		p.Release()
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: result is no plain JSON value: %w", kind, err)
		}
		var r sendResult
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w: %.300s", kind, err, b)
		}
		if err := r.check(kind, text, b); err != nil {
			return err
		}
	}
	p := s.Main().Call("getTask", map[string]any{"id": "no-such-task"})
	defer p.Release()
	if _, err := p.Await(ctx); err == nil {
		return errors.New("getTask of an unknown task succeeded")
	}
	return nil
}
