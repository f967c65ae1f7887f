package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// The capnweb transport: every a2aclient.Transport operation is the AgentSession method of
// docs/capnweb-binding.md, called on the connection's main object (credentials travel on the
// upgrade or batch request, so the main object is the caller's session).
//
// Concurrency: a capnwebTransport is safe for concurrent use. mu guards sess, dialing and
// closed; it is never held while dialing, calling, or closing a session. Calls and streams
// run in their callers' goroutines; the transport starts none of its own (the capnweb sessions
// own theirs, and Destroy closes the current one, which waits for them).

// ProtocolCapnweb is the protocolBinding URI under which agent cards list the capnweb binding
// (docs/capnweb-binding.md).
const ProtocolCapnweb a2a.TransportProtocol = "urn:a2awebcap:capnweb:v1"

// SeqKey is the metadata key under which a2aWebCap servers number each streamed event in its
// task's event log; a resumed stream asks for the events after the last number it delivered.
const SeqKey = wire.SeqKey

// Sentinel conditions of the capnweb transport. Compare with errors.Is.
var (
	// ErrConnectionLost: the connection ended while a call was in flight (it may or may not
	// have reached the agent), or a stream could not be resumed. The next call redials.
	ErrConnectionLost = errors.New("client: capnweb connection lost")
	// ErrClosed: the transport was destroyed.
	ErrClosed = errors.New("client: transport destroyed")
)

// Defaults of CapnwebOptions.
const (
	DefaultReconnect = 30 * time.Second
)

// Reconnection backoff: the first redial waits minBackoff, each next one twice as long, up to
// maxBackoff.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// CapnwebOptions configure the capnweb transport. Nil means every default.
type CapnwebOptions struct {
	// Batch sends every call as one HTTP batch (a POST) instead of over a WebSocket. A batch
	// cannot carry a live stream: streams then long-poll (see the package documentation).
	// Zero: one WebSocket for everything.
	Batch bool
	// Header is sent with the WebSocket upgrade and with every batch POST, for example
	// credentials, which then authenticate the whole connection. Zero: none.
	Header http.Header
	// HTTPClient makes the upgrade and batch requests. Nil: http.DefaultClient.
	HTTPClient *http.Client
	// Reconnect is how long a stream whose WebSocket dropped keeps redialing, with exponential
	// backoff from 50 ms up to 2 s between attempts, before it fails with ErrConnectionLost.
	// The caller's context bounds it too. Zero: DefaultReconnect (30 s). Negative: streams fail
	// at the first drop.
	Reconnect time.Duration
	// Session configures the capnweb sessions (limits, logger). Zero: capnweb's defaults.
	Session capnweb.Options
	// Restore is a token of a saved session (AgentSession.save, after attenuate): every call
	// is made on the session it restores (A2AService.restore, pipelined with the call, so it
	// costs no round trip), as that session's principal and within its restrictions. A
	// revoked or expired token fails every call with the agent's error. Zero: calls are made
	// on the connection's main object.
	Restore string
}

// WithCapnwebTransport returns an a2aclient factory option that connects to agent interfaces
// of the capnweb binding (ProtocolCapnweb), so that a2aclient.NewFromCard can use it. opts may
// be nil. Over a WebSocket the factory dials at once, so a card whose capnweb interface
// cannot be reached falls through to the client's next binding.
func WithCapnwebTransport(opts *CapnwebOptions) a2aclient.FactoryOption {
	return a2aclient.WithTransport(ProtocolCapnweb, capnwebFactory(opts))
}

func capnwebFactory(opts *CapnwebOptions) a2aclient.TransportFactory {
	return a2aclient.TransportFactoryFn(func(ctx context.Context, _ *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
		return newCapnwebTransport(ctx, iface.URL, opts)
	})
}

type capnwebTransport struct {
	httpURL, wsURL string
	opts           CapnwebOptions
	dial           capnweb.DialOptions

	// life is canceled by Destroy, with ErrClosed: it ends dials, backoffs and polls.
	life   context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	sess    *capnweb.Session // the current WebSocket session, possibly ended; nil before a dial
	dialing chan struct{}    // closed when the dial in progress ends; nil when none is
	closed  bool
}

var _ a2aclient.Transport = (*capnwebTransport)(nil)

// newCapnwebTransport returns a transport for the interface URL (http, https, ws or wss); over
// a WebSocket it dials before returning.
func newCapnwebTransport(ctx context.Context, rawURL string, opts *CapnwebOptions) (*capnwebTransport, error) {
	t := &capnwebTransport{}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.Reconnect == 0 {
		t.opts.Reconnect = DefaultReconnect
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("client: capnweb interface URL %q: %w", rawURL, err)
	}
	h, w := *u, *u
	switch u.Scheme {
	case "http", "ws":
		h.Scheme, w.Scheme = "http", "ws"
	case "https", "wss":
		h.Scheme, w.Scheme = "https", "wss"
	default:
		return nil, fmt.Errorf("client: capnweb interface URL %q: want http, https, ws or wss", rawURL)
	}
	t.httpURL, t.wsURL = h.String(), w.String()
	t.dial = capnweb.DialOptions{Session: t.opts.Session, Header: t.opts.Header, HTTPClient: t.opts.HTTPClient}
	t.life, t.cancel = context.WithCancelCause(context.Background())
	if !t.opts.Batch {
		if _, err := t.session(ctx); err != nil {
			t.cancel(ErrClosed)
			return nil, err
		}
	}
	return t, nil
}

// session returns the live WebSocket session, dialing a new one when there is none or the last
// one ended. Concurrent callers share one dial.
func (t *capnwebTransport) session(ctx context.Context) (*capnweb.Session, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, ErrClosed
		}
		if s := t.sess; s != nil && !ended(s) {
			t.mu.Unlock()
			return s, nil
		}
		if wait := t.dialing; wait != nil {
			t.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		done := make(chan struct{})
		t.dialing = done
		old := t.sess
		t.sess = nil
		t.mu.Unlock()

		if old != nil {
			_ = old.Close() // ended already; this waits for its goroutines
		}
		s, err := t.dialWS(ctx)

		t.mu.Lock()
		t.dialing = nil
		close(done)
		closed := t.closed
		if err == nil && !closed {
			t.sess = s
		}
		t.mu.Unlock()
		switch {
		case err != nil:
			return nil, err
		case closed:
			_ = s.Close()
			return nil, ErrClosed
		}
		return s, nil
	}
}

// dialWS opens a WebSocket session; Destroy or ctx ends the attempt.
func (t *capnwebTransport) dialWS(ctx context.Context) (*capnweb.Session, error) {
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.life, func() { cancel(ErrClosed) })
	defer stop()
	s, err := capnweb.Dial(dctx, t.wsURL, nil, &t.dial)
	if err != nil {
		if cause := context.Cause(dctx); cause != nil {
			return nil, fmt.Errorf("client: dial %s: %w", t.wsURL, cause)
		}
		return nil, err
	}
	return s, nil
}

func ended(s *capnweb.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// Destroy closes the connection. Calls and streams in flight end with ErrClosed. It is
// idempotent.
func (t *capnwebTransport) Destroy() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	s := t.sess
	t.sess = nil
	t.mu.Unlock()
	t.cancel(ErrClosed)
	if s != nil {
		_ = s.Close()
	}
	return nil
}

func (t *capnwebTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// invoke calls method on the main object, over the WebSocket or in a batch of its own, and
// hands the result's promise to read, with the context to await it under (a batch session is
// still open then). An error read
// returns is explained by callError, unless it is a resultError.
func (t *capnwebTransport) invoke(ctx context.Context, method string, read func(context.Context, *capnweb.Promise) error, args ...any) error {
	return t.invokeOn(ctx, method, func(main *capnweb.Stub) []*capnweb.Promise { return []*capnweb.Promise{main.Call(method, args...)} }, read)
}

// invokeOn is invoke for the calls build makes on the main object: a pipeline, whose last
// promise is the result read is given; every one of them is released after. method names the
// call in errors.
func (t *capnwebTransport) invokeOn(ctx context.Context, method string, build func(main *capnweb.Stub) []*capnweb.Promise, read func(context.Context, *capnweb.Promise) error) error {
	var s *capnweb.Session
	if t.opts.Batch {
		if t.isClosed() {
			return ErrClosed
		}
		// Destroy ends a batch in flight (a streaming call may wait for events a while).
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(t.life, func() { cancel(ErrClosed) })
		defer stop()
		s = capnweb.NewBatchSession(t.httpURL, nil, &t.dial)
		defer s.Close()
	} else {
		var err error
		if s, err = t.session(ctx); err != nil {
			return err
		}
	}
	main, release := t.mainOf(s)
	defer release()
	ps := build(main)
	for _, p := range ps {
		defer p.Release()
	}
	p := ps[len(ps)-1]
	if err := read(ctx, p); err != nil {
		var re resultError
		if errors.As(err, &re) {
			return re.error
		}
		return t.callError(ctx, s, method, err)
	}
	return nil
}

// mainOf is the object calls are made on: s's main object, or the session CapnwebOptions.Restore
// restores on it (pipelined). release lets go of it.
func (t *capnwebTransport) mainOf(s *capnweb.Session) (main *capnweb.Stub, release func()) {
	if t.opts.Restore == "" {
		return s.Main(), func() {}
	}
	p := s.Main().Call("restore", t.opts.Restore)
	st := p.Stub()
	return st, func() { st.Release(); p.Release() }
}

// resultError is an error of a result that arrived: invoke returns it as it is.
type resultError struct{ error }

// awaitInto returns a read for invoke that stores the awaited result in *v.
func awaitInto(v *any) func(context.Context, *capnweb.Promise) error {
	return func(ctx context.Context, p *capnweb.Promise) (err error) {
		*v, err = p.Await(ctx)
		return err
	}
}

// callError explains why a call on s failed: an A2A error of the agent, the caller's context,
// Destroy, or the connection ending under the call.
func (t *capnwebTransport) callError(ctx context.Context, s *capnweb.Session, method string, err error) error {
	if a := a2aError(err); a != nil {
		return a
	}
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case t.isClosed():
		return ErrClosed
	case s.Err() != nil:
		return fmt.Errorf("%w during %s (it may or may not have reached the agent): %w", ErrConnectionLost, method, err)
	}
	return fmt.Errorf("client: %s: %w", method, err)
}

// call sends an A2A request and decodes the result into res (nil: the result is ignored).
//
// The request goes as its JSON (a json.RawMessage), and a result that arrives as plain data
// (as every A2A result does) is read as its JSON straight into res: neither way builds the
// value from maps and slices. A result holding what JSON has no form for (bytes, dates: a
// server may send those) is read as a tree instead, converted as ProtoJSON writes them.
func (t *capnwebTransport) call(ctx context.Context, params a2aclient.ServiceParams, method string, req, res any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("client: encoding the %s request: %w", method, err)
	}
	return t.invoke(ctx, method, func(ctx context.Context, p *capnweb.Promise) error {
		if res == nil {
			_, err := p.Await(ctx)
			return err
		}
		var raw json.RawMessage
		if p.Decode(ctx, &raw) == nil {
			if len(raw) == 0 {
				return nil // undefined: the zero value, as null gives
			}
			if err := json.Unmarshal(raw, res); err != nil {
				return resultError{fmt.Errorf("client: %s returned an invalid result: %w", method, err)}
			}
			return nil
		}
		// A failed call fails here again; a result JSON has no form for is read as a tree.
		v, err := p.Await(ctx)
		if err != nil {
			return err
		}
		if err := wire.Decode(v, res); err != nil {
			return resultError{fmt.Errorf("client: %s returned an invalid result: %w", method, err)}
		}
		return nil
	}, json.RawMessage(body), paramsValue(params))
}

// unary is call for operations whose result is a value of type T.
func unary[T any](ctx context.Context, t *capnwebTransport, params a2aclient.ServiceParams, method string, req any) (*T, error) {
	var res T
	if err := t.call(ctx, params, method, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SendMessage implements a2aclient.Transport: sendMessage.
func (t *capnwebTransport) SendMessage(ctx context.Context, params a2aclient.ServiceParams, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	res, err := unary[a2a.StreamResponse](ctx, t, params, "sendMessage", req)
	if err != nil {
		return nil, err
	}
	switch ev := res.Event.(type) {
	case *a2a.Task:
		return ev, nil
	case *a2a.Message:
		return ev, nil
	}
	return nil, fmt.Errorf("client: sendMessage returned %T, want a task or a message", res.Event)
}

// GetTask implements a2aclient.Transport: getTask.
func (t *capnwebTransport) GetTask(ctx context.Context, params a2aclient.ServiceParams, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	return unary[a2a.Task](ctx, t, params, "getTask", req)
}

// ListTasks implements a2aclient.Transport: listTasks.
func (t *capnwebTransport) ListTasks(ctx context.Context, params a2aclient.ServiceParams, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return unary[a2a.ListTasksResponse](ctx, t, params, "listTasks", req)
}

// CancelTask implements a2aclient.Transport: cancelTask.
func (t *capnwebTransport) CancelTask(ctx context.Context, params a2aclient.ServiceParams, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	return unary[a2a.Task](ctx, t, params, "cancelTask", req)
}

// CreateTaskPushConfig implements a2aclient.Transport: createTaskPushNotificationConfig.
func (t *capnwebTransport) CreateTaskPushConfig(ctx context.Context, params a2aclient.ServiceParams, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	return unary[a2a.PushConfig](ctx, t, params, "createTaskPushNotificationConfig", req)
}

// GetTaskPushConfig implements a2aclient.Transport: getTaskPushNotificationConfig.
func (t *capnwebTransport) GetTaskPushConfig(ctx context.Context, params a2aclient.ServiceParams, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return unary[a2a.PushConfig](ctx, t, params, "getTaskPushNotificationConfig", req)
}

// ListTaskPushConfigs implements a2aclient.Transport: listTaskPushNotificationConfigs.
func (t *capnwebTransport) ListTaskPushConfigs(ctx context.Context, params a2aclient.ServiceParams, req *a2a.ListTaskPushConfigRequest) ([]*a2a.PushConfig, error) {
	res, err := unary[a2a.ListTaskPushConfigResponse](ctx, t, params, "listTaskPushNotificationConfigs", req)
	if err != nil {
		return nil, err
	}
	return res.Configs, nil
}

// DeleteTaskPushConfig implements a2aclient.Transport: deleteTaskPushNotificationConfig.
func (t *capnwebTransport) DeleteTaskPushConfig(ctx context.Context, params a2aclient.ServiceParams, req *a2a.DeleteTaskPushConfigRequest) error {
	return t.call(ctx, params, "deleteTaskPushNotificationConfig", req, nil)
}

// GetExtendedAgentCard implements a2aclient.Transport: getExtendedAgentCard.
func (t *capnwebTransport) GetExtendedAgentCard(ctx context.Context, params a2aclient.ServiceParams, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	if req == nil {
		req = &a2a.GetExtendedAgentCardRequest{}
	}
	return unary[a2a.AgentCard](ctx, t, params, "getExtendedAgentCard", req)
}

// SendStreamingMessage implements a2aclient.Transport: sendStreamingMessage, resumed after a
// dropped connection once the task is known.
func (t *capnwebTransport) SendStreamingMessage(ctx context.Context, params a2aclient.ServiceParams, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	if t.opts.Batch {
		return t.batchStream(ctx, params, "sendStreamingMessage", req, "", req.Tenant)
	}
	return t.stream(ctx, params, "sendStreamingMessage", req, "", req.Tenant)
}

// SubscribeToTask implements a2aclient.Transport: subscribeToTask, resumed after a dropped
// connection.
func (t *capnwebTransport) SubscribeToTask(ctx context.Context, params a2aclient.ServiceParams, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	if t.opts.Batch {
		return t.batchStream(ctx, params, "subscribeToTask", req, req.ID, req.Tenant)
	}
	return t.stream(ctx, params, "subscribeToTask", req, req.ID, req.Tenant)
}
