package main

// The load client: raw JSON-RPC bodies over one tuned keep-alive http.Client per server, an
// incremental SSE reader for the streams, and the bounded measurement loop.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// newHTTPClient is the load client's transport: keep-alive, enough idle connections for every
// worker (so no request waits for a dial after the warm-up), no compression, HTTP/1.1.
func newHTTPClient() *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     16 << 10,
		ReadBufferSize:      16 << 10,
	}
	return &http.Client{Transport: tr}
}

// worker is the state of one load goroutine: its buffers are reused from call to call.
type worker struct {
	body []byte
	buf  bytes.Buffer
	br   *bufio.Reader
}

// callFunc makes one call (a send, or a whole stream) and checks its answer. It returns the
// events received (1 for a send) and, for a stream, the time to its first event.
type callFunc func(ctx context.Context, w *worker) (events int, ttfe time.Duration, err error)

// reqSeq numbers JSON-RPC ids and message IDs, unique across the whole run.
var reqSeq atomic.Uint64

// rpcBody appends a JSON-RPC request for method (SendMessage or SendStreamingMessage) carrying a
// new user message whose only part is text (a JSON-safe string) to dst[:0].
func rpcBody(dst []byte, method, text string) []byte {
	id := reqSeq.Add(1)
	dst = append(dst[:0], `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `,"method":"`...)
	dst = append(dst, method...)
	dst = append(dst, `","params":`...)
	dst = appendSendParams(dst, id, text)
	return append(dst, '}')
}

// sendParams appends the params of a SendMessage (a SendMessageRequest) with a fresh messageId
// to dst[:0]: the capnweb client's request, as its JSON.
func sendParams(dst []byte, text string) []byte {
	return appendSendParams(dst[:0], reqSeq.Add(1), text)
}

func appendSendParams(dst []byte, id uint64, text string) []byte {
	dst = append(dst, `{"message":{"messageId":"bench-`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `","role":"ROLE_USER","parts":[{"text":"`...)
	dst = append(dst, text...)
	return append(dst, `"}]}}`...)
}

func newRequest(ctx context.Context, url string, body []byte, stream bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	return req, nil
}

// The texts the workloads send, and what a good answer contains.
const (
	replyText = "reply hello, world"
	taskText  = "task hello, world"
)

var (
	wantMessage   = []byte(`"message":{`)
	wantTask      = []byte(`"task":{`)
	wantCompleted = []byte(`"TASK_STATE_COMPLETED"`)
	wantTaskEcho  = []byte(`"text":"` + taskText + `"`)
	wantReplyEcho = []byte(`"text":"` + replyText + `"`)
	rpcError      = []byte(`"error":`)
)

// post sends w.body to url and reads the answer into w.buf, failing on an HTTP or JSON-RPC
// error.
func post(ctx context.Context, hc *http.Client, url string, w *worker) ([]byte, error) {
	req, err := newRequest(ctx, url, w.body, false)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	w.buf.Reset()
	_, err = w.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	b := w.buf.Bytes()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	if bytes.Contains(b, rpcError) {
		return nil, fmt.Errorf("JSON-RPC error: %.300s", b)
	}
	return b, nil
}

// sendOp returns the call function of a blocking SendMessage: kind "reply" (a direct message
// reply) or "task" (a completed task).
func sendOp(hc *http.Client, url, kind string) callFunc {
	text, want := replyText, [][]byte{wantMessage, wantReplyEcho}
	if kind == "task" {
		text, want = taskText, [][]byte{wantTask, wantCompleted, wantTaskEcho}
	}
	return func(ctx context.Context, w *worker) (int, time.Duration, error) {
		w.body = rpcBody(w.body, "SendMessage", text)
		b, err := post(ctx, hc, url, w)
		if err != nil {
			return 0, 0, err
		}
		for _, x := range want {
			if !bytes.Contains(b, x) {
				return 0, 0, fmt.Errorf("%s reply lacks %s: %.300s", kind, x, b)
			}
		}
		return 1, 0, nil
	}
}

// depOp returns the call function of the dependent sequence as JSON-RPC makes it, one call
// after the other: SendMessage "task …", GetTask of the sent task's id, GetTask of the got
// task's id. The ids are read from the answers with a byte scan (the task's id is its first
// field in a2a-go's encoding; verify decodes the same answers in full).
func depOp(hc *http.Client, url string) callFunc {
	return func(ctx context.Context, w *worker) (int, time.Duration, error) {
		w.body = rpcBody(w.body, "SendMessage", taskText)
		b, err := post(ctx, hc, url, w)
		if err != nil {
			return 0, 0, err
		}
		id, err := leadingID(b, wantTaskID)
		for range 2 {
			if err != nil {
				return 0, 0, err
			}
			w.body = getTaskBody(w.body, id)
			if b, err = post(ctx, hc, url, w); err != nil {
				return 0, 0, err
			}
			if !bytes.Contains(b, wantCompleted) || !bytes.Contains(b, wantTaskEcho) {
				return 0, 0, fmt.Errorf("GetTask: want the completed task echoing %q: %.300s", taskText, b)
			}
			id, err = leadingID(b, wantResultID)
		}
		return 1, 0, err
	}
}

var (
	wantTaskID   = []byte(`"task":{"id":"`)
	wantResultID = []byte(`"result":{"id":"`)
)

// leadingID returns the JSON string that follows prefix in b (ids need no escaping).
func leadingID(b, prefix []byte) (string, error) {
	_, rest, ok := bytes.Cut(b, prefix)
	if ok {
		if id, _, ok := bytes.Cut(rest, []byte(`"`)); ok {
			return string(id), nil
		}
	}
	return "", fmt.Errorf("answer without %s…\": %.300s", prefix, b)
}

// getTaskBody appends a JSON-RPC GetTask request for task id to dst[:0].
func getTaskBody(dst []byte, id string) []byte {
	dst = append(dst[:0], `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendUint(dst, reqSeq.Add(1), 10)
	dst = append(dst, `,"method":"GetTask","params":{"id":`...)
	dst = strconv.AppendQuote(dst, id)
	dst = append(dst, `}}`...)
	return dst
}

// streamOp returns the call function of one SendStreamingMessage "<cmd> n" (cmd: stream or
// burst, see echoExecutor): it reads the SSE
// response incrementally, times the first complete event, counts the events and checks that
// the stream opens with the Task and ends with the completed status.
func streamOp(hc *http.Client, url, cmd string, n int) callFunc {
	text := cmd + " " + strconv.Itoa(n)
	return func(ctx context.Context, w *worker) (int, time.Duration, error) {
		w.body = rpcBody(w.body, "SendStreamingMessage", text)
		t0 := time.Now()
		req, err := newRequest(ctx, url, w.body, true)
		if err != nil {
			return 0, 0, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return 0, 0, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
		}
		if w.br == nil {
			w.br = bufio.NewReaderSize(resp.Body, 32<<10)
		} else {
			w.br.Reset(resp.Body)
		}
		var (
			events int
			ttfe   time.Duration
			last   []byte
		)
		err = readSSE(w.br, &w.buf, func(data []byte) error {
			if events == 0 {
				ttfe = time.Since(t0)
				if !bytes.Contains(data, wantTask) {
					return fmt.Errorf("stream opens without the Task: %.300s", data)
				}
			}
			if bytes.Contains(data, rpcError) {
				return fmt.Errorf("stream error event: %.300s", data)
			}
			events++
			last = append(last[:0], data...)
			return nil
		})
		if err != nil {
			return events, ttfe, err
		}
		if events != n+2 {
			return events, ttfe, fmt.Errorf("stream of %d events, want %d (the Task, %d artifact updates, completed)", events, n+2, n)
		}
		if !bytes.Contains(last, wantCompleted) {
			return events, ttfe, fmt.Errorf("stream ends without the completed status: %.300s", last)
		}
		return events, ttfe, nil
	}
}

// readSSE reads an event stream to its end and calls onData with the data of each event (the
// "data:" lines of the event, joined by "\n"), as soon as the blank line ending it arrives.
// Comments (": keep-alive") and other fields are skipped.
func readSSE(br *bufio.Reader, scratch *bytes.Buffer, onData func([]byte) error) error {
	scratch.Reset()
	have := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if have {
					return onData(scratch.Bytes())
				}
				return nil
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if have {
				if err := onData(scratch.Bytes()); err != nil {
					return err
				}
				scratch.Reset()
				have = false
			}
		case line[0] == ':':
		default:
			data, ok := bytes.CutPrefix(line, []byte("data:"))
			if !ok {
				continue // event:, id:, retry:
			}
			data = bytes.TrimPrefix(data, []byte(" "))
			if have {
				scratch.WriteByte('\n')
			}
			scratch.Write(data)
			have = true
		}
	}
}

// ---- a thorough check of each kind of answer, made once per server before measuring ----

// sendResult is a SendMessageResponse: the result of JSON-RPC's SendMessage, and what the
// capnweb binding's sendMessage returns.
type sendResult struct {
	Task    *a2a.Task    `json:"task"`
	Message *a2a.Message `json:"message"`
}

type rpcResponse struct {
	Result *sendResult     `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// verify sends one "reply" and one "task" message and decodes the answers fully.
func verify(ctx context.Context, hc *http.Client, url string) error {
	for _, kind := range []string{"reply", "task"} {
		text := replyText
		if kind == "task" {
			text = taskText
		}
		req, err := newRequest(ctx, url, rpcBody(nil, "SendMessage", text), false)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var r rpcResponse
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w: %.300s", kind, err, b)
		}
		if len(r.Error) > 0 || r.Result == nil {
			return fmt.Errorf("%s: no result: %.300s", kind, b)
		}
		if err := r.Result.check(kind, text, b); err != nil {
			return err
		}
	}
	return nil
}

// check checks the decoded answer of a "reply" or "task" message echoing text; raw is the
// answer, for the error.
func (r *sendResult) check(kind, text string, raw []byte) error {
	switch kind {
	case "reply":
		m := r.Message
		if m == nil || r.Task != nil || m.Role != a2a.MessageRoleAgent || messageText(m) != text {
			return fmt.Errorf("reply: want a direct agent message echoing %q: %.300s", text, raw)
		}
	case "task":
		t := r.Task
		switch {
		case t == nil || r.Message != nil:
			return fmt.Errorf("task: want a task: %.300s", raw)
		case t.Status.State != a2a.TaskStateCompleted:
			return fmt.Errorf("task: state %s, want completed", t.Status.State)
		case len(t.Artifacts) != 1 || len(t.Artifacts[0].Parts) != 1 || t.Artifacts[0].Parts[0].Text() != text:
			return fmt.Errorf("task: want one artifact echoing %q: %.300s", text, raw)
		case len(t.History) == 0 || messageText(t.History[0]) != text:
			return fmt.Errorf("task: history lacks the user message: %.300s", raw)
		}
	}
	return nil
}

// ---- the measurement loop ----

// measurement is what one bounded loop observed (or several rounds, accumulated).
type measurement struct {
	calls   int             // completed calls (or streams)
	events  int             // events received (streams); calls for sends
	elapsed time.Duration   // from the first start to the last completion, summed over rounds
	lat     []time.Duration // per call (or whole stream)
	ttfe    []time.Duration // streams: time to first event
	server  harness.Usage   // what the server process used during the loops
	client  harness.Usage   // what this process (the load client) used meanwhile
	err     error
}

func (m *measurement) rate() float64 { return harness.Rate(m.calls, m.elapsed) }

func (m *measurement) eventRate() float64 { return harness.Rate(m.events, m.elapsed) }

// loop runs workers goroutines calling f until dur has passed or maxCalls calls have started,
// whichever comes first. It is bounded by dur plus a 30 s grace for a call that hangs; the
// first error stops it.
func loop(parent context.Context, workers int, dur time.Duration, maxCalls int, f callFunc) measurement {
	ctx, cancel := context.WithTimeout(parent, dur+30*time.Second)
	defer cancel()
	type local struct {
		lat, ttfe []time.Duration
		events    int
	}
	var (
		started  atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
		locals   = make([]local, workers)
	)
	start := time.Now()
	deadline := start.Add(dur)
	for i := range workers {
		wg.Go(func() {
			w := &worker{}
			l := local{lat: make([]time.Duration, 0, 1024)}
			for ctx.Err() == nil && started.Add(1) <= int64(maxCalls) {
				t0 := time.Now()
				n, ttfe, err := f(ctx, w)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					break
				}
				t1 := time.Now()
				l.lat = append(l.lat, t1.Sub(t0))
				if ttfe > 0 {
					l.ttfe = append(l.ttfe, ttfe)
				}
				l.events += n
				if t1.After(deadline) {
					break
				}
			}
			locals[i] = l
		})
	}
	wg.Wait()
	m := measurement{elapsed: time.Since(start), err: firstErr}
	if firstErr == nil && parent.Err() != nil {
		m.err = parent.Err()
	}
	for _, l := range locals {
		m.lat = append(m.lat, l.lat...)
		m.ttfe = append(m.ttfe, l.ttfe...)
		m.events += l.events
	}
	m.calls = len(m.lat)
	slices.Sort(m.lat)
	slices.Sort(m.ttfe)
	return m
}
