package agent

// The memory extension served by a Host (docs/sessions.md, "Your memory"): each caller's view
// of what its own instance remembers — current beliefs with their provenance, working notes —
// and one change, forgetting, which is an event the instance integrates by its own rules (a
// turn, like a message), never a write to the store. Reads run on the instance's goroutine and
// copy what they return; a forget waits for its turn to commit, holding nothing of the
// instance's meanwhile (the turn runs as any other).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Memory is the memory extension of a Host: what binding.Options.Memory serves. It acts for the
// caller the context carries (the a2asrv.CallContext's authenticated user, and the request's
// tenant) on that caller's own instance, and reaches no other. Its errors are A2A errors
// (a2a.ErrInvalidParams for a belief that is not one of the caller's current beliefs), or the
// store's.
type Memory struct{ h *Host }

// Memory returns h's memory extension.
func (h *Host) Memory() *Memory { return &Memory{h: h} }

// MemoryReport is what GetMemory answers: the caller's beliefs (current ones, or all with
// history), in the order first written, the working notes, and how many observations the
// instance has logged.
type MemoryReport struct {
	Beliefs      []Belief      `json:"beliefs"`
	Working      []WorkingNote `json:"working"`
	Observations int           `json:"observations"`
}

// ForgetResult is what ForgetMemory answers: whether the belief is forgotten now, the agent's
// reply to the request, and the belief as it stands after the request's turn.
type ForgetResult struct {
	Forgotten bool   `json:"forgotten"`
	Reply     string `json:"reply"`
	Belief    Belief `json:"belief"`
}

// ForgetKind is the kind of the event ForgetMemory gives the instance.
const ForgetKind = "forget"

func (m *Memory) instance(ctx context.Context, tenant string) *Agent {
	return &Agent{name: m.h.def.name, h: m.h, p: caller(ctx, tenant)}
}

// GetMemory returns the caller's memory: its current beliefs (every belief ever written with
// history), its working notes and its observation count.
func (m *Memory) GetMemory(ctx context.Context, tenant string, history bool) (any, error) {
	return call(ctx, m.instance(ctx, tenant), func(c *core) (*MemoryReport, error) {
		r := &MemoryReport{Beliefs: []Belief{}, Working: []WorkingNote{}, Observations: c.mem.count}
		for i := range c.mem.beliefs {
			if b := &c.mem.beliefs[i]; history || b.current() {
				r.Beliefs = append(r.Beliefs, wireBelief(b.clone()))
			}
		}
		for _, n := range c.mem.working {
			n.Observations = nonNilSlice(slices.Clone(n.Observations))
			r.Working = append(r.Working, n)
		}
		return r, nil
	})
}

// wireBelief is b with its lists never nil, so that they read as [] on the wire.
func wireBelief(b Belief) Belief {
	b.Provenance.Observations = nonNilSlice(b.Provenance.Observations)
	return b
}

// ForgetMemory asks the caller's instance to forget belief id, for reason (may be empty): it
// gives the instance a ForgetKind event from the user — text "forget SUBJECT", data belief,
// subject and reason — as a turn, and returns once the turn has committed, with the belief as it
// stands then. Whether it is forgotten is the instance's rules' decision.
func (m *Memory) ForgetMemory(ctx context.Context, tenant, id, reason string) (any, error) {
	a := m.instance(ctx, tenant)
	belief := func(c *core) (Belief, bool) {
		i, ok := c.mem.beliefAt[id]
		if !ok {
			return Belief{}, false
		}
		return c.mem.beliefs[i].clone(), true
	}
	b, err := call(ctx, a, func(c *core) (Belief, error) {
		b, ok := belief(c)
		if !ok || !b.current() {
			return b, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("memory: no current belief %q", id))
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	ev := Event{Kind: ForgetKind, Source: Source{Kind: SourceUser}, Text: "forget " + b.Subject,
		Data: map[string]string{"belief": id, "subject": b.Subject, "reason": reason}}
	run, err := a.Ask(ctx, ev)
	if err != nil {
		return nil, err
	}
	after, err := call(ctx, a, func(c *core) (Belief, error) {
		b, _ := belief(c)
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return &ForgetResult{Forgotten: after.Status == StatusForgotten, Reply: run.Reply, Belief: wireBelief(after)}, nil
}
