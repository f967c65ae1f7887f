package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// Streams. The binding offers two forms (docs/capnweb-binding.md, Streaming): an observer the
// server calls with each event, with up to a window of calls (16 by default) unanswered, or a
// ReadableStream. We read the ReadableStream: the server pumps its chunks under capnweb's
// flow-control window, while the observer form costs a call per event with its pull, result and
// release messages, and our callbacks may run concurrently (a Go callback that runs over a
// millisecond lets the next start), so we would have to put the events back in order.
// BenchmarkStreamForms measures both on loopback: the stream form delivers a 53-event burst
// about 2× faster per event (about 15–19 µs against 37–40 µs, server work included, on a 2-CPU
// machine). Both forms apply backpressure (a window bounds what we buffer), and the stream form
// needs no callback exported from our side.
//
// A stream runs in its consumer's goroutine: the iterator reads, decodes and yields; it starts
// no goroutine of its own.

// streamState is what a stream has delivered so far, which is what resuming it needs.
type streamState struct {
	id     a2a.TaskID // the task, once known
	tenant string
	// last is the sequence number (SeqKey) of the last delivered event; -1 before any.
	last int64
	// unnumbered is set once an event without a sequence number was delivered: the server
	// does not number its events, and the stream cannot resume exactly.
	unnumbered bool
	delivered  int
	// resumed: the current stream was opened by the transport with Last-Event-ID.
	resumed bool
	// interruptEnds: an interrupted state (input or auth required) ends the stream, as it
	// ends sendStreamingMessage and a subscription that did not itself resume; a subscription
	// that the caller resumed with Last-Event-ID ends only when the task is terminal.
	interruptEnds bool
}

// startStream encodes a streaming request and the state of a stream that has delivered nothing
// yet, or, for a subscription the caller resumes with Last-Event-ID, everything up to it.
func startStream(params a2aclient.ServiceParams, method string, req any, id a2a.TaskID, tenant string) (any, *streamState, error) {
	request, err := json.Marshal(req) // sent as its JSON (see call)
	if err != nil {
		return nil, nil, fmt.Errorf("client: encoding the %s request: %w", method, err)
	}
	st := &streamState{id: id, tenant: tenant, last: -1, interruptEnds: true}
	if n, ok := callerLastEventID(params); ok && method == "subscribeToTask" {
		st.last, st.interruptEnds = n, false
	}
	return json.RawMessage(request), st, nil
}

// resumeRequest is the subscribeToTask request that continues st after its last event.
func (st *streamState) resumeRequest(params a2aclient.ServiceParams) (any, a2aclient.ServiceParams, error) {
	request, err := json.Marshal(&a2a.SubscribeToTaskRequest{ID: st.id, Tenant: st.tenant})
	st.resumed = true
	return json.RawMessage(request), withLastEventID(params, st.last), err
}

// stream runs a streaming method over the WebSocket and resumes it when the connection drops.
func (t *capnwebTransport) stream(ctx context.Context, params a2aclient.ServiceParams, method string, req any, id a2a.TaskID, tenant string) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		request, st, err := startStream(params, method, req, id, tenant)
		if err != nil {
			yield(nil, err)
			return
		}
		p := params
		var lostSince time.Time
		backoff := minBackoff
		for {
			rs, s, err := t.open(ctx, method, request, p)
			if err == nil {
				// Connected again: the next drop is a new outage. The backoff starts over
				// only once the connection delivered something, so a connection that keeps
				// dropping at once is not redialed at full speed.
				lostSince = time.Time{}
				before := st.delivered
				var done bool
				if done, err = t.pump(ctx, s, method, rs, st, yield); done {
					return
				}
				if st.delivered > before {
					backoff = minBackoff
				}
			}
			if !errors.Is(err, ErrConnectionLost) || t.opts.Reconnect < 0 {
				yield(nil, err)
				return
			}
			if !st.resumable(method) {
				yield(nil, fmt.Errorf("%w; %s cannot resume: %s", err, method, st.why(method)))
				return
			}
			if lostSince.IsZero() {
				lostSince = time.Now()
			}
			if time.Since(lostSince)+backoff > t.opts.Reconnect {
				yield(nil, fmt.Errorf("%w; gave up reconnecting after %v", err, time.Since(lostSince).Round(time.Millisecond)))
				return
			}
			if err := t.sleep(ctx, backoff); err != nil {
				yield(nil, err)
				return
			}
			backoff = min(2*backoff, maxBackoff)
			if st.last >= 0 {
				method = "subscribeToTask"
				if request, p, err = st.resumeRequest(params); err != nil {
					yield(nil, err)
					return
				}
			}
			// else: a subscription that delivered nothing yet is sent again as it was.
		}
	}
}

// resumable reports whether a stream that dropped can go on without losing or repeating an
// event: it must know the task and the last event's number, or be a subscription (idempotent)
// that delivered nothing yet.
func (st *streamState) resumable(method string) bool {
	if st.delivered == 0 && !st.resumed {
		return method == "subscribeToTask"
	}
	return st.id != "" && st.last >= 0 && !st.unnumbered
}

func (st *streamState) why(method string) string {
	switch {
	case st.delivered == 0 && !st.resumed:
		return "the connection dropped before its first event, and " + method + " is not idempotent"
	case st.unnumbered:
		return "the server does not number its events (metadata " + SeqKey + ")"
	}
	return "the task is unknown"
}

// open calls a streaming method in its ReadableStream form (no observer) and returns the
// stream. The connection's failures are ErrConnectionLost; a dial that fails counts as one.
func (t *capnwebTransport) open(ctx context.Context, method string, request any, params a2aclient.ServiceParams) (*capnweb.ReadableStream, *capnweb.Session, error) {
	s, err := t.session(ctx)
	if err != nil {
		switch {
		case errors.Is(err, ErrClosed):
			return nil, nil, ErrClosed
		case ctx.Err() != nil:
			return nil, nil, context.Cause(ctx)
		}
		return nil, nil, fmt.Errorf("%w: %w", ErrConnectionLost, err)
	}
	main, release := t.mainOf(s)
	defer release()
	p := main.Call(method, request, capnweb.Undefined, paramsValue(params))
	defer p.Release()
	v, err := p.Await(ctx)
	if err != nil {
		return nil, s, t.callError(ctx, s, method, err)
	}
	m, _ := wire.Fields(v)
	if h, ok := m["handle"].(*capnweb.Stub); ok {
		h.Release() // the task handle: this transport does not use it
	}
	rs, ok := m["stream"].(*capnweb.ReadableStream)
	if !ok {
		return nil, s, fmt.Errorf("client: %s returned no stream", method)
	}
	return rs, s, nil
}

// errStopped cancels a stream whose consumer stopped iterating.
var errStopped = errors.New("client: the stream's consumer stopped")

// pump reads rs (a stream on session s) and yields its events. done reports that the stream is
// over: it ended by the A2A rules or the server closed it, the consumer stopped, or an error
// was yielded. Otherwise err says why reading failed, for the caller to resume or report.
func (t *capnwebTransport) pump(ctx context.Context, s *capnweb.Session, method string, rs *capnweb.ReadableStream, st *streamState, yield func(a2a.Event, error) bool) (done bool, err error) {
	for {
		v, err := rs.Read(ctx)
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			rs.Cancel(err)
			return false, t.callError(ctx, s, method, err)
		}
		var sr a2a.StreamResponse
		if err := wire.Decode(v, &sr); err != nil {
			rs.Cancel(err)
			yield(nil, fmt.Errorf("client: %s sent an invalid event: %w", method, err))
			return true, nil
		}
		switch st.take(sr.Event, yield) {
		case stopped:
			rs.Cancel(errStopped)
			return true, nil
		case over:
			// The server ends the stream here too; not waiting for it means a drop now
			// cannot make us resume a finished stream.
			rs.Cancel(nil)
			return true, nil
		}
	}
}

type outcome int

const (
	goesOn  outcome = iota
	over            // the stream ended with this event, by the A2A rules
	stopped         // the consumer stopped iterating
)

// take delivers ev unless it was delivered already, and says whether the stream goes on.
func (st *streamState) take(ev a2a.Event, yield func(a2a.Event, error) bool) outcome {
	seq, numbered := wire.Seq(ev)
	if numbered && seq <= st.last {
		return goesOn // delivered already
	}
	opening := st.delivered == 0 && !st.resumed
	if st.id == "" {
		st.id = ev.TaskInfo().TaskID
	}
	if !yield(ev, nil) {
		return stopped
	}
	st.delivered++
	if numbered {
		st.last = seq
	} else {
		st.unnumbered = true
	}
	if m, ok := ev.(*a2a.Message); ok && m.TaskID == "" {
		return over // a stream without a task carries one message
	}
	// A Task snapshot in an interrupted state after the opening event is the one a follow-up
	// message logs as it resumes the task: the stream goes on (as on the server).
	_, snapshot := ev.(*a2a.Task)
	if state, ok := wire.StateOf(ev); ok && !opening && ends(state, st.interruptEnds && !snapshot) {
		return over
	}
	return goesOn
}

// ends reports whether a stream ends after an event that puts the task in state.
func ends(state a2a.TaskState, interruptEnds bool) bool {
	if state.Terminal() {
		return true
	}
	return interruptEnds && (state == a2a.TaskStateInputRequired || state == a2a.TaskStateAuthRequired)
}

// sleep waits for d, the caller's context, or Destroy.
func (t *capnwebTransport) sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.life.Done():
		return ErrClosed
	}
}

// Streams over HTTP batch. A batch is one request and one response, so the server cannot push
// events through it: it answers a streaming call with the events gathered until the stream ended
// or its window (binding.BatchStreamWindow) passed, as {events, done}. While not done, the
// transport asks again with subscribeToTask and Last-Event-ID: long polling, with exactly the
// events of a WebSocket stream.

// batchStream runs a streaming method over HTTP batch.
func (t *capnwebTransport) batchStream(ctx context.Context, params a2aclient.ServiceParams, method string, req any, id a2a.TaskID, tenant string) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		request, st, err := startStream(params, method, req, id, tenant)
		if err != nil {
			yield(nil, err)
			return
		}
		p := params
		for {
			var v any
			if err := t.invoke(ctx, method, awaitInto(&v), request, capnweb.Undefined, paramsValue(p)); err != nil {
				yield(nil, err)
				return
			}
			m, _ := wire.Fields(v)
			events, ok := m["events"].([]any)
			if !ok {
				yield(nil, fmt.Errorf("client: %s over HTTP batch returned no events", method))
				return
			}
			for _, e := range events {
				var sr a2a.StreamResponse
				if err := wire.Decode(e, &sr); err != nil {
					yield(nil, fmt.Errorf("client: %s sent an invalid event: %w", method, err))
					return
				}
				if st.take(sr.Event, yield) != goesOn {
					return
				}
			}
			if done, _ := m["done"].(bool); done {
				return
			}
			if !st.resumable(method) || st.last < 0 {
				yield(nil, fmt.Errorf("client: %s over HTTP batch cannot continue: %s", method, st.why(method)))
				return
			}
			method = "subscribeToTask"
			if request, p, err = st.resumeRequest(params); err != nil {
				yield(nil, err)
				return
			}
		}
	}
}
