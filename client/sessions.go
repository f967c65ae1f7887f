package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// sessionsGRPCService is the gRPC service of the sessions extension (binding.SessionsGRPCService).
const sessionsGRPCService = "a2awebcap.sessions.v1.SessionService"

// Sessions calls the sessions extension (docs/sessions.md) of the agent the client is connected
// to, over the client's binding, as the client's principal: the affordances of the caller's
// own chat sessions. An agent that does not serve it answers every call with an error.
func (c *Client) Sessions() *Sessions { return &Sessions{c: c} }

// Sessions is the sessions extension of one agent; see Client.Sessions.
type Sessions struct{ c *Client }

// List lists the caller's sessions, most recently updated first.
func (s *Sessions) List(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	return extCall[session.ListResponse](ctx, s.c, "ListSessions", req)
}

// Metrics measures one session.
func (s *Sessions) Metrics(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	return extCall[session.Metrics](ctx, s.c, "GetSessionMetrics", req)
}

// History returns a page of a session's turns.
func (s *Sessions) History(ctx context.Context, req *session.HistoryRequest) (*session.History, error) {
	return extCall[session.History](ctx, s.c, "GetSessionHistory", req)
}

// Context returns the working context the session's next message would get.
func (s *Sessions) Context(ctx context.Context, req *session.Ref) (*session.Window, error) {
	return extCall[session.Window](ctx, s.c, "GetSessionContext", req)
}

// Reset clears a session's conversation.
func (s *Sessions) Reset(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	return extCall[session.Metrics](ctx, s.c, "ResetSession", req)
}

// Fork makes a new session from one, after a turn; the result measures the new session.
func (s *Sessions) Fork(ctx context.Context, req *session.ForkRequest) (*session.Metrics, error) {
	return extCall[session.Metrics](ctx, s.c, "ForkSession", req)
}

// Merge folds session req.From into session req.ContextID.
func (s *Sessions) Merge(ctx context.Context, req *session.MergeRequest) (*session.Metrics, error) {
	return extCall[session.Metrics](ctx, s.c, "MergeSession", req)
}

// ExtError is an error an extension operation answered with: its A2A code (the JSON-RPC code),
// the reason of its ErrorInfo and its message. It matches, with errors.Is, session.ErrNotFound,
// session.ErrCollapsed, session.ErrDraining or session.ErrBusy by its reason, and otherwise the
// a2a sentinel of its code or reason (a2a.ErrUnauthenticated, a2a.ErrInvalidParams, ...).
type ExtError struct {
	Code    int
	Reason  string
	Message string
}

func (e *ExtError) Error() string { return e.Message }

// Is matches the sentinel of the error's reason or code.
func (e *ExtError) Is(target error) bool {
	switch e.Reason {
	case "SESSION_NOT_FOUND":
		return target == session.ErrNotFound
	case "SESSION_COLLAPSED":
		return target == session.ErrCollapsed
	case "SESSION_DRAINING":
		return target == session.ErrDraining
	case "SESSION_BUSY":
		return target == session.ErrBusy
	}
	for _, c := range wire.Codes {
		if c.Err == target && (c.Code == e.Code || a2a.ErrorReason(c.Err) == e.Reason) {
			return true
		}
	}
	return false
}

// extCall calls the extension operation op with req over the client's binding.
func extCall[T any](ctx context.Context, c *Client, op string, req any) (*T, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the %s request: %w", op, err)
	}
	body = withTenant(body, c.iface.Tenant)
	var raw []byte
	switch tr := c.transport.(type) {
	case *capnwebTransport:
		raw, err = capnwebExt(ctx, tr, op, body)
	case grpcTransport:
		service := sessionsGRPCService
		if operatorOps[op] {
			service = operatorGRPCService
		} else if memoryOps[op] {
			service = memoryGRPCService
		}
		raw, err = grpcExt(ctx, tr, service, op, body)
	default:
		switch c.binding {
		case BindingJSONRPC:
			raw, err = jsonrpcExt(ctx, c.hc, c.iface.URL, op, body)
		case BindingREST:
			if operatorOps[op] {
				raw, err = restOperator(ctx, c.hc, c.iface.URL, op, body)
			} else if memoryOps[op] {
				raw, err = restMemory(ctx, c.hc, c.iface.URL, op, body)
			} else {
				raw, err = restExt(ctx, c.hc, c.iface.URL, op, body)
			}
		default:
			err = fmt.Errorf("client: %s is not served over %s", op, c.binding)
		}
	}
	if err != nil {
		return nil, err
	}
	var res T
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("client: %s returned an invalid result: %w", op, err)
	}
	return &res, nil
}

// maxExtResult bounds an extension result read over HTTP (a page of history, a context).
const maxExtResult = 64 << 20

func jsonrpcExt(ctx context.Context, hc *http.Client, endpoint, op string, params []byte) ([]byte, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": uuid.NewString(), "method": op, "params": json.RawMessage(params)})
	b, _, err := httpExt(ctx, hc, http.MethodPost, endpoint, body)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int               `json:"code"`
			Message string            `json:"message"`
			Data    []json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("client: %s: the answer is not JSON-RPC: %w", op, err)
	}
	if resp.Error != nil {
		return nil, &ExtError{Code: resp.Error.Code, Reason: reasonOf(resp.Error.Data), Message: resp.Error.Message}
	}
	return resp.Result, nil
}

// reasonOf is the reason of the ErrorInfo among details.
func reasonOf(details []json.RawMessage) string {
	for _, d := range details {
		var info struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(d, &info) == nil && strings.HasSuffix(info.Type, "google.rpc.ErrorInfo") {
			return info.Reason
		}
	}
	return ""
}

// restExt calls op over HTTP+JSON: the route of docs/sessions.md, the request's fields in the
// path, the query or the body.
func restExt(ctx context.Context, hc *http.Client, base, op string, params []byte) ([]byte, error) {
	var f map[string]any
	if err := json.Unmarshal(params, &f); err != nil {
		return nil, err
	}
	take := func(k string) string {
		v, _ := f[k].(string)
		delete(f, k)
		return v
	}
	path := strings.TrimSuffix(base, "/")
	if t := take("tenant"); t != "" {
		path += "/" + url.PathEscape(t)
	}
	path += "/sessions"
	id := take("contextId")
	if op != "ListSessions" {
		path += "/" + url.PathEscape(id)
	}
	method, query := http.MethodGet, url.Values{}
	for k, v := range f { // what remains goes in the query (GET) or the body (POST)
		if n, ok := v.(float64); ok {
			query.Set(k, strconv.FormatFloat(n, 'f', -1, 64))
		} else if s, ok := v.(string); ok {
			query.Set(k, s)
		}
	}
	var body []byte
	switch op {
	case "GetSessionHistory":
		path += "/history"
	case "GetSessionContext":
		path += "/context"
	case "ResetSession", "ForkSession", "MergeSession":
		method = http.MethodPost
		path += ":" + strings.ToLower(strings.TrimSuffix(op, "Session"))
		body, _ = json.Marshal(f)
		query = nil
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	b, status, err := httpExt(ctx, hc, method, path, body)
	if err != nil {
		return nil, err
	}
	if status >= 300 {
		return nil, restError(b, status)
	}
	return b, nil
}

// restError is the ExtError of an HTTP+JSON error body (a google.rpc.Status).
func restError(b []byte, status int) error {
	var e struct {
		Error struct {
			Message string            `json:"message"`
			Details []json.RawMessage `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	reason := reasonOf(e.Error.Details)
	return &ExtError{Code: codeOfReason(reason), Reason: reason, Message: cmpOr(e.Error.Message, http.StatusText(status))}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// codeOfReason is the A2A code of an ErrorInfo reason, for bindings that carry none.
func codeOfReason(reason string) int {
	switch reason {
	case "SESSION_NOT_FOUND":
		return -32001
	case "SESSION_COLLAPSED", "SESSION_DRAINING", "SESSION_BUSY":
		return -32004
	case "INVALID_PARAMS":
		return -32602
	}
	for _, c := range wire.Codes {
		if a2a.ErrorReason(c.Err) == reason {
			return c.Code
		}
	}
	return -32603
}

// httpExt sends one HTTP request of an extension call and reads the answer (bounded).
func httpExt(ctx context.Context, hc *http.Client, method, u string, body []byte) ([]byte, int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("A2A-Version", "1.0")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxExtResult+1))
	if err != nil {
		return nil, 0, err
	}
	if len(b) > maxExtResult {
		return nil, 0, fmt.Errorf("client: an answer over %d bytes", maxExtResult)
	}
	return b, resp.StatusCode, nil
}

func grpcExt(ctx context.Context, tr grpcTransport, service, op string, params []byte) ([]byte, error) {
	in, out := new(structpb.Struct), new(structpb.Struct)
	if err := protojson.Unmarshal(params, in); err != nil {
		return nil, err
	}
	if err := tr.conn.Invoke(ctx, "/"+service+"/"+op, in, out); err != nil {
		st, ok := status.FromError(err)
		if !ok {
			return nil, err
		}
		var reason string
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok {
				reason = info.Reason
			}
		}
		return nil, &ExtError{Code: codeOfReason(reason), Reason: reason, Message: st.Message()}
	}
	return protojson.Marshal(out)
}

// capnwebExt calls op on the capnweb binding: listSessions on the main object, the others on
// the Session capability of the request's session, pipelined in one round trip.
func capnwebExt(ctx context.Context, tr *capnwebTransport, op string, params []byte) ([]byte, error) {
	var f map[string]any
	if err := json.Unmarshal(params, &f); err != nil {
		return nil, err
	}
	id, _ := f["contextId"].(string)
	tenant, _ := f["tenant"].(string)
	delete(f, "contextId")
	delete(f, "tenant")
	build := func(main *capnweb.Stub) []*capnweb.Promise {
		if memoryOps[op] {
			if tenant != "" {
				f["tenant"] = tenant
			}
			m := main.Call("memory")
			return []*capnweb.Promise{m, m.Call(map[string]string{"GetMemory": "get", "ForgetMemory": "forget"}[op], f)}
		}
		if operatorOps[op] {
			if tenant != "" {
				f["tenant"] = tenant
			}
			if id != "" {
				f["contextId"] = id
			}
			o := main.Call("operator")
			return []*capnweb.Promise{o, o.Call(strings.ToLower(op[:1])+op[1:], f)}
		}
		if op == "ListSessions" {
			if tenant != "" {
				f["tenant"] = tenant
			}
			return []*capnweb.Promise{main.Call("listSessions", f)}
		}
		s := main.Call("session", id, tenant)
		switch op {
		case "GetSessionHistory":
			return []*capnweb.Promise{s, s.Call("history", f)}
		case "GetSessionContext":
			return []*capnweb.Promise{s, s.Call("context")}
		case "ResetSession":
			return []*capnweb.Promise{s, s.Call("reset")}
		case "ForkSession":
			fork := s.Call("fork", f)
			return []*capnweb.Promise{s, fork, fork.Call("metrics")}
		case "MergeSession":
			return []*capnweb.Promise{s, s.Call("merge", f)}
		}
		return []*capnweb.Promise{s, s.Call("metrics")}
	}
	var out []byte
	err := tr.invokeOn(ctx, op, build, func(ctx context.Context, p *capnweb.Promise) error {
		v, err := p.Await(ctx)
		var ce *capnweb.Error
		if errors.As(err, &ce) {
			if code, ok := ce.Props["code"].(float64); ok { // the agent's answer, as it is
				reason, _ := ce.Props["reason"].(string)
				return resultError{&ExtError{Code: int(code), Reason: reason, Message: ce.Message}}
			}
		}
		if err != nil {
			return err
		}
		plain, err := wire.Plain(v)
		if err != nil {
			return resultError{fmt.Errorf("client: %s returned an invalid result: %w", op, err)}
		}
		out, err = json.Marshal(plain)
		return err
	})
	return out, err
}

// withTenant sets the tenant of a request that names none to the interface's, as a2a-go's client
// does for the A2A operations (an interface's tenant is the one its requests must carry: a
// server hosting several agents on one gRPC port tells them apart by it).
func withTenant(body []byte, tenant string) []byte {
	if tenant == "" {
		return body
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	if t, ok := m["tenant"]; ok && string(t) != `""` {
		return body
	}
	m["tenant"], _ = json.Marshal(tenant)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}
