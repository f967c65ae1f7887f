package binding

import (
	"context"
	"errors"
	"iter"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/google/go-cmp/cmp"
)

// burstHandler is a RequestHandler whose SendStreamingMessage streams N Messages, their texts
// "0" to "N-1", for a message whose text is N; the rest is a2a-go's default handler.
type burstHandler struct {
	a2asrv.RequestHandler
	before func(i int) // if set, called before event i is made
	ended  func()      // if set, called when SendStreamingMessage's stream returns
}

func (h burstHandler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if h.ended != nil {
			defer h.ended()
		}
		n, err := strconv.Atoi(textOf(req.Message))
		if err != nil {
			yield(nil, a2a.NewError(a2a.ErrInvalidParams, "the message must be a number"))
			return
		}
		for i := range n {
			if h.before != nil {
				h.before(i)
			}
			if ctx.Err() != nil || !yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(strconv.Itoa(i))), nil) {
				return
			}
		}
	}
}

// GetTask knows the tasks "burst-N", working.
func (h burstHandler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if _, ok := burstTask(req.ID); ok {
		return &a2a.Task{ID: req.ID, ContextID: "burst", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}, nil
	}
	return h.RequestHandler.GetTask(ctx, req)
}

// SubscribeToTask streams, for the task "burst-N", N-1 working status updates and then the
// completed one.
func (h burstHandler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	n, ok := burstTask(req.ID)
	if !ok {
		return h.RequestHandler.SubscribeToTask(ctx, req)
	}
	return func(yield func(a2a.Event, error) bool) {
		for i := range n {
			if h.before != nil {
				h.before(i)
			}
			state := a2a.TaskStateWorking
			if i == n-1 {
				state = a2a.TaskStateCompleted
			}
			ev := &a2a.TaskStatusUpdateEvent{TaskID: req.ID, ContextID: "burst", Status: a2a.TaskStatus{State: state}, Metadata: map[string]any{"i": i}}
			if ctx.Err() != nil || !yield(ev, nil) {
				return
			}
		}
	}
}

func burstTask(id a2a.TaskID) (int, bool) {
	s, ok := strings.CutPrefix(string(id), "burst-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// burstSession serves a burstHandler with opts and before and returns the main object of a
// capnweb WebSocket session on it.
func burstSession(t *testing.T, opts *Options, before func(int)) *capnweb.Stub {
	t.Helper()
	return burstDial(t, opts, "", burstHandler{before: before}).Main()
}

// burstDial serves h (its RequestHandler set to a2a-go's default) with opts and returns a
// capnweb WebSocket session on it, opened with the URL query query.
func burstDial(t *testing.T, opts *Options, query string, h burstHandler) *capnweb.Session {
	t.Helper()
	h.RequestHandler, _ = newA2AHandler()
	srv := httptest.NewServer(NewHTTPHandler(h, testCard(), opts))
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + DefaultCapnwebPath + query
	s, err := capnweb.Dial(t.Context(), url, nil, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// eventIndex is the number of an event from burstHandler: the text of a {message}, the
// metadata "i" of a {statusUpdate}.
func eventIndex(ev map[string]any) int {
	if u, ok := ev["statusUpdate"].(map[string]any); ok {
		m, _ := u["metadata"].(map[string]any)
		i, _ := m["i"].(float64)
		return int(i)
	}
	i, _ := strconv.Atoi(eventText(ev))
	return i
}

// eventText is the text of a {message} StreamResponse from burstHandler.
func eventText(ev map[string]any) string {
	m, _ := ev["message"].(map[string]any)
	parts, _ := m["parts"].([]any)
	if len(parts) == 0 {
		return ""
	}
	p, _ := parts[0].(map[string]any)
	s, _ := p["text"].(string)
	return s
}

// texts returns "0" to "n-1".
func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// gatedObserver is an observer that blocks each call until the test lets it return, and
// counts the calls it is running at once. Each call tells the session it blocks (the Go
// client would otherwise run the next call only after a delay), so the calls the server has
// sent run together: running is at most what the server has unanswered.
//
// That the most calls running reaches the window shows the server sends that many without
// waiting; that it sends no more is checked on the server's side too, where it does not
// depend on how fast the client starts calls: the stream makes event i only once the call
// of event i-1 was sent, which a window of w allows once i-w calls were answered, and the
// observer counts its answers before it returns them (check).
type gatedObserver struct {
	window        int
	running, most atomic.Int64
	answered      atomic.Int64
	entered       chan struct{}   // a value per call started
	gates         []chan struct{} // closing gates[i] lets the call of event i return
}

func newGatedObserver(n, window int) *gatedObserver {
	o := &gatedObserver{window: window, entered: make(chan struct{}, n), gates: make([]chan struct{}, n)}
	for i := range o.gates {
		o.gates[i] = make(chan struct{})
	}
	return o
}

// check is a burstHandler's before: event i must not be made before i-window answers.
func (o *gatedObserver) check(t *testing.T) func(int) {
	return func(i int) {
		if a := o.answered.Load(); a < int64(i-o.window) {
			t.Errorf("event %d made after %d answers: more than %d calls sent unanswered", i, a, o.window)
		}
	}
}

func (o *gatedObserver) observe(ctx context.Context, ev map[string]any) error {
	capnweb.Blocking(ctx)
	cur := o.running.Add(1)
	for {
		m := o.most.Load()
		if cur <= m || o.most.CompareAndSwap(m, cur) {
			break
		}
	}
	o.entered <- struct{}{}
	select {
	case <-o.gates[eventIndex(ev)]:
	case <-ctx.Done():
	}
	o.running.Add(-1)
	o.answered.Add(1)
	return nil
}

// run waits for the calls of n events: it lets the first window calls in, then answers the
// oldest call for each new one until all are in, answers the rest, and returns the most calls
// that ran at once. done, when not nil, receives the result of the method that streams into
// the observer, which must not settle before.
func (o *gatedObserver) run(t *testing.T, n int, done <-chan error) int64 {
	t.Helper()
	enter := func(i int) {
		t.Helper()
		select {
		case <-o.entered:
		case err := <-done:
			t.Fatalf("the method settled (%v) after %d calls, want it still running", err, i)
		case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
			t.Fatalf("call %d did not come: the server keeps fewer than %d calls in flight", i+1, o.window)
		}
	}
	for i := range o.window {
		enter(i)
	}
	for i := o.window; i < n; i++ {
		close(o.gates[i-o.window]) // the server awaits the oldest call
		enter(i)
	}
	for i := n - o.window; i < n; i++ {
		close(o.gates[i])
	}
	if done != nil {
		if err := <-done; err != nil {
			t.Fatalf("the method = %v", err)
		}
	}
	return o.most.Load()
}

// settled returns a channel that receives the error p settles with.
func settled(t *testing.T, p *capnweb.Promise) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := p.Await(t.Context())
		p.Release()
		done <- err
	}()
	return done
}

func TestCapnwebObserverWindow(t *testing.T) {
	t.Parallel()
	const n = 40
	tests := []struct {
		name   string
		opts   *Options
		params map[string]any
		want   int
	}{
		{"Default", nil, nil, DefaultObserverWindow},
		{"Option", &Options{ObserverWindow: 4}, nil, 4},
		{"ParamSerial", nil, map[string]any{"A2A-Observer-Window": "1"}, 1},
		{"ParamOverOption", &Options{ObserverWindow: 4}, map[string]any{"A2A-Observer-Window": "7"}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := newGatedObserver(n, tt.want)
			main := burstSession(t, tt.opts, o.check(t))
			done := settled(t, main.Call("sendStreamingMessage", userMessageWire(strconv.Itoa(n)), o.observe, tt.params))
			if got := o.run(t, n, done); got != int64(tt.want) {
				t.Errorf("observer calls in flight at most %d, want %d", got, tt.want)
			}
		})
		t.Run(tt.name+"/Push", func(t *testing.T) {
			t.Parallel()
			o := newGatedObserver(n, tt.want)
			main := burstSession(t, tt.opts, o.check(t))
			p := main.Call("subscribeToPushNotifications", "burst-"+strconv.Itoa(n), o.observe, tt.params)
			defer p.Release()
			if _, err := p.Await(t.Context()); err != nil {
				t.Fatalf("subscribeToPushNotifications() = %v", err)
			}
			if got := o.run(t, n, nil); got != int64(tt.want) {
				t.Errorf("callback calls in flight at most %d, want %d", got, tt.want)
			}
		})
	}
}

// TestCapnwebObserverOrder: the observer sees every event once, and the method resolves after
// the last call returned. The server sends the calls in order, and capnweb starts calls in the
// order they arrive; but the Go client runs a call that takes over a millisecond (the race
// detector, a busy machine) alongside the next ones, so only a window of 1 orders what this
// observer records.
func TestCapnwebObserverOrder(t *testing.T) {
	t.Parallel()
	const n = 500
	main := burstSession(t, nil, nil)
	for _, params := range []map[string]any{{"A2A-Observer-Window": "1"}, nil, {"A2A-Observer-Window": "256"}} {
		var mu sync.Mutex
		var got []string
		observer := func(ev map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, eventText(ev))
		}
		p := main.Call("sendStreamingMessage", userMessageWire(strconv.Itoa(n)), observer, params)
		v, err := p.Await(t.Context())
		p.Release()
		if err != nil {
			t.Fatalf("sendStreamingMessage(%v) = %v", params, err)
		}
		if last := eventText(asMap(v)); last != strconv.Itoa(n-1) {
			t.Errorf("sendStreamingMessage(%v) = %v, want the last message", params, last)
		}
		mu.Lock()
		if params == nil || params["A2A-Observer-Window"] != "1" {
			slices.SortFunc(got, func(a, b string) int {
				x, _ := strconv.Atoi(a)
				y, _ := strconv.Atoi(b)
				return x - y
			})
		}
		if diff := cmp.Diff(texts(n), got); diff != "" {
			t.Errorf("sendStreamingMessage(%v): events (-want +got):\n%s", params, diff)
		}
		mu.Unlock()
	}
}

// TestCapnwebObserverRejects: an observer that throws on event k fails the method with its
// error, and the server sends nothing after the calls already in the window.
func TestCapnwebObserverRejects(t *testing.T) {
	t.Parallel()
	const n, k, window = 200, 10, 4
	main := burstSession(t, &Options{ObserverWindow: window}, nil)
	var seen atomic.Int64
	observer := func(ev map[string]any) error {
		seen.Add(1)
		if eventText(ev) == strconv.Itoa(k) {
			return capnweb.NewError("RangeError", "observer gives up")
		}
		return nil
	}
	p := main.Call("sendStreamingMessage", userMessageWire(strconv.Itoa(n)), observer)
	defer p.Release()
	_, err := p.Await(t.Context())
	var ce *capnweb.Error
	if !errors.As(err, &ce) || ce.Name != "RangeError" || ce.Message != "observer gives up" {
		t.Fatalf("sendStreamingMessage() = %v, want the observer's RangeError", err)
	}
	// Events 0..k-1 were answered before k failed; each answer let one more in after the
	// first window: at most k+window events were sent in all.
	if got := seen.Load(); got > k+window {
		t.Errorf("observer called %d times, want at most %d", got, k+window)
	}
}

// TestCapnwebObserverWindowInvalid: a window outside 1..256 fails the call with INVALID_PARAMS,
// on every method that takes it.
func TestCapnwebObserverWindowInvalid(t *testing.T) {
	t.Parallel()
	main := burstSession(t, nil, nil)
	observer := func(map[string]any) {}
	for _, v := range []any{"0", "257", "-1", "x", "1.5", "", []any{"2", "3"}} {
		params := map[string]any{"A2A-Observer-Window": v}
		calls := map[string]*capnweb.Promise{
			"sendStreamingMessage":         main.Call("sendStreamingMessage", userMessageWire("3"), observer, params),
			"sendStreamingMessage/stream":  main.Call("sendStreamingMessage", userMessageWire("3"), params),
			"subscribeToTask":              main.Call("subscribeToTask", map[string]any{"id": "any"}, observer, params),
			"subscribeToPushNotifications": main.Call("subscribeToPushNotifications", "any", observer, params),
		}
		for name, p := range calls {
			_, err := p.Await(t.Context())
			p.Release()
			if code, reason := a2aErr(t, err); code != -32602 || reason != "INVALID_PARAMS" {
				t.Errorf("%s with %s %q = %v (code %v, reason %s), want INVALID_PARAMS", name, hdrObserverWindow, v, err, code, reason)
			}
		}
	}
}

// TestCapnwebObserverWindowQuery: a browser, which cannot set headers on a WebSocket, sets the
// connection's window in the URL query; a call's parameter replaces it.
func TestCapnwebObserverWindowQuery(t *testing.T) {
	t.Parallel()
	const n = 20
	o := newGatedObserver(n, 2)
	main := burstDial(t, nil, "?A2A-Observer-Window=2", burstHandler{before: o.check(t)}).Main()
	done := settled(t, main.Call("sendStreamingMessage", userMessageWire(strconv.Itoa(n)), o.observe))
	if got := o.run(t, n, done); got != 2 {
		t.Errorf("observer calls in flight at most %d, want 2", got)
	}
	bad := burstDial(t, nil, "?A2A-Observer-Window=300", burstHandler{}).Main()
	observer := func(map[string]any) {}
	refused := bad.Call("sendStreamingMessage", userMessageWire("3"), observer)
	defer refused.Release()
	_, err := refused.Await(t.Context())
	if code, _ := a2aErr(t, err); code != -32602 {
		t.Errorf("sendStreamingMessage on a connection with window 300 = %v, want INVALID_PARAMS", err)
	}
	p := bad.Call("sendStreamingMessage", userMessageWire("3"), observer, map[string]any{"A2A-Observer-Window": "3"})
	defer p.Release()
	if _, err := p.Await(t.Context()); err != nil {
		t.Errorf("sendStreamingMessage with a per-call window 3 = %v", err)
	}
}

func TestObserverWindowOption(t *testing.T) {
	t.Parallel()
	for _, w := range []int{-1, maxObserverWindow + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewHTTPHandler with ObserverWindow %d did not panic", w)
				}
			}()
			h, _ := newA2AHandler()
			NewHTTPHandler(h, testCard(), &Options{ObserverWindow: w})
		}()
	}
}

// TestCapnwebObserverWindowClosed: the session ending while the window is full stops the
// stream.
func TestCapnwebObserverWindowClosed(t *testing.T) {
	t.Parallel()
	const n, window = 100, 4
	ended := make(chan struct{})
	s := burstDial(t, &Options{ObserverWindow: window}, "", burstHandler{ended: func() { close(ended) }})
	o := newGatedObserver(n, window)
	p := s.Main().Call("sendStreamingMessage", userMessageWire(strconv.Itoa(n)), o.observe)
	defer p.Release()
	for range window {
		<-o.entered
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Session.Close() = %v", err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
		t.Fatal("the stream goes on after the session ended")
	}
}
