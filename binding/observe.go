package binding

// Observation (docs/operations.md): every A2A call, on every binding, is one telemetry.Call —
// a request log line, metrics, a server span continuing the caller's trace. The handler every
// binding calls is wrapped in observed; the binding says which one it is through the context
// (withBinding), the call's principal and service parameters come from a2a-go's CallContext,
// which every binding makes, so W3C trace context is read from the HTTP headers, the gRPC
// metadata and the capnweb connection's or call's service parameters alike.

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

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
	var principal string
	var carrier paramsCarrier
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		carrier.sp = cc.ServiceParams()
		if cc.User != nil && cc.User.Authenticated {
			principal = cc.User.Name
		}
	}
	return h.o.Start(ctx, bindingOf(ctx), method, principal, carrier)
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
