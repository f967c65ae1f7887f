package agent

// Sub-agents: the "agents" capability lets an instance spawn child agents that hold a derived
// subset of its own capabilities — contracts inherited, never wider — and ask them things. A
// child is revoked with its parent: every capability it holds is derived from the parent's
// copy, so uninstalling or revoking one in the parent stops it in the child; uninstalling the
// agents capability, or the parent being put away, stops the children.
//
// Concurrency: subagents.mu guards children. A child is an Agent of its own (New: its own
// goroutine, its memory in memory); asking it runs its turn while the parent's effect waits
// (the parent's instance goes on serving). Children are closed outside the lock. One goroutine
// per agents capability waits for its revocation to stop the children; every holder's
// capability is revoked when its grant goes (uninstalled, or the holder put away).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// maxChildren bounds the children of one instance.
const maxChildren = 8

// SubagentOffer offers the "agents" capability for a catalog: each holder may spawn up to 8
// child agents of def's policy and model, each holding capabilities lent from the holder's own
// (only ones it holds pre-approved, audit-only, or under an approved contract: a child cannot
// ask the user, and a budget cannot be split), and ask them things. Children keep their memory
// in memory: they end when stopped, when the holder lets go of the capability, or when it is
// put away.
func SubagentOffer(def *Definition) capability.Offer {
	desc := capability.Description{Name: "agents", Description: "Spawn child agents that hold some of your capabilities, and ask them things",
		Contract: capability.Contract{Spawns: true},
		Methods: []capability.Method{
			{Name: "spawn", Description: "Start a child agent holding some of your capabilities (contracts inherited; read-only if asked)",
				Params: capability.Object("", map[string]*capability.Schema{
					"name":         capability.String("the child's name: lower-case letters, digits and hyphens"),
					"capabilities": capability.Array("the capabilities to lend it, by name", capability.String("")),
					"readOnly":     capability.Boolean("lend them read-only"),
				}, "name")},
			{Name: "ask", Description: "Ask a child agent: its reply, or the question it asks back",
				Params: capability.Object("", map[string]*capability.Schema{
					"name": capability.String("the child's name"), "message": capability.String("what to tell it")}, "name", "message")},
			{Name: "stop", Description: "Stop a child agent: what it was lent is revoked",
				Params: capability.Object("", map[string]*capability.Schema{"name": capability.String("the child's name")}, "name")},
			{Name: "list", Description: "The child agents and what they hold"},
		}}
	return capability.Offer{
		Manifest: capability.Manifest{Name: desc.Name, Version: "1", Description: desc.Description, Contract: desc.Contract,
			Methods: desc.Methods, Strategy: capability.Strategies{Minimum: capability.AuditOnly, Recommended: capability.ContractBased}},
		New: func(_ context.Context, env capability.Env) (*capability.Capability, error) {
			s := &subagents{def: def, parent: env.Set, principal: env.Principal, children: map[string]*child{}}
			c, err := capability.New(desc, capability.Funcs{"spawn": s.spawn, "ask": s.ask, "stop": s.stop, "list": s.list})
			if err != nil {
				return nil, err
			}
			go func() { <-c.Done(); s.stopAll() }() // revoked or uninstalled: the children end
			return c, nil
		},
	}
}

type subagents struct {
	def       *Definition
	parent    *capability.Set
	principal string
	mu        sync.Mutex // guards children and stopped
	children  map[string]*child
	stopped   bool
}

type child struct {
	a    *Agent
	lent []*capability.Capability
}

func (s *subagents) spawn(ctx context.Context, c *capability.Call) (any, error) {
	var a struct {
		Name         string
		Capabilities []string
		ReadOnly     bool
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	if !capability.ValidName(a.Name) {
		return nil, fmt.Errorf("%w: a child's name is lower-case letters, digits and hyphens", capability.ErrBadArgs)
	}
	if err := c.Check(capability.Spawn, "agent:"+a.Name); err != nil {
		return nil, err
	}
	held := map[string]capability.Held{}
	for _, h := range s.parent.Installed() {
		held[h.Name] = h
	}
	type loan struct {
		c  *capability.Capability
		st capability.Strategy
	}
	var loans []loan
	release := func() {
		for _, l := range loans {
			l.c.Revoke(errors.New("the child was not started"))
		}
	}
	for _, name := range a.Capabilities {
		h, ok := held[name]
		var err error
		switch {
		case !ok:
			err = fmt.Errorf("%w: %s", capability.ErrNotHeld, name)
		case name == "loader" || name == "agents":
			err = fmt.Errorf("%w: %s is not lent to children", capability.ErrBadArgs, name)
		case h.Strategy.Kind == capability.CallByCall || h.Strategy.Kind == capability.BudgetBased ||
			(h.Strategy.Kind == capability.ContractBased && !h.Approved):
			err = fmt.Errorf("%w: %s is held under %s: a child can neither ask the user nor split a budget", capability.ErrBadArgs, name, h.Strategy)
		}
		var lent *capability.Capability
		if err == nil {
			lent, err = s.parent.Lend(name, capability.Restrictions{ReadOnly: a.ReadOnly})
		}
		if err != nil {
			release()
			return nil, err
		}
		loans = append(loans, loan{lent, h.Strategy})
	}
	s.mu.Lock()
	var err error
	switch {
	case s.stopped:
		err = capability.ErrRevoked
	case s.children[a.Name] != nil:
		err = fmt.Errorf("%w: a child named %s", capability.ErrInstalled, a.Name)
	case len(s.children) >= maxChildren:
		err = fmt.Errorf("%w: %d children", capability.ErrTooMany, maxChildren)
	default:
		s.children[a.Name] = &child{} // reserved while it starts
	}
	s.mu.Unlock()
	if err != nil {
		release()
		return nil, err
	}
	ag, err := New(ctx, s.def.Name+"/"+a.Name, &Options{Policy: s.def.Policy, Model: s.def.Model, Now: s.def.Now})
	var set *capability.Set
	var done func()
	if err == nil {
		set, done, err = ag.h.Capabilities(ctx, Principal{})
	}
	for _, l := range loans {
		if err != nil {
			break
		}
		err = set.Install(ctx, l.c, capability.Grant{Strategy: capability.Strategy{Kind: l.st.Kind}, Approved: true, By: s.principal})
	}
	if done != nil {
		done()
	}
	s.mu.Lock()
	if err == nil && s.stopped {
		err = capability.ErrRevoked
	}
	if err != nil {
		delete(s.children, a.Name)
	} else {
		ch := &child{a: ag}
		for _, l := range loans {
			ch.lent = append(ch.lent, l.c)
		}
		s.children[a.Name] = ch
	}
	s.mu.Unlock()
	if err != nil {
		release()
		if ag != nil {
			_ = ag.Close()
		}
		return nil, err
	}
	return map[string]any{"name": a.Name, "capabilities": nonNilStrings(a.Capabilities)}, nil
}

func (s *subagents) get(name string) (*child, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.children[name]
	if ch == nil || ch.a == nil {
		return nil, fmt.Errorf("%w: no child named %s", capability.ErrNotHeld, name)
	}
	return ch, nil
}

func (s *subagents) ask(ctx context.Context, c *capability.Call) (any, error) {
	var a struct{ Name, Message string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	ch, err := s.get(a.Name)
	if err != nil {
		return nil, err
	}
	run, err := ch.a.Ask(ctx, UserText(a.Message))
	if err != nil {
		return nil, err
	}
	out := map[string]any{"reply": run.Reply}
	if run.Question != "" {
		out["question"] = run.Question
	}
	if run.Failure != "" {
		out["failure"] = run.Failure
	}
	return out, nil
}

func (s *subagents) stop(_ context.Context, c *capability.Call) (any, error) {
	var a struct{ Name string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ch := s.children[a.Name]
	if ch != nil && ch.a != nil {
		delete(s.children, a.Name)
	}
	s.mu.Unlock()
	if ch == nil || ch.a == nil {
		return nil, fmt.Errorf("%w: no child named %s", capability.ErrNotHeld, a.Name)
	}
	ch.end(errors.New("stopped by its parent"))
	return map[string]any{"stopped": a.Name}, nil
}

func (s *subagents) list(context.Context, *capability.Call) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(s.children)) {
		ch := s.children[name]
		var held []string
		for _, l := range ch.lent {
			if l.Err() == nil {
				held = append(held, l.Name())
			}
		}
		out = append(out, map[string]any{"name": name, "capabilities": nonNilStrings(held)})
	}
	return map[string]any{"children": out}, nil
}

// stopAll ends every child: the capability was revoked.
func (s *subagents) stopAll() {
	s.mu.Lock()
	s.stopped = true
	children := slices.Collect(maps.Values(s.children))
	clear(s.children)
	s.mu.Unlock()
	for _, ch := range children {
		if ch.a != nil {
			ch.end(errors.New("its parent let go of the agents capability"))
		}
	}
}

func (ch *child) end(why error) {
	for _, l := range ch.lent {
		l.Revoke(why)
	}
	_ = ch.a.Close()
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
