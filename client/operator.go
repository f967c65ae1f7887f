package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// operatorGRPCService is the gRPC service of the operator extension (binding.OperatorGRPCService).
const operatorGRPCService = "a2awebcap.operator.v1.OperatorService"

// operatorOps are the operations of the operator extension.
var operatorOps = map[string]bool{"ListInstances": true, "GetPolicy": true, "ApproveProposal": true, "RejectProposal": true, "RollbackPolicy": true}

// Operator calls the operator extension (docs/sessions.md, "The operator") of the agent the
// client is connected to, over the client's binding: the meta level of its instances, for the
// server's operators. Results are the extension's JSON objects.
func (c *Client) Operator() *Operator { return &Operator{c: c} }

// Operator is the operator extension of one agent; see Client.Operator.
type Operator struct{ c *Client }

// ListInstances lists the principals that have an instance (of tenant, when it is not "").
func (o *Operator) ListInstances(ctx context.Context, tenant string) (json.RawMessage, error) {
	return o.call(ctx, "ListInstances", map[string]any{"tenant": tenant})
}

// GetPolicy is the meta level of principal (tenant, name)'s instance: the version in force, the
// versions and the reviews.
func (o *Operator) GetPolicy(ctx context.Context, tenant, name string) (json.RawMessage, error) {
	return o.call(ctx, "GetPolicy", map[string]any{"tenant": tenant, "name": name})
}

// ApproveProposal approves review on the instance.
func (o *Operator) ApproveProposal(ctx context.Context, tenant, name, review string) (json.RawMessage, error) {
	return o.call(ctx, "ApproveProposal", map[string]any{"tenant": tenant, "name": name, "review": review})
}

// RejectProposal rejects review on the instance, for reason.
func (o *Operator) RejectProposal(ctx context.Context, tenant, name, review, reason string) (json.RawMessage, error) {
	return o.call(ctx, "RejectProposal", map[string]any{"tenant": tenant, "name": name, "review": review, "reason": reason})
}

// RollbackPolicy returns the instance to its previous policy version.
func (o *Operator) RollbackPolicy(ctx context.Context, tenant, name string) (json.RawMessage, error) {
	return o.call(ctx, "RollbackPolicy", map[string]any{"tenant": tenant, "name": name})
}

func (o *Operator) call(ctx context.Context, op string, req map[string]any) (json.RawMessage, error) {
	return rawExtCall(ctx, o.c, op, req)
}

// rawExtCall calls op with req (its tenant left out when empty) and returns its JSON result.
func rawExtCall(ctx context.Context, c *Client, op string, req map[string]any) (json.RawMessage, error) {
	if req["tenant"] == "" {
		delete(req, "tenant")
	}
	res, err := extCall[json.RawMessage](ctx, c, op, req)
	if err != nil {
		return nil, err
	}
	return *res, nil
}

// restOperator calls an operator operation over HTTP+JSON (GET with the request as the query,
// POST with it as the body).
func restOperator(ctx context.Context, hc *http.Client, base, op string, params []byte) ([]byte, error) {
	path := strings.TrimSuffix(base, "/") + "/operator/"
	method, body := http.MethodPost, params
	switch op {
	case "ListInstances", "GetPolicy":
		var f map[string]string
		if err := json.Unmarshal(params, &f); err != nil {
			return nil, err
		}
		q := url.Values{}
		for k, v := range f {
			q.Set(k, v)
		}
		path += map[string]string{"ListInstances": "instances", "GetPolicy": "policy"}[op]
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		method, body = http.MethodGet, nil
	default:
		path += "policy:" + map[string]string{"ApproveProposal": "approve", "RejectProposal": "reject", "RollbackPolicy": "rollback"}[op]
	}
	b, status, err := httpExt(ctx, hc, method, path, body)
	if err != nil {
		return nil, err
	}
	if status >= 300 {
		return nil, restError(b, status)
	}
	return bytes.TrimSpace(b), nil
}
