package binding

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
)

// a2a-go's gRPC handler (a2agrpc v1, as of v2.4.0) builds the CancelTask and SubscribeToTask
// requests it hands the RequestHandler from the task ID alone: the request's tenant is lost,
// so a tenant's task could not be canceled or followed over gRPC, and a server hosting several
// agents could not tell which one a call is for. The binding keeps the tenant of every request
// message in the call's context (grpcTenantUnary, grpcTenantStream), and grpcTenants puts it
// back into the requests that lack it.

// tenanted is a request message with a tenant (every A2A 1.0 request message is one).
type tenanted interface{ GetTenant() string }

// grpcTenantKey is the context key of the tenant of the call's request message.
type grpcTenantKey struct{}

// grpcTenantOf returns the tenant the call's request message named, "" when none.
func grpcTenantOf(ctx context.Context) string {
	p, _ := ctx.Value(grpcTenantKey{}).(*string)
	if p == nil {
		return ""
	}
	return *p
}

func grpcTenantUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if t, ok := req.(tenanted); ok {
		tenant := t.GetTenant()
		ctx = context.WithValue(ctx, grpcTenantKey{}, &tenant)
	}
	return handler(ctx, req)
}

func grpcTenantStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	tenant := new(string) // set when the request message is received, before the handler reads it
	return handler(srv, &tenantStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), grpcTenantKey{}, tenant), tenant: tenant})
}

type tenantStream struct {
	grpc.ServerStream
	ctx    context.Context
	tenant *string
}

func (s *tenantStream) Context() context.Context { return s.ctx }

func (s *tenantStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if t, ok := m.(tenanted); ok && err == nil {
		*s.tenant = t.GetTenant()
	}
	return err
}

// grpcTenants fills in the tenant of the CancelTask and SubscribeToTask requests a2a-go's gRPC
// handler makes without it.
type grpcTenants struct{ a2asrv.RequestHandler }

func (g grpcTenants) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	if req != nil && req.Tenant == "" {
		cp := *req
		cp.Tenant = grpcTenantOf(ctx)
		req = &cp
	}
	return g.RequestHandler.CancelTask(ctx, req)
}

func (g grpcTenants) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	if req != nil && req.Tenant == "" {
		cp := *req
		cp.Tenant = grpcTenantOf(ctx)
		req = &cp
	}
	return g.RequestHandler.SubscribeToTask(ctx, req)
}
