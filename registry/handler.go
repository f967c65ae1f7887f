package registry

// The registry over HTTP (JSON) and capnweb.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/strictjson"
)

// Paths the handler serves.
const (
	AgentsPath  = "/registry/agents"
	CapnwebPath = "/registry/capnweb"
)

// maxRequestBytes bounds a request body.
const maxRequestBytes = 16 << 10

// HandlerOptions configure Handler. Nil means the defaults.
type HandlerOptions struct {
	// Guard protects the endpoints as the A2A bindings are: other sites' pages refused,
	// callers authenticated under the login throttle (binding.NewServiceGuard with the server's
	// binding.Options). Nil: binding.NewServiceGuard(nil), every caller anonymous.
	Guard *binding.ServiceGuard
	// Capnweb configures the capnweb endpoint's sessions. Nil: the defaults the guard gives.
	Capnweb *capnweb.HandlerOptions
}

// Handler serves the registry: POST, GET AgentsPath; GET, DELETE AgentsPath/{id}; and the
// capnweb endpoint at CapnwebPath (docs/multi-agent.md). Mount it at "/registry/". Close it
// (io.Closer) to end its capnweb sessions.
func (r *Registry) Handler(opts *HandlerOptions) http.Handler {
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	if o.Guard == nil {
		o.Guard = binding.NewServiceGuard(nil)
	}
	h := &handler{r: r, guard: o.Guard, mux: http.NewServeMux()}
	h.capnweb = capnweb.NewHandler(h.newMain, o.Guard.CapnwebOptions(o.Capnweb))
	h.mux.HandleFunc("POST "+AgentsPath, h.register)
	h.mux.HandleFunc("GET "+AgentsPath, h.search)
	h.mux.HandleFunc("GET "+AgentsPath+"/{id}", h.get)
	h.mux.HandleFunc("DELETE "+AgentsPath+"/{id}", h.unregister)
	h.mux.Handle(CapnwebPath, h.capnweb)
	return h
}

type handler struct {
	r       *Registry
	guard   *binding.ServiceGuard
	mux     *http.ServeMux
	capnweb *capnweb.Handler
}

func (h *handler) Close() error { return h.capnweb.Close() }

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !h.guard.Allow(w, req) {
		return
	}
	h.mux.ServeHTTP(w, req)
}

// owner authenticates the request; anonymous (the zero Owner, ok) when it carries no
// credentials. It writes the refusal itself.
func (h *handler) owner(w http.ResponseWriter, req *http.Request) (o Owner, authenticated, ok bool) {
	u, err := h.guard.Authenticate(req.Context(), req.Header, req.RemoteAddr)
	if err != nil {
		h.guard.WriteError(w, err)
		return Owner{}, false, false
	}
	return ownerOf(u, tenantOf(req)), u != nil && u.Authenticated, true
}

func ownerOf(u *a2asrv.User, tenant string) Owner {
	if u == nil || !u.Authenticated {
		return Owner{Tenant: tenant}
	}
	return Owner{Tenant: tenant, Name: u.Name}
}

// tenantOf is the request's tenant: the A2A-Tenant header, if any.
func tenantOf(req *http.Request) string { return req.Header.Get("A2A-Tenant") }

// mayRegister refuses an anonymous caller on a server that authenticates.
func (h *handler) mayRegister(authenticated bool) error {
	if h.guard.Authenticated() && !authenticated {
		return refusal(ErrAuthentication, "registering needs credentials")
	}
	return nil
}

type registerRequest struct {
	URL string `json:"url"`
}

func (h *handler) register(w http.ResponseWriter, req *http.Request) {
	owner, authed, ok := h.owner(w, req)
	if !ok {
		return
	}
	if err := h.mayRegister(authed); err != nil {
		writeError(w, err)
		return
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		writeError(w, refusal(&Error{Status: http.StatusUnsupportedMediaType, Reason: "CONTENT_TYPE_NOT_SUPPORTED"}, "the body must be JSON (Content-Type: application/json)"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxRequestBytes))
	if err != nil {
		writeError(w, ErrInvalidArgument("the body is unreadable or larger than 16 KiB"))
		return
	}
	var rr registerRequest
	if err := strictjson.Unmarshal(body, &rr); err != nil {
		writeError(w, ErrInvalidArgument(`the body must be {"url": "…"}: `+err.Error()))
		return
	}
	e, created, err := h.r.Register(req.Context(), owner, rr.URL)
	if err != nil {
		writeError(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, e)
}

func (h *handler) search(w http.ResponseWriter, req *http.Request) {
	owner, _, ok := h.owner(w, req)
	if !ok {
		return
	}
	v := req.URL.Query()
	q := Query{Skill: v.Get("skill"), Tag: v.Get("tag"), Name: v.Get("name"), State: State(v.Get("state")), PageToken: v.Get("pageToken")}
	if s := v.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			writeError(w, ErrInvalidArgument("pageSize must be a number"))
			return
		}
		q.PageSize = n
	}
	if s := v.Get("mine"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			writeError(w, ErrInvalidArgument("mine must be true or false"))
			return
		}
		q.Mine = b
	}
	page, err := h.r.Search(req.Context(), owner, q)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (h *handler) get(w http.ResponseWriter, req *http.Request) {
	owner, _, ok := h.owner(w, req)
	if !ok {
		return
	}
	e, err := h.r.Get(req.Context(), owner, req.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (h *handler) unregister(w http.ResponseWriter, req *http.Request) {
	owner, authed, ok := h.owner(w, req)
	if !ok {
		return
	}
	if err := h.mayRegister(authed); err != nil {
		writeError(w, err)
		return
	}
	if err := h.r.Unregister(req.Context(), owner, req.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// statusText is the status word of the error body, by HTTP status (as the HTTP+JSON binding
// names them).
var statusText = map[int]string{
	http.StatusBadRequest: "INVALID_ARGUMENT", http.StatusUnauthorized: "UNAUTHENTICATED",
	http.StatusNotFound: "NOT_FOUND", http.StatusUnprocessableEntity: "FAILED_PRECONDITION",
	http.StatusTooManyRequests: "RESOURCE_EXHAUSTED", http.StatusUnsupportedMediaType: "INVALID_ARGUMENT",
}

// writeError writes err as the HTTP+JSON binding writes errors: {"error": {code, status,
// message, details: [ErrorInfo with the reason]}}. An error that is not the registry's is 500,
// its text not sent.
func writeError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Status: http.StatusInternalServerError, Reason: "INTERNAL", Message: "internal error"}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			e = &Error{Status: http.StatusServiceUnavailable, Reason: "UNAVAILABLE", Message: "the request ended before the registry answered"}
		}
	}
	st := statusText[e.Status]
	if st == "" {
		st = "INTERNAL"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": e.Status, "status": st, "message": e.Message,
		"details": []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": e.Reason, "domain": "a2awebcap.registry"}},
	}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(b, '\n'))
}

// The capnweb surface: the main object of each connection is a Registry target acting as the
// connection's principal (credentials on the upgrade or batch request), and authenticate
// returns one acting as another.

func (h *handler) newMain(req *http.Request) (any, error) {
	t := &target{h: h, tenant: tenantOf(req), remote: req.RemoteAddr}
	u, err := h.guard.Authenticate(req.Context(), req.Header, req.RemoteAddr)
	if err != nil {
		t.authErr = err
	} else {
		t.owner, t.authed = ownerOf(u, t.tenant), u != nil && u.Authenticated
	}
	return t, nil
}

// target is the capnweb Registry object.
type target struct {
	capnweb.Target
	h       *handler
	tenant  string
	remote  string
	owner   Owner
	authed  bool
	authErr error // the connection's credentials were refused: every call fails with it
}

// Search is search(query).
func (t *target) Search(ctx context.Context, q *Query) (json.RawMessage, error) {
	if t.authErr != nil {
		return nil, t.h.guard.CapnwebError(t.authErr)
	}
	if q == nil {
		q = &Query{}
	}
	capnweb.Blocking(ctx)
	p, err := t.h.r.Search(ctx, t.owner, *q)
	return raw(p, err)
}

// raw is v's JSON, the form the HTTP endpoints answer (a card's unions need its own encoder).
func raw(v any, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, capnwebErr(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, capnwebErr(err)
	}
	return b, nil
}

// Get is get(id).
func (t *target) Get(ctx context.Context, id string) (json.RawMessage, error) {
	if t.authErr != nil {
		return nil, t.h.guard.CapnwebError(t.authErr)
	}
	capnweb.Blocking(ctx)
	return raw(t.h.r.Get(ctx, t.owner, id))
}

// Register is register(url).
func (t *target) Register(ctx context.Context, url string) (json.RawMessage, error) {
	if t.authErr != nil {
		return nil, t.h.guard.CapnwebError(t.authErr)
	}
	if err := t.h.mayRegister(t.authed); err != nil {
		return nil, capnwebErr(err)
	}
	capnweb.Blocking(ctx)
	e, _, err := t.h.r.Register(ctx, t.owner, url)
	return raw(e, err)
}

// Unregister is unregister(id).
func (t *target) Unregister(ctx context.Context, id string) error {
	if t.authErr != nil {
		return t.h.guard.CapnwebError(t.authErr)
	}
	if err := t.h.mayRegister(t.authed); err != nil {
		return capnwebErr(err)
	}
	capnweb.Blocking(ctx)
	return capnwebErr(t.h.r.Unregister(ctx, t.owner, id))
}

// Authenticate is authenticate(credentials): a Registry acting as the principal the
// credentials (an object of header names and values) identify.
func (t *target) Authenticate(ctx context.Context, credentials map[string]any) (*target, error) {
	h := http.Header{}
	for k, v := range credentials {
		s, ok := v.(string)
		if !ok {
			return nil, capnweb.NewError("Error", "credentials must be an object of header names and string values").WithProp("reason", "UNAUTHENTICATED")
		}
		h.Set(k, s)
	}
	capnweb.Blocking(ctx)
	u, err := t.h.guard.Authenticate(ctx, h, t.remote)
	if err == nil && (u == nil || !u.Authenticated) && t.h.guard.Authenticated() {
		err = refusal(ErrAuthentication, "no credentials")
	}
	if err != nil {
		var rerr *Error
		if errors.As(err, &rerr) {
			return nil, capnwebErr(err)
		}
		return nil, t.h.guard.CapnwebError(err)
	}
	return &target{h: t.h, tenant: t.tenant, remote: t.remote, owner: ownerOf(u, t.tenant), authed: u != nil && u.Authenticated}, nil
}

// capnwebErr is the capnweb error of a registry error: its message, with the reason and the
// HTTP status as properties.
func capnwebErr(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return capnweb.NewError("Error", "internal error").WithProp("reason", "INTERNAL")
	}
	return capnweb.NewError("Error", e.Message).WithProp("reason", e.Reason).WithProp("status", e.Status)
}
