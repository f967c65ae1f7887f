package binding

import (
	"github.com/a2awebcap/a2awebcap/telemetry"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/capnweb"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
)

// Defaults applied for zero-valued [Options] and [GRPCOptions] fields.
const (
	DefaultJSONRPCPath  = "/a2a/jsonrpc"
	DefaultRESTPath     = "/a2a/rest"
	DefaultCardMaxAge   = 5 * time.Minute
	DefaultKeepAlive    = 15 * time.Second
	DefaultMaxBodyBytes = 4 << 20
	// DefaultObserverWindow is how many calls to a capnweb observer or push callback the
	// server keeps unanswered at once (see Options.ObserverWindow).
	DefaultObserverWindow = 16
	// WellKnownCardPath is where the public agent card is served.
	WellKnownCardPath = "/.well-known/agent-card.json"
)

// Protocol versions this package understands (Major.Minor, spec §3.6).
const (
	Version10 = "1.0"
	Version03 = "0.3"
)

// Options configures [NewHTTPHandler]. A nil *Options means all zero values.
type Options struct {
	// JSONRPCPath is the URL path of the JSON-RPC endpoint.
	// Zero: the path of the card's first JSON-RPC 1.0 interface URL, or
	// DefaultJSONRPCPath ("/a2a/jsonrpc") when the card lists none.
	JSONRPCPath string

	// RESTPath is the base path under which the HTTP+JSON routes
	// (/message:send, /tasks/{id}, /{tenant}/tasks, ...) are served.
	// Zero: the path of the card's first HTTP+JSON 1.0 interface URL, or
	// DefaultRESTPath ("/a2a/rest") when the card lists none. "/" serves the
	// routes at the root.
	RESTPath string

	// BaseURL is the externally visible scheme://host[:port] used to complete
	// the URLs of the interfaces the handler adds to the card.
	// Zero: each card request's own scheme (https when the connection is TLS,
	// else http) and Host header. Set it behind a proxy that rewrites either.
	BaseURL string

	// CardSigner signs the served agent card: it is called once, when the handler is made, on
	// the final card (interfaces completed with BaseURL) before it is encoded, and appends to
	// its Signatures — auth.SignCard with the agent's key does. NewHTTPHandler panics if it
	// returns an error, or if the card would be completed per request (BaseURL empty and an
	// interface URL given as a path): a card signed for whatever Host a request names would
	// let anyone obtain a signed card pointing at their own host. Zero: the card is served
	// with the signatures it was given, if any.
	CardSigner func(card *a2a.AgentCard) error

	// GRPCAddress is the host:port where the gRPC server of [NewGRPCServer]
	// listens; when set the card lists a GRPC interface with that URL.
	// Zero: the card lists gRPC only if the given card already does.
	GRPCAddress string

	// CardMaxAge is the max-age of the agent card's Cache-Control header.
	// Zero: DefaultCardMaxAge (5 minutes). Negative: "no-cache", so clients
	// revalidate with If-None-Match on every use.
	CardMaxAge time.Duration

	// KeepAlive is the interval between ": keep-alive" SSE comments on
	// streaming responses. Zero: DefaultKeepAlive (15 s). Negative: none.
	KeepAlive time.Duration

	// MaxBodyBytes bounds the size of request bodies.
	// Zero: DefaultMaxBodyBytes (4 MiB). Negative: no limit.
	MaxBodyBytes int64

	// Serve03 makes the handler serve requests declaring "A2A-Version: 0.3"
	// through a2a-go's a2av0 compatibility layer (JSON-RPC at the same path,
	// HTTP+JSON at RESTPath+"/v1/..."), and list 0.3 copies of the JSON-RPC,
	// HTTP+JSON and gRPC interfaces after the 1.0 ones; the card is then
	// served in a2av0's union of the 1.0 and 0.3 card shapes. A REST request
	// must declare 0.3 to reach the 0.3 routes: without A2A-Version,
	// RESTPath+"/v1/message:send" is the 1.0 route of tenant "v1". (The 0.3
	// clients of a2a-go and @a2a-js/sdk send the header.)
	// Zero (false): 0.3 requests get VersionNotSupportedError.
	Serve03 bool

	// EmptyVersion is the version assumed for a request that declares no
	// A2A-Version. Zero: "1.0" — except that, with Serve03, a JSON-RPC
	// request calling a 0.3 method name ("message/send", "tasks/get", ...),
	// which 1.0 cannot serve, is served as 0.3. The spec (§3.6.2) reads an
	// empty version as 0.3: set "0.3" together with Serve03 for that.
	EmptyVersion string

	// CapnwebPath is the URL path of the capnweb binding (WebSocket upgrade and HTTP batch
	// POST; see docs/capnweb-binding.md).
	// Zero: the path of the card's first capnweb interface URL, or DefaultCapnwebPath
	// ("/a2a/capnweb") when the card lists none. "-" disables the binding.
	CapnwebPath string

	// AllowedOrigins lists the web origins (scheme://host[:port], e.g. "https://app.example")
	// besides the server's own whose pages may call the bindings from a browser: their
	// cross-origin requests pass, get CORS headers, and may open capnweb WebSockets. BaseURL's
	// origin is always allowed. NewHTTPHandler panics on an entry that is not an origin.
	// Zero: only same-origin pages (and clients that are not browsers); a page of another
	// origin gets 403 for anything but reading the public card (docs/security.md, "Browsers").
	AllowedOrigins []string

	// AllowedHosts lists the host names (without port; "*.example" matches subdomains) that a
	// request arriving on a loopback address may name in its Host header, besides localhost,
	// *.localhost, IP addresses and BaseURL's host: a name of yours that resolves to this
	// machine. "*" turns the check off. Other hosts get 403 (a DNS-rebinding page names its
	// own). NewHTTPHandler panics on an entry with a port or a path. Zero: only those.
	AllowedHosts []string

	// Capnweb configures the capnweb sessions (limits, allowed browser origins, batch
	// timeout, WebSocket pings and idle timeout). Zero: capnweb's defaults, with the batch body
	// bounded by MaxBodyBytes and an IdleTimeout of DefaultCapnwebIdleTimeout (1 h).
	Capnweb *capnweb.HandlerOptions

	// PreAuthIdleTimeout closes a capnweb WebSocket that has not authenticated, on a server
	// with Authenticate, after this long without a message either way (it may call only
	// getAgentCard and authenticate meanwhile). Negative: the Capnweb IdleTimeout applies to it
	// too. Zero: DefaultPreAuthIdleTimeout (30 s).
	PreAuthIdleTimeout time.Duration

	// CapnwebBudget bounds the memory capnweb sessions hold together (per principal, for the
	// whole server) and what a connection may do before it authenticates (docs/security.md).
	// Zero (nil): CapnwebBudget's defaults.
	CapnwebBudget *CapnwebBudget

	// ObserverWindow is how many calls the capnweb binding keeps unanswered at once when it
	// delivers a stream to an observer function or a push subscription to its callback: it
	// sends events without waiting for the previous ones' results until that many are
	// unanswered, then waits for the oldest (docs/capnweb-binding.md, Streaming). 1 is
	// strictly one call at a time. A call (or a connection) may choose its own with the
	// service parameter A2A-Observer-Window. NewHTTPHandler panics if it is negative or above 256.
	// Zero: DefaultObserverWindow (16).
	ObserverWindow int

	// Authenticate identifies the caller from the request's headers (for capnweb: the
	// upgrade or batch request's, or the object passed to authenticate). It returns the
	// principal, whose tasks the caller then sees, or an error (wrapping
	// a2a.ErrUnauthenticated or a2a.ErrUnauthorized) that refuses the request. A nil user
	// with a nil error serves the request anonymously.
	// Zero: every caller is anonymous.
	Authenticate Authenticator

	// RateLimit bounds each principal's requests on the HTTP bindings (JSON-RPC, HTTP+JSON,
	// and each capnweb call). Zero (nil): no limit.
	RateLimit *RateLimit

	// LoginThrottle bounds failed authentications per source address and per claimed
	// principal, refusing attempts over it before Authenticate runs (429, LOGIN_THROTTLED).
	// The same *LoginThrottle given to GRPCOptions counts both servers together.
	// Zero (nil): failed authentications are not throttled.
	LoginThrottle *LoginThrottle

	// Capabilities keeps the capnweb sessions saved with save() and the revocations of
	// attenuated sessions where every replica sharing it sees them: the task store (any
	// store.Store of this module) does. A revocation then takes effect on the next call on every
	// replica, and a saved session can be restored on any of them (docs/capnweb-binding.md,
	// "Attenuation and revocation"); each call of an attenuated session reads the store.
	// Zero (nil): revocations are held by this process, where the capability lives, and
	// save/restore answer UNSUPPORTED_OPERATION.
	Capabilities CapabilityStore

	// AgentCapabilities gives capnweb sessions their agent's capabilities: capabilities() on
	// an AgentSession returns a Capabilities object (the loader, approvals, the audit log, and
	// lend, through which a client lends the agent a capability of its own). Zero: that call
	// answers UNSUPPORTED_OPERATION.
	AgentCapabilities AgentCapabilities

	// Quotas bounds what each principal holds at once: running tasks, open streams, and
	// pending calls per capnweb session. The same *Quotas given to GRPCOptions counts both
	// servers together. NewHTTPHandler panics on a negative field.
	// Zero (nil): no quotas.
	Quotas *Quotas

	// Sessions serves the sessions extension (docs/sessions.md, "On every binding") on every
	// binding of this handler, and the card declares it. Zero (nil): not served.
	Sessions session.Service

	// Operator serves the operator extension (docs/sessions.md, "The operator") on every
	// binding of this handler, and the card declares it. Zero (nil): not served.
	Operator OperatorService

	// Memory serves the memory extension (docs/sessions.md, "Your memory") on every binding
	// of this handler, and the card declares it. Zero (nil): not served.
	Memory MemoryService

	// Telemetry observes every A2A call (request log, metrics, spans continuing the caller's
	// W3C trace context) and refused logins (docs/operations.md). Zero (nil): none.
	Telemetry *telemetry.Observer

	// TransportOptions are passed to a2a-go's HTTP handlers (for example
	// a2asrv.WithTransportPanicHandler). Zero: none. The keep-alive interval
	// comes from KeepAlive and is appended after these.
	TransportOptions []a2asrv.TransportOption
}

// GRPCOptions configures [NewGRPCServer]. A nil *GRPCOptions means all zero values.
type GRPCOptions struct {
	// Card is the agent card; calls must declare, in a2a-extensions
	// metadata, every extension it marks required.
	// Zero (nil): no extension is required.
	Card *a2a.AgentCard

	// Serve03 also registers a2a-go's 0.3 service (a2a.v1.A2AService) next to
	// the 1.0 one (lf.a2a.v1.A2AService). Each service serves calls that
	// declare its own version or none; other versions get
	// VersionNotSupportedError (FAILED_PRECONDITION).
	// Zero (false): only the 1.0 service; calls declaring 0.3 are rejected.
	Serve03 bool

	// MaxMessageBytes bounds received messages (larger ones fail with
	// RESOURCE_EXHAUSTED). Zero: DefaultMaxBodyBytes (4 MiB). Negative: no limit.
	MaxMessageBytes int

	// Authenticate identifies the caller from the call's metadata (presented as HTTP
	// headers), as Options.Authenticate does for HTTP. A refusal is codes.Unauthenticated
	// (or codes.PermissionDenied for a2a.ErrUnauthorized).
	// Zero: every caller is anonymous.
	Authenticate Authenticator

	// RateLimit bounds each principal's calls, as Options.RateLimit does for HTTP (the two
	// servers count separately). Zero (nil): no limit.
	RateLimit *RateLimit

	// LoginThrottle bounds failed authentications, as Options.LoginThrottle does.
	// Zero (nil): not throttled.
	LoginThrottle *LoginThrottle

	// Quotas bounds each principal's running tasks and open streams, as Options.Quotas does
	// (CapnwebCalls does not apply). Zero (nil): no quotas.
	Quotas *Quotas

	// Sessions serves the sessions extension as the gRPC service
	// a2awebcap.sessions.v1.SessionService. Zero (nil): not served.
	Sessions session.Service

	// Operator serves the operator extension as the gRPC service
	// a2awebcap.operator.v1.OperatorService. Zero (nil): not served.
	Operator OperatorService

	// Memory serves the memory extension as the gRPC service
	// a2awebcap.memory.v1.MemoryService. Zero (nil): not served.
	Memory MemoryService

	// Telemetry observes every call, as Options.Telemetry does. Zero (nil): none.
	Telemetry *telemetry.Observer

	// ServerOptions are passed to grpc.NewServer after the binding's own
	// (interceptors, message size), so they can add credentials, keepalive
	// policy, further chained interceptors, and so on. Zero: none.
	ServerOptions []grpc.ServerOption
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.CardMaxAge == 0 {
		r.CardMaxAge = DefaultCardMaxAge
	}
	if r.KeepAlive == 0 {
		r.KeepAlive = DefaultKeepAlive
	}
	if r.MaxBodyBytes == 0 {
		r.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if r.ObserverWindow == 0 {
		r.ObserverWindow = DefaultObserverWindow
	}
	return r
}
