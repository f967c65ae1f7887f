package binding

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/propagation"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// The capnweb binding: A2A over Cap'n Web (docs/capnweb-binding.md). Each connection (a
// WebSocket, or one HTTP batch) gets an A2AService main object; its AgentSession methods call
// the RequestHandler with a CallContext built from the connection's headers, the per-call
// service parameters and the session's principal.

// ProtocolCapnweb is the versioned binding URI under which the agent card lists the capnweb
// binding.
const ProtocolCapnweb a2a.TransportProtocol = "urn:a2awebcap:capnweb:v1"

// DefaultCapnwebPath is where the capnweb binding is served unless Options.CapnwebPath or the
// card says otherwise.
const DefaultCapnwebPath = "/a2a/capnweb"

// hdrLastEventID is the service parameter a resuming subscriber sends.
const hdrLastEventID = "Last-Event-ID"

type capnwebBinding struct {
	h       a2asrv.RequestHandler
	hh      *httpHandler
	auth    func(context.Context, http.Header) (*a2asrv.User, error)
	handler *capnweb.Handler
	quotas  *quotaState // nil: no task or stream quotas
	calls   int         // Quotas.CapnwebCalls; 0: no limit
	window  int         // Options.ObserverWindow, defaults applied
	caps    CapabilityStore
	// credentials are the parameter names a call may not carry (credentialParams).
	credentials map[string]bool
	// agentCaps is Options.AgentCapabilities.
	agentCaps AgentCapabilities
	// preAuthIdle is Options.PreAuthIdleTimeout, defaults applied; negative: none of its own.
	preAuthIdle time.Duration
	// revokedIDs caches the revocations read from caps (they are permanent): ID → true.
	revokedIDs sync.Map
	budgets    *capnwebBudgets // memory pools and limits (capnwebbudget.go)
}

func newCapnwebBinding(h a2asrv.RequestHandler, hh *httpHandler, o *Options, card *a2a.AgentCard) *capnwebBinding {
	b := &capnwebBinding{h: h, hh: hh, auth: o.Authenticate, quotas: o.Quotas.counts(), caps: o.Capabilities, window: o.ObserverWindow,
		credentials: credentialParams(card), agentCaps: o.AgentCapabilities}
	if o.Quotas != nil {
		b.calls = o.Quotas.CapnwebCalls
	}
	var hopts capnweb.HandlerOptions
	if o.Capnweb != nil {
		hopts = *o.Capnweb
	}
	hopts.OriginPatterns = append(slices.Clone(hopts.OriginPatterns), o.AllowedOrigins...)
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err == nil {
			hopts.OriginPatterns = append(hopts.OriginPatterns, u.Scheme+"://"+u.Host)
		}
	}
	switch b.preAuthIdle = o.PreAuthIdleTimeout; {
	case b.preAuthIdle == 0:
		b.preAuthIdle = DefaultPreAuthIdleTimeout
	case b.preAuthIdle < 0:
		b.preAuthIdle = 0 // the handler's IdleTimeout applies
	}
	if hopts.IdleTimeout == 0 {
		hopts.IdleTimeout = DefaultCapnwebIdleTimeout
	}
	if hopts.MaxBatchBytes == 0 && o.MaxBodyBytes > 0 {
		hopts.MaxBatchBytes = o.MaxBodyBytes
	}
	if hopts.Session.SendError == nil {
		hopts.Session.SendError = func(err error) *capnweb.Error { return capnwebError(err) }
	}
	b.budgets = newCapnwebBudgets(o.CapnwebBudget, hopts.Session.Limits)
	hopts.SessionOptions = b.sessionOptions(hopts.SessionOptions, hopts.Session)
	b.handler = capnweb.NewHandler(b.newMain, &hopts)
	return b
}

// connParams are the service parameters a connection may also set in its URL query: browsers
// cannot set headers on a WebSocket. Credentials are not among them (auth.Middleware reads the
// query-located API keys the card declares). W3C trace context (traceparent, tracestate) is
// among them, so a browser's connection can join its trace.
var connParams = []string{hdrVersion, hdrExtensions, hdrObserverWindow, hdrLastEventID, "traceparent", "tracestate"}

// serve checks the connection's service parameters, then hands the request to capnweb.
//
// A version or a required extension the connection's parameters get wrong does not refuse the
// connection: the stock capnweb clients report a refused WebSocket or batch only as a failed
// connection ("WebSocket connection failed", "RPC request failed: 400"), never the A2A error.
// The session opens instead, and every A2A call on it fails with that error, unless the call
// declares A2A-Version and A2A-Extensions that the server takes (see callContext).
func (b *capnwebBinding) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for _, k := range connParams {
		if r.Header.Get(k) == "" {
			if vs := q[k]; len(vs) > 0 {
				r.Header[http.CanonicalHeaderKey(k)] = vs
			}
		}
	}
	if r.Method == http.MethodPost && !isBatchType(r.Header.Get("Content-Type")) {
		writeRESTError(w, r, mediaJSON, errBatchContentType(r.Header.Get("Content-Type")))
		return
	}
	version, rerr := b.hh.negotiate(r, false)
	if rerr == nil && version != Version10 {
		rerr = errVersionNotSupported(version, []string{Version10})
	}
	if rerr == nil {
		rerr = b.hh.checkExtensions(r, Version10)
	}
	if rerr != nil {
		r = r.WithContext(context.WithValue(r.Context(), refusalKey{}, rerr))
	}
	b.handler.ServeHTTP(w, r)
}

// refusalKey is the request context key of the A2A error a connection's service parameters
// earned (ServeHTTP), which its session's calls fail with.
type refusalKey struct{}

func (b *capnwebBinding) Close() error { return b.handler.Close() }

// newMain builds the main object of one connection.
func (b *capnwebBinding) newMain(r *http.Request) (any, error) {
	params := r.Header.Clone()
	s := &agentSession{b: b, params: params, sp: a2asrv.NewServiceParams(params), origin: requestOrigin(r), batch: r.Method == http.MethodPost, grant: &grant{}, remote: r.RemoteAddr, pending: new(atomic.Int64), authed: new(atomic.Bool)}
	if rerr, ok := r.Context().Value(refusalKey{}).(*requestError); ok && rerr != nil {
		s.refusal = rerr
	}
	if b.auth != nil {
		s.user, s.authErr = b.authenticate(r.Context(), r.Header, r.RemoteAddr)
	}
	s.authed.Store(b.auth == nil || s.user != nil)
	return &a2aService{agentSession: s}, nil
}

// authenticate authenticates headers of a connection from remote, under the login throttle.
func (b *capnwebBinding) authenticate(ctx context.Context, h http.Header, remote string) (*a2asrv.User, error) {
	u, err := b.hh.throttle.run(ctx, b.auth, h, remote)
	auditAuth(withBinding(ctx, bindingCapnweb), b.hh.obs, remote, err)
	if err != nil {
		var throttled *requestError
		if errors.As(err, &throttled) {
			return nil, err
		}
		if !errors.Is(err, a2a.ErrUnauthenticated) && !errors.Is(err, a2a.ErrUnauthorized) {
			err = a2a.NewError(a2a.ErrUnauthenticated, err.Error())
		}
		return nil, err
	}
	return u, nil
}

// a2aService is the main object: the connection's own session plus getAgentCard and
// authenticate.
type a2aService struct {
	*agentSession
}

// GetAgentCard returns the public agent card.
func (s *a2aService) GetAgentCard() (any, error) {
	var card any
	// Rendered on demand, not per connection: most sessions never ask.
	if err := json.Unmarshal(s.b.hh.card.renderFor(s.origin).body, &card); err != nil {
		return nil, err
	}
	return card, nil
}

// Authenticate returns a session for the principal the credentials (an object of HTTP
// headers) identify.
func (s *a2aService) Authenticate(ctx context.Context, credentials any) (*agentSession, error) {
	if s.b.auth == nil {
		return s.agentSession, nil
	}
	h, err := serviceParams(credentials)
	if err != nil {
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "credentials must be an object of header names and values")
	}
	capnweb.Blocking(ctx) // Options.Authenticate may ask another service
	t0 := time.Now()
	u, err := s.b.authenticate(ctx, h, s.remote)
	if err != nil {
		s.refused(ctx, "Authenticate", nil, t0, err)
		return nil, err
	}
	c := *s.agentSession // the connection's, now as u
	c.user, c.authErr, c.grant = u, nil, &grant{}
	s.authed.Store(true)
	s.b.authenticated(ctx, u, s.remote)
	return &c, nil
}

// agentSession is an AgentSession: every A2A operation, as one principal.
type agentSession struct {
	capnweb.Target
	b      *capnwebBinding
	params http.Header // the connection's service parameters
	// sp is params as the calls without per-call parameters pass them, made once: a
	// ServiceParams has no method that changes it, and copying the connection's headers into a new one on
	// every call was a few percent of a capnweb call's server CPU (bench/a2a send-task).
	sp      *a2asrv.ServiceParams
	origin  string // the connection's scheme://host, for the card's interface URLs
	user    *a2asrv.User
	authErr error // set when the connection did not authenticate: calls fail with it
	// refusal is the A2A error the connection's service parameters earned (a version or a
	// required extension): calls without parameters of their own fail with it.
	refusal error
	batch   bool // an HTTP batch: no live streams, no callbacks
	grant   *grant
	remote  string        // the connection's remote address, for rate limits of anonymous callers
	pending *atomic.Int64 // the connection's calls that have not settled (Quotas.CapnwebCalls)
	authed  *atomic.Bool  // the connection authenticated (or needs not): see capnwebkeep.go
}

// call returns the context of one call: a CallContext with the merged service parameters and
// the session's principal, after the binding's checks, holding the call's quota slots; and the
// function that gives back the slots nobody took over, which the method calls when it settles.
// ctx is the method's: call first tells capnweb that the call is about to block (the
// RequestHandler waits on the agent and the store), so that the calls behind it on the
// connection start without waiting for it.
func (s *agentSession) call(ctx context.Context, method string, req, perCall any) (context.Context, func(), error) {
	return s.start(ctx, method, req, perCall, true)
}

// start is call; only with blocks does it tell capnweb that the call blocks (a call that
// settles later through a capnweb.Deferred does not). A refusal is observed as the call.
func (s *agentSession) start(ctx context.Context, method string, req, perCall any, blocks bool) (context.Context, func(), error) {
	t0 := time.Now()
	cctx, done, err := s.admit(ctx, method, req, perCall, blocks)
	if err != nil {
		s.refused(ctx, method, perCall, t0, err)
	}
	return cctx, done, err
}

// refused observes a call of method refused with err before its handler ran (see start).
func (s *agentSession) refused(ctx context.Context, method string, perCall any, start time.Time, err error) {
	obs := s.b.hh.obs
	if obs == nil {
		return
	}
	var principal string
	if s.user != nil && s.user.Authenticated {
		principal = s.user.Name
	}
	carrier := s.params
	if extra, perr := serviceParams(perCall); perr == nil && len(extra) > 0 {
		carrier = s.params.Clone()
		for k, v := range extra {
			carrier[http.CanonicalHeaderKey(k)] = v
		}
	}
	refused(ctx, obs, bindingCapnweb, method, principal, propagation.HeaderCarrier(carrier), start, err)
}

// admit is start without the observation.
func (s *agentSession) admit(ctx context.Context, method string, req, perCall any, blocks bool) (context.Context, func(), error) {
	if s.authErr != nil && s.user == nil {
		return nil, nil, s.authErr // before any work: an unauthenticated caller gets little else
	}
	// Counted before the hand-off, while the connection's calls still start in order.
	if s.b.calls > 0 {
		if s.pending.Add(1) > int64(s.b.calls) {
			s.pending.Add(-1)
			return nil, nil, errQuota(quotaCapnwebCalls, s.b.calls)
		}
	}
	if blocks {
		capnweb.Blocking(ctx)
	}
	cctx, err := s.callContext(ctx, method, req, perCall)
	if err != nil {
		s.settle()
		return nil, nil, err
	}
	send := method == "SendMessage" || method == "SendStreamingMessage"
	stream := method == "SendStreamingMessage" || method == "SubscribeToTask" || method == "SubscribeToPushNotifications"
	cctx, done, rerr := s.b.quotas.reserve(cctx, principalKey(withUser(ctx, s.user), s.remote), send, stream)
	if rerr != nil {
		s.settle()
		return nil, nil, rerr
	}
	return cctx, func() { done(); s.settle() }, nil
}

// settle counts a call that call admitted as settled.
func (s *agentSession) settle() {
	if s.b.calls > 0 {
		s.pending.Add(-1)
	}
}

// callContext is call without the hand-off, for calls made outside a method (push).
func (s *agentSession) callContext(ctx context.Context, method string, req, perCall any) (context.Context, error) {
	extra, err := serviceParams(perCall)
	if err != nil {
		return nil, err
	}
	if len(extra) == 0 && s.refusal != nil {
		return nil, s.refusal // (with parameters of its own, the call is checked below)
	}
	if err := s.b.refuseCredentials(extra); err != nil {
		return nil, err
	}
	if s.authErr != nil && s.user == nil {
		return nil, s.authErr
	}
	if err := s.grant.permit(method, req, s.user, time.Now()); err != nil {
		return nil, err
	}
	if err := s.b.checkRevoked(ctx, s.grant); err != nil {
		return nil, err
	}
	if rerr := s.b.hh.limit.check(withUser(ctx, s.user), s.remote); rerr != nil {
		return nil, rerr
	}
	sp := s.sp
	if len(extra) > 0 {
		params := s.params.Clone()
		for k, v := range extra {
			params[http.CanonicalHeaderKey(k)] = v
		}
		if v := params.Get(hdrVersion); v != "" {
			if n, ok := normalizeVersion(v); !ok || n != Version10 {
				return nil, errVersionNotSupported(v, []string{Version10})
			}
		}
		declared := splitList(params.Values(hdrExtensions))
		if missing := missingExtensions(s.b.hh.required, declared); len(missing) > 0 {
			return nil, errExtensionRequired(missing)
		}
		if len(declared) > 0 {
			params[http.CanonicalHeaderKey(hdrExtensions)] = declared
		}
		sp = a2asrv.NewServiceParams(params)
	}
	cctx, cc := a2asrv.NewCallContext(withBinding(ctx, bindingCapnweb), sp)
	cc.User = s.user
	return cctx, nil
}

// funcSender is a RequestHandler that can send a message without waiting for the outcome
// (engine.Engine): see engine.Engine.SendMessageFunc.
type funcSender interface {
	SendMessageFunc(ctx context.Context, req *a2a.SendMessageRequest, done func(a2a.SendMessageResult, error))
}

// SendMessage is SendMessage; the result is a SendMessageResponse ({task} or {message}).
//
// With a RequestHandler that can send without waiting (funcSender), a message that starts a
// task settles through a capnweb.Deferred: while the agent works, the call holds no goroutine,
// and the connection's next calls run at once on its read loop. A message that continues a task
// or carries a push configuration, which the handler checks against the store first, blocks.
func (s *agentSession) SendMessage(ctx context.Context, request json.RawMessage, params any) (any, error) {
	var req a2a.SendMessageRequest
	if err := fromWire(request, &req); err != nil {
		return nil, err
	}
	if fs, ok := s.b.h.(funcSender); ok && req.Message != nil && req.Message.TaskID == "" && (req.Config == nil || req.Config.PushConfig == nil) {
		cctx, done, err := s.start(ctx, "SendMessage", &req, params, false)
		if err != nil {
			return nil, err
		}
		d := capnweb.NewDeferred(ctx)
		fs.SendMessageFunc(cctx, &req, func(res a2a.SendMessageResult, err error) {
			done()
			if err != nil {
				d.Resolve(nil, err)
				return
			}
			d.Resolve(toWire(a2a.StreamResponse{Event: res}))
		})
		return d, nil
	}
	cctx, done, err := s.call(ctx, "SendMessage", &req, params)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := s.b.h.SendMessage(cctx, &req)
	if err != nil {
		return nil, err
	}
	return toWire(a2a.StreamResponse{Event: res})
}

// GetTask is GetTask.
func (s *agentSession) GetTask(ctx context.Context, request json.RawMessage, params any) (any, error) {
	return s.getTask(ctx, request, params)
}

// getTask is GetTask for a request that is JSON (a json.RawMessage) or a value tree.
func (s *agentSession) getTask(ctx context.Context, request, params any) (any, error) {
	var req a2a.GetTaskRequest
	return unary(s, ctx, "GetTask", request, params, &req, s.b.h.GetTask)
}

// ListTasks is ListTasks.
func (s *agentSession) ListTasks(ctx context.Context, request, params any) (any, error) {
	var req a2a.ListTasksRequest
	return unary(s, ctx, "ListTasks", request, params, &req, func(ctx context.Context, r *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
		res, err := s.b.h.ListTasks(ctx, r)
		if err != nil || !s.grant.limited() {
			return res, err
		}
		// A session limited to some tasks lists only those (pages may come out shorter).
		out := *res
		out.Tasks = nil
		for _, t := range res.Tasks {
			if s.grant.allowsTask(t.ID) {
				out.Tasks = append(out.Tasks, t)
			}
		}
		out.TotalSize = len(out.Tasks)
		return &out, nil
	})
}

// CancelTask is CancelTask.
func (s *agentSession) CancelTask(ctx context.Context, request, params any) (any, error) {
	var req a2a.CancelTaskRequest
	return unary(s, ctx, "CancelTask", request, params, &req, s.b.h.CancelTask)
}

// CreateTaskPushNotificationConfig is CreateTaskPushNotificationConfig.
func (s *agentSession) CreateTaskPushNotificationConfig(ctx context.Context, request, params any) (any, error) {
	var req a2a.PushConfig
	return unary(s, ctx, "CreateTaskPushNotificationConfig", request, params, &req, s.b.h.CreateTaskPushConfig)
}

// GetTaskPushNotificationConfig is GetTaskPushNotificationConfig.
func (s *agentSession) GetTaskPushNotificationConfig(ctx context.Context, request, params any) (any, error) {
	var req a2a.GetTaskPushConfigRequest
	return unary(s, ctx, "GetTaskPushNotificationConfig", request, params, &req, s.b.h.GetTaskPushConfig)
}

// ListTaskPushNotificationConfigs is ListTaskPushNotificationConfigs.
func (s *agentSession) ListTaskPushNotificationConfigs(ctx context.Context, request, params any) (any, error) {
	var req a2a.ListTaskPushConfigRequest
	return unary(s, ctx, "ListTaskPushNotificationConfigs", request, params, &req, s.b.h.ListTaskPushConfigs)
}

// DeleteTaskPushNotificationConfig is DeleteTaskPushNotificationConfig.
func (s *agentSession) DeleteTaskPushNotificationConfig(ctx context.Context, request, params any) error {
	var req a2a.DeleteTaskPushConfigRequest
	_, err := unary(s, ctx, "DeleteTaskPushNotificationConfig", request, params, &req,
		func(ctx context.Context, r *a2a.DeleteTaskPushConfigRequest) (struct{}, error) {
			return struct{}{}, s.b.h.DeleteTaskPushConfig(ctx, r)
		})
	return err
}

// GetExtendedAgentCard is GetExtendedAgentCard.
func (s *agentSession) GetExtendedAgentCard(ctx context.Context, request, params any) (any, error) {
	var req a2a.GetExtendedAgentCardRequest
	ctx = withOrigin(ctx, s.origin) // for the card's interfaces
	return unary(s, ctx, "GetExtendedAgentCard", request, params, &req, s.b.h.GetExtendedAgentCard)
}

// unary decodes the request into req, calls op in the call's context, and encodes the result.
func unary[Req, Res any](s *agentSession, ctx context.Context, method string, request, params any, req *Req, op func(context.Context, *Req) (Res, error)) (any, error) {
	if err := fromWire(request, req); err != nil {
		return nil, err
	}
	cctx, done, err := s.call(ctx, method, req, params)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := op(cctx, req)
	if err != nil {
		return nil, err
	}
	return toWire(res)
}

// SendStreamingMessage is SendStreamingMessage, delivered to observer or, without one, as a
// ReadableStream (see the binding's Streaming section).
func (s *agentSession) SendStreamingMessage(ctx context.Context, request json.RawMessage, observer, params any) (any, error) {
	var req a2a.SendMessageRequest
	if err := fromWire(request, &req); err != nil {
		return nil, err
	}
	obs, params := splitObserver(observer, params)
	cctx, done, err := s.call(ctx, "SendStreamingMessage", &req, params)
	if err != nil {
		return nil, err
	}
	defer done()
	h := &taskHandle{s: s, tenant: req.Tenant, ready: make(chan struct{})}
	return s.deliver(ctx, cctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
		return s.b.h.SendStreamingMessage(ctx, &req)
	}, obs, h)
}

// SubscribeToTask is SubscribeToTask, delivered like SendStreamingMessage.
func (s *agentSession) SubscribeToTask(ctx context.Context, request, observer, params any) (any, error) {
	var req a2a.SubscribeToTaskRequest
	if err := fromWire(request, &req); err != nil {
		return nil, err
	}
	obs, params := splitObserver(observer, params)
	cctx, done, err := s.call(ctx, "SubscribeToTask", &req, params)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.deliver(ctx, cctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
		return s.b.h.SubscribeToTask(ctx, &req)
	}, obs, s.handle(req.ID, req.Tenant))
}

// splitObserver accepts (observer, params) and, for callers that skip the observer,
// (params, nil).
func splitObserver(observer, params any) (*capnweb.Stub, any) {
	if st, ok := observer.(*capnweb.Stub); ok {
		return st, params
	}
	if _, ok := wire.Fields(observer); ok && (params == nil || params == capnweb.Undefined) {
		return nil, observer
	}
	return nil, params
}

// deliver sends a stream's events to the observer through a callWindow and returns the final
// SendMessageResponse once the observer has answered every call; or, without an observer,
// returns {stream, handle} once the first event is there, so that errors a stream opens with
// (task not found, a finished task) fail the call.
func (s *agentSession) deliver(ctx, cctx context.Context, open func(context.Context) iter.Seq2[a2a.Event, error], obs *capnweb.Stub, h *taskHandle) (any, error) {
	size, err := s.observerWindow(cctx) // checked with or without an observer
	if err != nil {
		return nil, err
	}
	if s.batch {
		if obs != nil {
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "an HTTP batch cannot call an observer back: stream over a WebSocket, or without an observer")
		}
		return s.collect(cctx, open)
	}
	if obs == nil {
		return s.readable(cctx, open, h)
	}
	win := newCallWindow(ctx, obs, size)
	defer win.wait() // on every return: no call outlives the method
	var last a2a.Event
	for ev, err := range open(cctx) {
		if err != nil {
			return nil, err
		}
		h.learn(ev)
		last = ev
		w, err := toWire(a2a.StreamResponse{Event: ev})
		if err != nil {
			return nil, err
		}
		if err := win.call(w); err != nil {
			return nil, err
		}
	}
	if err := win.wait(); err != nil {
		return nil, err
	}
	if last == nil {
		return nil, nil
	}
	if m, ok := last.(*a2a.Message); ok {
		return toWire(a2a.StreamResponse{Event: m})
	}
	task, err := s.b.h.GetTask(cctx, &a2a.GetTaskRequest{ID: last.TaskInfo().TaskID, Tenant: h.tenant})
	if err != nil {
		return nil, err
	}
	return toWire(a2a.StreamResponse{Event: task})
}

// Long polling for streams in an HTTP batch (see collect).
const (
	// BatchStreamWindow bounds how long a streaming call in an HTTP batch waits for events.
	BatchStreamWindow = 20 * time.Second
	// batchLinger is how long it waits for more events once it has some.
	batchLinger = 50 * time.Millisecond
)

// collect answers a streaming call in an HTTP batch, which cannot carry a live stream: it
// gathers the stream's events until the stream ends, or until events stop coming for a moment
// (batchLinger) once there are some, or BatchStreamWindow passes, and returns {events, done}.
// A client that gets done: false continues with subscribeToTask and Last-Event-ID set to the
// last event's sequence number (long polling).
func (s *agentSession) collect(cctx context.Context, open func(context.Context) iter.Seq2[a2a.Event, error]) (any, error) {
	items, cancel := pumpEvents(cctx, open)
	defer cancel()
	window := time.NewTimer(BatchStreamWindow)
	defer window.Stop()
	var linger <-chan time.Time
	events := []any{}
	for {
		select {
		case it, ok := <-items:
			if !ok {
				return map[string]any{"events": events, "done": true}, nil
			}
			if it.err != nil {
				return nil, it.err
			}
			w, err := toWire(a2a.StreamResponse{Event: it.ev})
			if err != nil {
				return nil, err
			}
			events = append(events, w)
			linger = time.After(batchLinger)
		case <-linger:
			return map[string]any{"events": events, "done": false}, nil
		case <-window.C:
			return map[string]any{"events": events, "done": false}, nil
		case <-cctx.Done():
			return nil, context.Cause(cctx)
		}
	}
}

type streamItem struct {
	ev  a2a.Event
	err error
}

// pumpEvents runs a stream in a goroutine that hands each event over the returned channel, one
// at a time: a reader that does not read holds the stream back. cancel (or ctx ending) stops
// it; the channel is closed when the stream is over.
func pumpEvents(ctx context.Context, open func(context.Context) iter.Seq2[a2a.Event, error]) (<-chan streamItem, context.CancelFunc) {
	sctx, cancel := context.WithCancel(ctx)
	items := make(chan streamItem)
	go func() {
		defer close(items)
		for ev, err := range open(sctx) {
			select {
			case items <- streamItem{ev, err}:
			case <-sctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return items, cancel
}

// readable runs the stream in a goroutine that hands each event to the ReadableStream's reader,
// one at a time: a reader that does not read holds the stream back. Canceling the stream, or
// the session ending, stops it.
func (s *agentSession) readable(cctx context.Context, open func(context.Context) iter.Seq2[a2a.Event, error], h *taskHandle) (any, error) {
	items, cancel := pumpEvents(cctx, open)
	first, ok := <-items
	if first.err != nil {
		cancel()
		return nil, first.err
	}
	if ok {
		h.learn(first.ev)
	}
	stream := capnweb.NewReadableStream(func(yield func(any, error) bool) {
		defer cancel()
		it := first
		for ok {
			if it.err != nil {
				yield(nil, it.err)
				return
			}
			h.learn(it.ev)
			w, err := toWire(a2a.StreamResponse{Event: it.ev})
			if !yield(w, err) || err != nil {
				return
			}
			it, ok = <-items
		}
	})
	return map[string]any{"stream": stream, "handle": h}, nil
}

// Task returns a handle on the task id, without a round trip: access is checked per call.
func (s *agentSession) Task(id string) *taskHandle {
	return s.handle(a2a.TaskID(id), "")
}

func (s *agentSession) handle(id a2a.TaskID, tenant string) *taskHandle {
	h := &taskHandle{s: s, id: id, tenant: tenant, ready: make(chan struct{})}
	close(h.ready)
	return h
}

// SubscribeToPushNotifications calls callback with each of the task's events, across
// interrupted states, until the task is terminal or the returned subscription is canceled.
func (s *agentSession) SubscribeToPushNotifications(ctx context.Context, taskID string, callback *capnweb.Stub, params any) (*pushSubscription, error) {
	if callback == nil {
		return nil, invalidParams("callback must be a function")
	}
	if s.batch {
		// The batch is answered before the task's events come, and nothing can call the
		// callback after that.
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "an HTTP batch cannot call a push callback back: subscribe over a WebSocket, or follow the task with subscribeToTask and Last-Event-ID")
	}
	cctx, done, err := s.call(ctx, "SubscribeToPushNotifications", &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)}, params)
	if err != nil {
		return nil, err
	}
	defer done()
	size, err := s.observerWindow(cctx)
	if err != nil {
		return nil, err
	}
	// Fail now for an unknown task, rather than in the background.
	if _, err := s.b.h.GetTask(cctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)}); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	// The subscription holds one stream slot for its life; its subscriptions count as it.
	var streamSlot *slot
	if held, ok := cctx.Value(slotsKey{}).(*quotaSlots); ok && held.stream.take() {
		streamSlot = held.stream
		sctx = context.WithValue(sctx, slotsKey{}, &quotaSlots{stream: streamSlot})
	}
	sub := &pushSubscription{cancel: cancel}
	cb := callback.Dup()
	go func() {
		defer streamSlot.release()
		defer cb.Release()
		defer cancel()
		win := newCallWindow(sctx, cb, size)
		s.push(sctx, a2a.TaskID(taskID), win, params)
		_ = win.wait() // the last calls are answered before the callback is released
	}()
	return sub, nil
}

// push follows the task with SubscribeToTask, resuming by Last-Event-ID after each
// interrupted state, until the task is terminal or a call through win fails.
func (s *agentSession) push(ctx context.Context, id a2a.TaskID, win *callWindow, params any) {
	var last int64 = -1
	sent := false // whether the callback has had an event
	base, err := serviceParams(params)
	if err != nil {
		return
	}
	for ctx.Err() == nil {
		extra := base.Clone()
		if extra == nil {
			extra = http.Header{}
		}
		if last >= 0 {
			extra.Set(hdrLastEventID, strconv.FormatInt(last, 10))
		}
		cctx, err := s.callContext(ctx, "SubscribeToTask", &a2a.SubscribeToTaskRequest{ID: id}, extra)
		if err != nil {
			return
		}
		progressed, terminal := false, false
		for ev, err := range s.b.h.SubscribeToTask(cctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				if !sent {
					// The task ended before the subscription could follow it (canceled
					// right after subscribing): its final state is still the callback's.
					s.pushFinal(cctx, id, win)
				}
				return // the task is finished or gone; nothing more will come
			}
			sent = true
			if seq, ok := wire.Seq(ev); ok {
				if seq <= last {
					continue
				}
				last = seq
			}
			progressed = true
			if st, ok := wire.StateOf(ev); ok && st.Terminal() {
				terminal = true
			}
			w, err := toWire(a2a.StreamResponse{Event: ev})
			if err != nil {
				return
			}
			if win.call(w) != nil {
				return
			}
		}
		if terminal || !progressed {
			return
		}
	}
}

// pushFinal calls win with the task's snapshot if the task is terminal.
func (s *agentSession) pushFinal(ctx context.Context, id a2a.TaskID, win *callWindow) {
	t, err := s.b.h.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
	if err != nil || !t.Status.State.Terminal() {
		return
	}
	if w, err := toWire(a2a.StreamResponse{Event: t}); err == nil {
		_ = win.call(w)
	}
}

// pushSubscription is the capability subscribeToPushNotifications returns.
type pushSubscription struct {
	capnweb.Target
	cancel context.CancelFunc
}

// Cancel ends the subscription.
func (p *pushSubscription) Cancel() { p.cancel() }

// Dispose ends the subscription when the client releases it.
func (p *pushSubscription) Dispose() { p.cancel() }

// taskHandle is a TaskHandle: one task's operations, access checked per call.
type taskHandle struct {
	capnweb.Target
	s      *agentSession
	tenant string

	once  sync.Once
	ready chan struct{} // closed once id is known
	id    a2a.TaskID
}

// learn records the task ID the first event names.
func (h *taskHandle) learn(ev a2a.Event) {
	select {
	case <-h.ready:
		return
	default:
	}
	if id := ev.TaskInfo().TaskID; id != "" {
		h.once.Do(func() {
			h.id = id
			close(h.ready)
		})
	}
}

func (h *taskHandle) taskID(ctx context.Context) (a2a.TaskID, error) {
	select {
	case <-h.ready:
		return h.id, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// RPCProperties names, as the peer spells them, the methods served as properties.
func (h *taskHandle) RPCProperties() []string { return []string{"id"} }

// ID is the task's ID (a property).
func (h *taskHandle) ID(ctx context.Context) (string, error) {
	id, err := h.taskID(ctx)
	return string(id), err
}

// withID returns request (an object or nothing) with the handle's id and tenant set.
func (h *taskHandle) withID(ctx context.Context, request any, key string) (any, error) {
	id, err := h.taskID(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if r, ok := wire.Fields(request); ok {
		for k, v := range r {
			m[k] = v
		}
	}
	m[key] = string(id)
	if h.tenant != "" {
		m["tenant"] = h.tenant
	}
	return m, nil
}

// Get is getTask for this task.
func (h *taskHandle) Get(ctx context.Context, request, params any) (any, error) {
	req, err := h.withID(ctx, request, "id")
	if err != nil {
		return nil, err
	}
	return h.s.getTask(ctx, req, params)
}

// Cancel is cancelTask for this task.
func (h *taskHandle) Cancel(ctx context.Context, request, params any) (any, error) {
	req, err := h.withID(ctx, request, "id")
	if err != nil {
		return nil, err
	}
	return h.s.CancelTask(ctx, req, params)
}

// Subscribe is subscribeToTask for this task.
func (h *taskHandle) Subscribe(ctx context.Context, observer, params any) (any, error) {
	req, err := h.withID(ctx, nil, "id")
	if err != nil {
		return nil, err
	}
	return h.s.SubscribeToTask(ctx, req, observer, params)
}
