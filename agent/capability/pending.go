package capability

// Pending approvals: a call, a contract or an installation waiting for the user's decision.
// They are the set's state, guarded by Set.mu.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PendingKind is what an approval is asked for.
type PendingKind string

// The kinds of approval.
const (
	// PendingCall: one call, under CallByCall: approving it runs exactly that call, once.
	PendingCall PendingKind = "call"
	// PendingContract: a capability's contract, under ContractBased or BudgetBased: approving
	// it lets every call inside the contract run from then on.
	PendingContract PendingKind = "contract"
	// PendingInstall: installing a capability through the loader; approving it also approves
	// the installed capability's contract.
	PendingInstall PendingKind = "install"
)

// PendingStatus is where an approval stands.
type PendingStatus string

// The statuses of approvals.
const (
	PendingWaiting  PendingStatus = "pending"
	PendingApproved PendingStatus = "approved"
	PendingDenied   PendingStatus = "denied"
)

// Pending is an approval asked of the user.
type Pending struct {
	// ID names it in its set: "p1", "p2", …
	ID   string      `json:"id"`
	Kind PendingKind `json:"kind"`
	// Capability is the capability called, or, for PendingInstall, the one to install.
	Capability string `json:"capability"`
	// Method and Args are the call (PendingCall), or the loader's install call
	// (PendingInstall; Method is "install"). Args are canonical JSON.
	Method string          `json:"method,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	// Contract is what approving allows: the capability's contract.
	Contract Contract `json:"contract"`
	// Strategy is the strategy PendingInstall installs under.
	Strategy  Strategy      `json:"strategy,omitzero"`
	Session   string        `json:"session,omitempty"`
	Origin    Origin        `json:"origin"`
	Requested time.Time     `json:"requested"`
	Status    PendingStatus `json:"status"`
	By        string        `json:"by,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Decided   time.Time     `json:"decided,omitzero"`
}

// Prompt is the question the user is asked, in words.
func (p Pending) Prompt() string {
	var b strings.Builder
	asker := p.Origin.String()
	switch p.Kind {
	case PendingCall:
		fmt.Fprintf(&b, "The agent (%s) wants to call %s.%s with %s.", asker, p.Capability, p.Method, truncate(string(p.Args), 300))
	case PendingContract:
		fmt.Fprintf(&b, "The agent (%s) wants to use the capability %s.", asker, p.Capability)
	case PendingInstall:
		fmt.Fprintf(&b, "The agent (%s) wants to install the capability %s under the strategy %s.", asker, p.Capability, p.Strategy)
	}
	fmt.Fprintf(&b, " Its contract allows: %s.", p.Contract)
	fmt.Fprintf(&b, " Approve %s? Answer yes or no.", p.ID)
	return b.String()
}

func (p *Pending) clone() Pending {
	c := *p
	c.Args = slices.Clone(p.Args)
	c.Contract = p.Contract.clone()
	return c
}

// same reports whether p is the approval want asks for: same kind, capability, method,
// arguments and session.
func (p *Pending) same(want Pending) bool {
	return p.Kind == want.Kind && p.Capability == want.Capability && p.Method == want.Method &&
		bytes.Equal(p.Args, want.Args) && p.Session == want.Session
}

// ApprovalRequired is the error of a call that waits for the user's decision: Pending says on
// what. It matches ErrApprovalRequired.
type ApprovalRequired struct {
	Pending Pending
}

func (e *ApprovalRequired) Error() string {
	return fmt.Sprintf("%v: %s (%s)", ErrApprovalRequired, e.Pending.ID, e.Pending.Kind)
}

// Is makes errors.Is(err, ErrApprovalRequired) hold.
func (e *ApprovalRequired) Is(target error) bool { return target == ErrApprovalRequired }

// askLocked returns the *ApprovalRequired for want, reusing an undecided approval asked for the
// same thing, else asking a new one (dropping the oldest beyond MaxPending).
func (s *Set) askLocked(want Pending) error {
	for _, p := range s.pending {
		if p.Status == PendingWaiting && p.same(want) {
			return &ApprovalRequired{Pending: p.clone()}
		}
	}
	s.nextPending++
	want.ID, want.Status, want.Requested = strconvID(s.nextPending), PendingWaiting, s.now().UTC()
	p := &want
	s.pending = append(s.pending, p)
	if len(s.pending) > s.maxPending {
		for _, x := range s.pending[:len(s.pending)-s.maxPending] {
			s.wakeLocked(x.ID)
		}
		s.pending = slices.Delete(s.pending, 0, len(s.pending)-s.maxPending)
	}
	return &ApprovalRequired{Pending: p.clone()}
}

// approvedLocked checks the approval id a request carries against want: nil, nil without one;
// the approval, consumed, when it was approved for exactly want; an *ApprovalRequired while
// it waits; ErrDenied (consumed) when refused; ErrNoPending otherwise.
func (s *Set) approvedLocked(id string, want Pending) (*Pending, error) {
	if id == "" {
		return nil, nil
	}
	i := slices.IndexFunc(s.pending, func(p *Pending) bool { return p.ID == id })
	if i < 0 || !s.pending[i].same(want) {
		return nil, fmt.Errorf("%w: %s", ErrNoPending, truncate(id, 32))
	}
	p := s.pending[i]
	switch p.Status {
	case PendingWaiting:
		return nil, &ApprovalRequired{Pending: p.clone()}
	case PendingDenied:
		s.pending = slices.Delete(s.pending, i, i+1)
		if p.Reason != "" {
			return nil, fmt.Errorf("%w (%s): %s", ErrDenied, p.ID, p.Reason)
		}
		return nil, fmt.Errorf("%w (%s)", ErrDenied, p.ID)
	}
	s.pending = slices.Delete(s.pending, i, i+1)
	return p, nil
}

// Pending lists the approvals waiting for a decision, oldest first.
func (s *Set) Pending() []Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pending
	for _, p := range s.pending {
		if p.Status == PendingWaiting {
			out = append(out, p.clone())
		}
	}
	return out
}

// Decided returns a channel closed once the approval id is no longer waiting: decided, by any
// path (Decide: the turn that asked, another task's /capability approve, a capnweb client),
// or dropped. It is closed already when id waits for nothing.
func (s *Set) Decided(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.decided[id]
	if ch == nil {
		ch = make(chan struct{})
		i := slices.IndexFunc(s.pending, func(p *Pending) bool { return p.ID == id })
		if i < 0 || s.pending[i].Status != PendingWaiting {
			close(ch)
			return ch
		}
		if s.decided == nil {
			s.decided = map[string]chan struct{}{}
		}
		s.decided[id] = ch
	}
	return ch
}

// wakeLocked ends the waits for the approval id (Decided). Caller holds s.mu.
func (s *Set) wakeLocked(id string) {
	if ch := s.decided[id]; ch != nil {
		close(ch)
		delete(s.decided, id)
	}
}

// Decision is the user's answer to a pending approval.
type Decision struct {
	// Approve approves; false refuses.
	Approve bool
	// By is who decided (required): the principal, or the operator.
	By string
	// Reason says why (optional).
	Reason string
}

// ErrBadDecision: a decision without a decider.
var ErrBadDecision = errors.New("capability: a decision needs who decided")

// Decide records the user's decision on the pending approval id. Approving a contract lets the
// capability's calls run from now on; approving a call or an installation lets the request
// that asked be made again, once, with Request.Approval = id. The decision is recorded and
// observed (SetOptions.Observe): it is an observation with provenance.
func (s *Set) Decide(ctx context.Context, id string, d Decision) error {
	if strings.TrimSpace(d.By) == "" {
		return ErrBadDecision
	}
	d.Reason = truncate(d.Reason, 512)
	s.mu.Lock()
	i := slices.IndexFunc(s.pending, func(p *Pending) bool { return p.ID == id })
	var err error
	var p Pending
	switch {
	case i < 0:
		err = fmt.Errorf("%w: %s", ErrNoPending, truncate(id, 32))
	case s.pending[i].Status != PendingWaiting:
		x := s.pending[i]
		err = fmt.Errorf("%w: %s was %s by %s", ErrDecided, x.ID, x.Status, x.By)
	default:
		x := s.pending[i]
		x.Status, x.By, x.Reason, x.Decided = PendingDenied, d.By, d.Reason, s.now().UTC()
		if d.Approve {
			x.Status = PendingApproved
			if x.Kind == PendingContract { // applies now: nothing carries it out
				if g := s.held[x.Capability]; g != nil {
					g.approved, g.approvedBy = true, d.By
				}
				s.pending = slices.Delete(s.pending, i, i+1)
			}
		}
		p = x.clone()
		s.wakeLocked(x.ID)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	out := OutcomeDenied
	if d.Approve {
		out = OutcomeApproved
	}
	s.record(ctx, Record{Session: p.Session, Capability: p.Capability, Method: p.Method, Args: recordArgs(p.Args),
		Origin: p.Origin, Outcome: out, Pending: p.ID, By: d.By, Reason: d.Reason, Strategy: p.Strategy}, true)
	s.notify()
	return nil
}

// Asker puts a pending approval to the user and returns their decision, waiting for it as long
// as ctx allows. The runtime (package agent) gives the calls of each turn one that parks the
// turn on an input-required question.
type Asker func(ctx context.Context, p Pending) (Decision, error)

type askerKey struct{}

// WithAsker returns ctx carrying ask: calls made with it through [Set.CallAsking] — the
// call itself, and the calls its code makes through its holder's set (a Starlark capability's)
// — wait for the user's decision instead of failing with an *ApprovalRequired.
func WithAsker(ctx context.Context, ask Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, ask)
}

// AskerFrom returns the Asker ctx carries, or nil.
func AskerFrom(ctx context.Context) Asker {
	ask, _ := ctx.Value(askerKey{}).(Asker)
	return ask
}

// maxDecisions bounds the decisions one call may ask for (installing, then a contract, then
// the call): a strategy that kept asking would otherwise keep its caller forever.
const maxDecisions = 3

// CallAsking is Call, except that when the call needs the user's decision and ctx carries an
// Asker (WithAsker), it asks, records the answer (Decide) and makes the same call again with
// it: approved, the call runs once; refused, it fails with ErrDenied. A decision made another
// way while the Asker waits (Decide by any path: the approval's ID named by another task's
// command, or a capnweb client) ends the wait at once — the Asker's context ends with cause
// ErrDecided — and the call is made again with that decision, recorded in ctx's observations
// too. At most three decisions are asked for one call. Another error of the Asker fails the
// call, wrapping its *ApprovalRequired and that error. Without an Asker it is Call.
func (s *Set) CallAsking(ctx context.Context, req Request) (json.RawMessage, error) {
	out, err := s.Call(ctx, req)
	ask := AskerFrom(ctx)
	if ask == nil {
		return out, err
	}
	for range maxDecisions {
		var ar *ApprovalRequired
		if !errors.As(err, &ar) {
			break
		}
		d, elsewhere, aerr := s.ask(ctx, ask, ar.Pending)
		switch {
		case elsewhere:
		case aerr != nil:
			return nil, fmt.Errorf("%w, and it could not be asked: %w", err, aerr)
		default:
			if derr := s.Decide(ctx, ar.Pending.ID, d); errors.Is(derr, ErrDecided) {
				s.observeDecision(ctx, ar.Pending.ID) // decided another way as the answer came
			} else if derr != nil {
				return nil, derr
			}
		}
		req.Approval = ar.Pending.ID
		out, err = s.Call(ctx, req)
	}
	return out, err
}

// ask puts p to the user through ask until they answer, or until p is decided another way
// (elsewhere: the decision is then observed in ctx, and the call goes on with it).
func (s *Set) ask(ctx context.Context, ask Asker, p Pending) (d Decision, elsewhere bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	decided, stop := s.Decided(p.ID), make(chan struct{})
	done := make(chan struct{})
	go func() { // owned by ask, which waits for it
		defer close(done)
		select {
		case <-decided:
			cancel(fmt.Errorf("%w: %s, another way", ErrDecided, p.ID))
		case <-stop:
		}
	}()
	d, err = ask(actx, p)
	close(stop)
	<-done
	cancel(nil)
	if err != nil && errors.Is(context.Cause(actx), ErrDecided) && ctx.Err() == nil {
		s.observeDecision(ctx, p.ID)
		return d, true, nil
	}
	return d, false, err
}

// observeDecision hands the decision on the approval id, made another way, to ctx's observer
// (the turn that waited for it): the audit log has it already.
func (s *Set) observeDecision(ctx context.Context, id string) {
	s.mu.Lock()
	i := slices.IndexFunc(s.pending, func(p *Pending) bool { return p.ID == id })
	var p Pending
	if i >= 0 {
		p = s.pending[i].clone()
	}
	s.mu.Unlock()
	if i < 0 || p.Status == PendingWaiting || s.observe == nil {
		return
	}
	out := OutcomeDenied
	if p.Status == PendingApproved {
		out = OutcomeApproved
	}
	s.observe(ctx, Record{Principal: s.principal, Time: p.Decided, Session: p.Session, Capability: p.Capability, Method: p.Method,
		Args: recordArgs(p.Args), Origin: p.Origin, Outcome: out, Pending: p.ID, By: p.By, Reason: p.Reason, Strategy: p.Strategy})
}
