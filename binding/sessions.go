package binding

// The sessions extension (docs/sessions.md, "On every binding"): the affordances of the
// caller's chat sessions — list, metrics, history, context, reset, fork, merge — served beside
// A2A's operations when Options.Sessions (GRPCOptions.Sessions) is set: JSON-RPC methods,
// HTTP+JSON routes under /sessions, a gRPC service, and on capnweb the Session capability
// (sessions_capnweb.go). Every binding decodes the same JSON request, calls the same
// session.Service method as the authenticated caller, and answers the same JSON result or
// error.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"

	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// extOp is one operation of an extension: it reads its JSON request and returns its result,
// or an error for the wire.
type extOp func(ctx context.Context, req json.RawMessage) (any, error)

// sessionOps are the operations of the sessions extension on svc, by method name.
func sessionOps(svc session.Service) map[string]extOp {
	if svc == nil {
		return nil
	}
	return map[string]extOp{
		"ListSessions":      serviceOp(svc.ListSessions, sessionError),
		"GetSessionMetrics": serviceOp(svc.GetSessionMetrics, sessionError),
		"GetSessionHistory": serviceOp(svc.GetSessionHistory, sessionError),
		"GetSessionContext": serviceOp(svc.GetSessionContext, sessionError),
		"ResetSession":      serviceOp(svc.ResetSession, sessionError),
		"ForkSession":       serviceOp(svc.ForkSession, sessionError),
		"MergeSession":      serviceOp(svc.MergeSession, sessionError),
	}
}

// validator is a request that checks itself (the session package's requests do).
type validator interface{ Validate() error }

// serviceOp adapts a method of a service to an extOp: the request is read strictly, checked,
// and the method's errors mapped by errs.
func serviceOp[Req, Res any](f func(context.Context, *Req) (*Res, error), errs func(error) error) extOp {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var req Req
		if err := decodeStrict(raw, &req); err != nil {
			return nil, err
		}
		if v, ok := any(&req).(validator); ok {
			if err := v.Validate(); err != nil {
				return nil, errs(err)
			}
		}
		res, err := f(ctx, &req)
		if err != nil {
			return nil, errs(err)
		}
		return res, nil
	}
}

// maxExtRequest bounds an extension request's JSON (they are a few small fields).
const maxExtRequest = 64 << 10

// decodeStrict decodes a JSON object into the struct dst: keys must match the fields' JSON
// names exactly (Go's decoder would take any case), once each; a missing request ("" or null) is
// an empty object.
func decodeStrict(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
	}
	if len(raw) > maxExtRequest {
		return invalidParams(fmt.Sprintf("the request is over %d bytes", maxExtRequest))
	}
	known := map[string]bool{}
	t := reflect.TypeOf(dst).Elem()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return invalidParams("the request must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalidParams(err.Error())
		}
		k := tok.(string)
		switch {
		case !known[k]:
			return invalidParams(fmt.Sprintf("unknown field %q", k))
		case seen[k]:
			return invalidParams(fmt.Sprintf("field %q appears twice", k))
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return invalidParams(err.Error())
		}
	}
	if _, err := dec.Token(); err != nil {
		return invalidParams(err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalidParams("data after the request object")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidParams(err.Error())
	}
	return nil
}

// sessionError is the wire form of an error of a session.Service: the conditions of
// docs/sessions.md's table, A2A errors as they are, anything else an internal error whose text
// does not leave the server.
func sessionError(err error) error {
	var se *session.StateError
	switch {
	case errors.Is(err, session.ErrNotFound):
		return &requestError{reason: "SESSION_NOT_FOUND", message: err.Error(), jsonrpcCode: -32001,
			httpStatus: http.StatusNotFound, httpStatusT: "NOT_FOUND", grpcCode: codes.NotFound}
	case errors.As(err, &se) && (se.State == session.Collapsed || se.State == session.Draining):
		return &requestError{reason: "SESSION_" + strings.ToUpper(string(se.State)), message: err.Error(), jsonrpcCode: -32004,
			httpStatus: http.StatusBadRequest, httpStatusT: "FAILED_PRECONDITION", grpcCode: codes.FailedPrecondition}
	case errors.Is(err, session.ErrBusy):
		return &requestError{reason: "SESSION_BUSY", message: err.Error(), jsonrpcCode: -32004,
			httpStatus: http.StatusConflict, httpStatusT: "FAILED_PRECONDITION", grpcCode: codes.FailedPrecondition}
	case errors.Is(err, session.ErrInvalid), errors.Is(err, session.ErrNothing), errors.Is(err, session.ErrState):
		return &requestError{reason: "INVALID_PARAMS", message: err.Error(), jsonrpcCode: -32602,
			httpStatus: http.StatusBadRequest, httpStatusT: "INVALID_ARGUMENT", grpcCode: codes.InvalidArgument}
	}
	return extError(err)
}

// extError passes the errors every binding knows (A2A's, the binding's own) and hides the rest.
func extError(err error) error {
	var re *requestError
	if errors.As(err, &re) || wire.CodeOf(err) != 0 {
		return err
	}
	return &requestError{reason: "INTERNAL_ERROR", message: "internal error", jsonrpcCode: -32603,
		httpStatus: http.StatusInternalServerError, httpStatusT: "INTERNAL", grpcCode: codes.Internal}
}

// asRequestError is err as the binding writes it on JSON-RPC, HTTP+JSON and gRPC.
func asRequestError(err error) *requestError {
	var re *requestError
	if errors.As(err, &re) {
		return re
	}
	code := wire.CodeOf(err)
	status, statusT, gcode := http.StatusInternalServerError, "INTERNAL", codes.Internal
	switch {
	case errors.Is(err, a2a.ErrInvalidParams):
		status, statusT, gcode = http.StatusBadRequest, "INVALID_ARGUMENT", codes.InvalidArgument
	case errors.Is(err, a2a.ErrUnauthenticated):
		return authError(err)
	case errors.Is(err, a2a.ErrUnauthorized):
		return authError(err)
	case errors.Is(err, a2a.ErrUnsupportedOperation):
		status, statusT, gcode = http.StatusBadRequest, "FAILED_PRECONDITION", codes.FailedPrecondition
	case errors.Is(err, a2a.ErrTaskNotFound):
		status, statusT, gcode = http.StatusNotFound, "NOT_FOUND", codes.NotFound
	}
	if code == 0 {
		return extError(err).(*requestError)
	}
	return &requestError{reason: a2a.ErrorReason(err), message: err.Error(), jsonrpcCode: code,
		httpStatus: status, httpStatusT: statusT, grpcCode: gcode}
}

// errNoService answers an extension operation on a server that does not serve the extension.
func errNoService(what string) *requestError {
	return &requestError{reason: "UNSUPPORTED_OPERATION", message: "this agent serves no " + what, jsonrpcCode: -32004,
		httpStatus: http.StatusBadRequest, httpStatusT: "FAILED_PRECONDITION", grpcCode: codes.FailedPrecondition}
}

// extCall is the context an extension operation runs in: a CallContext with the caller's
// service parameters and the principal the binding authenticated (in ctx).
func extCall(ctx context.Context, params http.Header) context.Context {
	cctx, cc := a2asrv.NewCallContext(ctx, a2asrv.NewServiceParams(params))
	if u, ok := ctx.Value(userKey{}).(*a2asrv.User); ok {
		cc.User = u
	}
	return cctx
}

// --- JSON-RPC ---------------------------------------------------------------

// serveExtJSONRPC answers a JSON-RPC call of an extension operation.
func (h *httpHandler) serveExtJSONRPC(w http.ResponseWriter, r *http.Request, id json.RawMessage, body []byte, op extOp) {
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		writeJSONRPCError(w, r, id, false, &requestError{reason: "PARSE_ERROR", message: "the request is not JSON", jsonrpcCode: -32700,
			httpStatus: http.StatusBadRequest, httpStatusT: "INVALID_ARGUMENT", grpcCode: codes.InvalidArgument})
		return
	}
	version, rerr := h.negotiate(r, false)
	if rerr == nil {
		rerr = checkContentType(r)
	}
	if rerr == nil {
		rerr = h.checkExtensions(r, version)
	}
	if rerr == nil && version != Version10 {
		rerr = errVersionNotSupported(version, []string{Version10})
	}
	if rerr != nil {
		writeJSONRPCError(w, r, id, false, rerr)
		return
	}
	res, err := op(extCall(r.Context(), r.Header), env.Params)
	if err != nil {
		writeJSONRPCError(w, r, id, false, asRequestError(err))
		return
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	out, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": res})
	if err != nil {
		writeJSONRPCError(w, r, id, false, asRequestError(err))
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	_, _ = w.Write(append(out, '\n'))
}

// --- HTTP+JSON ----------------------------------------------------------------

// sessionRoute reads a path of the sessions extension, relative to the REST base, with an
// optional tenant segment first. It returns the operation's name and its request, built from
// the path, the query and the body; ok is false for a path that is no route of it.
func sessionRoute(method string, escaped string, query url.Values, body []byte) (name string, req json.RawMessage, ok bool, rerr *requestError) {
	seg := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	fields := map[string]any{}
	if len(seg) > 1 && seg[0] != "sessions" && seg[1] == "sessions" { // /{tenant}/sessions/...
		tenant, err := url.PathUnescape(seg[0])
		if err != nil || tenant == "" {
			return "", nil, false, nil
		}
		fields["tenant"] = tenant
		seg = seg[1:]
	}
	if seg[0] != "sessions" || len(seg) > 3 {
		return "", nil, false, nil
	}
	var verb string
	if len(seg) >= 2 {
		id := seg[1]
		if len(seg) == 2 && method == http.MethodPost {
			i := strings.LastIndex(id, ":")
			if i < 0 {
				return "", nil, false, nil
			}
			id, verb = id[:i], id[i+1:]
		}
		ctx, err := url.PathUnescape(id)
		if err != nil || ctx == "" {
			return "", nil, false, nil
		}
		fields["contextId"] = ctx
	}
	intParam := func(key string) *requestError {
		v := query.Get(key)
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return &requestError{reason: "INVALID_PARAMS", message: fmt.Sprintf("query parameter %s=%q is not a number", key, v),
				jsonrpcCode: -32602, httpStatus: http.StatusBadRequest, httpStatusT: "INVALID_ARGUMENT", grpcCode: codes.InvalidArgument}
		}
		fields[key] = n
		return nil
	}
	switch {
	case method == http.MethodGet && len(seg) == 1:
		name = "ListSessions"
		if rerr = intParam("pageSize"); rerr == nil && query.Get("pageToken") != "" {
			fields["pageToken"] = query.Get("pageToken")
		}
	case method == http.MethodGet && len(seg) == 2:
		name = "GetSessionMetrics"
	case method == http.MethodGet && len(seg) == 3 && seg[2] == "history":
		name = "GetSessionHistory"
		if rerr = intParam("from"); rerr == nil {
			rerr = intParam("limit")
		}
	case method == http.MethodGet && len(seg) == 3 && seg[2] == "context":
		name = "GetSessionContext"
	case method == http.MethodPost && len(seg) == 2 && verb == "reset":
		name = "ResetSession"
	case method == http.MethodPost && len(seg) == 2 && verb == "fork":
		name = "ForkSession"
	case method == http.MethodPost && len(seg) == 2 && verb == "merge":
		name = "MergeSession"
	default:
		return "", nil, false, nil
	}
	if rerr != nil {
		return name, nil, true, rerr
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var extra map[string]json.RawMessage
		if err := json.Unmarshal(body, &extra); err != nil {
			return name, nil, true, asRequestError(invalidParams("the body must be a JSON object"))
		}
		for k, v := range extra {
			if _, dup := fields[k]; dup {
				return name, nil, true, asRequestError(invalidParams(fmt.Sprintf("%q is given by the path", k)))
			}
			fields[k] = v
		}
	}
	req, err := json.Marshal(fields)
	if err != nil {
		return name, nil, true, asRequestError(invalidParams(err.Error()))
	}
	return name, req, true, nil
}

// serveExtREST answers an HTTP+JSON call of an extension operation.
func (h *httpHandler) serveExtREST(w http.ResponseWriter, r *http.Request, ctype string, op extOp, req json.RawMessage) {
	res, err := op(extCall(r.Context(), r.Header), req)
	if err != nil {
		writeRESTError(w, r, ctype, asRequestError(err))
		return
	}
	out, err := json.Marshal(res)
	if err != nil {
		writeRESTError(w, r, ctype, asRequestError(err))
		return
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(append(out, '\n'))
}

// declareExtension returns exts with ext added, unless the card declares its URI already (the
// operator's own declaration wins). The caller's slice is not written.
func declareExtension(exts []a2a.AgentExtension, ext a2a.AgentExtension) []a2a.AgentExtension {
	for _, e := range exts {
		if e.URI == ext.URI {
			return exts
		}
	}
	return append(slices.Clip(exts), ext)
}

// sessionsCardExtension is how the card declares the extension.
func sessionsCardExtension() a2a.AgentExtension {
	return a2a.AgentExtension{URI: session.ExtensionURI, Required: false,
		Description: "Chat sessions: list, metrics, history, working context, reset, fork and merge of the caller's A2A contexts (docs/sessions.md)."}
}
