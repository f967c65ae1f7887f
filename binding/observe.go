package binding

// Observation (docs/operations.md): every A2A call, on every binding, is one telemetry.Call —
// a request log line, metrics, a server span continuing the caller's trace. The handler every
// binding calls is wrapped in observed, and the extensions' operations (sessions, memory,
// operator) in observeOps; the binding says which one it is through the context
// (withBinding), the call's principal and service parameters come from a2a-go's CallContext,
// which every binding makes, so W3C trace context is read from the HTTP headers, the gRPC
// metadata and the capnweb connection's or call's service parameters alike.
//
// A call the binding refuses before the handler (a version, a login, a rate limit or quota, a
// body too large, another site) is observed too, as that call, by refused: over JSON-RPC and
// HTTP+JSON the refusal's writer (writeJSONRPCError, writeRESTError) finds what the binding
// knew of the call in the request's arrival; gRPC's interceptors and capnweb's per-call checks
// (agentSession.start) call refused themselves. A call the handler observed is not observed
// again when its error is written (arrival.handled).

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/propagation"

	"github.com/a2awebcap/a2awebcap/telemetry"
)

// The bindings' names, as the request log and metrics give them.
const (
	bindingJSONRPC = "jsonrpc"
	bindingREST    = "rest"
	bindingGRPC    = "grpc"
	bindingCapnweb = "capnweb"
)

type bindingKey struct{}

// withBinding marks ctx as a call on binding name.
func withBinding(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, bindingKey{}, name)
}

func bindingOf(ctx context.Context) string {
	if s, ok := ctx.Value(bindingKey{}).(string); ok {
		return s
	}
	return "unknown"
}

// Reason is the error's A2A reason, for telemetry.Status.
func (e *requestError) Reason() string { return e.reason }

// observe wraps h so that o observes each call; a nil o leaves h as it is.
func observe(h a2asrv.RequestHandler, o *telemetry.Observer) a2asrv.RequestHandler {
	if o == nil {
		return h
	}
	oh := &observed{h: h, o: o}
	if fs, ok := h.(funcSender); ok {
		return observedFunc{observed: oh, fs: fs}
	}
	return oh
}

type observed struct {
	h a2asrv.RequestHandler
	o *telemetry.Observer
}

// observedFunc is observed for a handler that can also send without waiting (funcSender).
type observedFunc struct {
	*observed
	fs funcSender
}

// paramsCarrier reads trace context from a call's service parameters.
type paramsCarrier struct{ sp *a2asrv.ServiceParams }

func (c paramsCarrier) Get(key string) string {
	if c.sp == nil {
		return ""
	}
	if vs, ok := c.sp.Get(key); ok && len(vs) > 0 {
		return vs[0]
	}
	return ""
}
func (c paramsCarrier) Set(string, string) {}
func (c paramsCarrier) Keys() []string {
	if c.sp == nil {
		return nil
	}
	var keys []string
	for k := range c.sp.List() {
		keys = append(keys, k)
	}
	return keys
}

func (h *observed) start(ctx context.Context, method string) (context.Context, *telemetry.Call) {
	return startCall(ctx, h.o, method)
}

// startCall starts observing the call of method that ctx (a handler's, with a CallContext)
// carries.
func startCall(ctx context.Context, o *telemetry.Observer, method string) (context.Context, *telemetry.Call) {
	var carrier paramsCarrier
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		carrier.sp = cc.ServiceParams()
	}
	if a := arrivalOf(ctx); a != nil {
		a.handled.Store(true)
	}
	return o.Start(ctx, bindingOf(ctx), method, principalOf(ctx), carrier)
}

// principalOf is the authenticated principal of a call's context ("" for none): the
// CallContext's user, else the one the binding's authentication put in ctx.
func principalOf(ctx context.Context) string {
	if cc, ok := a2asrv.CallContextFrom(ctx); ok && cc.User != nil && cc.User.Authenticated {
		return cc.User.Name
	}
	if u, ok := ctx.Value(userKey{}).(*a2asrv.User); ok && u != nil && u.Authenticated {
		return u.Name
	}
	return ""
}

// observeOps wraps the extension operations ops so that o observes each call as an A2A call:
// the operation's name is its method. A nil o leaves them as they are.
func observeOps(ops map[string]extOp, o *telemetry.Observer) map[string]extOp {
	if o == nil || len(ops) == 0 {
		return ops
	}
	out := make(map[string]extOp, len(ops))
	for name, op := range ops {
		out[name] = func(ctx context.Context, req json.RawMessage) (any, error) {
			ctx, c := startCall(ctx, o, name)
			res, err := op(ctx, req)
			c.End(err)
			return res, err
		}
	}
	return out
}

// unknownMethod is the method of a refused call the binding could not name (the request was
// refused before it was read, or names no operation): metrics labels stay a closed set.
const unknownMethod = "unknown"

// refused observes a call of method on binding that the binding refused with err before its
// handler ran, from start, when the call arrived. A nil obs does nothing.
func refused(ctx context.Context, obs *telemetry.Observer, binding, method, principal string, carrier propagation.TextMapCarrier, start time.Time, err error) {
	if obs == nil {
		return
	}
	if method == "" {
		method = unknownMethod
	}
	obs.Refused(ctx, binding, method, principal, carrier, start, err)
}

// arrival is what an HTTP binding knows of a call it has not handed to its handler yet: for
// observing a refusal as that call (refusedHTTP). It lives in the request's context from the
// moment the request is routed to a binding; its fields are set by the request's goroutine
// before any refusal is written.
type arrival struct {
	obs     *telemetry.Observer
	start   time.Time
	binding string
	method  string      // "" until known
	header  http.Header // the request's headers, for the caller's trace context
	// handled is set when the handler (or an extension operation) observes the call itself.
	handled atomic.Bool
}

type arrivalKey struct{}

// withArrival returns r with a new arrival of a call on binding in its context; without obs, r
// as it is.
func withArrival(r *http.Request, obs *telemetry.Observer, binding string) *http.Request {
	ctx := withBinding(r.Context(), binding)
	if obs != nil {
		ctx = context.WithValue(ctx, arrivalKey{}, &arrival{obs: obs, start: time.Now(), binding: binding, header: r.Header})
	}
	return r.WithContext(ctx)
}

func arrivalOf(ctx context.Context) *arrival {
	a, _ := ctx.Value(arrivalKey{}).(*arrival)
	return a
}

// setMethod names the call of r's arrival, if it has one; "" leaves it unknown.
func setMethod(r *http.Request, method string) {
	if a := arrivalOf(r.Context()); a != nil {
		a.method = method
	}
}

// refusedHTTP observes the refusal e of the call r carries, unless r has no arrival (nil r
// included) or its handler observed it.
func refusedHTTP(r *http.Request, e *requestError) {
	if r == nil {
		return
	}
	if a := arrivalOf(r.Context()); a != nil {
		a.refuse(r.Context(), e)
	}
}

// refuse observes the call as refused with err, unless it has been observed already: one
// observation per call, whoever comes first.
func (a *arrival) refuse(ctx context.Context, err error) {
	if a.handled.CompareAndSwap(false, true) {
		refused(ctx, a.obs, a.binding, a.method, principalOf(ctx), propagation.HeaderCarrier(a.header), a.start, err)
	}
}

func (h *observed) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	ctx, c := h.start(ctx, "GetTask")
	c.SetTask(string(req.ID))
	t, err := h.h.GetTask(ctx, req)
	c.End(err)
	return t, err
}

func (h *observed) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	ctx, c := h.start(ctx, "ListTasks")
	r, err := h.h.ListTasks(ctx, req)
	c.End(err)
	return r, err
}

func (h *observed) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	ctx, c := h.start(ctx, "CancelTask")
	c.SetTask(string(req.ID))
	t, err := h.h.CancelTask(ctx, req)
	c.End(err)
	return t, err
}

// resultTask is the task a SendMessage result names.
func resultTask(r a2a.SendMessageResult) string {
	switch r := r.(type) {
	case *a2a.Task:
		return string(r.ID)
	case *a2a.Message:
		return string(r.TaskID)
	}
	return ""
}

func (h *observed) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	ctx, c := h.start(ctx, "SendMessage")
	r, err := h.h.SendMessage(ctx, req)
	c.SetTask(resultTask(r))
	c.End(err)
	return r, err
}

func (h observedFunc) SendMessageFunc(ctx context.Context, req *a2a.SendMessageRequest, done func(a2a.SendMessageResult, error)) {
	ctx, c := h.start(ctx, "SendMessage")
	h.fs.SendMessageFunc(ctx, req, func(r a2a.SendMessageResult, err error) {
		c.SetTask(resultTask(r))
		c.End(err)
		done(r, err)
	})
}

// stream observes a stream from its first pull to its end.
func (h *observed) stream(ctx context.Context, method, task string, open func(context.Context) iter.Seq2[a2a.Event, error]) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		ctx, c := h.start(ctx, method)
		c.Stream()
		c.SetTask(task)
		var err error
		defer func() { c.End(err) }()
		for ev, e := range open(ctx) {
			if e != nil {
				err = e
			} else if task == "" {
				if ti, ok := ev.(a2a.TaskInfoProvider); ok {
					task = string(ti.TaskInfo().TaskID)
					c.SetTask(task)
				}
			}
			if !yield(ev, e) {
				return
			}
		}
	}
}

func (h *observed) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return h.stream(ctx, "SubscribeToTask", string(req.ID), func(ctx context.Context) iter.Seq2[a2a.Event, error] {
		return h.h.SubscribeToTask(ctx, req)
	})
}

func (h *observed) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return h.stream(ctx, "SendStreamingMessage", "", func(ctx context.Context) iter.Seq2[a2a.Event, error] {
		return h.h.SendStreamingMessage(ctx, req)
	})
}

func (h *observed) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	ctx, c := h.start(ctx, "GetTaskPushNotificationConfig")
	c.SetTask(string(req.TaskID))
	r, err := h.h.GetTaskPushConfig(ctx, req)
	c.End(err)
	return r, err
}

func (h *observed) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	ctx, c := h.start(ctx, "ListTaskPushNotificationConfigs")
	c.SetTask(string(req.TaskID))
	r, err := h.h.ListTaskPushConfigs(ctx, req)
	c.End(err)
	return r, err
}

func (h *observed) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	ctx, c := h.start(ctx, "CreateTaskPushNotificationConfig")
	c.SetTask(string(req.TaskID))
	r, err := h.h.CreateTaskPushConfig(ctx, req)
	c.End(err)
	return r, err
}

func (h *observed) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	ctx, c := h.start(ctx, "DeleteTaskPushNotificationConfig")
	c.SetTask(string(req.TaskID))
	err := h.h.DeleteTaskPushConfig(ctx, req)
	c.End(err)
	return err
}

func (h *observed) GetExtendedAgentCard(ctx context.Context, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	ctx, c := h.start(ctx, "GetExtendedAgentCard")
	r, err := h.h.GetExtendedAgentCard(ctx, req)
	c.End(err)
	return r, err
}

// jsonrpcMethods are the JSON-RPC methods of A2A 1.0 and 0.3, each as the 1.0 operation it is
// (the name the handler's calls are observed by).
var jsonrpcMethods = map[string]string{
	"SendMessage": "SendMessage", "message/send": "SendMessage",
	"SendStreamingMessage": "SendStreamingMessage", "message/stream": "SendStreamingMessage",
	"GetTask": "GetTask", "tasks/get": "GetTask",
	"ListTasks": "ListTasks", "tasks/list": "ListTasks",
	"CancelTask": "CancelTask", "tasks/cancel": "CancelTask",
	"SubscribeToTask": "SubscribeToTask", "tasks/resubscribe": "SubscribeToTask",
	"CreateTaskPushNotificationConfig": "CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
	"GetTaskPushNotificationConfig": "GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
	"ListTaskPushNotificationConfigs": "ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
	"DeleteTaskPushNotificationConfig": "DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
	"GetExtendedAgentCard": "GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}

// jsonrpcMethod is the operation a JSON-RPC method names (one of ext's, or A2A's), else
// unknownMethod: a caller's method string never becomes a metrics label.
func jsonrpcMethod(method string, ext map[string]extOp) string {
	if ext[method] != nil {
		return method
	}
	if m, ok := jsonrpcMethods[method]; ok {
		return m
	}
	return unknownMethod
}

// restMethod is the operation an HTTP+JSON request names (method and path below the REST
// base, with an optional tenant segment or 0.3's /v1), else unknownMethod.
func restMethod(method, path string) string {
	if method == http.MethodOptions {
		return unknownMethod // a CORS preflight: the call it asks about has not come
	}
	seg := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range seg {
		rest := seg[i+1:]
		switch {
		case s == "message:send" && len(rest) == 0:
			return "SendMessage"
		case s == "message:stream" && len(rest) == 0:
			return "SendStreamingMessage"
		case (s == "extendedAgentCard" || s == "card") && len(rest) == 0:
			return "GetExtendedAgentCard"
		case s != "tasks":
			continue
		case len(rest) == 0:
			return "ListTasks"
		case len(rest) == 1 && strings.HasSuffix(rest[0], ":cancel"):
			return "CancelTask"
		case len(rest) == 1 && strings.HasSuffix(rest[0], ":subscribe"):
			return "SubscribeToTask"
		case len(rest) == 1:
			return "GetTask"
		case len(rest) == 2 && rest[1] == "pushNotificationConfigs" && method == http.MethodPost:
			return "CreateTaskPushNotificationConfig"
		case len(rest) == 2 && rest[1] == "pushNotificationConfigs":
			return "ListTaskPushNotificationConfigs"
		case len(rest) == 3 && rest[1] == "pushNotificationConfigs" && method == http.MethodDelete:
			return "DeleteTaskPushNotificationConfig"
		case len(rest) == 3 && rest[1] == "pushNotificationConfigs":
			return "GetTaskPushNotificationConfig"
		}
	}
	for _, route := range []func(string, string, url.Values, []byte) (string, json.RawMessage, bool, *requestError){sessionRoute, operatorRoute, memoryRoute} {
		if name, _, ok, _ := route(method, path, nil, nil); ok && name != "" {
			return name
		}
	}
	return unknownMethod
}

// headWriter keeps the first bytes of a response, for watchA2AGo. Streams pass through it
// (it flushes).
type headWriter struct {
	http.ResponseWriter
	a    *arrival // once it is handled, the head is not needed
	head []byte
}

// maxHead bounds what headWriter keeps: an error body is far smaller.
const maxHead = 1024

func (w *headWriter) Write(b []byte) (int, error) {
	if n := min(len(b), maxHead-len(w.head)); n > 0 && !w.a.handled.Load() {
		w.head = append(w.head, b[:n]...)
	}
	return w.ResponseWriter.Write(b)
}

func (w *headWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// watchA2AGo returns w for a2a-go's JSON-RPC or REST handler to answer r through, and the
// function to call when it has: a call that a2a-go refused itself, without calling the
// RequestHandler (a malformed envelope, an unknown method, parameters that do not decode), is
// then observed as refused, with the reason its error body gives. Without an arrival in r,
// w as it is.
func watchA2AGo(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	a := arrivalOf(r.Context())
	if a == nil {
		return w, func() {}
	}
	hw := &headWriter{ResponseWriter: w, a: a}
	return hw, func() {
		if len(hw.head) > 0 && !a.handled.Load() {
			a.refuse(r.Context(), bodyReason(hw.head))
		}
	}
}

// reasonError is an error known only by its A2A reason.
type reasonError string

func (e reasonError) Error() string  { return string(e) }
func (e reasonError) Reason() string { return string(e) }

// jsonrpcReasons name JSON-RPC's own error codes.
var jsonrpcReasons = map[int]string{-32700: "PARSE_ERROR", -32600: "INVALID_REQUEST", -32601: "METHOD_NOT_FOUND", -32602: "INVALID_PARAMS", -32603: "INTERNAL"}

// bodyReason reads the A2A reason of an error body: a JSON-RPC error response or a
// google.rpc.Status, with an ErrorInfo detail or by its code; INTERNAL when it says none.
func bodyReason(body []byte) error {
	var v struct {
		Error struct {
			Code    int                       `json:"code"`
			Status  string                    `json:"status"`
			Data    []struct{ Reason string } `json:"data"`
			Details []struct{ Reason string } `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return reasonError("INTERNAL")
	}
	for _, d := range append(v.Error.Data, v.Error.Details...) {
		if d.Reason != "" {
			return reasonError(d.Reason)
		}
	}
	if r, ok := jsonrpcReasons[v.Error.Code]; ok {
		return reasonError(r)
	}
	if v.Error.Status != "" {
		return reasonError(v.Error.Status)
	}
	return reasonError("INTERNAL")
}
