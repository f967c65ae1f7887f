package binding

// The memory extension (docs/sessions.md, "Your memory"): what the agent remembers about the
// caller — its own instance's beliefs with their provenance, its working notes — read-only but
// for asking the agent to forget a belief; served beside A2A's operations when Options.Memory
// (GRPCOptions.Memory) is set, on every binding, as the sessions extension is (sessions.go).

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// MemoryExtensionURI names the memory extension.
const MemoryExtensionURI = "urn:a2awebcap:memory:v1"

// MemoryGRPCService is the gRPC service of the memory extension (Structs in and out).
const MemoryGRPCService = "a2awebcap.memory.v1.MemoryService"

// MemoryService serves the memory extension (agent.Memory does). Each method acts on the
// instance of the caller the context carries (its authenticated user, and tenant); its results
// are JSON values, its errors A2A errors.
type MemoryService interface {
	// GetMemory returns the caller's beliefs (every one ever held with history, else the
	// current ones), working notes and observation count.
	GetMemory(ctx context.Context, tenant string, history bool) (any, error)
	// ForgetMemory asks the caller's instance to forget belief, for reason.
	ForgetMemory(ctx context.Context, tenant, belief, reason string) (any, error)
}

// The memory extension's requests.
type (
	getMemoryRequest struct {
		Tenant  string `json:"tenant,omitempty"`
		History bool   `json:"history,omitempty"`
	}
	forgetMemoryRequest struct {
		Tenant string `json:"tenant,omitempty"`
		Belief string `json:"belief"`
		Reason string `json:"reason,omitempty"`
	}
)

// maxForgetReason bounds the reason a caller gives for forgetting (it is logged by the agent).
const maxForgetReason = 1000

func (r *forgetMemoryRequest) Validate() error {
	switch {
	case r.Belief == "":
		return invalidParams("belief is required")
	case len(r.Belief) > 64:
		return invalidParams("belief is not a belief ID")
	case len(r.Reason) > maxForgetReason:
		return invalidParams("reason is over " + strconv.Itoa(maxForgetReason) + " bytes")
	}
	return nil
}

// memoryOps are the operations of the memory extension on svc, by method name.
func memoryOps(svc MemoryService) map[string]extOp {
	if svc == nil {
		return nil
	}
	wrap := func(v any, err error) (*any, error) { return &v, err }
	return map[string]extOp{
		"GetMemory": serviceOp(func(ctx context.Context, r *getMemoryRequest) (*any, error) {
			return wrap(svc.GetMemory(ctx, r.Tenant, r.History))
		}, extError),
		"ForgetMemory": serviceOp(func(ctx context.Context, r *forgetMemoryRequest) (*any, error) {
			return wrap(svc.ForgetMemory(ctx, r.Tenant, r.Belief, r.Reason))
		}, extError),
	}
}

// memoryRoute reads a path of the memory extension, relative to the REST base, with an
// optional tenant segment first: GET /memory?history=true and POST /memory:forget with
// {belief, reason?} as the body.
func memoryRoute(method, escaped string, query url.Values, body []byte) (name string, req json.RawMessage, ok bool, rerr *requestError) {
	fields := map[string]any{}
	path := strings.TrimPrefix(escaped, "/")
	if tenant, rest, cut := strings.Cut(path, "/"); cut { // /{tenant}/memory...
		t, err := url.PathUnescape(tenant)
		if err != nil || t == "" || strings.Contains(rest, "/") {
			return "", nil, false, nil
		}
		fields["tenant"] = t
		path = rest
	}
	switch {
	case method == http.MethodGet && path == "memory":
		name = "GetMemory"
		switch v := query.Get("history"); v {
		case "", "false":
		case "true":
			fields["history"] = true
		default:
			return name, nil, true, asRequestError(invalidParams("query parameter history must be true or false"))
		}
	case method == http.MethodPost && path == "memory:forget":
		name = "ForgetMemory"
		if len(strings.TrimSpace(string(body))) > 0 {
			var extra map[string]json.RawMessage
			if err := json.Unmarshal(body, &extra); err != nil {
				return name, nil, true, asRequestError(invalidParams("the body must be a JSON object"))
			}
			for k, v := range extra {
				if k == "tenant" && fields["tenant"] != nil {
					return name, nil, true, asRequestError(invalidParams(`"tenant" is given by the path`))
				}
				fields[k] = v
			}
		}
	default:
		return "", nil, false, nil
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return name, nil, true, asRequestError(invalidParams(err.Error()))
	}
	return name, b, true, nil
}

// Memory returns the memory extension's capability (docs/sessions.md, "Your memory"): get and
// forget, each taking the operation's request object. It is made at once, without a round trip.
func (s *agentSession) Memory() *memoryCap { return &memoryCap{s: s} }

// memoryCap is the Memory capability of an AgentSession.
type memoryCap struct {
	capnweb.Target
	s *agentSession
}

// Get is the memory extension's GetMemory; request may give history.
func (c *memoryCap) Get(ctx context.Context, request, params any) (any, error) {
	return c.s.capCall(ctx, "memory extension", "GetMemory", request, params)
}

// Forget is the memory extension's ForgetMemory; request gives belief, and may give reason.
func (c *memoryCap) Forget(ctx context.Context, request, params any) (any, error) {
	return c.s.capCall(ctx, "memory extension", "ForgetMemory", request, params)
}

// memoryCardExtension is how the card declares the extension.
func memoryCardExtension() a2a.AgentExtension {
	return a2a.AgentExtension{URI: MemoryExtensionURI, Required: false,
		Description: "What the agent remembers about you: your beliefs with their provenance and working notes, and forgetting one through the agent's own rules (docs/sessions.md)."}
}
