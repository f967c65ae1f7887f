package hosting

// Agents in one engine. Concurrency model: an Agents is immutable once New returns (its
// hosts have their own concurrency, package agent); its executor and handlers only read it.
//
// One engine and one task store serve every agent, so that recovery, draining and push delivery
// stay the engine's, whole. What keeps each agent's tasks its own is the tenant the engine
// scopes tasks by: an agent's handler (Hosted) hands the engine every request with the tenant
// scope(agent, tenant) — the agent's name, then "/" and the caller's tenant when there is one —
// so a task belongs to (agent, tenant, principal), and another agent's handler, which scopes to
// its own name, never finds it. The executor (Executor) reads the agent back from the
// tenant of each execution and runs that agent's host with the caller's own tenant, which is
// also what the sessions, capabilities and operator services of the agent are given: one
// principal, one instance, on every binding.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/x402"
)

// Agent is one agent of an Agents.
type Agent struct {
	// Name is the definition's name.
	Name string
	// Definition is what it was made from.
	Definition *Definition
	// Host serves its instances.
	Host *agent.Host
	// Card is its card: skills derived from the definition, no interfaces (the handler adds
	// them), and the x402 extension when its skills are priced. A server may add to it
	// (security schemes, push notifications) before serving.
	Card *a2a.AgentCard

	pay *x402.MerchantOptions // its merchant's, when its skills are priced
}

// Agents is a set of distinct agents served by one engine.
type Agents struct {
	list   []*Agent
	byName map[string]*Agent
}

// New makes an agent of each definition: its policy, tools, model, knowledge and capabilities
// (see Options), its card with skills derived from them, and its host. It refuses two
// definitions with one name, and two whose agents would be indiscernible (the error says what
// differs: only card fields). Close closes the hosts.
func New(defs []*Definition, opts *Options) (*Agents, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(defs) == 0 {
		return nil, errors.New("hosting: no agent definitions")
	}
	if err := checkNames(defs); err != nil {
		return nil, err
	}
	if o.Store == nil {
		o.Store = agent.NewMemoryStore()
	}
	var bs []*built
	for _, d := range defs {
		if err := d.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", where(d), err)
		}
		b, err := build(d, &o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where(d), err)
		}
		bs = append(bs, b)
	}
	if err := discern(bs); err != nil {
		return nil, err
	}
	a := &Agents{byName: map[string]*Agent{}}
	for _, b := range bs {
		h, err := agent.NewHost(b.def, &agent.HostOptions{Store: o.Store, Limiter: o.Limiter, IdleTimeout: o.IdleTimeout,
			ParkTimeout: o.ParkTimeout, Prices: o.Prices, Ownership: o.Ownership})
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("%s: %w", where(b.src), err)
		}
		ag := &Agent{Name: b.src.Name, Definition: b.src, Host: h, Card: b.card, pay: b.pay}
		a.list = append(a.list, ag)
		a.byName[ag.Name] = ag
	}
	return a, nil
}

// List returns the agents, in the order of their definitions.
func (a *Agents) List() []*Agent { return a.list }

// Get returns the agent named name, or nil.
func (a *Agents) Get(name string) *Agent { return a.byName[name] }

// Close closes every agent's host. It is idempotent.
func (a *Agents) Close() error {
	for _, ag := range a.list {
		_ = ag.Host.Close()
	}
	return nil
}

// scope is the tenant the engine keeps an agent's tasks under for a caller's tenant.
func scope(name, tenant string) string {
	if tenant == "" {
		return name
	}
	return name + "/" + tenant
}

// unscope splits a scoped tenant into the agent's name and the caller's tenant.
func unscope(s string) (name, tenant string) {
	name, tenant, _ = strings.Cut(s, "/")
	return name, tenant
}

type agentKey struct{}

// AgentFrom returns the name of the agent a request in ctx was addressed to, when it came
// through a handler of Hosted: for the engine's ExtendedCard, say, to give each agent's.
func AgentFrom(ctx context.Context) (string, bool) {
	name, ok := ctx.Value(agentKey{}).(string)
	return name, ok
}

// Executor is the executor of the engine that serves a: each execution runs on the host of the
// agent its tenant names (see Hosted), for the caller's own tenant — through an x402.Merchant
// when the agent's skills are priced (Definition.Payments). It also recovers tasks
// (engine.Recoverer): each agent is asked in turn for a task left running by a previous
// process, and the one that ran it settles it.
func (a *Agents) Executor() a2asrv.AgentExecutor {
	x := &router{a: a, exec: map[string]a2asrv.AgentExecutor{}}
	for _, ag := range a.list {
		x.exec[ag.Name] = agent.Executor(ag.Host)
		if ag.pay != nil {
			x.exec[ag.Name] = x402.NewMerchant(x.exec[ag.Name], ag.pay)
		}
	}
	return x
}

type router struct {
	a    *Agents
	exec map[string]a2asrv.AgentExecutor
}

var (
	_ engine.Recoverer = (*router)(nil)
	_ engine.Waker     = (*router)(nil)
)

// SetWake implements engine.Waker: each agent's executor (behind its x402.Merchant, for a
// priced agent) wakes its tasks under their scoped tenant.
func (x *router) SetWake(wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error) {
	for name, e := range x.exec {
		if w, ok := e.(engine.Waker); ok {
			w.SetWake(func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error {
				return wake(ctx, scope(name, tenant), user, task)
			})
		}
	}
}

// route returns the executor an execution's tenant names and the context the agent sees.
func (x *router) route(ec *a2asrv.ExecutorContext) (a2asrv.AgentExecutor, *a2asrv.ExecutorContext, error) {
	name, tenant := unscope(ec.Tenant)
	e := x.exec[name]
	if e == nil {
		// Only a handler of Hosted reaches the engine, and it always scopes: a tenant naming no
		// agent is a task of something else sharing the store.
		return nil, nil, fmt.Errorf("%w: no agent here runs tasks of tenant %q", a2a.ErrInvalidParams, ec.Tenant)
	}
	cp := *ec
	cp.Tenant = tenant
	return e, &cp, nil
}

func (x *router) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	e, ec2, err := x.route(ec)
	if err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return e.Execute(ctx, ec2)
}

func (x *router) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	e, ec2, err := x.route(ec)
	if err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return e.Cancel(ctx, ec2)
}

// RecoverTask asks each agent in turn: task IDs are unique across them, and only the agent
// that ran a task has a turn committed for it.
func (x *router) RecoverTask(ctx context.Context, task *a2a.Task) ([]a2a.Event, error) {
	for _, ag := range x.a.list {
		r, ok := x.exec[ag.Name].(engine.Recoverer)
		if !ok {
			continue
		}
		evs, err := r.RecoverTask(ctx, task)
		if err != nil || evs != nil {
			return evs, err
		}
	}
	return nil, nil
}

// Hosted returns what binding.NewAgentsHandler and binding.NewAgentsGRPCServer serve: for each
// agent, its card, a handler that hands h (the engine running Executor) the agent's requests
// with their tenants scoped to it, and its sessions, capabilities and operator extension
// (operators names the principals allowed to use the latter, as agent.Host.Operator; nil:
// none).
func (a *Agents) Hosted(h a2asrv.RequestHandler, operators []string) []binding.HostedAgent {
	out := make([]binding.HostedAgent, 0, len(a.list))
	for _, ag := range a.list {
		ha := binding.HostedAgent{Name: ag.Name, Handler: newScoped(ag.Name, h), Card: ag.Card,
			Sessions: ag.Host.Sessions(), AgentCapabilities: ag.Host.CallerCapabilities}
		if len(operators) > 0 {
			ha.Operator = ag.Host.Operator(operators)
		}
		out = append(out, ha)
	}
	return out
}
