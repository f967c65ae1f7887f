package binding

// The operator extension (docs/sessions.md, "The operator"): the meta level of the agent's
// instances — their principals, policy versions and reviews; approve, reject, roll back — served
// beside A2A's operations when Options.Operator (GRPCOptions.Operator) is set, on every binding,
// as the sessions extension is (sessions.go). Who is an operator is the service's to decide.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// OperatorExtensionURI names the operator extension.
const OperatorExtensionURI = "urn:a2awebcap:operator:v1"

// OperatorGRPCService is the gRPC service of the operator extension (Structs in and out).
const OperatorGRPCService = "a2awebcap.operator.v1.OperatorService"

// OperatorService serves the operator extension (agent.Operator does). Each method acts on the
// instance of the principal (tenant, name), for the caller the context carries, and decides
// whether that caller is an operator; its results are JSON values, its errors A2A errors
// (a2a.ErrUnauthorized for a caller who is not an operator).
type OperatorService interface {
	ListInstances(ctx context.Context, tenant string) (any, error)
	GetPolicy(ctx context.Context, tenant, name string) (any, error)
	ApproveProposal(ctx context.Context, tenant, name, review string) (any, error)
	RejectProposal(ctx context.Context, tenant, name, review, reason string) (any, error)
	RollbackPolicy(ctx context.Context, tenant, name string) (any, error)
}

// The operator extension's requests: the principal is (tenant, name), name "" the anonymous one.
type (
	listInstancesRequest struct {
		Tenant string `json:"tenant,omitempty"`
	}
	policyRequest struct {
		Tenant string `json:"tenant,omitempty"`
		Name   string `json:"name"`
	}
	approveRequest struct {
		Tenant string `json:"tenant,omitempty"`
		Name   string `json:"name"`
		Review string `json:"review"`
	}
	rejectRequest struct {
		Tenant string `json:"tenant,omitempty"`
		Name   string `json:"name"`
		Review string `json:"review"`
		Reason string `json:"reason"`
	}
)

func (r *approveRequest) Validate() error {
	if r.Review == "" {
		return invalidParams("review is required")
	}
	return nil
}

func (r *rejectRequest) Validate() error {
	if r.Review == "" || strings.TrimSpace(r.Reason) == "" {
		return invalidParams("review and reason are required")
	}
	return nil
}

// operatorOps are the operations of the operator extension on svc, by method name.
func operatorOps(svc OperatorService) map[string]extOp {
	if svc == nil {
		return nil
	}
	wrap := func(v any, err error) (*any, error) { return &v, err }
	return map[string]extOp{
		"ListInstances": serviceOp(func(ctx context.Context, r *listInstancesRequest) (*any, error) {
			return wrap(svc.ListInstances(ctx, r.Tenant))
		}, extError),
		"GetPolicy": serviceOp(func(ctx context.Context, r *policyRequest) (*any, error) {
			return wrap(svc.GetPolicy(ctx, r.Tenant, r.Name))
		}, extError),
		"ApproveProposal": serviceOp(func(ctx context.Context, r *approveRequest) (*any, error) {
			return wrap(svc.ApproveProposal(ctx, r.Tenant, r.Name, r.Review))
		}, extError),
		"RejectProposal": serviceOp(func(ctx context.Context, r *rejectRequest) (*any, error) {
			return wrap(svc.RejectProposal(ctx, r.Tenant, r.Name, r.Review, r.Reason))
		}, extError),
		"RollbackPolicy": serviceOp(func(ctx context.Context, r *policyRequest) (*any, error) {
			return wrap(svc.RollbackPolicy(ctx, r.Tenant, r.Name))
		}, extError),
	}
}

// operatorRoute reads a path of the operator extension, relative to the REST base:
// GET /operator/instances?tenant=, GET /operator/policy?tenant=&name=, and
// POST /operator/policy:approve|reject|rollback with the request in the body.
func operatorRoute(method, escaped string, query url.Values, body []byte) (name string, req json.RawMessage, ok bool, rerr *requestError) {
	fields := map[string]any{}
	for k, vs := range query {
		fields[k] = vs[0]
	}
	switch {
	case method == http.MethodGet && escaped == "/operator/instances":
		name = "ListInstances"
	case method == http.MethodGet && escaped == "/operator/policy":
		name = "GetPolicy"
	case method == http.MethodPost && escaped == "/operator/policy:approve":
		name = "ApproveProposal"
	case method == http.MethodPost && escaped == "/operator/policy:reject":
		name = "RejectProposal"
	case method == http.MethodPost && escaped == "/operator/policy:rollback":
		name = "RollbackPolicy"
	default:
		return "", nil, false, nil
	}
	if method == http.MethodPost {
		return name, json.RawMessage(body), true, nil
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return name, nil, true, asRequestError(invalidParams(err.Error()))
	}
	return name, b, true, nil
}

// Operator returns the operator extension's capability (docs/sessions.md, "The operator"): its
// methods listInstances, getPolicy, approveProposal, rejectProposal and rollbackPolicy take the
// operation's request object. It is made at once; a caller who is no operator fails on use.
func (s *agentSession) Operator() *operatorCap { return &operatorCap{s: s} }

// operatorCap is the Operator capability of an AgentSession.
type operatorCap struct {
	capnweb.Target
	s *agentSession
}

func (c *operatorCap) call(ctx context.Context, name string, request, params any) (any, error) {
	return c.s.capCall(ctx, "operator extension", name, request, params)
}

// capCall runs the operation name of the extension what (which the server may not serve) on
// the request, as a call of this session: what an extension's capability does.
func (s *agentSession) capCall(ctx context.Context, what, name string, request, params any) (any, error) {
	if s.b.hh.ext[name] == nil {
		return nil, errNoService(what)
	}
	return s.extCall(ctx, name, request, params, nil)
}

// ListInstances is the operator extension's ListInstances.
func (c *operatorCap) ListInstances(ctx context.Context, request, params any) (any, error) {
	return c.call(ctx, "ListInstances", request, params)
}

// GetPolicy is the operator extension's GetPolicy.
func (c *operatorCap) GetPolicy(ctx context.Context, request, params any) (any, error) {
	return c.call(ctx, "GetPolicy", request, params)
}

// ApproveProposal is the operator extension's ApproveProposal.
func (c *operatorCap) ApproveProposal(ctx context.Context, request, params any) (any, error) {
	return c.call(ctx, "ApproveProposal", request, params)
}

// RejectProposal is the operator extension's RejectProposal.
func (c *operatorCap) RejectProposal(ctx context.Context, request, params any) (any, error) {
	return c.call(ctx, "RejectProposal", request, params)
}

// RollbackPolicy is the operator extension's RollbackPolicy.
func (c *operatorCap) RollbackPolicy(ctx context.Context, request, params any) (any, error) {
	return c.call(ctx, "RollbackPolicy", request, params)
}

// operatorCardExtension is how the card declares the extension.
func operatorCardExtension() a2a.AgentExtension {
	return a2a.AgentExtension{URI: OperatorExtensionURI, Required: false,
		Description: "The operators' meta level: the principals with an instance, their policy versions and reviews; approve, reject, roll back (docs/sessions.md)."}
}

// mergeOps is the union of the extensions' operations (their names are distinct).
func mergeOps(sets ...map[string]extOp) map[string]extOp {
	out := map[string]extOp{}
	for _, s := range sets {
		for k, v := range s {
			if _, dup := out[k]; dup {
				panic(fmt.Sprintf("binding: two extensions define %s", k))
			}
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
