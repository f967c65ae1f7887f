package binding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/a2awebcap/a2awebcap/telemetry"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/a2awebcap/a2awebcap/internal/backlog"
)

const (
	mediaJSON    = "application/json"
	mediaA2AJSON = "application/a2a+json"
	mediaSSE     = "text/event-stream"
)

// NewHTTPHandler serves h over JSON-RPC and HTTP+JSON, and card at
// /.well-known/agent-card.json, on one http.Handler; see the package
// documentation for what clients see. opts may be nil.
//
// card is copied, not retained: the served card is card plus the interfaces
// this handler serves (see [Options]). NewHTTPHandler panics if card is nil
// or an option is invalid (a BaseURL that is no absolute URL, an
// EmptyVersion other than "", "1.0" and "0.3", an ObserverWindow outside
// 0..256, a negative Quotas field). The JSON-RPC path may equal
// the REST base path: POST to the path itself is JSON-RPC, paths below it REST.
func NewHTTPHandler(h a2asrv.RequestHandler, card *a2a.AgentCard, opts *Options) http.Handler {
	if h == nil {
		panic("binding: nil RequestHandler")
	}
	if card == nil {
		panic("binding: nil AgentCard")
	}
	o := opts.withDefaults()

	empty, ok := normalizeVersion(o.EmptyVersion)
	switch {
	case !ok || (empty != "" && empty != Version10 && empty != Version03):
		panic(fmt.Sprintf("binding: Options.EmptyVersion %q is not \"1.0\" or \"0.3\"", o.EmptyVersion))
	case empty == "":
		empty = Version10
	}
	if o.ObserverWindow < 1 || o.ObserverWindow > maxObserverWindow {
		panic(fmt.Sprintf("binding: Options.ObserverWindow %d is not from 0 to %d", o.ObserverWindow, maxObserverWindow))
	}
	if o.BaseURL != "" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			panic(fmt.Sprintf("binding: Options.BaseURL %q is not an absolute URL", o.BaseURL))
		}
	}

	cs, jsonrpcPath, restPath, capnwebPath := newCardServer(card, &o)

	topts := append([]a2asrv.TransportOption(nil), o.TransportOptions...)
	if o.KeepAlive > 0 {
		topts = append(topts, a2asrv.WithTransportKeepAlive(o.KeepAlive))
	}
	o.Quotas.check()
	var qh *quotaHandler
	if st := o.Quotas.counts(); st != nil {
		qh = newQuotaHandler(h, st)
		h = qh
	}
	h = withCardChecks(h, card, httpInterfaces(cs))
	h = observe(h, o.Telemetry)
	inner := h // what a2a-go's handlers call
	if o.Authenticate != nil {
		inner = withAuthenticatedUsers(h)
	}
	hh := &httpHandler{
		auth:         o.Authenticate,
		obs:          o.Telemetry,
		site:         newSiteGuard(&o),
		throttle:     o.LoginThrottle.counts(),
		limit:        newLimiter(o.RateLimit),
		quotas:       qh,
		challenges:   newChallenges(card),
		card:         cs,
		jsonrpcPath:  jsonrpcPath,
		restPath:     restPath,
		maxBody:      o.MaxBodyBytes,
		serve03:      o.Serve03,
		emptyVersion: empty,
		required:     requiredExtensions(card),
		supported:    []string{Version10},
		jsonrpcV1:    a2asrv.NewJSONRPCHandler(inner, topts...),
		restV1:       a2asrv.NewRESTHandler(pagedHandler{inner}, topts...),
		restTenant:   a2asrv.NewTenantRESTHandler("/{*}", pagedHandler{inner}, topts...),
	}
	hh.ext = observeOps(mergeOps(sessionOps(o.Sessions), operatorOps(o.Operator), memoryOps(o.Memory)), o.Telemetry)
	if capnwebPath != "" {
		hh.capnwebPath = capnwebPath
		hh.capnweb = newCapnwebBinding(h, hh, &o, card)
	}
	if o.Serve03 {
		hh.supported = append(hh.supported, Version03)
		hh.jsonrpcV03 = a2av0.NewJSONRPCHandler(inner, topts...)
		hh.restV03 = a2av0.NewRESTHandler(inner, topts...)
	}
	return hh
}

type httpHandler struct {
	card         *cardServer
	jsonrpcPath  string // exact path, "/" at least
	restPath     string // base path without trailing slash; "" for the root
	capnwebPath  string // exact path; "" when the capnweb binding is off
	auth         Authenticator
	obs          *telemetry.Observer // nil: not observed
	site         *siteGuard
	throttle     *throttleState // nil: failed logins are not throttled
	limit        *limiter
	quotas       *quotaHandler // nil: no task or stream quotas
	challenges   challenges    // of a 401 or 403
	capnweb      *capnwebBinding
	maxBody      int64
	serve03      bool
	emptyVersion string
	required     []string
	supported    []string

	jsonrpcV1, jsonrpcV03       http.Handler
	restV1, restTenant, restV03 http.Handler

	ext map[string]extOp // the operations of the extensions served (sessions.go), by method name
}

// Close ends the capnweb binding's sessions (WebSocket connections outlive an
// http.Server's Shutdown, which does not track hijacked connections), and stops following
// running tasks for their quota slots.
func (h *httpHandler) Close() error {
	var err error
	if h.capnweb != nil {
		err = h.capnweb.Close()
	}
	if h.quotas != nil {
		h.quotas.close()
	}
	return err
}

// reserve takes the quota slots a request needs; see quotaState.reserve. It returns nil after
// answering with the refusal.
func (h *httpHandler) reserve(w http.ResponseWriter, r *http.Request, send, stream, jsonrpc bool, id json.RawMessage) (*http.Request, func()) {
	if h.quotas == nil {
		return r, func() {}
	}
	ctx, done, rerr := h.quotas.st.reserve(r.Context(), principalKey(r.Context(), r.RemoteAddr), send, stream)
	if rerr == nil {
		return r.WithContext(ctx), done
	}
	if jsonrpc {
		writeJSONRPCError(w, r, id, false, rerr)
	} else {
		writeRESTError(w, r, negotiateJSON(r.Header.Get("Accept")), rerr)
	}
	return nil, nil
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == WellKnownCardPath:
		h.card.ServeHTTP(w, r)
	case h.capnweb != nil && p == h.capnwebPath:
		// (Its calls are observed one by one: agentSession.start.)
		if r = withArrival(r, h.obs, bindingCapnweb); h.site.check(w, r, false) {
			h.capnweb.ServeHTTP(w, r)
		}
	case p == h.jsonrpcPath, p == h.jsonrpcPath+"/":
		// Clients that join "/" to the interface URL (the conformance kit does) post to the
		// path with a trailing slash.
		if r = withArrival(r, h.obs, bindingJSONRPC); !h.site.check(w, r, true) {
			return
		}
		if r = h.authenticate(w, r, true); r != nil {
			h.serveJSONRPC(w, r)
		}
	case strings.HasPrefix(p, h.restPath+"/"):
		r = withArrival(r, h.obs, bindingREST)
		setMethod(r, restMethod(r.Method, r.URL.EscapedPath()[len(h.restPath):]))
		if !h.site.check(w, r, false) {
			return
		}
		if r = h.authenticate(w, r, false); r != nil {
			h.serveREST(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

// authenticate runs Options.Authenticate on r. It returns r with the principal in its context,
// or nil after answering with the refusal.
func (h *httpHandler) authenticate(w http.ResponseWriter, r *http.Request, jsonrpc bool) *http.Request {
	ctx := r.Context()
	var rerr *requestError
	if h.auth != nil {
		ctx, rerr = authenticate(ctx, h.throttle, h.auth, r.Header, r.RemoteAddr, h.obs)
	}
	if rerr == nil {
		rerr = h.limit.check(ctx, r.RemoteAddr)
	}
	r = r.WithContext(ctx) // with the principal, when only the rate limit refuses
	if rerr == nil {
		return r
	}
	switch rerr.httpStatus {
	case http.StatusUnauthorized, http.StatusForbidden:
		h.challenges.set(w.Header(), r.Header, rerr.httpStatus)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", rerr.meta["retryAfterSeconds"])
	}
	if jsonrpc {
		writeJSONRPCError(w, r, nil, false, rerr)
	} else {
		writeRESTError(w, r, mediaJSON, rerr)
	}
	return nil
}

// --- JSON-RPC ---------------------------------------------------------------

var streamingMethods = map[string]bool{
	"SendStreamingMessage": true, "SubscribeToTask": true, // 1.0
	"message/stream": true, "tasks/resubscribe": true, // 0.3
}

func (h *httpHandler) serveJSONRPC(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// a2a-go answers with a JSON-RPC InvalidRequest error.
		h.jsonrpcV1.ServeHTTP(w, r)
		return
	}
	body, err := readBody(w, r, h.maxBody)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSONRPCError(w, r, nil, false, errBodyTooLarge(h.maxBody))
		}
		return // the client went away mid-body
	}

	// Peek at the envelope for the method (streaming or not, 0.3 or 1.0 name)
	// and the id; a2a-go reports malformed envelopes itself.
	var env struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &env)
	id := validID(env.ID)
	setMethod(r, jsonrpcMethod(env.Method, h.ext))
	if op := h.ext[env.Method]; op != nil {
		h.serveExtJSONRPC(w, r, id, body, op)
		return
	}
	stream := streamingMethods[env.Method]
	legacyMethod := strings.Contains(env.Method, "/")

	version, rerr := h.negotiate(r, legacyMethod)
	if rerr == nil {
		rerr = checkContentType(r)
	}
	if rerr == nil {
		rerr = h.checkExtensions(r, version)
	}
	if rerr != nil {
		writeJSONRPCError(w, r, id, stream, rerr)
		return
	}
	if version != Version03 {
		body = camelParams(body)
	}
	send, _ := jsonrpcKind(env.Method)
	r, done := h.reserve(w, r, send, stream, true, id)
	if r == nil {
		return
	}
	defer done()
	w, watched := watchA2AGo(w, r)
	defer watched()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if env.Method == "GetExtendedAgentCard" || env.Method == "agent/getAuthenticatedExtendedCard" {
		r = r.WithContext(withOrigin(r.Context(), requestOrigin(r)))
	}
	if result, ok := emptyResults[env.Method]; ok && !stream {
		rw := &resultWriter{w: w, result: result}
		if version == Version03 {
			h.jsonrpcV03.ServeHTTP(rw, r)
		} else {
			h.jsonrpcV1.ServeHTTP(rw, r)
		}
		rw.finish() // not deferred: after a panic net/http must see the response unwritten
		return
	}
	switch {
	case !stream && version == Version03:
		h.jsonrpcV03.ServeHTTP(w, r)
	case !stream:
		h.jsonrpcV1.ServeHTTP(w, r)
	case version == Version03:
		r, hint := withBacklog(r)
		h.jsonrpcV03.ServeHTTP(&eventIDWriter{w: w, jsonrpc: true, hint: hint}, r)
	default:
		r, hint := withBacklog(r)
		rw := &restWriter{w: w, ctype: mediaJSON, jsonrpc: true}
		h.jsonrpcV1.ServeHTTP(&eventIDWriter{w: rw, jsonrpc: true, hint: hint}, r)
		rw.finish()
	}
}

// validID returns the JSON-RPC id to echo in an error: a string or number, else null.
func validID(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return raw
	}
	return nil
}

// --- HTTP+JSON ----------------------------------------------------------------

func (h *httpHandler) serveREST(w http.ResponseWriter, r *http.Request) {
	ctype := negotiateJSON(r.Header.Get("Accept"))
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = readBody(w, r, h.maxBody); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeRESTError(w, r, ctype, errBodyTooLarge(h.maxBody))
			}
			return
		}
	}

	version, rerr := h.negotiate(r, false)
	if rerr == nil && len(body) > 0 {
		rerr = checkContentType(r)
	}
	if rerr == nil {
		rerr = h.checkExtensions(r, version)
	}
	if rerr != nil {
		writeRESTError(w, r, ctype, rerr)
		return
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}

	if p := r.URL.Path; strings.HasSuffix(p, "/extendedAgentCard") || strings.HasSuffix(p, "/v1/card") {
		r = r.WithContext(withOrigin(r.Context(), requestOrigin(r)))
	}
	send, stream := restKind(r)
	r, done := h.reserve(w, r, send, stream, false, nil)
	if r == nil {
		return
	}
	defer done()
	w, watched := watchA2AGo(w, r)
	defer watched()
	r2 := stripPrefix(r, h.restPath)
	var hint *backlog.Hint
	if stream {
		r2, hint = withBacklog(r2)
	}
	if version == Version03 {
		h.restV03.ServeHTTP(&eventIDWriter{w: w, hint: hint}, r2) // routes under /v1/...
		return
	}

	var target http.Handler
	switch sub := r2.URL.Path; {
	case isRESTRoute(sub):
		target = h.restV1
	case isTenantRESTRoute(sub):
		target = h.restTenant // strips and records the tenant segment
	default:
		name, req, ok, rerr := sessionRoute(r.Method, r2.URL.EscapedPath(), r.URL.Query(), body)
		if !ok {
			name, req, ok, rerr = operatorRoute(r.Method, r2.URL.EscapedPath(), r.URL.Query(), body)
		}
		if !ok {
			name, req, ok, rerr = memoryRoute(r.Method, r2.URL.EscapedPath(), r.URL.Query(), body)
		}
		if ok && h.ext[name] != nil {
			if rerr != nil {
				writeRESTError(w, r, ctype, rerr)
			} else {
				h.serveExtREST(w, r, ctype, h.ext[name], req)
			}
			return
		}
		writeRESTError(w, r, ctype, errNoRoute(r.Method, sub))
		return
	}
	if r2, rerr = withRESTPage(r2, r2.URL.Path); rerr != nil {
		writeRESTError(w, r, ctype, rerr)
		return
	}
	rw := &restWriter{w: w, ctype: ctype}
	target.ServeHTTP(&eventIDWriter{w: rw, hint: hint}, r2)
	rw.finish() // not deferred: after a panic net/http must see the response unwritten
}

// isRESTRoute reports whether p (relative to the REST base) is one of the
// paths of the 1.0 HTTP+JSON binding (§11.3); methods are left to a2a-go.
func isRESTRoute(p string) bool {
	seg := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch len(seg) {
	case 1:
		switch seg[0] {
		case "message:send", "message:stream", "tasks", "extendedAgentCard":
			return true
		}
	case 2:
		return seg[0] == "tasks" && seg[1] != ""
	case 3:
		return seg[0] == "tasks" && seg[1] != "" && seg[2] == "pushNotificationConfigs"
	case 4:
		return seg[0] == "tasks" && seg[1] != "" && seg[2] == "pushNotificationConfigs" && seg[3] != ""
	}
	return false
}

// isTenantRESTRoute reports whether p is /{tenant}/<route>, the
// additional_bindings of every HTTP rule in a2a.proto.
func isTenantRESTRoute(p string) bool {
	rest := strings.TrimPrefix(p, "/")
	tenant, route, ok := strings.Cut(rest, "/")
	return ok && tenant != "" && isRESTRoute("/"+route)
}

// stripPrefix returns a shallow copy of r whose URL path lacks prefix, as
// http.StripPrefix does.
func stripPrefix(r *http.Request, prefix string) *http.Request {
	if prefix == "" {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = new(url.URL)
	*r2.URL = *r.URL
	r2.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
	r2.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, prefix)
	return r2
}

// --- shared checks --------------------------------------------------------------

// negotiate picks the protocol version for r (§3.6.2). legacyMethod is true
// for a JSON-RPC request calling a 0.3 method name.
func (h *httpHandler) negotiate(r *http.Request, legacyMethod bool) (string, *requestError) {
	declared := r.Header.Get(hdrVersion)
	if declared == "" {
		declared = r.URL.Query().Get(hdrVersion) // §3.6.1: MAY be a request parameter
	}
	v, ok := normalizeVersion(declared)
	switch {
	case !ok:
		return "", errVersionNotSupported(declared, h.supported)
	case v == "" && legacyMethod && h.serve03:
		v = Version03
	case v == "":
		v = h.emptyVersion
	}
	switch {
	case v == Version10:
		return v, nil
	case v == Version03 && h.serve03:
		return v, nil
	}
	if declared == "" {
		declared = v
	}
	return "", errVersionNotSupported(declared, h.supported)
}

// checkExtensions enforces the card's required extensions and rewrites the
// extensions header as one value per URI, the form a2a-go's
// a2asrv.Extensions understands.
func (h *httpHandler) checkExtensions(r *http.Request, version string) *requestError {
	declared := splitList(r.Header.Values(hdrExtensions))
	if version == Version03 {
		declared = append(declared, splitList(r.Header.Values(hdrLegacyExtensions))...)
	}
	if missing := missingExtensions(h.required, declared); len(missing) > 0 {
		return errExtensionRequired(missing)
	}
	if len(declared) > 0 {
		r.Header[http.CanonicalHeaderKey(hdrExtensions)] = declared
		if version == Version03 {
			r.Header.Del(hdrLegacyExtensions)
		}
	}
	return nil
}

// checkContentType accepts JSON bodies: application/json, application/a2a+json or any other
// +json type. A body without a Content-Type is refused: a page of another site may send one
// (or text/plain, or a form) without a CORS preflight, a JSON type only after one.
func checkContentType(r *http.Request) *requestError {
	if isJSONType(r.Header.Get("Content-Type")) {
		return nil
	}
	return errContentType(r.Header.Get("Content-Type"))
}

// isJSONType reports whether the media type ct is JSON.
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == mediaJSON || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// readBody reads r's body, at most limit bytes (limit < 0: no limit).
// A larger body yields an *http.MaxBytesError.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := r.Body
	if limit >= 0 {
		if r.ContentLength > limit {
			return nil, &http.MaxBytesError{Limit: limit}
		}
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	b, err := io.ReadAll(body)
	_ = r.Body.Close()
	return b, err
}

// negotiateJSON picks the JSON media type of REST responses: application/a2a+json (§11.1)
// when the client's Accept names it (and does not prefer application/json), else
// application/json, which every JSON client reads (and the conformance kit expects).
func negotiateJSON(accept string) string {
	if strings.TrimSpace(accept) == "" {
		return mediaJSON
	}
	qA2A, qJSON, qWild := -1.0, -1.0, -1.0
	for item := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(item))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if _, err := fmt.Sscanf(s, "%g", &q); err != nil {
				continue
			}
		}
		switch mt {
		case mediaA2AJSON:
			qA2A = max(qA2A, q)
		case mediaJSON:
			qJSON = max(qJSON, q)
		case "application/*", "*/*":
			qWild = max(qWild, q)
		}
	}
	if qJSON < 0 {
		qJSON = qWild
	}
	if qA2A > 0 && qA2A >= qJSON {
		return mediaA2AJSON
	}
	return mediaJSON
}

// --- error bodies -------------------------------------------------------------

func (e *requestError) errorInfo() *errordetails.Typed {
	return errordetails.NewErrorInfo(e.reason, a2a.ProtocolDomain, e.meta)
}

// writeJSONRPCError answers with a JSON-RPC error object (§9.5), HTTP 200 as
// a2a-go's handlers do. For streaming methods the error travels as the one
// event of an SSE stream, which is what SSE clients (a2a-go's among them)
// read.
//
// r is the request refused (nil: none); the refusal is observed as its call (refusedHTTP).
func writeJSONRPCError(w http.ResponseWriter, r *http.Request, id json.RawMessage, stream bool, e *requestError) {
	refusedHTTP(r, e)
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error": map[string]any{
			"code":    e.jsonrpcCode,
			"message": e.message,
			"data":    []*errordetails.Typed{e.errorInfo()},
		},
	})
	if stream {
		w.Header().Set("Content-Type", mediaSSE)
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", body)
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	status := http.StatusOK
	if e.httpStatus == http.StatusUnauthorized || e.httpStatus == http.StatusForbidden || e.httpStatus == http.StatusTooManyRequests {
		status = e.httpStatus // authentication is an HTTP matter on every HTTP binding
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// writeRESTError answers with a google.rpc.Status body (§11.6). r is the request refused
// (nil: none); the refusal is observed as its call (refusedHTTP).
func writeRESTError(w http.ResponseWriter, r *http.Request, ctype string, e *requestError) {
	refusedHTTP(r, e)
	body, _ := json.Marshal(map[string]any{
		"error": map[string]any{
			"code":    e.httpStatus,
			"status":  e.httpStatusT,
			"message": e.message,
			"details": []*errordetails.Typed{e.errorInfo()},
		},
	})
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(e.httpStatus)
	_, _ = w.Write(append(body, '\n'))
}
