package binding

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// Authentication is the same on every binding: Options.Authenticate (GRPCOptions.Authenticate)
// sees the request's headers (gRPC metadata) and names the principal; the principal reaches the
// RequestHandler as the CallContext's User; a refusal is UNAUTHENTICATED (401, -31401,
// codes.Unauthenticated) or UNAUTHORIZED (403, -31403, codes.PermissionDenied).

// Authenticator identifies the caller of a request from its headers.
type Authenticator = func(ctx context.Context, headers http.Header) (*a2asrv.User, error)

type userKey struct{}

func withUser(ctx context.Context, u *a2asrv.User) context.Context {
	if u == nil {
		return ctx
	}
	return context.WithValue(ctx, userKey{}, u)
}

// userInterceptor copies the authenticated user into the CallContext that a2a-go's transports
// create for each call.
type userInterceptor struct {
	a2asrv.PassthroughCallInterceptor
}

func (userInterceptor) Before(ctx context.Context, cc *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	if u, ok := ctx.Value(userKey{}).(*a2asrv.User); ok {
		cc.User = u
	}
	return ctx, nil, nil
}

// withAuthenticatedUsers wraps h so that the user an Authenticator named is the call's User.
func withAuthenticatedUsers(h a2asrv.RequestHandler) a2asrv.RequestHandler {
	return &a2asrv.InterceptedHandler{Handler: h, Interceptors: []a2asrv.CallInterceptor{userInterceptor{}}}
}

// authenticate runs auth on headers and returns the context carrying the user, or the
// rejection for the wire.
func authenticate(ctx context.Context, auth Authenticator, headers http.Header) (context.Context, *requestError) {
	u, err := auth(ctx, headers)
	if err != nil {
		return ctx, authError(err)
	}
	return withUser(ctx, u), nil
}

// authError is the wire form of an Authenticator's refusal.
func authError(err error) *requestError {
	msg := err.Error()
	if errors.Is(err, a2a.ErrUnauthorized) {
		return &requestError{
			reason: "UNAUTHORIZED", message: msg, jsonrpcCode: -31403,
			httpStatus: http.StatusForbidden, httpStatusT: "PERMISSION_DENIED", grpcCode: codes.PermissionDenied,
		}
	}
	return &requestError{
		reason: "UNAUTHENTICATED", message: msg, jsonrpcCode: -31401,
		httpStatus: http.StatusUnauthorized, httpStatusT: "UNAUTHENTICATED", grpcCode: codes.Unauthenticated,
	}
}

// metadataHeaders presents gRPC metadata as HTTP headers for an Authenticator.
func metadataHeaders(md metadata.MD) http.Header {
	h := make(http.Header, len(md))
	for k, vs := range md {
		if strings.HasPrefix(k, ":") {
			continue
		}
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return h
}
