package peer

// Loops and runaway fan-out: every call carries how deep it is, who called, and what its own
// calls may still spend, in its message's metadata; a call that would close a loop, go too
// deep or overspend fails before anything is sent.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/a2awebcap/a2awebcap/agent"
)

// The metadata keys of a call's message (docs/multi-agent.md, "Loops and runaway fan-out").
const (
	// HopsKey: how many calls deep the message is (1 for a call made for a user's message).
	HopsKey = "a2awebcap.a2a/hops"
	// ChainKey: the URLs of the agents that called, in order, the sender last.
	ChainKey = "a2awebcap.a2a/chain"
	// BudgetKey: how many calls the calls the message causes may still make.
	BudgetKey = "a2awebcap.a2a/budget"
)

// The refusals of a call that would close a loop, go deeper than Settings.MaxDepth or spend
// more than the budget. The errors returned wrap them with the chain (test with errors.Is).
var (
	ErrLoop   = errors.New("a2a: the call would close a loop")
	ErrDepth  = errors.New("a2a: call depth reached")
	ErrBudget = errors.New("a2a: call budget spent")
)

// limitError is a refusal: its own text, and its sentinel.
type limitError struct {
	sentinel error
	text     string
}

func (e *limitError) Error() string { return e.text }
func (e *limitError) Unwrap() error { return e.sentinel }

// origin is what the message that started a turn carried: its hops, chain and budget.
type origin struct {
	hops   int
	chain  []string
	budget int // -1: none given
}

// originOf reads the metadata of a message; missing or malformed keys count as absent.
func originOf(meta map[string]any) origin {
	o := origin{budget: -1}
	if n, ok := number(meta[HopsKey]); ok && n >= 0 && n <= 1<<16 {
		o.hops = n
	}
	if list, ok := meta[ChainKey].([]any); ok && len(list) <= 256 {
		for _, v := range list {
			if s, ok := v.(string); ok && len(s) <= 2048 {
				o.chain = append(o.chain, s)
			}
		}
	}
	if n, ok := number(meta[BudgetKey]); ok && n >= 0 {
		o.budget = n
	}
	return o
}

func number(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n != float64(int(n)) {
			return 0, false
		}
		return int(n), true
	case int:
		return n, true
	case int64:
		return int(n), true
	}
	return 0, false
}

// spending is what the calls of one turn (one message) may still make: shared by every call
// the turn makes, on every holder's a2a capability.
type spending struct {
	mu      sync.Mutex
	initial int
	left    int
}

type spendingKey struct{}

// hop is what one call sends: its hops, chain and budget.
type hop struct {
	hops   int
	chain  []string
	budget int
}

// meta is the hop as message metadata.
func (h hop) meta() map[string]any {
	chain := make([]any, len(h.chain))
	for i, c := range h.chain {
		chain[i] = c
	}
	return map[string]any{HopsKey: h.hops, ChainKey: chain, BudgetKey: h.budget}
}

// plan checks a call from self (the caller's base URL) to callee (its base URL) for the turn
// of ctx, and spends one call of the turn's budget: the hop to send, or the clear error.
func (s *Settings) plan(ctx context.Context, self, callee string) (hop, error) {
	o := originOf(agent.TurnMetadata(ctx))
	chain := o.chain
	if self != "" {
		chain = append(append([]string(nil), o.chain...), self)
	}
	for _, c := range chain {
		if sameAgent(c, callee) {
			return hop{}, &limitError{ErrLoop, fmt.Sprintf("a2a: calling %s would close a loop: %s", callee, path(append(chain, callee)))}
		}
	}
	if o.hops+1 > s.maxDepth() {
		return hop{}, &limitError{ErrDepth, fmt.Sprintf("a2a: call depth %d reached: %s", s.maxDepth(), path(append(chain, callee)))}
	}
	sp := agent.TurnValue(ctx, spendingKey{}, func() any {
		b := s.budget()
		if o.budget >= 0 && o.budget < b {
			b = o.budget
		}
		return &spending{initial: b, left: b}
	}).(*spending)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.left < 1 {
		return hop{}, &limitError{ErrBudget, fmt.Sprintf("a2a: call budget spent: the %d calls this request allowed are used", sp.initial)}
	}
	sp.left--
	give := sp.left / 2
	sp.left -= give
	return hop{hops: o.hops + 1, chain: chain, budget: give}, nil
}

// sameAgent reports whether two agent URLs (base URLs or card URLs) name the same agent.
func sameAgent(a, b string) bool {
	x, err1 := agentURL(a)
	y, err2 := agentURL(b)
	if err1 != nil || err2 != nil {
		return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
	}
	return strings.EqualFold(x, y)
}

// path is a chain of agents as people read it: writer → researcher → writer.
func path(chain []string) string {
	names := make([]string, len(chain))
	for i, c := range chain {
		names[i] = nameOf(baseOf(mustCard(c)))
	}
	return strings.Join(names, " → ")
}

func mustCard(u string) string {
	if c, err := agentURL(u); err == nil {
		return c
	}
	return u
}
