package binding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"

	"github.com/a2awebcap/a2awebcap/telemetry"
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

// authenticate runs auth on the headers of a request from remote, under the login throttle st
// (nil: none), and returns the context carrying the user, or the rejection for the wire.
func authenticate(ctx context.Context, st *throttleState, auth Authenticator, headers http.Header, remote string, obs *telemetry.Observer) (context.Context, *requestError) {
	u, err := st.run(ctx, auth, headers, remote)
	auditAuth(ctx, obs, remote, err)
	if err != nil {
		var rerr *requestError
		if errors.As(err, &rerr) {
			return ctx, rerr
		}
		return ctx, authError(err)
	}
	return withUser(ctx, u), nil
}

// auditAuth reports a refused login (not a request without credentials) to obs.
func auditAuth(ctx context.Context, obs *telemetry.Observer, remote string, err error) {
	if err == nil || obs == nil || errors.Is(err, ErrNoCredentials) {
		return
	}
	obs.AuthFailure(bindingOf(ctx), remote, err.Error())
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

// challenges are the WWW-Authenticate challenges of a 401 (RFC 9110 §11.6.1), one per scheme
// the card declares, in the order of its securityRequirements (then by name): Basic with the
// agent's realm, Bearer for HTTP bearer, OAuth2 and OpenID Connect (once, however many declare
// it), and for an API key a challenge naming where the key goes. Mutual TLS has none: the TLS
// handshake asks for it. A card that declares nothing gets a Bearer challenge.
type challenges []challenge

type challenge struct {
	scheme string // the auth-scheme token, compared case-insensitively
	text   string
}

func newChallenges(card *a2a.AgentCard) challenges {
	realm := `realm="` + quoteParam(card.Name) + `"`
	var names []a2a.SecuritySchemeName
	seen := map[a2a.SecuritySchemeName]bool{}
	for _, req := range card.SecurityRequirements {
		for _, n := range slices.Sorted(maps.Keys(req)) {
			if _, ok := card.SecuritySchemes[n]; ok && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(card.SecuritySchemes)) {
		if !seen[n] {
			names = append(names, n)
		}
	}
	var cs challenges
	add := func(scheme, params string) {
		for _, c := range cs {
			if strings.EqualFold(c.scheme, scheme) {
				return
			}
		}
		cs = append(cs, challenge{scheme: scheme, text: scheme + " " + params})
	}
	for _, n := range names {
		switch s := card.SecuritySchemes[n].(type) {
		case a2a.HTTPAuthSecurityScheme:
			switch {
			case strings.EqualFold(s.Scheme, "basic"):
				add("Basic", realm+`, charset="UTF-8"`)
			case strings.EqualFold(s.Scheme, "bearer"):
				add("Bearer", realm)
			case s.Scheme != "":
				add(s.Scheme, realm)
			}
		case a2a.OAuth2SecurityScheme, a2a.OpenIDConnectSecurityScheme:
			add("Bearer", realm)
		case a2a.APIKeySecurityScheme:
			cs = append(cs, challenge{scheme: "APIKey", text: fmt.Sprintf(`APIKey %s, in="%s", name="%s"`,
				realm, quoteParam(string(s.Location)), quoteParam(s.Name))})
		}
	}
	if len(cs) == 0 {
		add("Bearer", realm)
	}
	return cs
}

// set writes the challenges of a refusal with status: every challenge for a 401, where a bearer
// token the request carried gets error="invalid_token" (RFC 6750 §3.1; a request without
// credentials gets no error code); for a 403 of a bearer token, the Bearer challenge with
// error="insufficient_scope".
func (cs challenges) set(h, req http.Header, status int) {
	scheme, _, _ := strings.Cut(req.Get("Authorization"), " ")
	gaveBearer := strings.EqualFold(scheme, "Bearer")
	for _, c := range cs {
		isBearer := c.scheme == "Bearer"
		switch {
		case status == http.StatusForbidden && isBearer && gaveBearer:
			h.Add("WWW-Authenticate", c.text+`, error="insufficient_scope"`)
		case status != http.StatusUnauthorized:
		case isBearer && gaveBearer:
			h.Add("WWW-Authenticate", c.text+`, error="invalid_token"`)
		default:
			h.Add("WWW-Authenticate", c.text)
		}
	}
}

// quoteParam escapes s for a quoted-string auth parameter.
func quoteParam(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "").Replace(s)
}
