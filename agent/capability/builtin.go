package capability

// Built-in capabilities without I/O of their own: the clock, and the agent's read-only view of
// itself. The file system is in fs.go, HTTP fetch in fetch.go.

import (
	"context"
	"slices"
	"time"
)

// Offering makes an offer of c for a catalog: the manifest is c's description (version 1) with
// strategies st, and each holder gets a copy derived from c, so revoking c revokes every
// holder's.
func Offering(c *Capability, st Strategies) Offer {
	d := c.Describe()
	return Offer{
		Manifest: Manifest{Name: d.Name, Version: "1", Description: d.Description, Contract: d.Contract, Strategy: st, Methods: d.Methods},
		New:      func(context.Context, Env) (*Capability, error) { return c.Derive(Restrictions{}) },
	}
}

// Clock returns the clock capability: now() is the time, as RFC 3339 (UTC, nanoseconds) and
// Unix seconds. Its contract reads clock:now. now nil means time.Now.
func Clock(now func() time.Time) *Capability {
	if now == nil {
		now = time.Now
	}
	c, err := New(Description{Name: "clock", Description: "The current time",
		Methods: []Method{{Name: "now", Description: "The current time, RFC 3339 in UTC and Unix seconds",
			Result: Object("", map[string]*Schema{"time": String("RFC 3339, UTC"), "unix": Integer("seconds since 1970-01-01 UTC")}, "time", "unix")}},
		Contract: Contract{Reads: []string{"clock:now"}}},
		Funcs{"now": func(_ context.Context, c *Call) (any, error) {
			if err := c.Check(Read, "clock:now"); err != nil {
				return nil, err
			}
			t := now().UTC()
			return map[string]any{"time": t.Format(time.RFC3339Nano), "unix": t.Unix()}, nil
		}})
	if err != nil {
		panic(err) // a fixed spec: a bug
	}
	return c
}

// ClockOffer offers the clock, pre-approved.
func ClockOffer(now func() time.Time) Offer {
	return Offering(Clock(now), Strategies{Minimum: PreApproved, Recommended: PreApproved})
}

// SelfView returns the capability through which an agent instance sees itself, read-only:
// memory({query, limit}) recalls, policy() is its policy, and capabilities() its live symbol
// table — every capability set holds, with its contract, strategy, budget spent, derivation
// depth, and the rules that call it (from self.Uses). self nil leaves memory and policy
// failing and capabilities without the rules.
func SelfView(set *Set, self Self) *Capability {
	v := &selfView{set: set, self: self}
	c, err := New(Description{Name: "self", Description: "Read-only views of this agent: its memory, its policy, its capabilities",
		Methods: []Method{
			{Name: "memory", Description: "Recall from this agent's memory: the beliefs and observations matching a query",
				Params: Object("", map[string]*Schema{"query": String("what to recall"),
					"limit": {Type: "integer", Description: "the most items of each kind (default 10)", Minimum: ptr(1.0), Maximum: ptr(100.0)}}, "query")},
			{Name: "policy", Description: "This agent's policy: its axioms and rules, and its version"},
			{Name: "capabilities", Description: "This agent's capabilities: contract, strategy, budget spent, derivation, and the rules that call each"},
		},
		Contract: Contract{Reads: []string{"self:memory", "self:policy", "self:capabilities"}}},
		Funcs{"memory": v.memory, "policy": v.policy, "capabilities": v.capabilities})
	if err != nil {
		panic(err) // a fixed spec: a bug
	}
	return c
}

// SelfOffer offers each holder its own view of itself, pre-approved.
func SelfOffer() Offer {
	return Offer{Manifest: Manifest{Name: "self", Version: "1", Description: "Read-only views of this agent: its memory, its policy, its capabilities",
		Contract: Contract{Reads: []string{"self:memory", "self:policy", "self:capabilities"}},
		Strategy: Strategies{Minimum: PreApproved, Recommended: PreApproved}},
		New: func(_ context.Context, env Env) (*Capability, error) { return SelfView(env.Set, env.Self), nil }}
}

type selfView struct {
	set  *Set
	self Self
}

func (v *selfView) memory(ctx context.Context, c *Call) (any, error) {
	var a struct {
		Query string
		Limit int
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	if err := c.Check(Read, "self:memory"); err != nil {
		return nil, err
	}
	if v.self == nil {
		return nil, errNoSelf
	}
	return v.self.Memory(ctx, a.Query, cmpOrInt(a.Limit, 10))
}

func (v *selfView) policy(ctx context.Context, c *Call) (any, error) {
	if err := c.Check(Read, "self:policy"); err != nil {
		return nil, err
	}
	if v.self == nil {
		return nil, errNoSelf
	}
	return v.self.Policy(ctx)
}

// Symbol is one entry of an agent's symbol table: a capability it holds, how, and what depends
// on it. (Its methods' schemas are its tools'; the table names them only.)
type Symbol struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Methods     []string         `json:"methods"`
	Contract    Contract         `json:"contract"`
	Strategy    Strategy         `json:"strategy"`
	Approved    bool             `json:"approved"`
	Usage       map[string]Usage `json:"usage,omitempty"`
	// Depth is how many derivations separate it from the capability first made.
	Depth   int    `json:"depth"`
	Offered bool   `json:"offered"`
	Revoked string `json:"revoked,omitempty"`
	// UsedBy are the rules that call it.
	UsedBy []string `json:"usedBy,omitempty"`
}

func (v *selfView) capabilities(ctx context.Context, c *Call) (any, error) {
	if err := c.Check(Read, "self:capabilities"); err != nil {
		return nil, err
	}
	var uses map[string][]string
	if v.self != nil {
		var err error
		if uses, err = v.self.Uses(ctx); err != nil {
			return nil, err
		}
	}
	var out []Symbol
	for _, h := range v.set.Installed() {
		var methods []string
		for _, m := range h.Methods {
			methods = append(methods, m.Name)
		}
		out = append(out, Symbol{Name: h.Name, Description: h.Description, Methods: methods, Contract: h.Contract,
			Strategy: h.Strategy, Approved: h.Approved, Usage: h.Usage, Depth: h.Depth, Offered: h.Offered, Revoked: h.Revoked,
			UsedBy: append(slices.Clone(uses[h.Name]), uses["*"]...)})
	}
	return map[string]any{"capabilities": out}, nil
}

func cmpOrInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}
