package peer

// Paying callees that ask for payment (x402, standalone flow): each principal holding the
// capability has its own budget, made of the settings' limits, whichever instance of the
// principal's spends it. What was spent is kept by Options.Spending under the principal — the
// agent store's, so that a restart does not grant it anew and replicas share it — else in memory
// for as long as the offer lives.
//
// Concurrency: payers.mu guards the map; an x402.Payer and its Budget are safe for concurrent
// use (the amount is taken from the spending atomically before signing).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// payers are the payers of an offer, one per principal.
type payers struct {
	s     *PayerSettings
	key   *evm.PrivateKey
	spent x402.Spending

	mu  sync.Mutex
	byP map[string]*x402.Payer
}

// newPayers reads the key of s from the environment; nil when s is nil. spent keeps what was
// spent; nil: memory.
func newPayers(s *PayerSettings, getenv func(string) string, spent x402.Spending) (*payers, error) {
	if s == nil {
		return nil, nil
	}
	raw := getenv(s.KeyEnv)
	if raw == "" {
		return nil, fmt.Errorf("%w: payer.keyEnv: %s is not set", ErrBadSettings, s.KeyEnv)
	}
	key, err := evm.ParsePrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: payer.keyEnv: %s does not hold a secp256k1 key", ErrBadSettings, s.KeyEnv) // never the key itself
	}
	if spent == nil {
		spent = x402.NewMemorySpending()
	}
	return &payers{s: s, key: key, spent: spent, byP: map[string]*x402.Payer{}}, nil
}

// of returns principal's payer.
func (p *payers) of(principal string) *x402.Payer {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if py := p.byP[principal]; py != nil {
		return py
	}
	var limits []x402.Limit
	for _, l := range p.s.Budget {
		limits = append(limits, x402.Limit{Network: l.Network, Asset: l.Asset, Amount: l.Amount})
	}
	py := x402.NewPayer(p.key, x402.NewBudgetIn(p.spent, principal, limits...), &x402.PayerOptions{MaxAmount: p.s.MaxAmount})
	p.byP[principal] = py
	return py
}

// paidOut is what a call paid, in its result.
type paidOut struct {
	Amount  string `json:"amount"`
	Asset   string `json:"asset"`
	Network string `json:"network"`
	PayTo   string `json:"payTo"`
	Receipt any    `json:"receipt,omitempty"`
}

// pay answers the callee's payment request: the message that submits the payment, or an
// error with what the callee asked.
func (f *follow) pay(ctx context.Context) (*a2a.Message, error) {
	task := &a2a.Task{ID: f.task, ContextID: f.context, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: f.final}}
	asked := messageText(f.final)
	if pr, ok, err := x402.RequiredOf(task); ok && err == nil {
		if data, err := json.Marshal(pr.Accepts); err == nil {
			asked += " (requirements: " + truncate(string(data), 2000) + ")"
		}
	}
	payer := f.h.payers.of(f.h.env.Principal)
	if payer == nil {
		return nil, fmt.Errorf("agent %s asks for payment, and this agent has no payer: %s", f.name, asked)
	}
	msg, req, err := payer.Respond(ctx, task)
	if err != nil {
		if errors.Is(err, x402.ErrBudgetExceeded) {
			return nil, fmt.Errorf("agent %s asks for payment over the budget: %w: %s", f.name, err, asked)
		}
		return nil, fmt.Errorf("agent %s asks for payment, and it cannot be paid: %w: %s", f.name, err, asked)
	}
	f.paid = &paidOut{Amount: req.MaxAmountRequired, Asset: req.Asset, Network: req.Network, PayTo: req.PayTo}
	return msg, nil
}

// settled records the callee's receipt of what the call paid, from its final status.
func (f *follow) settled() {
	if f.paid == nil || f.final == nil {
		return
	}
	task := &a2a.Task{ID: f.task, ContextID: f.context, Status: a2a.TaskStatus{State: f.state, Message: f.final}}
	if py := f.h.payers.of(f.h.env.Principal); py != nil {
		py.Record(task)
	}
	if rs := x402.ReceiptsOf(task); len(rs) > 0 {
		f.paid.Receipt = rs[len(rs)-1]
	}
}
