package main

// Several agents in one serve (docs/multi-agent.md, "Many agents in one server"): -agents names
// their definitions; each is served under /agents/NAME/ on every binding, gRPC by tenant.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/factory"
	"github.com/a2awebcap/a2awebcap/agent/llm"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/telemetry"
)

// agentsConfig is the -agents flag.
type agentsConfig struct {
	path        string
	facilitator string
}

func (a *agentsConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&a.path, "agents", envOr("A2AWEBCAP_AGENTS", ""),
		"serve several agents, defined at this `path`: a directory of JSON files (one agent each) or one file (docs/multi-agent.md); each is served under /agents/NAME/, on gRPC by tenant NAME, and GET /agents lists them; -agent, -name, -llm-* and -capabilit* then do not apply (A2AWEBCAP_AGENTS)")
	fs.StringVar(&a.facilitator, "x402-facilitator", envOr("A2AWEBCAP_X402_FACILITATOR", ""),
		"with -agents: the base `URL` of the x402 facilitator that verifies and settles the payments of priced skills, for the definitions whose payments name none (docs/payments.md) (A2AWEBCAP_X402_FACILITATOR)")
}

// singleAgentFlags are the flags that configure the one agent of serve, which -agents replaces.
var singleAgentFlags = []string{"agent", "name", "llm-url", "llm-model", "capabilities", "capability-preinstall", "capability-strategy"}

// check refuses flags of the single agent given with -agents.
func (a *agentsConfig) check(fs *flag.FlagSet) error {
	if a.path == "" {
		return nil
	}
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(singleAgentFlags, f.Name) {
			set = append(set, "-"+f.Name)
		}
	})
	if len(set) > 0 {
		return fmt.Errorf("-agents: %v configure the single agent; with -agents each definition says its own", set)
	}
	return nil
}

// hostedAgents reads -agents and makes its agents: their memory beside the tasks, the server's
// runtime limits, sessions and prices, and the capabilities the server can make (fs under
// -fs-root, a directory per agent; fetch with -fetch-allow unless a definition says; the
// packages of -capability-packages).
func hostedAgents(ctx context.Context, c serveConfig, log *slog.Logger, obs *telemetry.Observer) (*hosting.Agents, func(), error) {
	defs, err := hosting.ReadDefinitions(c.agents.path)
	if err != nil {
		return nil, nil, fmt.Errorf("-agents: %w", err)
	}
	st, closeStore, err := runtimeStore(ctx, c.db)
	if err != nil {
		return nil, nil, fmt.Errorf("the agents' memory: %w", err)
	}
	fail := func(err error) (*hosting.Agents, func(), error) {
		c.caps.sandbox.close()
		closeStore()
		return nil, nil, err
	}
	scfg, err := c.sessions.config()
	if err != nil {
		return fail(err)
	}
	prices, err := c.sessions.prices()
	if err != nil {
		return fail(err)
	}
	packages := map[string]capability.Offer{}
	if c.caps.packages != "" {
		if packages, err = c.caps.readPackages(ctx); err != nil {
			return fail(err)
		}
	}
	idle := c.runtime.idle
	if idle == 0 {
		idle = -1 // -idle-evict 0: never
	}
	fetchOpts, err := c.caps.fetchOptions()
	if err != nil {
		return fail(err)
	}
	opts := &hosting.Options{Store: st, Limiter: c.runtime.limiter(), IdleTimeout: idle, ParkTimeout: c.runtime.question, Prices: prices, Sessions: scfg,
		Ownership:  c.cluster.ownership,
		FetchAllow: list(c.caps.fetchAllow), FetchOptions: fetchOpts, Facilitator: c.agents.facilitator,
		A2A: func(d *hosting.Definition) (capability.Offer, error) { return c.caps.a2a.hostedOffer(d, st) },
		Offer: func(d *hosting.Definition, name string) (capability.Offer, bool, error) {
			switch name {
			case "fs":
				o, err := c.caps.fsOffer(d.Name)
				return o, true, err
			case factory.Name:
				return capability.Offer{}, true, errors.New("the factory is offered to the single agent of serve only, not with -agents")
			}
			o, ok := packages[name]
			return o, ok, nil
		}}
	opts.Audit = func(name string) capability.Audit { return auditCapabilities(st, name, obs) }
	opts.NewModel = func(m *hosting.Model, key string) agent.Model {
		return observedModel{m: llm.New(m.URL, m.Model, &llm.Options{APIKey: key, Logger: log}), name: m.Model, obs: obs, prices: prices}
	}
	agents, err := hosting.New(defs, opts)
	if err != nil {
		return fail(fmt.Errorf("-agents: %w", err))
	}
	return agents, func() { _ = agents.Close(); c.caps.sandbox.close(); closeStore() }, nil
}

// extendedCards is the engine's ExtendedCard with -agents: each agent's public card with
// -extended-card's additions, for the agent the request was addressed to.
func extendedCards(c serveConfig, multi *hosting.Agents, authenticates bool) (func(context.Context) (*a2a.AgentCard, error), error) {
	byName := map[string]func(context.Context) (*a2a.AgentCard, error){}
	for _, a := range multi.List() {
		f, err := c.extendedCard.extended(a.Card, authenticates)
		if err != nil || f == nil {
			return nil, err
		}
		byName[a.Name] = f
	}
	return func(ctx context.Context) (*a2a.AgentCard, error) {
		name, _ := hosting.AgentFrom(ctx)
		if f := byName[name]; f != nil {
			return f(ctx)
		}
		return nil, a2a.ErrExtendedCardNotConfigured
	}, nil
}
