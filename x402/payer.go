package x402

// The payer: pays a merchant's requirements within a budget.
//
// Concurrency model. A Budget is shared by every payment of one principal; its limits are
// immutable, and what was spent is its Spending's, which takes an amount atomically (a
// MemorySpending under its mutex, held only to compare and add amounts — never while signing or
// calling anyone; a database in one transaction). A Payer's mutex guards its list of payments,
// likewise. Reserve takes an amount from the budget before the payer signs, so concurrent
// payments can never together sign more than the budget.

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// Errors of the payer.
var (
	// ErrBudgetExceeded: paying would take the budget past its limit.
	ErrBudgetExceeded = errors.New("x402: budget exceeded")
	// ErrNoAcceptable: none of the merchant's requirements is one the payer may pay.
	ErrNoAcceptable = errors.New("x402: no acceptable payment requirements")
	// ErrNotPaymentRequired: the task is not waiting for a payment.
	ErrNotPaymentRequired = errors.New("x402: the task does not ask for payment")
)

// Limit is how much of one token a budget allows, in atomic units (decimal).
type Limit struct {
	Network string
	Asset   string // the token contract
	Amount  string
}

// Budget is what a principal granted a payer to spend: a limit per token. What was spent is
// kept by a Spending under the budget's account: in memory (NewBudget), or in a database that
// survives restarts and is shared by replicas (NewBudgetIn, with agent/sqlitestore's or
// agent/pgstore's). The zero Budget allows nothing. It is safe for concurrent use.
type Budget struct {
	limits   map[tokenKey]*big.Int
	spending Spending
	account  string
}

type tokenKey struct {
	network string
	asset   evm.Address
}

// Spending keeps what budgets spent, by account and token (network, and asset as a
// checksummed address), in atomic units. Take is atomic: what concurrent Takes of one account
// and token add up to never passes the limit each gives, also across processes sharing the
// spending's database. Implementations must be safe for concurrent use.
type Spending interface {
	// Take adds amount (positive) to what account spent of the token if the sum stays within
	// limit, and reports whether it did.
	Take(ctx context.Context, account, network, asset string, amount, limit *big.Int) (bool, error)
	// Give takes amount back from what account spent of the token, never below zero.
	Give(ctx context.Context, account, network, asset string, amount *big.Int) error
	// Spent returns what account spent of the token (zero when nothing).
	Spent(ctx context.Context, account, network, asset string) (*big.Int, error)
}

// NewBudget returns a budget of limits whose spending is kept in memory, for as long as the
// budget lives. It panics on a limit whose asset or amount does not parse (they come from the
// program, not from a peer).
func NewBudget(limits ...Limit) *Budget { return NewBudgetIn(NewMemorySpending(), "", limits...) }

// NewBudgetIn returns a budget of limits whose spending sp keeps under account: every budget
// of one account in one Spending spends the same money. It panics as NewBudget does.
func NewBudgetIn(sp Spending, account string, limits ...Limit) *Budget {
	b := &Budget{limits: map[tokenKey]*big.Int{}, spending: sp, account: account}
	for _, l := range limits {
		k, err := keyOf(l.Network, l.Asset)
		amount, err2 := evm.ParseInt(l.Amount)
		if err != nil || err2 != nil || amount.Sign() < 0 {
			panic(fmt.Sprintf("x402: NewBudget: limit %+v does not parse", l))
		}
		b.limits[k] = amount
	}
	return b
}

func keyOf(network, asset string) (tokenKey, error) {
	a, err := evm.ParseAddress(asset)
	if err != nil {
		return tokenKey{}, err
	}
	return tokenKey{network: network, asset: a}, nil
}

// Reserve takes amount of a token from the budget, or returns ErrBudgetExceeded (or an error
// for a token it has no limit for, or the spending's) and takes nothing.
func (b *Budget) Reserve(ctx context.Context, network, asset string, amount *big.Int) error {
	k, err := keyOf(network, asset)
	if err != nil {
		return err
	}
	if amount.Sign() <= 0 {
		return fmt.Errorf("x402: amount %s is not positive", amount)
	}
	limit, ok := b.limits[k]
	if !ok {
		return fmt.Errorf("%w: no budget for %s on %s", ErrBudgetExceeded, asset, network)
	}
	took, err := b.spending.Take(ctx, b.account, k.network, k.asset.Hex(), amount, limit)
	if err != nil {
		return fmt.Errorf("x402: budget: %w", err)
	}
	if !took {
		spent, _ := b.spending.Spent(ctx, b.account, k.network, k.asset.Hex())
		return fmt.Errorf("%w: %s of %s on %s would make more than %s spent (%s spent)", ErrBudgetExceeded, amount, asset, network, limit, spent)
	}
	return nil
}

// Release gives back an amount Reserve took for a payment that was never signed or never left
// the process. Never release a signed authorization: its holder can settle it until it expires.
func (b *Budget) Release(ctx context.Context, network, asset string, amount *big.Int) error {
	k, err := keyOf(network, asset)
	if err != nil {
		return err
	}
	return b.spending.Give(ctx, b.account, k.network, k.asset.Hex(), amount)
}

// Remaining returns what is left of the budget for a token (zero when it has no limit for it).
func (b *Budget) Remaining(ctx context.Context, network, asset string) (*big.Int, error) {
	k, err := keyOf(network, asset)
	if err != nil {
		return new(big.Int), nil
	}
	limit := b.limits[k]
	if limit == nil {
		return new(big.Int), nil
	}
	spent, err := b.spending.Spent(ctx, b.account, k.network, k.asset.Hex())
	if err != nil {
		return nil, fmt.Errorf("x402: budget: %w", err)
	}
	r := new(big.Int).Sub(limit, spent)
	if r.Sign() < 0 {
		r.SetInt64(0)
	}
	return r, nil
}

// Spent returns what was taken from the budget for a token.
func (b *Budget) Spent(ctx context.Context, network, asset string) (*big.Int, error) {
	k, err := keyOf(network, asset)
	if err != nil {
		return new(big.Int), nil
	}
	s, err := b.spending.Spent(ctx, b.account, k.network, k.asset.Hex())
	if err != nil {
		return nil, fmt.Errorf("x402: budget: %w", err)
	}
	return s, nil
}

// MemorySpending is a Spending in memory: what a process's budgets spent, until it ends.
type MemorySpending struct {
	mu    sync.Mutex // guards spent; held only to compare and add amounts
	spent map[memKey]*big.Int
}

type memKey struct{ account, network, asset string }

// NewMemorySpending returns an empty MemorySpending.
func NewMemorySpending() *MemorySpending { return &MemorySpending{spent: map[memKey]*big.Int{}} }

// Take implements Spending.
func (m *MemorySpending) Take(_ context.Context, account, network, asset string, amount, limit *big.Int) (bool, error) {
	k := memKey{account, network, asset}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.spent[k]
	if s == nil {
		s = new(big.Int)
	}
	next := new(big.Int).Add(s, amount)
	if next.Cmp(limit) > 0 {
		return false, nil
	}
	m.spent[k] = next
	return true, nil
}

// Give implements Spending.
func (m *MemorySpending) Give(_ context.Context, account, network, asset string, amount *big.Int) error {
	k := memKey{account, network, asset}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.spent[k]; s != nil {
		next := new(big.Int).Sub(s, amount)
		if next.Sign() < 0 {
			next.SetInt64(0)
		}
		m.spent[k] = next
	}
	return nil
}

// Spent implements Spending.
func (m *MemorySpending) Spent(_ context.Context, account, network, asset string) (*big.Int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.spent[memKey{account, network, asset}]; s != nil {
		return new(big.Int).Set(s), nil
	}
	return new(big.Int), nil
}

// PayerOptions configure NewPayer. Nil means the defaults.
type PayerOptions struct {
	// MaxAmount caps one payment, in atomic units of any token. Zero: only the budget caps it.
	MaxAmount string
	// MaxValidity caps how long an authorization stays valid. Zero: 10 minutes.
	MaxValidity time.Duration
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

// Payment is one payment a payer signed.
type Payment struct {
	TaskID  a2a.TaskID
	Network string
	Asset   string
	PayTo   string
	Amount  string
	Nonce   string
	Signed  time.Time
	// Receipt is the merchant's receipt for it, once Record saw one.
	Receipt *Receipt
}

// Payer pays merchants with one key, within one budget. It is safe for concurrent use.
type Payer struct {
	key       *evm.PrivateKey
	budget    *Budget
	maxAmount *big.Int
	validity  time.Duration
	now       func() time.Time

	mu       sync.Mutex
	payments []Payment
}

// NewPayer returns a payer signing with key within budget. It panics if MaxAmount does not
// parse. opts may be nil.
func NewPayer(key *evm.PrivateKey, budget *Budget, opts *PayerOptions) *Payer {
	var o PayerOptions
	if opts != nil {
		o = *opts
	}
	p := &Payer{key: key, budget: budget, validity: o.MaxValidity, now: o.Now}
	if o.MaxAmount != "" {
		m, err := evm.ParseInt(o.MaxAmount)
		if err != nil || m.Sign() <= 0 {
			panic(fmt.Sprintf("x402: NewPayer: MaxAmount %q does not parse", o.MaxAmount))
		}
		p.maxAmount = m
	}
	if p.validity <= 0 {
		p.validity = 10 * time.Minute
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p
}

// Address returns the payer's address.
func (p *Payer) Address() evm.Address { return p.key.Address() }

// Pay picks the first of pr's requirements the payer may pay — scheme "exact", a token the
// budget has a limit for, an amount within MaxAmount and what remains — takes the amount from
// the budget and signs it. ErrNoAcceptable says why each was refused.
func (p *Payer) Pay(ctx context.Context, taskID a2a.TaskID, pr *PaymentRequired) (*Payload, *Requirements, error) {
	var why []string
	for i := range pr.Accepts {
		req := &pr.Accepts[i]
		reason, err := p.acceptable(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		if reason == "" {
			amount, _ := evm.ParseInt(req.MaxAmountRequired)
			if err := p.budget.Reserve(ctx, req.Network, req.Asset, amount); errors.Is(err, ErrBudgetExceeded) {
				reason = err.Error()
			} else if err != nil {
				return nil, nil, err
			} else {
				payload, err := p.sign(req)
				if err != nil {
					// Nothing signed: give it back, even if ctx is done.
					_ = p.budget.Release(context.WithoutCancel(ctx), req.Network, req.Asset, amount)
					return nil, nil, err
				}
				p.mu.Lock()
				p.payments = append(p.payments, Payment{TaskID: taskID, Network: req.Network, Asset: req.Asset, PayTo: req.PayTo,
					Amount: amount.String(), Nonce: payload.Payload.Authorization.Nonce, Signed: p.now()})
				p.mu.Unlock()
				return payload, req, nil
			}
		}
		why = append(why, fmt.Sprintf("%d: %s", i, reason))
	}
	if len(why) == 0 {
		why = append(why, "none offered")
	}
	return nil, nil, fmt.Errorf("%w: %s", ErrNoAcceptable, strings.Join(why, "; "))
}

// acceptable returns why the payer may not pay req, or "" (an error: the budget's spending failed).
func (p *Payer) acceptable(ctx context.Context, req *Requirements) (string, error) {
	if req.Scheme != SchemeExact {
		return fmt.Sprintf("scheme %q", req.Scheme), nil
	}
	if _, err := domainOf(req); err != nil {
		return err.Error(), nil
	}
	if _, err := evm.ParseAddress(req.PayTo); err != nil {
		return "payTo: " + err.Error(), nil
	}
	amount, err := evm.ParseInt(req.MaxAmountRequired)
	if err != nil || amount.Sign() <= 0 || amount.BitLen() > 256 {
		return fmt.Sprintf("amount %q", req.MaxAmountRequired), nil
	}
	if p.maxAmount != nil && amount.Cmp(p.maxAmount) > 0 {
		return fmt.Sprintf("amount %s over the payer's maximum %s", amount, p.maxAmount), nil
	}
	left, err := p.budget.Remaining(ctx, req.Network, req.Asset)
	if err != nil {
		return "", err
	}
	if left.Cmp(amount) < 0 {
		return fmt.Sprintf("amount %s over what remains of the budget for %s on %s", amount, req.Asset, req.Network), nil
	}
	return "", nil
}

// sign signs req for a window from a minute ago (clock skew) to maxTimeoutSeconds from now,
// at most MaxValidity.
func (p *Payer) sign(req *Requirements) (*Payload, error) {
	now := p.now()
	valid := p.validity
	if t := time.Duration(req.MaxTimeoutSeconds) * time.Second; t > 0 && t < valid {
		valid = t
	}
	return SignExact(p.key, req, now.Add(-time.Minute), now.Add(valid), nil)
}

// Respond pays the payment a task asks for and returns the message that submits it (on the
// task, in its context), with the payment's requirements. ErrNotPaymentRequired when the task
// does not ask for one.
func (p *Payer) Respond(ctx context.Context, t *a2a.Task) (*a2a.Message, *Requirements, error) {
	pr, ok, err := RequiredOf(t)
	if !ok {
		return nil, nil, ErrNotPaymentRequired
	}
	if err != nil {
		return nil, nil, err
	}
	payload, req, err := p.Pay(ctx, t.ID, pr)
	if err != nil {
		return nil, nil, err
	}
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, t, a2a.NewTextPart("Here is the payment authorization."))
	msg.Metadata = map[string]any{KeyStatus: string(StatusSubmitted), KeyPayload: toMeta(payload)}
	return msg, req, nil
}

// Decline returns the message that rejects the payment a task asks for.
func (p *Payer) Decline(t *a2a.Task, reason string) *a2a.Message {
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, t, a2a.NewTextPart(strings.TrimSpace("I decline the payment. "+reason)))
	msg.Metadata = map[string]any{KeyStatus: string(StatusRejected)}
	return msg
}

// Record notes the receipts of a task's final state against the payments made for it.
func (p *Payer) Record(t *a2a.Task) {
	rs := ReceiptsOf(t)
	if len(rs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j := 0
	for i := range p.payments {
		if p.payments[i].TaskID != t.ID || p.payments[i].Receipt != nil || j >= len(rs) {
			continue
		}
		r := rs[j]
		p.payments[i].Receipt = &r
		j++
	}
}

// Payments returns what the payer paid, oldest first.
func (p *Payer) Payments() []Payment {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Payment, len(p.payments))
	copy(out, p.payments)
	for i := range out {
		if r := out[i].Receipt; r != nil {
			c := *r
			out[i].Receipt = &c
		}
	}
	return out
}
