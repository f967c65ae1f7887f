package binding

// Several agents behind one server (docs/multi-agent.md, "Many agents in one server"). Over HTTP
// each agent has a path of its own, /agents/{name}/, below which it is served exactly as
// NewHTTPHandler serves one agent: its card at /agents/{name}/.well-known/agent-card.json, its
// JSON-RPC, HTTP+JSON and capnweb endpoints under /agents/{name}/a2a/. Over gRPC, where one port
// serves every agent, the request's tenant names the agent (A2A 1.0 gives every request a tenant,
// and an agent interface a tenant for clients to send): "name" is the agent with no tenant,
// "name/t" the agent for tenant t. The handler given for each agent sees the tenant with the
// agent's name taken off, on every binding alike.

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/a2awebcap/a2awebcap/agent/session"
)

// AgentsPath is the path below which NewAgentsHandler serves each agent (AgentsPath + name + "/"),
// and where it lists them (GET AgentsPath without the trailing slash).
const AgentsPath = "/agents/"

// HostedAgent is one of the agents NewAgentsHandler and NewAgentsGRPCServer serve.
type HostedAgent struct {
	// Name addresses the agent: its path segment and its gRPC tenant. It must be a valid
	// path segment without "/" (lower-case letters, digits and hyphens are safe).
	Name string
	// Handler serves the agent's requests; the tenant of each is the caller's, the agent's
	// name taken off (gRPC), so the same caller reaches the same tenant on every binding.
	Handler a2asrv.RequestHandler
	// Card is the agent's card; the handler adds the interfaces it serves, as NewHTTPHandler
	// does. It is copied, not retained.
	Card *a2a.AgentCard
	// Sessions, Operator and AgentCapabilities are the agent's own, as the fields of Options of
	// the same names. Zero: not served for this agent.
	Sessions          session.Service
	Operator          OperatorService
	AgentCapabilities AgentCapabilities
}

// NewAgentsHandler serves agents over JSON-RPC, HTTP+JSON and capnweb, each below
// AgentsPath+name+"/" with its own card, and lists them at GET /agents as {"agents": [{"name",
// "description", "url", "card"}]} (url is the agent's base URL, /agents/NAME/ with the slash,
// which clients that resolve the card's path relative to it, as @a2a-js/sdk does, need; card
// is its card's URL). The root
// card path answers 404, naming /agents. opts apply to every agent (authentication, quotas,
// limits and rate limits are shared: a caller's counts span the agents); its endpoint paths and
// its Sessions, Operator and AgentCapabilities are replaced by each agent's. With
// opts.GRPCAddress each card lists the gRPC interface with its agent's name as tenant
// (NewAgentsGRPCServer). It panics as NewHTTPHandler does, on an empty, invalid or duplicate
// name, and when there are no agents.
func NewAgentsHandler(agents []HostedAgent, opts *Options) http.Handler {
	if len(agents) == 0 {
		panic("binding: NewAgentsHandler needs agents")
	}
	var base Options
	if opts != nil {
		base = *opts
	}
	m := &agentsHandler{byName: map[string]http.Handler{}, baseURL: strings.TrimSuffix(base.BaseURL, "/")}
	for _, a := range agents {
		checkAgentName(a.Name, m.byName)
		if a.Card == nil {
			panic(fmt.Sprintf("binding: agent %q has no card", a.Name))
		}
		o := base
		prefix := AgentsPath + a.Name
		o.JSONRPCPath, o.RESTPath = prefix+DefaultJSONRPCPath, prefix+DefaultRESTPath
		if base.CapnwebPath != "-" {
			o.CapnwebPath = prefix + DefaultCapnwebPath
		}
		o.Sessions, o.Operator, o.AgentCapabilities = a.Sessions, a.Operator, a.AgentCapabilities
		// The interfaces in the order a single agent's card lists them, gRPC with the agent's
		// tenant; the handler completes their URLs.
		card := *a.Card
		card.SupportedInterfaces = nil
		if o.CapnwebPath != "-" {
			card.SupportedInterfaces = append(card.SupportedInterfaces, &a2a.AgentInterface{URL: o.CapnwebPath, ProtocolBinding: ProtocolCapnweb, ProtocolVersion: Version10})
		}
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			&a2a.AgentInterface{URL: o.JSONRPCPath, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: Version10},
			&a2a.AgentInterface{URL: o.RESTPath, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: Version10})
		if o.GRPCAddress != "" {
			card.SupportedInterfaces = append(card.SupportedInterfaces, &a2a.AgentInterface{URL: o.GRPCAddress,
				ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: Version10, Tenant: a.Name})
		}
		h := NewHTTPHandler(a.Handler, &card, &o)
		m.byName[a.Name] = h
		m.order = append(m.order, agentEntry{name: a.Name, description: a.Card.Description})
	}
	return m
}

func checkAgentName(name string, taken map[string]http.Handler) {
	switch {
	case name == "" || strings.ContainsAny(name, "/?#%\\ ") || name == "." || name == "..":
		panic(fmt.Sprintf("binding: agent name %q is not a path segment", name))
	case taken[name] != nil:
		panic(fmt.Sprintf("binding: two agents named %q", name))
	}
}

type agentsHandler struct {
	byName  map[string]http.Handler
	order   []agentEntry
	baseURL string
}

type agentEntry struct{ name, description string }

func (m *agentsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == strings.TrimSuffix(AgentsPath, "/") || p == AgentsPath {
		m.serveIndex(w, r)
		return
	}
	rest, ok := strings.CutPrefix(p, AgentsPath)
	if !ok {
		if p == WellKnownCardPath {
			http.Error(w, "this server hosts several agents, each with its own card: see /agents", http.StatusNotFound)
			return
		}
		http.NotFound(w, r)
		return
	}
	name, sub, _ := strings.Cut(rest, "/")
	h := m.byName[name]
	if h == nil {
		http.NotFound(w, r)
		return
	}
	if "/"+sub == WellKnownCardPath {
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = WellKnownCardPath, ""
		r = r2
	}
	h.ServeHTTP(w, r)
}

// serveIndex lists the agents: GET only, readable from any origin like a public card.
func (m *agentsHandler) serveIndex(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	origin := m.baseURL
	if origin == "" {
		origin = requestOrigin(r)
	}
	type entry struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		URL         string `json:"url"`
		Card        string `json:"card"`
	}
	out := struct {
		Agents []entry `json:"agents"`
	}{Agents: []entry{}}
	for _, a := range m.order {
		u := origin + AgentsPath + a.name + "/"
		out.Agents = append(out.Agents, entry{a.name, a.description, u, strings.TrimSuffix(u, "/") + WellKnownCardPath})
	}
	body, _ := json.Marshal(out)
	w.Header().Set("Content-Type", mediaJSON)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(body)
}

// Close ends every agent's capnweb sessions and quota watchers (see NewHTTPHandler).
func (m *agentsHandler) Close() error {
	var first error
	for _, a := range m.order {
		if c, ok := m.byName[a.name].(interface{ Close() error }); ok {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// NewAgentsGRPCServer serves agents on one gRPC server (the A2A service, and the sessions and
// operator extensions of the agents that have them): each request's tenant names the agent
// ("name", or "name/tenant"), and the agent's handler gets the rest. A tenant that names no
// agent is INVALID_ARGUMENT. Each agent's card is enforced for its own requests (required
// extensions, input media types, the extended card); opts.Card is ignored. It panics as
// NewGRPCServer does, and on an empty, invalid or duplicate name.
func NewAgentsGRPCServer(agents []HostedAgent, opts *GRPCOptions) *grpc.Server {
	if len(agents) == 0 {
		panic("binding: NewAgentsGRPCServer needs agents")
	}
	var o GRPCOptions
	if opts != nil {
		o = *opts
	}
	r := &tenantRouter{agents: map[string]*routedAgent{}}
	seen := map[string]http.Handler{}
	for _, a := range agents {
		checkAgentName(a.Name, seen)
		seen[a.Name] = http.NotFoundHandler()
		if a.Handler == nil {
			panic(fmt.Sprintf("binding: agent %q has no handler", a.Name))
		}
		h := withCardChecks(a.Handler, a.Card, grpcInterfaces(a.Card))
		if req := requiredExtensions(a.Card); len(req) > 0 {
			h = &requireExtensions{RequestHandler: h, required: req}
		}
		r.agents[a.Name] = &routedAgent{h: h, sessions: a.Sessions, operator: a.Operator}
		r.names = append(r.names, a.Name)
		r.anySessions = r.anySessions || a.Sessions != nil
		r.anyOperator = r.anyOperator || a.Operator != nil
	}
	o.Card = nil
	o.Sessions, o.Operator = nil, nil
	if r.anySessions {
		o.Sessions = sessionRouter{r}
	}
	if r.anyOperator {
		o.Operator = operatorRouter{r}
	}
	return newGRPCServer(r, &o, false)
}

// routedAgent is one agent behind a tenantRouter: its handler with its card's checks.
type routedAgent struct {
	h        a2asrv.RequestHandler
	sessions session.Service
	operator OperatorService
}

// tenantRouter is a RequestHandler that serves each request with the agent its tenant names.
type tenantRouter struct {
	agents                   map[string]*routedAgent
	names                    []string
	anySessions, anyOperator bool
}

// route returns the agent a tenant names and the tenant left for it.
func (r *tenantRouter) route(tenant string) (*routedAgent, string, error) {
	name, rest, _ := strings.Cut(tenant, "/")
	if a := r.agents[name]; a != nil {
		return a, rest, nil
	}
	names := slices.Clone(r.names)
	slices.Sort(names)
	msg := "no agent is named by the request's tenant: this server hosts several agents, and a request's tenant names one (its card's gRPC interface gives it): " +
		strings.Join(names, ", ")
	if name != "" {
		msg = fmt.Sprintf("no agent named %q here: a request's tenant names one of %s", truncateName(name), strings.Join(names, ", "))
	}
	return nil, "", a2a.NewError(a2a.ErrInvalidParams, msg)
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func errSeq(err error) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
}

func (r *tenantRouter) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	return a.h.GetTask(ctx, &cp)
}

func (r *tenantRouter) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	return a.h.ListTasks(ctx, &cp)
}

func (r *tenantRouter) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	return a.h.CancelTask(ctx, &cp)
}

func (r *tenantRouter) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	return a.h.SendMessage(ctx, &cp)
}

func (r *tenantRouter) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return errSeq(err)
	}
	cp := *req
	cp.Tenant = t
	return a.h.SubscribeToTask(ctx, &cp)
}

func (r *tenantRouter) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return errSeq(err)
	}
	cp := *req
	cp.Tenant = t
	return a.h.SendStreamingMessage(ctx, &cp)
}

func (r *tenantRouter) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	cfg, err := a.h.GetTaskPushConfig(ctx, &cp)
	return withTenant(cfg, req.Tenant), err
}

func (r *tenantRouter) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	resp, err := a.h.ListTaskPushConfigs(ctx, &cp)
	if resp != nil {
		out := *resp
		out.Configs = make([]*a2a.PushConfig, len(resp.Configs))
		for i, c := range resp.Configs {
			out.Configs[i] = withTenant(c, req.Tenant)
		}
		resp = &out
	}
	return resp, err
}

func (r *tenantRouter) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	cfg, err := a.h.CreateTaskPushConfig(ctx, &cp)
	return withTenant(cfg, req.Tenant), err
}

func (r *tenantRouter) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return err
	}
	cp := *req
	cp.Tenant = t
	return a.h.DeleteTaskPushConfig(ctx, &cp)
}

func (r *tenantRouter) GetExtendedAgentCard(ctx context.Context, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	a, t, err := r.route(req.Tenant)
	if err != nil {
		return nil, err
	}
	cp := *req
	cp.Tenant = t
	return a.h.GetExtendedAgentCard(ctx, &cp)
}

// withTenant returns cfg with the tenant the caller named (the agent's name included), as the
// caller sent it.
func withTenant(cfg *a2a.PushConfig, tenant string) *a2a.PushConfig {
	if cfg == nil || cfg.Tenant == tenant {
		return cfg
	}
	cp := *cfg
	cp.Tenant = tenant
	return &cp
}

// requireExtensions refuses a gRPC call that does not declare an extension its agent's card
// requires, as the gRPC guard does for the single agent of NewGRPCServer.
type requireExtensions struct {
	a2asrv.RequestHandler
	required []string
}

func (q *requireExtensions) check(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	missing := missingExtensions(q.required, splitList(md.Get(hdrExtensions)))
	if len(missing) == 0 {
		return nil
	}
	return a2a.NewError(a2a.ErrExtensionSupportRequired, errExtensionRequired(missing).message)
}

func (q *requireExtensions) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	return q.RequestHandler.GetTask(ctx, req)
}

func (q *requireExtensions) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	return q.RequestHandler.ListTasks(ctx, req)
}

func (q *requireExtensions) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	return q.RequestHandler.CancelTask(ctx, req)
}

func (q *requireExtensions) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	return q.RequestHandler.SendMessage(ctx, req)
}

func (q *requireExtensions) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	if err := q.check(ctx); err != nil {
		return errSeq(err)
	}
	return q.RequestHandler.SubscribeToTask(ctx, req)
}

func (q *requireExtensions) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	if err := q.check(ctx); err != nil {
		return errSeq(err)
	}
	return q.RequestHandler.SendStreamingMessage(ctx, req)
}

func (q *requireExtensions) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	return q.RequestHandler.GetTaskPushConfig(ctx, req)
}

func (q *requireExtensions) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	return q.RequestHandler.ListTaskPushConfigs(ctx, req)
}

func (q *requireExtensions) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	return q.RequestHandler.CreateTaskPushConfig(ctx, req)
}

func (q *requireExtensions) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	return q.RequestHandler.DeleteTaskPushConfig(ctx, req)
}

// sessionRouter serves the sessions extension of the agent each request's tenant names.
type sessionRouter struct{ r *tenantRouter }

func (s sessionRouter) service(tenant *string) (session.Service, error) {
	a, t, err := s.r.route(*tenant)
	if err != nil {
		return nil, err
	}
	if a.sessions == nil {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "this agent has no sessions extension")
	}
	*tenant = t
	return a.sessions, nil
}

func (s sessionRouter) ListSessions(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	cp := *req
	svc, err := s.service(&cp.Tenant)
	if err != nil {
		return nil, err
	}
	return svc.ListSessions(ctx, &cp)
}

func (s sessionRouter) GetSessionMetrics(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	cp := *req
	svc, err := s.service(&cp.Tenant)
	if err != nil {
		return nil, err
	}
	return svc.GetSessionMetrics(ctx, &cp)
}

func (s sessionRouter) GetSessionHistory(ctx context.Context, req *session.HistoryRequest) (*session.History, error) {
	cp := *req
	svc, err := s.service(&cp.Tenant)
	if err != nil {
		return nil, err
	}
	return svc.GetSessionHistory(ctx, &cp)
}

func (s sessionRouter) GetSessionContext(ctx context.Context, req *session.Ref) (*session.Window, error) {
	cp := *req
	svc, err := s.service(&cp.Tenant)
	if err != nil {
		return nil, err
	}
	return svc.GetSessionContext(ctx, &cp)
}

func (s sessionRouter) ResetSession(ctx context.Context, req *session.Ref) (*session.Metrics, error) {
	cp := *req
	svc, err := s.service(&cp.Tenant)
	if err != nil {
		return nil, err
	}
	return svc.ResetSession(ctx, &cp)
}

func (s sessionRouter) ForkSession(ctx context.Context, req *session.ForkRequest) (*session.Metrics, error) {
	cp := *req
	svc, err := s.service(&cp.Tenant)
	if err != nil {
		return nil, err
	}
	return svc.ForkSession(ctx, &cp)
}

func (s sessionRouter) MergeSession(ctx context.Context, req *session.MergeRequest) (*session.Metrics, error) {
	cp := *req
	svc, err := s.service(&cp.Tenant)
	if err != nil {
		return nil, err
	}
	return svc.MergeSession(ctx, &cp)
}

// operatorRouter serves the operator extension of the agent each request's tenant names.
type operatorRouter struct{ r *tenantRouter }

func (o operatorRouter) service(tenant string) (OperatorService, string, error) {
	a, t, err := o.r.route(tenant)
	if err != nil {
		return nil, "", err
	}
	if a.operator == nil {
		return nil, "", a2a.NewError(a2a.ErrUnsupportedOperation, "this agent has no operator extension")
	}
	return a.operator, t, nil
}

func (o operatorRouter) ListInstances(ctx context.Context, tenant string) (any, error) {
	svc, t, err := o.service(tenant)
	if err != nil {
		return nil, err
	}
	return svc.ListInstances(ctx, t)
}

func (o operatorRouter) GetPolicy(ctx context.Context, tenant, name string) (any, error) {
	svc, t, err := o.service(tenant)
	if err != nil {
		return nil, err
	}
	return svc.GetPolicy(ctx, t, name)
}

func (o operatorRouter) ApproveProposal(ctx context.Context, tenant, name, review string) (any, error) {
	svc, t, err := o.service(tenant)
	if err != nil {
		return nil, err
	}
	return svc.ApproveProposal(ctx, t, name, review)
}

func (o operatorRouter) RejectProposal(ctx context.Context, tenant, name, review, reason string) (any, error) {
	svc, t, err := o.service(tenant)
	if err != nil {
		return nil, err
	}
	return svc.RejectProposal(ctx, t, name, review, reason)
}

func (o operatorRouter) RollbackPolicy(ctx context.Context, tenant, name string) (any, error) {
	svc, t, err := o.service(tenant)
	if err != nil {
		return nil, err
	}
	return svc.RollbackPolicy(ctx, t, name)
}
