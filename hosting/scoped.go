package hosting

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// scoped hands the engine an agent's requests with their tenants scoped to the agent (see
// agents.go), and gives push configs back with the caller's own tenant. It also records the
// agent's name in the context (AgentFrom).
type scoped struct {
	name string
	h    a2asrv.RequestHandler
}

// funcSender is what the capnweb binding looks for to send without a goroutine; the engine
// has it.
type funcSender interface {
	SendMessageFunc(ctx context.Context, req *a2a.SendMessageRequest, done func(a2a.SendMessageResult, error))
}

// newScoped returns h scoped to the agent name; it can send without waiting when h can.
func newScoped(name string, h a2asrv.RequestHandler) a2asrv.RequestHandler {
	s := &scoped{name: name, h: h}
	if fs, ok := h.(funcSender); ok {
		return &scopedFunc{s, fs}
	}
	return s
}

type scopedFunc struct {
	*scoped
	fs funcSender
}

func (s *scopedFunc) SendMessageFunc(ctx context.Context, req *a2a.SendMessageRequest, done func(a2a.SendMessageResult, error)) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	s.fs.SendMessageFunc(s.ctx(ctx), &cp, done)
}

func (s *scoped) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, agentKey{}, s.name)
}

// unscoped returns cfg with the caller's tenant.
func unscoped(cfg *a2a.PushConfig, tenant string) *a2a.PushConfig {
	if cfg == nil {
		return nil
	}
	cp := *cfg
	cp.Tenant = tenant
	return &cp
}

func (s *scoped) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.GetTask(s.ctx(ctx), &cp)
}

func (s *scoped) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.ListTasks(s.ctx(ctx), &cp)
}

func (s *scoped) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.CancelTask(s.ctx(ctx), &cp)
}

func (s *scoped) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.SendMessage(s.ctx(ctx), &cp)
}

func (s *scoped) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.SubscribeToTask(s.ctx(ctx), &cp)
}

func (s *scoped) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.SendStreamingMessage(s.ctx(ctx), &cp)
}

func (s *scoped) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	cfg, err := s.h.GetTaskPushConfig(s.ctx(ctx), &cp)
	return unscoped(cfg, req.Tenant), err
}

func (s *scoped) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	resp, err := s.h.ListTaskPushConfigs(s.ctx(ctx), &cp)
	if resp != nil {
		out := *resp
		out.Configs = make([]*a2a.PushConfig, len(resp.Configs))
		for i, c := range resp.Configs {
			out.Configs[i] = unscoped(c, req.Tenant)
		}
		resp = &out
	}
	return resp, err
}

func (s *scoped) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	cfg, err := s.h.CreateTaskPushConfig(s.ctx(ctx), &cp)
	return unscoped(cfg, req.Tenant), err
}

func (s *scoped) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.DeleteTaskPushConfig(s.ctx(ctx), &cp)
}

func (s *scoped) GetExtendedAgentCard(ctx context.Context, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	cp := *req
	cp.Tenant = scope(s.name, req.Tenant)
	return s.h.GetExtendedAgentCard(s.ctx(ctx), &cp)
}
