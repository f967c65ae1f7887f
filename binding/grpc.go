package binding

import (
	"context"
	"github.com/a2awebcap/a2awebcap/telemetry"
	"math"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpcv0 "github.com/a2aproject/a2a-go/v2/a2agrpc/v0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gRPC service names of the two protocol versions.
const (
	grpcService10 = "lf.a2a.v1.A2AService" // a2a.proto of spec 1.0
	grpcService03 = "a2a.v1.A2AService"    // a2a.proto of spec 0.3
)

// NewGRPCServer returns a gRPC server exposing h as the A2A 1.0 service
// lf.a2a.v1.A2AService through a2a-go's a2agrpc adapter (and the 0.3 service
// when opts.Serve03 is set). Its interceptors apply the binding's checks to
// every call of those services: the declared a2a-version must be the
// service's own (or absent), and every extension opts.Card marks required must
// be declared in a2a-extensions (comma-separated lists are split, so
// a2asrv.ExtensionsFrom sees one URI per entry). With opts.Sessions it also
// serves the sessions extension as SessionsGRPCService, checked the same way.
// Calls to other services registered on the returned server pass through
// unchecked.
//
// The caller serves it on a listener of its choice and lists that address
// in the card (see [Options].GRPCAddress). opts may be nil.
func NewGRPCServer(h a2asrv.RequestHandler, opts *GRPCOptions) *grpc.Server {
	return newGRPCServer(h, opts, true)
}

// newGRPCServer is NewGRPCServer; without cardChecks, h applies the checks of its agents' cards
// itself (NewAgentsGRPCServer).
func newGRPCServer(h a2asrv.RequestHandler, opts *GRPCOptions, cardChecks bool) *grpc.Server {
	if h == nil {
		panic("binding: nil RequestHandler")
	}
	var o GRPCOptions
	if opts != nil {
		o = *opts
	}
	maxMsg := o.MaxMessageBytes
	switch {
	case maxMsg == 0:
		maxMsg = DefaultMaxBodyBytes
	case maxMsg < 0:
		maxMsg = math.MaxInt32
	}
	g := &grpcGuard{required: requiredExtensions(o.Card), supported: []string{Version10}, auth: o.Authenticate, throttle: o.LoginThrottle.counts(), limit: newLimiter(o.RateLimit)}
	o.Quotas.check()
	if st := o.Quotas.counts(); st != nil {
		// Its watchers end with the tasks they follow, or when h's subscriptions do.
		g.quotas = st
		h = newQuotaHandler(h, st)
	}
	if cardChecks {
		h = withCardChecks(h, o.Card, grpcInterfaces(o.Card))
	}
	h = observe(h, o.Telemetry)
	g.obs = o.Telemetry
	if o.Authenticate != nil {
		h = withAuthenticatedUsers(h)
	}
	if o.Serve03 {
		g.supported = append(g.supported, Version03)
	}
	sopts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(grpcTenantUnary, g.unary),
		grpc.ChainStreamInterceptor(grpcTenantStream, g.stream),
		grpc.MaxRecvMsgSize(maxMsg),
	}
	s := grpc.NewServer(append(sopts, o.ServerOptions...)...)
	a2agrpc.NewHandler(pagedHandler{grpcTenants{h}}).RegisterWith(s)
	registerExtGRPC(s, SessionsGRPCService, observeOps(sessionOps(o.Sessions), o.Telemetry))
	registerExtGRPC(s, OperatorGRPCService, observeOps(operatorOps(o.Operator), o.Telemetry))
	registerExtGRPC(s, MemoryGRPCService, observeOps(memoryOps(o.Memory), o.Telemetry))
	if o.Serve03 {
		a2agrpcv0.NewHandler(h).RegisterWith(s)
	}
	return s
}

type grpcGuard struct {
	obs       *telemetry.Observer
	required  []string
	supported []string
	auth      Authenticator
	throttle  *throttleState // nil: failed logins are not throttled
	limit     *limiter
	quotas    *quotaState // nil: no task or stream quotas
}

func (g *grpcGuard) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, done, err := g.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	defer done()
	return withNextPageToken(ctx, info.FullMethod, req, handler)
}

func (g *grpcGuard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, done, err := g.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	defer done()
	return handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
}

// admit applies the binding's checks and quotas to a call of fullMethod; a refusal is
// observed as the call.
func (g *grpcGuard) admit(ctx context.Context, fullMethod string) (context.Context, func(), error) {
	start := time.Now()
	ctx, rerr := g.check(ctx, fullMethod)
	done := func() {}
	if rerr == nil {
		ctx, done, rerr = g.reserve(ctx, fullMethod)
	}
	if rerr == nil {
		return ctx, done, nil
	}
	if g.obs != nil {
		_, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
		md, _ := metadata.FromIncomingContext(ctx)
		refused(ctx, g.obs, bindingGRPC, method, principalOf(ctx), propagation.HeaderCarrier(metadataHeaders(md)), start, rerr)
	}
	return ctx, nil, grpcError(rerr)
}

// reserve takes the quota slots a call of an A2A service method needs (quotaState.reserve).
func (g *grpcGuard) reserve(ctx context.Context, fullMethod string) (context.Context, func(), *requestError) {
	service, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if g.quotas == nil || (service != grpcService10 && service != grpcService03) {
		return ctx, func() {}, nil
	}
	send, stream := grpcKind(method)
	return g.quotas.reserve(ctx, principalKey(ctx, grpcPeerAddr(ctx)), send, stream)
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// check validates a call to method and returns the context the service
// should see (with the extensions metadata split into single URIs).
func (g *grpcGuard) check(ctx context.Context, method string) (context.Context, *requestError) {
	ctx = withBinding(ctx, bindingGRPC)
	service, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	var own string
	switch service {
	case grpcService10, SessionsGRPCService, OperatorGRPCService, MemoryGRPCService:
		own = Version10
	case grpcService03:
		own = Version03
	default:
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var declared string
	if vs := md.Get(hdrVersion); len(vs) > 0 {
		declared = vs[0]
	}
	if v, ok := normalizeVersion(declared); !ok || (v != "" && v != own) {
		return ctx, errVersionNotSupported(declared, g.supported)
	}

	uris := splitList(md.Get(hdrExtensions))
	if own == Version03 {
		uris = append(uris, splitList(md.Get(hdrLegacyExtensions))...)
	}
	if missing := missingExtensions(g.required, uris); len(missing) > 0 {
		return ctx, errExtensionRequired(missing)
	}
	if len(uris) > 0 {
		md = md.Copy()
		md.Set(strings.ToLower(hdrExtensions), uris...)
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	if g.auth != nil {
		var rerr *requestError
		if ctx, rerr = authenticate(ctx, g.throttle, g.auth, metadataHeaders(md), grpcPeerAddr(ctx), g.obs); rerr != nil {
			return ctx, rerr
		}
	}
	if rerr := g.limit.check(ctx, grpcPeerAddr(ctx)); rerr != nil {
		return ctx, rerr
	}
	return ctx, nil
}

// grpcError renders e as a gRPC status with a google.rpc.ErrorInfo detail (§10.6).
func grpcError(e *requestError) error {
	st := status.New(e.grpcCode, e.message)
	if withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: e.reason, Domain: a2a.ProtocolDomain, Metadata: e.meta}); err == nil {
		st = withInfo
	}
	return st.Err()
}
