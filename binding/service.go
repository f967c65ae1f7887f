package binding

// ServiceGuard: the protections of the bindings, for an HTTP service of the server's own served
// beside them (the agent registry).

import (
	"context"
	"errors"
	"github.com/a2awebcap/a2awebcap/telemetry"
	"net/http"
	"net/url"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// ServiceGuard protects an HTTP service served beside the bindings as the bindings are
// protected: pages of other sites and DNS-rebinding requests are refused (Allow, with the
// Options' AllowedOrigins, AllowedHosts and BaseURL), callers are identified by the Options'
// Authenticate under its LoginThrottle (the same budgets as the bindings', when given the same
// *LoginThrottle), and errors are written as the HTTP+JSON binding writes them. It is safe for
// concurrent use.
type ServiceGuard struct {
	site     *siteGuard
	throttle *throttleState
	auth     Authenticator
	origins  []string            // for capnweb WebSockets
	obs      *telemetry.Observer // refused logins are audited (binding "service")
}

// NewServiceGuard returns the guard of opts (nil: no authentication, same-origin pages only).
// It panics on an Options entry NewHTTPHandler would panic on.
func NewServiceGuard(opts *Options) *ServiceGuard {
	var o Options
	if opts != nil {
		o = *opts
	}
	g := &ServiceGuard{site: newSiteGuard(&o), throttle: o.LoginThrottle.counts(), auth: o.Authenticate, obs: o.Telemetry}
	g.origins = slices.Clone(o.AllowedOrigins)
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err == nil {
			g.origins = append(g.origins, u.Scheme+"://"+u.Host)
		}
	}
	return g
}

// Allow refuses (and answers) a request of another site, a rebinding Host, or a CORS preflight
// (answered); it sets the CORS headers of an allowed origin. It reports whether the request may
// go on.
func (g *ServiceGuard) Allow(w http.ResponseWriter, r *http.Request) bool {
	return g.site.check(w, r, false)
}

// Authenticated reports whether the guard authenticates callers at all.
func (g *ServiceGuard) Authenticated() bool { return g.auth != nil }

// Authenticate names the caller whose headers these are, from remote (an address, for the
// throttle): nil and no error without an Authenticator or for a request that carries no
// credentials at all (anonymous); an error to write with WriteError otherwise.
func (g *ServiceGuard) Authenticate(ctx context.Context, headers http.Header, remote string) (*a2asrv.User, error) {
	if g.auth == nil {
		return nil, nil
	}
	u, err := g.throttle.run(ctx, g.auth, headers, remote)
	auditAuth(withBinding(ctx, "service"), g.obs, remote, err)
	if errors.Is(err, ErrNoCredentials) {
		return nil, nil
	}
	return u, err
}

// WriteError writes err as the HTTP+JSON binding does: an Authenticate refusal as 401, 403 or
// 429 (LOGIN_THROTTLED, with Retry-After), an a2a error by its table, anything else as 500
// without its text.
func (g *ServiceGuard) WriteError(w http.ResponseWriter, err error) {
	var rerr *requestError
	switch {
	case errors.As(err, &rerr):
	case errors.Is(err, a2a.ErrUnauthenticated), errors.Is(err, a2a.ErrUnauthorized):
		rerr = authError(err)
	default:
		ce := capnwebError(err)
		code, _ := ce.Props["code"].(int)
		reason, _ := ce.Props["reason"].(string)
		rerr = &requestError{reason: reason, message: ce.Message, jsonrpcCode: code, httpStatus: http.StatusInternalServerError, httpStatusT: "INTERNAL"}
	}
	if s, ok := rerr.meta["retryAfterSeconds"]; ok {
		w.Header().Set("Retry-After", s)
	}
	writeRESTError(w, nil, mediaJSON, rerr)
}

// CapnwebError is the capnweb error the capnweb binding sends for err (Options.SendError of a
// capnweb handler of the service).
func (g *ServiceGuard) CapnwebError(err error) *capnweb.Error { return capnwebError(err) }

// CapnwebOptions returns handler options for a capnweb endpoint of the service: the allowed
// origins added to base's, and the binding's idle timeout and error mapping unless base sets
// them. base may be nil.
func (g *ServiceGuard) CapnwebOptions(base *capnweb.HandlerOptions) *capnweb.HandlerOptions {
	var o capnweb.HandlerOptions
	if base != nil {
		o = *base
	}
	o.OriginPatterns = append(slices.Clone(o.OriginPatterns), g.origins...)
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultCapnwebIdleTimeout
	}
	if o.Session.SendError == nil {
		o.Session.SendError = capnwebError
	}
	return &o
}
