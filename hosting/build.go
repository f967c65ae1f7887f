package hosting

// From a Definition to what the runtime runs: the policy (the built-in one with the
// definition's axioms, rules and limits), the tools, the model, the knowledge and the catalog of
// capabilities on offer; and the card, whose skills are derived from them (skills.go).

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/llm"
	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/x402"
)

// Options configure New. Nil means the defaults each field documents.
type Options struct {
	// Store keeps every agent's instances, each under its agent's name. Nil: an in-memory
	// store.
	Store agent.Store
	// Limiter bounds concurrent model calls across every agent (agent.HostOptions). Nil: no
	// bound.
	Limiter *agent.Limiter
	// IdleTimeout and ParkTimeout are agent.HostOptions', for every agent. Zero: their
	// defaults.
	IdleTimeout, ParkTimeout time.Duration
	// Prices is the price table sessions charge by (agent.HostOptions.Prices). Nil: none.
	Prices session.Prices
	// Ownership keeps each agent's instances on one replica at a time in a cluster
	// (agent.HostOptions.Ownership; the key names the agent). Nil: a single process.
	Ownership agent.Ownership
	// Sessions configures every agent's sessions (agent.Definition.Sessions). Zero: the
	// defaults.
	Sessions session.Config
	// Offer makes an offer New does not make itself — New makes self, fetch and agents, and
	// a2a with A2A — such as fs, a capability package or the factory. It reports ok false for
	// a name it does not know. Nil: only New's own.
	Offer func(def *Definition, name string) (o capability.Offer, ok bool, err error)
	// A2A makes the a2a capability's offer for a definition that offers it (package
	// agent/peer). Nil: a definition offering a2a is refused.
	A2A func(def *Definition) (capability.Offer, error)
	// FetchAllow is the fetch capability's allow-list for a definition whose
	// capabilities.fetch gives none. Nil: such a definition is refused.
	FetchAllow []string
	// FetchOptions configure every fetch capability (its SSRF guard, TLS). Nil: defaults.
	FetchOptions *capability.FetchOptions
	// Getenv reads the environment (model API keys). Nil: os.Getenv.
	Getenv func(string) string
	// Audit returns the capability audit log of the agent named name. Nil: the store's (see
	// agent.Definition.Audit).
	Audit func(name string) capability.Audit
	// NewModel makes a definition's model, given its API key. Nil: llm.New.
	NewModel func(m *Model, apiKey string) agent.Model
	// Facilitator is the base URL of the x402 facilitator of a definition whose payments name
	// none. "": such a definition is refused.
	Facilitator string
	// FacilitatorOptions configure the clients of the facilitators. Nil: the defaults.
	FacilitatorOptions *x402.FacilitatorOptions
}

// built is a definition made ready for the runtime.
type built struct {
	src    *Definition
	def    *agent.Definition
	offers []capability.Offer // what def.Capabilities offers, in the definition's order
	card   *a2a.AgentCard
	pay    *x402.MerchantOptions // nil: free
}

// build makes d's agent definition and card.
func build(d *Definition, o *Options) (*built, error) {
	base := Policies[cmp.Or(d.Policy, "none")]()
	// The definition's own rules come first, so that the policy's fallbacks (help) answer only
	// what they leave; one named as a rule of the policy takes that rule's place instead.
	pol := &agent.Policy{Axioms: slices.Concat(base.Axioms, d.Axioms), Rules: slices.Clone(base.Rules), Limits: base.Limits}
	var own []agent.Rule
	for _, r := range d.Rules {
		if i := slices.IndexFunc(pol.Rules, func(x agent.Rule) bool { return x.Name == r.Name }); i >= 0 {
			pol.Rules[i] = r
		} else {
			own = append(own, r)
		}
	}
	pol.Rules = slices.Concat(own, pol.Rules)
	if l := d.Limits; l != nil {
		applyLimits(&pol.Limits, l)
	}
	def := &agent.Definition{Name: d.Name, Policy: pol, Sessions: o.Sessions}
	if o.Audit != nil {
		def.Audit = o.Audit(d.Name)
	}
	for _, name := range d.tools() {
		if def.Tools == nil {
			def.Tools, def.ToolHelp = map[string]agent.Tool{}, map[string]string{}
		}
		def.Tools[name], def.ToolHelp[name] = Tools[name].Tool, Tools[name].Help
	}
	for _, f := range d.Knowledge {
		def.Knowledge = append(def.Knowledge, agent.Fact{Subject: f.Subject, Value: f.Value, Reason: f.Reason, Confidence: f.Confidence})
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if m := d.Model; m != nil {
		var key string
		if m.APIKeyEnv != "" {
			key = getenv(m.APIKeyEnv)
		}
		if o.NewModel != nil {
			def.Model = o.NewModel(m, key)
		} else {
			def.Model = llm.New(m.URL, m.Model, &llm.Options{APIKey: key})
		}
		def.ModelName = m.Model
	}
	b := &built{src: d, def: def}
	cat := capability.NewCatalog()
	for _, name := range d.offered() {
		off, err := makeOffer(d, def, name, o)
		if err != nil {
			return nil, fmt.Errorf("capabilities.offer %s: %w", name, err)
		}
		if d.Capabilities != nil && d.Capabilities.Strategies[name] != "" {
			off.Strategy, _ = capability.ParseStrategy(d.Capabilities.Strategies[name]) // checked by Check
		}
		if err := cat.Add(off); err != nil {
			return nil, fmt.Errorf("capabilities.offer %s: %w", name, err)
		}
		b.offers = append(b.offers, off)
	}
	def.Capabilities = cat
	if d.Capabilities != nil {
		def.Preinstall = slices.Clone(d.Capabilities.Preinstall)
	}
	b.card = card(d, deriveSkills(b))
	pay, err := merchant(d, b.card.Skills, o)
	if err != nil {
		return nil, err
	}
	if pay != nil {
		b.pay = pay
		x402.Declare(b.card, d.Payments.Required)
	}
	return b, nil
}

// makeOffer makes the offer of the capability name for d.
func makeOffer(d *Definition, def *agent.Definition, name string, o *Options) (capability.Offer, error) {
	switch name {
	case "self":
		return capability.SelfOffer(), nil
	case "fetch":
		var allow []string
		if d.Capabilities != nil && d.Capabilities.Fetch != nil {
			allow = d.Capabilities.Fetch.Allow
		}
		if len(allow) == 0 {
			allow = o.FetchAllow
		}
		if len(allow) == 0 {
			return capability.Offer{}, errors.New("needs capabilities.fetch.allow, or the server's -fetch-allow: the URLs it may reach")
		}
		f, err := capability.Fetch(capability.Contract{Network: allow}, o.FetchOptions)
		if err != nil {
			return capability.Offer{}, err
		}
		return capability.Offering(f, capability.Strategies{Minimum: capability.AuditOnly, Recommended: capability.ContractBased}), nil
	case "agents":
		return agent.SubagentOffer(def), nil
	case "a2a":
		if o.A2A == nil {
			return capability.Offer{}, errors.New("this server cannot make the a2a capability")
		}
		return o.A2A(d)
	}
	if o.Offer != nil {
		off, ok, err := o.Offer(d, name)
		if err != nil || ok {
			return off, err
		}
	}
	return capability.Offer{}, errors.New("no such capability on this server")
}

// applyLimits overrides the fields of pl that l sets.
func applyLimits(pl *agent.Limits, l *Limits) {
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	if l.CostLimit != 0 {
		pl.CostLimit = l.CostLimit
	}
	set(&pl.ReplayWindow, l.ReplayWindow)
	set(&pl.MaxEdits, l.MaxEdits)
	set(&pl.WorkingSize, l.WorkingSize)
	set(&pl.PromoteAfter, l.PromoteAfter)
	set(&pl.ContextTokens, l.ContextTokens)
	set(&pl.ModelSteps, l.ModelSteps)
	if l.EditWindow != 0 {
		pl.EditWindow = time.Duration(l.EditWindow)
	}
	if l.WorkingTTL != 0 {
		pl.WorkingTTL = time.Duration(l.WorkingTTL)
	}
	if l.Approval != nil {
		pl.Approval = slices.Clone(l.Approval)
	}
}

// card is d's agent card with skills.
func card(d *Definition, skills []a2a.AgentSkill) *a2a.AgentCard {
	desc := d.Description
	if desc == "" {
		desc = "An agent of the a2aWebCap runtime, driven by its own rules."
	}
	c := agents.Card(d.Name, desc, "", skills...)
	if d.Version != "" {
		c.Version = d.Version
	}
	if d.Provider != nil {
		c.Provider = &a2a.AgentProvider{Org: d.Provider.Organization, URL: d.Provider.URL}
	}
	c.DocumentationURL, c.IconURL = d.DocumentationURL, d.IconURL
	return c
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
