package capability

// Concurrency: a Set is shared by its instance's goroutine (which installs, decides, lists) and
// the goroutines of effects (which call). mu guards held, pending and closed; it is never held
// while a capability runs, while the audit log is written, or while Observe is called: a call
// takes what it needs under mu, runs unlocked, then records. A budget's meter has its own mutex
// (calls of one capability run at once). Lock order: Set.mu, then a meter's mu.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/netguard"
)

// Errors of a Set.
var (
	// ErrNotHeld: the set holds no capability of that name.
	ErrNotHeld = errors.New("capability: not held")
	// ErrInstalled: the set already holds a capability of that name.
	ErrInstalled = errors.New("capability: already installed")
	// ErrApprovalRequired: the call waits for the user's decision; the error is an
	// *ApprovalRequired that carries it.
	ErrApprovalRequired = errors.New("capability: approval required")
	// ErrDenied: the user refused the approval the call needed.
	ErrDenied = errors.New("capability: refused by the user")
	// ErrNoPending: no pending approval has that ID (never asked, already used, or dropped
	// for newer ones), or it is for another call.
	ErrNoPending = errors.New("capability: no such pending approval")
	// ErrDecided: the pending approval was decided already.
	ErrDecided = errors.New("capability: already decided")
	// ErrSetClosed: the set was closed.
	ErrSetClosed = errors.New("capability: set closed")
	// ErrTooMany: the set holds as many capabilities as it may.
	ErrTooMany = errors.New("capability: too many capabilities held")
)

// SetOptions configure a Set. Nil, or a zero field, means the documented default.
type SetOptions struct {
	// Principal is whose set it is: its audit records are that principal's.
	Principal string
	// Catalog is what the loader offers; nil means nothing.
	Catalog *Catalog
	// Audit is where records go; nil means NewMemoryAudit(0), which only this set uses.
	Audit Audit
	// Observe, when set, is told of approvals and refusals decided, installs and
	// uninstalls, strategy changes, and calls refused, exhausted or revoked: the instance logs
	// them as observations. It is called without locks held, in the goroutine that caused the
	// record, with the context of the call that caused it, after the record is in the audit
	// log.
	Observe func(context.Context, Record)
	// Changed, when set, is called after the set's State changed (an install, an uninstall,
	// a strategy, an approval asked, decided or used, a budget spent), without locks held, in
	// the goroutine that changed it: the runtime saves State then, or at the end of the turn.
	Changed func()
	// Self is the instance's view of itself, for the self capability; nil means none.
	Self Self
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxPending bounds the pending approvals kept (the oldest go first); 0 means 32.
	MaxPending int
	// MaxHeld bounds the capabilities held; 0 means 64.
	MaxHeld int
}

// Set is what one holder — an agent instance — holds: capabilities, each under a strategy,
// with the approvals given, the budgets spent and the calls waiting for a decision. A new set
// holds only the loader. It is safe for concurrent use.
type Set struct {
	principal  string
	catalog    *Catalog
	audit      Audit
	observe    func(context.Context, Record)
	changed    func()
	self       Self
	now        func() time.Time
	maxPending int
	maxHeld    int

	mu          sync.Mutex // guards the fields below
	held        map[string]*grant
	pending     []*Pending // oldest first
	nextPending int64
	// decided are closed when the approval of their ID is decided or dropped (Decided): the
	// waits of CallAsking for the user's answer end with a decision made another way.
	decided map[string]chan struct{}
	closed  bool
	// tools are the tools of held, by capability in name order, made once per change of held
	// (a consult asks for them every step); nil when held changed since.
	tools []capTools
}

// capTools are the tools of one capability held.
type capTools struct {
	c     *Capability
	tools []Tool
}

// grant is one capability held.
type grant struct {
	cap          *Capability // the holder's copy, derived for it alone
	strategy     Strategy
	sessions     map[string]Strategy // per-session strategies
	minimum      StrategyKind
	approved     bool // the contract is approved
	approvedBy   string
	offered      bool        // installed from the catalog
	made         *Capability // what the offer made for this holder: revoked with the grant
	restrictions Restrictions
	installed    time.Time
	by           string
	meters       map[string]*meter // budget scope ("" or a session) -> meter
}

// revoke revokes the holder's copy, and what an offer made for the holder.
func (g *grant) revoke(why error) {
	g.cap.Revoke(why)
	if g.made != nil {
		g.made.Revoke(why)
	}
}

func (g *grant) strategyFor(session string) (Strategy, string) {
	if st, ok := g.sessions[session]; ok && session != "" {
		return st, session
	}
	return g.strategy, ""
}

func (g *grant) meter(scope string, b Budget) *meter {
	m := g.meters[scope]
	if m == nil || m.limit != b {
		m = &meter{name: g.cap.name, limit: b}
		if g.meters == nil {
			g.meters = map[string]*meter{}
		}
		g.meters[scope] = m
	}
	return m
}

// NewSet returns a set holding only the loader.
func NewSet(opts *SetOptions) *Set {
	if opts == nil {
		opts = &SetOptions{}
	}
	s := &Set{principal: opts.Principal, catalog: opts.Catalog, audit: opts.Audit, observe: opts.Observe,
		changed: opts.Changed, self: opts.Self, now: opts.Now, maxPending: opts.MaxPending, maxHeld: opts.MaxHeld, held: map[string]*grant{}}
	if s.catalog == nil {
		s.catalog = NewCatalog()
	}
	if s.audit == nil {
		s.audit = NewMemoryAudit(0)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxPending <= 0 {
		s.maxPending = 32
	}
	if s.maxHeld <= 0 {
		s.maxHeld = 64
	}
	l := newLoader(s)
	s.held[l.name] = &grant{cap: l, strategy: Strategy{Kind: PreApproved}, minimum: PreApproved, approved: true,
		installed: s.now(), by: "the runtime"}
	return s
}

// Principal returns whose set it is.
func (s *Set) Principal() string { return s.principal }

// Catalog returns what the set's loader offers.
func (s *Set) Catalog() *Catalog { return s.catalog }

// Grant is how Install holds a capability.
type Grant struct {
	// Strategy is the strategy its calls are under.
	Strategy Strategy
	// Minimum is the loosest strategy it may be set to later; "" means PreApproved.
	Minimum StrategyKind
	// Approved says its contract is approved already (by By): calls under ContractBased and
	// BudgetBased run without asking.
	Approved bool
	// By is who installs it, for the record.
	By string
	// Restrictions narrow the holder's copy.
	Restrictions Restrictions
	// Silent installs without a record: for what a program installs on every start (its own
	// tools), which would otherwise fill the audit log with the same news.
	Silent bool
}

// Install holds c under g: the set holds its own copy, derived from c (by g.Restrictions), so
// Uninstall revokes that copy only, while revoking c revokes every holder's.
func (s *Set) Install(ctx context.Context, c *Capability, g Grant) error {
	return s.install(ctx, c, g, false, Origin{Kind: OriginOperator})
}

// install holds c under g; offered says c was made by an offer for this holder alone, to be
// revoked with the grant (revoking the holder's copy would leave it, and what it holds open).
func (s *Set) install(ctx context.Context, c *Capability, g Grant, offered bool, origin Origin) error {
	if err := g.Strategy.Validate(); err != nil {
		return err
	}
	min := cmpOr(g.Minimum, PreApproved)
	if !min.Valid() {
		return fmt.Errorf("%w: minimum %q", ErrBadStrategy, min)
	}
	if !g.Strategy.Kind.AtLeast(min) {
		return fmt.Errorf("%w: %s may not be held under %s, only %s or stricter", ErrBadStrategy, c.name, g.Strategy.Kind, min)
	}
	copy, err := c.Derive(g.Restrictions)
	if err != nil {
		return err
	}
	s.mu.Lock()
	switch {
	case s.closed:
		err = ErrSetClosed
	case s.held[c.name] != nil:
		err = fmt.Errorf("%w: %s", ErrInstalled, c.name)
	case len(s.held) >= s.maxHeld:
		err = fmt.Errorf("%w: %d", ErrTooMany, s.maxHeld)
	default:
		s.tools = nil
		s.held[c.name] = &grant{cap: copy, strategy: g.Strategy, minimum: min, approved: g.Approved,
			approvedBy: cmpOr(g.By, "unknown"), offered: offered, restrictions: g.Restrictions, installed: s.now(), by: g.By}
		if offered {
			s.held[c.name].made = c
		}
	}
	s.mu.Unlock()
	if err != nil {
		copy.Revoke(err)
		return err
	}
	if !g.Silent {
		s.record(ctx, Record{Capability: c.name, Outcome: OutcomeInstalled, Strategy: g.Strategy, By: cmpOr(g.By, "unknown"), Origin: origin}, true)
	}
	s.notify()
	return nil
}

// Uninstall removes the capability name, revoking the set's copy (calls in flight stop), and
// drops its pending approvals. The loader cannot be uninstalled.
func (s *Set) Uninstall(ctx context.Context, name, by string) error {
	if name == loaderName {
		return fmt.Errorf("%w: the loader cannot be uninstalled", ErrBadSpec)
	}
	s.mu.Lock()
	g := s.held[name]
	if g != nil {
		delete(s.held, name)
		s.tools = nil
		s.pending = slices.DeleteFunc(s.pending, func(p *Pending) bool { return p.Capability == name && p.Kind != PendingInstall })
	}
	s.mu.Unlock()
	if g == nil {
		return fmt.Errorf("%w: %s", ErrNotHeld, name)
	}
	g.revoke(errors.New("uninstalled"))
	s.record(ctx, Record{Capability: name, Outcome: OutcomeUninstalled, By: cmpOr(by, "unknown")}, true)
	s.notify()
	return nil
}

// UninstallCapability uninstalls the capability the set holds a copy of c under c's name, if it
// does (and not another of the same name installed since): for whoever lent the set c and is
// taking it back.
func (s *Set) UninstallCapability(ctx context.Context, c *Capability, by string) error {
	s.mu.Lock()
	g := s.held[c.name]
	s.mu.Unlock()
	if g == nil || !g.cap.descendsFrom(c) {
		return fmt.Errorf("%w: %s", ErrNotHeld, c.name)
	}
	return s.Uninstall(ctx, c.name, by)
}

// SetStrategy sets the strategy of the capability name: for the session, or, with session "",
// for every session without one of its own. It may not be looser than the capability's
// minimum. A new budget starts unspent.
func (s *Set) SetStrategy(ctx context.Context, name, session string, st Strategy, by string) error {
	if err := st.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	g := s.held[name]
	var err error
	switch {
	case g == nil:
		err = fmt.Errorf("%w: %s", ErrNotHeld, name)
	case name == loaderName:
		err = fmt.Errorf("%w: the loader is always pre-approved", ErrBadStrategy)
	case !st.Kind.AtLeast(g.minimum):
		err = fmt.Errorf("%w: %s may not be held under %s, only %s or stricter", ErrBadStrategy, name, st.Kind, g.minimum)
	case session == "":
		g.strategy = st
		delete(g.meters, "")
	default:
		if g.sessions == nil {
			g.sessions = map[string]Strategy{}
		}
		if _, ok := g.sessions[session]; !ok && len(g.sessions) >= maxSessionStrategies {
			err = fmt.Errorf("%w: more than %d session strategies", ErrBadStrategy, maxSessionStrategies)
			break
		}
		g.sessions[session] = st
		delete(g.meters, session)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.record(ctx, Record{Capability: name, Session: session, Outcome: OutcomeStrategy, Strategy: st, By: cmpOr(by, "unknown")}, true)
	s.notify()
	return nil
}

// maxSessionStrategies bounds the per-session strategies of one capability.
const maxSessionStrategies = 256

// Held is one capability a set holds, as Installed reports it.
type Held struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Methods     []Method `json:"methods"`
	Contract    Contract `json:"contract"`
	Strategy    Strategy `json:"strategy"`
	// Sessions are the per-session strategies.
	Sessions map[string]Strategy `json:"sessions,omitempty"`
	Minimum  StrategyKind        `json:"minimum"`
	// Approved says the contract is approved, ApprovedBy by whom.
	Approved   bool   `json:"approved"`
	ApprovedBy string `json:"approvedBy,omitempty"`
	// Usage is what is spent of each budget: "" for the set's, else per session.
	Usage map[string]Usage `json:"usage,omitempty"`
	// Depth is how many derivations separate the holder's copy from the capability first
	// made (by New): 1 for a capability installed as made.
	Depth int `json:"depth"`
	// Offered says it came from the catalog (through the loader).
	Offered      bool         `json:"offered"`
	Restrictions Restrictions `json:"restrictions,omitzero"`
	Installed    time.Time    `json:"installed"`
	By           string       `json:"by,omitempty"`
	// Revoked is why it was revoked, if it was (by its maker, or an ancestor's).
	Revoked string `json:"revoked,omitempty"`
}

// Installed lists what the set holds, by name.
func (s *Set) Installed() []Held {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Held, 0, len(s.held))
	for _, name := range slices.Sorted(maps.Keys(s.held)) {
		out = append(out, s.heldLocked(name))
	}
	return out
}

func (s *Set) heldLocked(name string) Held {
	g := s.held[name]
	d := g.cap.Describe()
	h := Held{Name: name, Description: d.Description, Methods: d.Methods, Contract: d.Contract, Strategy: g.strategy,
		Sessions: maps.Clone(g.sessions), Minimum: g.minimum, Approved: g.approved, Offered: g.offered,
		Restrictions: g.restrictions, Installed: g.installed, By: g.by}
	if g.approved {
		h.ApprovedBy = g.approvedBy
	}
	for x := g.cap; x.parent != nil; x = x.parent {
		h.Depth++
	}
	for scope, m := range g.meters {
		if h.Usage == nil {
			h.Usage = map[string]Usage{}
		}
		h.Usage[scope] = m.usage()
	}
	if err := g.cap.Err(); err != nil {
		h.Revoked = err.Error()
	}
	return h
}

// Describe returns the description of the capability name as the set holds it (its
// methods and contract after restrictions).
func (s *Set) Describe(name string) (Description, bool) {
	s.mu.Lock()
	g := s.held[name]
	s.mu.Unlock()
	if g == nil {
		return Description{}, false
	}
	return g.cap.Describe(), true
}

// Lend returns a capability derived from the set's copy of name by r, for a sub-agent or a
// sandbox to hold: it dies when the set's copy does (uninstalled, revoked, the set closed).
// The borrower revokes it when done.
func (s *Set) Lend(name string, r Restrictions) (*Capability, error) {
	s.mu.Lock()
	g := s.held[name]
	s.mu.Unlock()
	if g == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotHeld, name)
	}
	return g.cap.Derive(r)
}

// Close revokes every capability the set holds (so every capability lent from them) and
// refuses every later call. It is idempotent.
func (s *Set) Close() {
	s.mu.Lock()
	held := slices.Collect(maps.Values(s.held))
	s.held, s.pending, s.closed = map[string]*grant{}, nil, true
	s.mu.Unlock()
	for _, g := range held {
		g.revoke(ErrSetClosed)
	}
}

// Tool is a method of a capability held, described for a language model.
type Tool struct {
	// Name is "<capability>__<method>": function names of OpenAI-compatible APIs allow no dot.
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the method's parameter schema.
	Parameters json.RawMessage `json:"parameters"`
	Capability string          `json:"-"`
	Method     string          `json:"-"`
}

// ToolName is the model's name for a method: "fs__read".
func ToolName(capability, method string) string { return capability + "__" + method }

// ParseToolName splits a model's tool name into capability and method.
func ParseToolName(name string) (capability, method string, ok bool) {
	capability, method, ok = strings.Cut(name, "__")
	return capability, method, ok && ValidName(capability) && methodRE.MatchString(method)
}

// Tools describes every method of every capability the set holds, not revoked, for a model:
// its tool schemas are the methods' parameter schemas. The slice is the caller's; the
// Parameters of its tools are shared, and must not be changed.
func (s *Set) Tools() []Tool {
	s.mu.Lock()
	if s.tools == nil {
		s.tools = make([]capTools, 0, len(s.held))
		for _, name := range slices.Sorted(maps.Keys(s.held)) {
			c := s.held[name].cap
			params := c.toolParams()
			ct := capTools{c: c}
			for i, m := range c.methods {
				desc := m.Description
				if c.desc != "" {
					desc = c.desc + ": " + desc
				}
				ct.tools = append(ct.tools, Tool{Name: ToolName(c.name, m.Name), Description: desc, Parameters: params[i], Capability: c.name, Method: m.Name})
			}
			s.tools = append(s.tools, ct)
		}
	}
	all := s.tools
	s.mu.Unlock()
	var out []Tool
	for _, ct := range all {
		if ct.c.Err() == nil { // (revoked since the list was made)
			out = append(out, ct.tools...)
		}
	}
	return out
}

// Request is a call through a set.
type Request struct {
	Capability string
	Method     string
	// Args is a JSON object; empty means {}.
	Args json.RawMessage
	// Session is the A2A context the call is made in: it selects a per-session strategy and
	// budget, and scopes call-by-call approvals.
	Session string
	// Origin is who makes the call.
	Origin Origin
	// Approval is the ID of an approved Pending this call carries out: after an
	// *ApprovalRequired, the same request again with Approval set.
	Approval string
	// Within, when set, is asked before each effect of the call, once the capability's own
	// contract allows it: an error refuses the effect as the contract would. A capability
	// whose code calls others through its holder's set (a Starlark capability in the sandbox)
	// passes its own call's Check, so that what its code reaches stays inside its contract too,
	// and is recorded in its own call.
	Within func(a Access, resource string) error
}

// Call calls a method of a capability the set holds, under its strategy: it may return an
// *ApprovalRequired at once (the user must decide; the runtime asks and calls again with
// Request.Approval), ErrBudgetExhausted, ErrRevoked, ErrOutsideContract, ErrNotHeld, … — each
// recorded as its strategy and outcome require — or the result, canonical JSON.
func (s *Set) Call(ctx context.Context, req Request) (json.RawMessage, error) {
	rec := Record{Session: req.Session, Capability: req.Capability, Method: req.Method, Origin: req.Origin, Args: recordArgs(req.Args)}
	held, mt, st, err := s.admit(req, &rec)
	if req.Approval != "" || mt != nil || errors.Is(err, ErrApprovalRequired) {
		defer s.notify() // an approval asked or used, a budget spent
	}
	if err != nil {
		s.recordErr(ctx, rec, err)
		return nil, err
	}
	rec.Strategy = st
	call := &Call{Method: req.Method, Session: req.Session, Origin: req.Origin, meter: mt, approval: req.Approval, set: s,
		within: req.Within}
	out, o, err := held.invoke(ctx, call, req.Args)
	rec.Accessed, rec.Bytes, rec.Duration = o.accessed, o.bytes, o.duration
	if len(call.Args) > 0 {
		rec.Args = recordArgs(call.Args)
	}
	if err != nil {
		s.recordErr(ctx, rec, err)
		return nil, err
	}
	if st.Kind == AuditOnly {
		rec.Outcome = OutcomeOK
		s.record(ctx, rec, false)
	}
	return out, nil
}

// admit decides, under the strategy, whether req may run now: it returns the holder's copy to
// call and the budget meter, or the error (an *ApprovalRequired among them).
func (s *Set) admit(req Request, rec *Record) (*Capability, *meter, Strategy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, Strategy{}, ErrSetClosed
	}
	g := s.held[req.Capability]
	if g == nil {
		return nil, nil, Strategy{}, fmt.Errorf("%w: %s", ErrNotHeld, truncate(req.Capability, 64))
	}
	st, scope := g.strategyFor(req.Session)
	rec.Strategy = st
	if err := g.cap.Err(); err != nil {
		return nil, nil, st, err
	}
	switch {
	case st.Kind == CallByCall:
		if g.cap.method(req.Method) == nil {
			return nil, nil, st, fmt.Errorf("%w: %s.%s", ErrNoMethod, g.cap.name, truncate(req.Method, 64))
		}
		_, canon, err := checkArgs(g.cap.method(req.Method), req.Args)
		if err != nil {
			return nil, nil, st, fmt.Errorf("%w: %s.%s: %v", ErrBadArgs, g.cap.name, req.Method, err)
		}
		want := Pending{Kind: PendingCall, Capability: g.cap.name, Method: req.Method, Args: canon, Session: req.Session}
		if _, err := s.approvedLocked(req.Approval, want); err != nil {
			return nil, nil, st, err
		}
		if req.Approval == "" {
			want.Contract, want.Origin = g.cap.Contract(), req.Origin
			return nil, nil, st, s.askLocked(want)
		}
		rec.Pending = req.Approval
	case st.Kind.needsContract() && !g.approved:
		want := Pending{Kind: PendingContract, Capability: g.cap.name}
		if req.Approval != "" {
			if _, err := s.approvedLocked(req.Approval, want); err != nil {
				return nil, nil, st, err
			}
		}
		if !g.approved {
			want.Contract, want.Origin, want.Session = g.cap.Contract(), req.Origin, req.Session
			return nil, nil, st, s.askLocked(want)
		}
	}
	var mt *meter
	if st.Kind == BudgetBased {
		mt = g.meter(scope, st.Budget)
		if err := mt.call(); err != nil {
			return nil, nil, st, err
		}
	}
	return g.cap, mt, st, nil
}

// record appends r to the audit log and, when observed, tells Observe.
func (s *Set) record(ctx context.Context, r Record, observed bool) {
	r.Principal = s.principal
	if r.Time.IsZero() {
		r.Time = s.now().UTC()
	}
	// An audit log that fails must not fail the call it records: the record is still observed.
	_ = s.audit.Append(context.WithoutCancel(ctx), r)
	if observed && s.observe != nil {
		s.observe(ctx, r)
	}
}

// recordErr records a call that did not return a result, by its error.
func (s *Set) recordErr(ctx context.Context, r Record, err error) {
	r.Error = truncate(err.Error(), 512)
	observed := true
	switch {
	case errors.Is(err, ErrApprovalRequired):
		var ar *ApprovalRequired
		if errors.As(err, &ar) {
			r.Pending = ar.Pending.ID
		}
		r.Outcome, r.Error, observed = OutcomeApprovalRequired, "", false
	case errors.Is(err, ErrOutsideContract), errors.Is(err, netguard.ErrBlocked):
		r.Outcome = OutcomeRefused
	case errors.Is(err, ErrBudgetExhausted):
		r.Outcome = OutcomeExhausted
	case errors.Is(err, ErrRevoked):
		r.Outcome = OutcomeRevoked
	case errors.Is(err, ErrDenied):
		r.Outcome, observed = OutcomeDenied, false // the decision was observed when it was made
	default:
		r.Outcome, observed = OutcomeFailed, false
		if r.Strategy.Kind != AuditOnly && !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrNoPending) {
			return // a failure is a refusal of nothing: only audit-only records it
		}
	}
	s.record(ctx, r, observed)
}

// notify calls Changed.
func (s *Set) notify() {
	if s.changed != nil {
		s.changed()
	}
}

// Audit returns the records of the set's principal that q selects (q.Principal and q.All are
// ignored: a set reads only its own principal's).
func (s *Set) Audit(ctx context.Context, q AuditQuery) ([]Record, error) {
	q.Principal, q.All = s.principal, false
	return s.audit.Records(ctx, q)
}

// strconvID is a pending approval's ID.
func strconvID(n int64) string { return "p" + strconv.FormatInt(n, 10) }
