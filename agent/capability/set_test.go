package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// observed collects what a set reports.
type observed struct {
	mu      sync.Mutex
	records []Record
}

func (o *observed) add(_ context.Context, r Record) {
	o.mu.Lock()
	o.records = append(o.records, r)
	o.mu.Unlock()
}

func (o *observed) outcomes() []Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Outcome
	for _, r := range o.records {
		out = append(out, r.Outcome)
	}
	return out
}

// newTestSet returns a set for principal holding the probe (contract reads file:notes/*,
// writes file:notes/*) under st.
func newTestSet(t *testing.T, principal string, st Strategy, audit Audit) (*Set, *observed) {
	t.Helper()
	obs := &observed{}
	s := NewSet(&SetOptions{Principal: principal, Audit: audit, Observe: obs.add})
	t.Cleanup(s.Close)
	c := probe(t, Contract{Reads: []string{"file:notes/*"}, Writes: []string{"file:notes/*"}})
	if err := s.Install(t.Context(), c, Grant{Strategy: st, By: "operator"}); err != nil {
		t.Fatal(err)
	}
	return s, obs
}

func req(method, args string) Request {
	return Request{Capability: "probe", Method: method, Args: json.RawMessage(args), Origin: Origin{Kind: OriginModel}}
}

func TestNewSetHoldsOnlyTheLoader(t *testing.T) {
	t.Parallel()
	cat := NewCatalog()
	if err := cat.Add(ClockOffer(nil)); err != nil {
		t.Fatal(err)
	}
	s := NewSet(&SetOptions{Principal: "alice", Catalog: cat})
	defer s.Close()
	var names []string
	for _, h := range s.Installed() {
		names = append(names, h.Name)
	}
	if !slices.Equal(names, []string{"loader"}) {
		t.Errorf("Installed() = %v, want only the loader", names)
	}
	if _, err := s.Call(t.Context(), Request{Capability: "clock", Method: "now"}); !errors.Is(err, ErrNotHeld) {
		t.Errorf("calling the clock before installing it = %v, want ErrNotHeld", err)
	}
	var tools []string
	for _, tl := range s.Tools() {
		tools = append(tools, tl.Name)
	}
	want := []string{"loader__available", "loader__show", "loader__install", "loader__uninstall", "loader__installed"}
	if !slices.Equal(tools, want) {
		t.Errorf("Tools() = %v, want %v", tools, want)
	}
	if err := s.Uninstall(t.Context(), "loader", "alice"); err == nil {
		t.Error("the loader was uninstalled")
	}
}

// Tools is made once per change of what the set holds: an install, an uninstall and a revoked
// capability show in the next call.
func TestToolsFollowWhatIsHeld(t *testing.T) {
	t.Parallel()
	s, _ := newTestSet(t, "alice", Strategy{Kind: PreApproved}, nil)
	names := func() []string {
		var out []string
		for _, tl := range s.Tools() {
			if tl.Capability != "loader" {
				out = append(out, tl.Name)
			}
		}
		return out
	}
	if got := names(); !slices.Contains(got, "probe__touch") {
		t.Fatalf("Tools() = %v, want probe's", got)
	}
	if err := s.Uninstall(t.Context(), "probe", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after uninstalling: %v", got)
	}
	c := probe(t, Contract{Reads: []string{"file:notes/*"}})
	if err := s.Install(t.Context(), c, Grant{Strategy: Strategy{Kind: PreApproved}, By: "operator"}); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Contains(got, "probe__touch") {
		t.Fatalf("after installing again: %v", got)
	}
	s.Close() // revokes what it holds
	if got := names(); len(got) != 0 {
		t.Fatalf("after closing: %v", got)
	}
}

func TestPreApprovedRefusesOutsideTheContractAndRecordsIt(t *testing.T) {
	t.Parallel()
	audit := NewMemoryAudit(0)
	s, obs := newTestSet(t, "alice", Strategy{Kind: PreApproved}, audit)
	ctx := t.Context()
	if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/a"))); err != nil {
		t.Fatalf("inside the contract: %v", err)
	}
	_, err := s.Call(ctx, req("touch", touch(Read, "file:../etc/passwd")))
	if !errors.Is(err, ErrOutsideContract) {
		t.Fatalf("outside the contract: %v, want ErrOutsideContract", err)
	}
	recs, _ := s.Audit(ctx, AuditQuery{})
	last := recs[len(recs)-1]
	if last.Outcome != OutcomeRefused || last.Principal != "alice" || last.Method != "touch" ||
		!slices.Contains(last.Accessed, "reads file:../etc/passwd (refused)") || last.Strategy.Kind != PreApproved {
		t.Errorf("the refusal's record = %+v", last)
	}
	if n := len(recs); n != 2 { // installed, refused: a pre-approved call that succeeds is not recorded
		t.Errorf("%d records, want 2: %+v", n, recs)
	}
	if got := obs.outcomes(); !slices.Equal(got, []Outcome{OutcomeInstalled, OutcomeRefused}) {
		t.Errorf("observed %v", got)
	}
}

func TestContractStrategy(t *testing.T) {
	t.Parallel()
	s, obs := newTestSet(t, "alice", Strategy{Kind: ContractBased}, nil)
	ctx := t.Context()
	r := req("touch", touch(Read, "file:notes/a"))
	_, err := s.Call(ctx, r)
	var ar *ApprovalRequired
	if !errors.As(err, &ar) || !errors.Is(err, ErrApprovalRequired) {
		t.Fatalf("the first call = %v, want *ApprovalRequired", err)
	}
	p := ar.Pending
	if p.Kind != PendingContract || p.Capability != "probe" || p.Contract.Reads[0] != "file:notes/*" || p.Origin.Kind != OriginModel {
		t.Errorf("pending = %+v", p)
	}
	if !strings.Contains(p.Prompt(), "file:notes/*") || !strings.Contains(p.Prompt(), p.ID) {
		t.Errorf("Prompt() = %q", p.Prompt())
	}
	// Asking again, before the user answers, asks the same.
	_, err = s.Call(ctx, req("touch", touch(Read, "file:notes/b")))
	if !errors.As(err, &ar) || ar.Pending.ID != p.ID {
		t.Errorf("a second call = %v, want the same pending %s", err, p.ID)
	}
	if err := s.Decide(ctx, p.ID, Decision{Approve: true}); !errors.Is(err, ErrBadDecision) {
		t.Errorf("Decide without a decider = %v", err)
	}
	if err := s.Decide(ctx, p.ID, Decision{Approve: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	r.Approval = p.ID
	if _, err := s.Call(ctx, r); err != nil {
		t.Fatalf("after approval: %v", err)
	}
	if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/c"))); err != nil {
		t.Fatalf("another call inside the contract: %v", err)
	}
	if _, err := s.Call(ctx, req("touch", touch(Read, "file:secret"))); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("outside the approved contract = %v, want ErrOutsideContract", err)
	}
	if h := s.Installed()[1]; !h.Approved || h.ApprovedBy != "alice" {
		t.Errorf("Installed() = %+v, want approved by alice", h)
	}
	if got := obs.outcomes(); !slices.Equal(got, []Outcome{OutcomeInstalled, OutcomeApproved, OutcomeRefused}) {
		t.Errorf("observed %v", got)
	}
	obs.mu.Lock()
	approval := obs.records[1]
	obs.mu.Unlock()
	if approval.By != "alice" || approval.Pending != p.ID || approval.Principal != "alice" {
		t.Errorf("the approval observed = %+v", approval)
	}
}

func TestContractRefused(t *testing.T) {
	t.Parallel()
	s, _ := newTestSet(t, "alice", Strategy{Kind: ContractBased}, nil)
	ctx := t.Context()
	r := req("touch", touch(Read, "file:notes/a"))
	_, err := s.Call(ctx, r)
	var ar *ApprovalRequired
	if !errors.As(err, &ar) {
		t.Fatal(err)
	}
	if err := s.Decide(ctx, ar.Pending.ID, Decision{By: "alice", Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Decide(ctx, ar.Pending.ID, Decision{Approve: true, By: "alice"}); !errors.Is(err, ErrDecided) {
		t.Errorf("deciding twice = %v, want ErrDecided", err)
	}
	r.Approval = ar.Pending.ID
	if _, err := s.Call(ctx, r); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "not today") {
		t.Errorf("the refused call = %v, want ErrDenied with the reason", err)
	}
}

func TestCallByCall(t *testing.T) {
	t.Parallel()
	audit := NewMemoryAudit(0)
	s, obs := newTestSet(t, "alice", Strategy{Kind: CallByCall}, audit)
	ctx := t.Context()
	r := req("touch", touch(Read, "file:notes/a"))
	r.Session = "ctx-1"
	_, err := s.Call(ctx, r)
	var ar *ApprovalRequired
	if !errors.As(err, &ar) {
		t.Fatalf("call-by-call = %v, want *ApprovalRequired", err)
	}
	p := ar.Pending
	if p.Kind != PendingCall || p.Method != "touch" || string(p.Args) != `{"access":"reads","resource":"file:notes/a"}` || p.Session != "ctx-1" {
		t.Errorf("pending = %+v", p)
	}
	if got := s.Pending(); len(got) != 1 || got[0].ID != p.ID {
		t.Errorf("Pending() = %+v", got)
	}
	if err := s.Decide(ctx, p.ID, Decision{Approve: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	// The approval is for exactly that call.
	for _, other := range []Request{
		{Capability: "probe", Method: "touch", Args: json.RawMessage(touch(Read, "file:notes/b")), Session: "ctx-1", Approval: p.ID},
		{Capability: "probe", Method: "touch", Args: r.Args, Session: "ctx-2", Approval: p.ID},
		{Capability: "probe", Method: "swallow", Args: r.Args, Session: "ctx-1", Approval: p.ID},
	} {
		if _, err := s.Call(ctx, other); !errors.Is(err, ErrNoPending) {
			t.Errorf("%s %s in %s with %s = %v, want ErrNoPending", other.Method, other.Args, other.Session, p.ID, err)
		}
	}
	// The same call, spelled differently, is the same call.
	r.Args, r.Approval = json.RawMessage(`{ "resource": "file:notes/a", "access": "reads" }`), p.ID
	if out, err := s.Call(ctx, r); err != nil || string(out) != `{"touched":"file:notes/a"}` {
		t.Fatalf("the approved call = %s, %v", out, err)
	}
	// Once.
	if _, err := s.Call(ctx, r); !errors.Is(err, ErrNoPending) {
		t.Errorf("the approved call again = %v, want ErrNoPending", err)
	}
	// A refused call.
	r.Approval = ""
	_, err = s.Call(ctx, r)
	if !errors.As(err, &ar) || ar.Pending.ID == p.ID {
		t.Fatalf("the next call = %v, want a new pending", err)
	}
	if err := s.Decide(ctx, ar.Pending.ID, Decision{By: "alice", Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	r.Approval = ar.Pending.ID
	if _, err := s.Call(ctx, r); !errors.Is(err, ErrDenied) {
		t.Errorf("the refused call = %v, want ErrDenied", err)
	}
	if got := obs.outcomes(); !slices.Equal(got, []Outcome{OutcomeInstalled, OutcomeApproved, OutcomeDenied}) { // the refused call is not news: its refusal was
		t.Errorf("observed %v", got)
	}
	recs, _ := audit.Records(ctx, AuditQuery{Principal: "alice"})
	var outs []Outcome
	for _, r := range recs {
		outs = append(outs, r.Outcome)
	}
	want := []Outcome{OutcomeInstalled, OutcomeApprovalRequired, OutcomeApproved, OutcomeFailed, OutcomeFailed, OutcomeFailed,
		OutcomeFailed, OutcomeApprovalRequired, OutcomeDenied, OutcomeDenied}
	if !slices.Equal(outs, want) {
		t.Errorf("audit outcomes = %v, want %v", outs, want)
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	approve := func(s *Set) {
		_, err := s.Call(ctx, req("touch", touch(Read, "file:notes/x")))
		var ar *ApprovalRequired
		if !errors.As(err, &ar) || ar.Pending.Kind != PendingContract {
			t.Fatalf("the first call under a budget = %v, want the contract's approval", err)
		}
		if err := s.Decide(ctx, ar.Pending.ID, Decision{Approve: true, By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("calls", func(t *testing.T) {
		s, obs := newTestSet(t, "alice", Strategy{Kind: BudgetBased, Budget: Budget{Calls: 2}}, nil)
		approve(s)
		for i := range 2 {
			if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/a"))); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		_, err := s.Call(ctx, req("touch", touch(Read, "file:notes/a")))
		if !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "capability probe: 2 of 2 calls used") {
			t.Fatalf("the third call = %v, want ErrBudgetExhausted saying 2 of 2 calls", err)
		}
		if got := obs.outcomes(); got[len(got)-1] != OutcomeExhausted {
			t.Errorf("observed %v", got)
		}
		// A new budget starts unspent, and needs no new approval.
		if err := s.SetStrategy(ctx, "probe", "", Strategy{Kind: BudgetBased, Budget: Budget{Calls: 1}}, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/a"))); err != nil {
			t.Errorf("after a new budget: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		s, _ := newTestSet(t, "alice", Strategy{Kind: BudgetBased, Budget: Budget{Bytes: 100}}, nil)
		approve(s)
		charge := func(n int) error {
			_, err := s.Call(ctx, req("touch", fmt.Sprintf(`{"access":"reads","resource":"file:notes/a","bytes":%d}`, n)))
			return err
		}
		if err := charge(60); err != nil {
			t.Fatal(err)
		}
		if err := charge(60); !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "60 of 100 bytes") {
			t.Errorf("60 more bytes = %v, want ErrBudgetExhausted", err)
		}
		if err := charge(40); err != nil {
			t.Errorf("the last 40 bytes: %v", err)
		}
		if err := charge(1); !errors.Is(err, ErrBudgetExhausted) {
			t.Errorf("a call with none left = %v, want ErrBudgetExhausted", err)
		}
	})
	t.Run("files", func(t *testing.T) {
		s, _ := newTestSet(t, "alice", Strategy{Kind: BudgetBased, Budget: Budget{Files: 2}}, nil)
		approve(s)
		for _, f := range []string{"file:notes/a", "file:notes/b", "file:notes/a"} {
			if _, err := s.Call(ctx, req("touch", touch(Write, f))); err != nil {
				t.Fatalf("writing %s: %v", f, err)
			}
		}
		if _, err := s.Call(ctx, req("touch", touch(Write, "file:notes/c"))); !errors.Is(err, ErrBudgetExhausted) {
			t.Errorf("a third file = %v, want ErrBudgetExhausted", err)
		}
		if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/c"))); err != nil {
			t.Errorf("reading is not writing: %v", err)
		}
		if u := s.Installed()[1].Usage[""]; !slices.Equal(u.Files, []string{"file:notes/a", "file:notes/b"}) {
			t.Errorf("usage = %+v", u)
		}
	})
	t.Run("per session", func(t *testing.T) {
		s, _ := newTestSet(t, "alice", Strategy{Kind: BudgetBased, Budget: Budget{Calls: 1}}, nil)
		approve(s)
		if err := s.SetStrategy(ctx, "probe", "ctx-9", Strategy{Kind: BudgetBased, Budget: Budget{Calls: 1}}, "alice"); err != nil {
			t.Fatal(err)
		}
		in := func(session string) error {
			r := req("touch", touch(Read, "file:notes/a"))
			r.Session = session
			_, err := s.Call(ctx, r)
			return err
		}
		if err := in(""); err != nil {
			t.Fatal(err)
		}
		if err := in("ctx-9"); err != nil {
			t.Fatalf("the session's own budget: %v", err)
		}
		if err := in("ctx-9"); !errors.Is(err, ErrBudgetExhausted) {
			t.Errorf("the session's second call = %v", err)
		}
		if err := in("ctx-other"); !errors.Is(err, ErrBudgetExhausted) {
			t.Errorf("another session shares the set's budget, spent: %v", err)
		}
	})
}

func TestAuditOnly(t *testing.T) {
	t.Parallel()
	audit := NewMemoryAudit(0)
	alice, _ := newTestSet(t, "alice", Strategy{Kind: AuditOnly}, audit)
	bob, _ := newTestSet(t, "bob", Strategy{Kind: AuditOnly}, audit)
	ctx := t.Context()
	r := req("touch", touch(Read, "file:notes/diary"))
	r.Session, r.Origin = "ctx-1", Origin{Kind: OriginRule, Name: "look-up", Task: "t1"}
	if _, err := alice.Call(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Call(ctx, req("touch", touch(Read, "file:notes/bob"))); err != nil {
		t.Fatal(err)
	}
	recs, _ := alice.Audit(ctx, AuditQuery{Principal: "bob", All: true}) // a set reads its own only
	if len(recs) != 2 {
		t.Fatalf("alice's records = %+v", recs)
	}
	got := recs[1]
	got.Time, got.Duration = got.Time.UTC(), 0
	if got.Outcome != OutcomeOK || got.Principal != "alice" || got.Session != "ctx-1" || got.Origin != r.Origin ||
		got.Args != `{"access":"reads","resource":"file:notes/diary"}` || !slices.Equal(got.Accessed, []string{"reads file:notes/diary"}) ||
		got.Strategy.Kind != AuditOnly || got.Capability != "probe" || got.Method != "touch" {
		t.Errorf("alice's call record = %+v", got)
	}
	for _, rec := range recs {
		if strings.Contains(rec.Args, "bob") {
			t.Errorf("alice reads bob's record %+v", rec)
		}
	}
	all, _ := audit.Records(ctx, AuditQuery{All: true})
	if len(all) != 4 {
		t.Errorf("the operator reads %d records, want 4", len(all))
	}
	bobs, _ := audit.Records(ctx, AuditQuery{Principal: "bob", Capability: "probe", After: all[1].Seq})
	if len(bobs) != 1 || bobs[0].Principal != "bob" || bobs[0].Outcome != OutcomeOK {
		t.Errorf("bob's records after %d = %+v", all[1].Seq, bobs)
	}
}

func TestRevocationReachesEveryHolder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := probe(t, Contract{Reads: []string{"*"}})
	cat := NewCatalog()
	if err := cat.Add(Offering(root, Strategies{Minimum: PreApproved, Recommended: PreApproved})); err != nil {
		t.Fatal(err)
	}
	var sets []*Set
	for _, p := range []string{"alice", "bob"} {
		s := NewSet(&SetOptions{Principal: p, Catalog: cat})
		defer s.Close()
		if _, err := s.Call(ctx, Request{Capability: "loader", Method: "install", Args: json.RawMessage(`{"name":"probe"}`),
			Origin: Origin{Kind: OriginModel}}); err != nil {
			t.Fatal(err)
		}
		sets = append(sets, s)
	}
	// Uninstalling alice's copy stops a call of hers in flight, and leaves bob's alone.
	ch := make(chan struct{})
	started.Store("alice-slow", ch)
	done := make(chan error, 1)
	go func() {
		_, err := sets[0].Call(ctx, Request{Capability: "probe", Method: "slow", Session: "alice-slow"})
		done <- err
	}()
	<-ch
	if err := sets[0].Uninstall(ctx, "probe", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrRevoked) {
		t.Errorf("alice's call in flight = %v, want ErrRevoked", err)
	}
	if _, err := sets[1].Call(ctx, req("touch", touch(Read, "x:y"))); err != nil {
		t.Errorf("bob's call = %v", err)
	}
	// A capability bob lends (to a sub-agent) dies with his copy; revoking the operator's
	// capability revokes his copy.
	lent, err := sets[1].Lend("probe", Restrictions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	root.Revoke(errors.New("withdrawn"))
	if _, err := sets[1].Call(ctx, req("touch", touch(Read, "x:y"))); !errors.Is(err, ErrRevoked) {
		t.Errorf("bob's call after the operator revoked it = %v, want ErrRevoked", err)
	}
	if lent.Err() == nil {
		t.Error("the capability bob lent outlived his copy")
	}
	if h := sets[1].Installed()[1]; !strings.Contains(h.Revoked, "withdrawn") {
		t.Errorf("Installed() = %+v, want it revoked", h)
	}
	for _, tl := range sets[1].Tools() {
		if tl.Capability == "probe" {
			t.Errorf("a revoked capability is offered to the model: %+v", tl)
		}
	}
}

func TestSetClose(t *testing.T) {
	t.Parallel()
	s, _ := newTestSet(t, "alice", Strategy{Kind: PreApproved}, nil)
	lent, _ := s.Lend("probe", Restrictions{})
	s.Close()
	s.Close()
	if _, err := s.Call(t.Context(), req("touch", touch(Read, "file:notes/a"))); !errors.Is(err, ErrSetClosed) {
		t.Errorf("a call after Close = %v, want ErrSetClosed", err)
	}
	if !errors.Is(lent.Err(), ErrRevoked) {
		t.Errorf("a lent capability after Close: %v, want revoked", lent.Err())
	}
}

func TestSetStrategyBounds(t *testing.T) {
	t.Parallel()
	s := NewSet(nil)
	defer s.Close()
	ctx := t.Context()
	c := probe(t, Contract{})
	if err := s.Install(ctx, c, Grant{Strategy: Strategy{Kind: PreApproved}, Minimum: ContractBased}); !errors.Is(err, ErrBadStrategy) {
		t.Errorf("installing below the minimum = %v, want ErrBadStrategy", err)
	}
	if err := s.Install(ctx, c, Grant{Strategy: Strategy{Kind: ContractBased}, Minimum: ContractBased}); err != nil {
		t.Fatal(err)
	}
	if err := s.Install(ctx, c, Grant{Strategy: Strategy{Kind: ContractBased}}); !errors.Is(err, ErrInstalled) {
		t.Errorf("installing twice = %v, want ErrInstalled", err)
	}
	for _, st := range []Strategy{{Kind: AuditOnly}, {Kind: "yolo"}, {Kind: BudgetBased}, {Kind: ContractBased, Budget: Budget{Calls: 1}}} {
		if err := s.SetStrategy(ctx, "probe", "", st, "alice"); !errors.Is(err, ErrBadStrategy) {
			t.Errorf("SetStrategy(%+v) = %v, want ErrBadStrategy", st, err)
		}
	}
	if err := s.SetStrategy(ctx, "loader", "", Strategy{Kind: CallByCall}, "alice"); !errors.Is(err, ErrBadStrategy) {
		t.Errorf("SetStrategy(loader) = %v, want ErrBadStrategy", err)
	}
	if err := s.SetStrategy(ctx, "nope", "", Strategy{Kind: CallByCall}, "alice"); !errors.Is(err, ErrNotHeld) {
		t.Errorf("SetStrategy(nope) = %v, want ErrNotHeld", err)
	}
}

func TestParseStrategy(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"pre-approved", "audit-only", "contract", "call-by-call", "budget:calls=10", "budget:calls=10,bytes=1048576,files=3"} {
		st, err := ParseStrategy(s)
		if err != nil || st.String() != s {
			t.Errorf("ParseStrategy(%q) = %v, %v; String() = %q", s, st, err, st.String())
		}
	}
	for _, s := range []string{"", "budget", "budget:", "budget:calls=0", "budget:calls=-1", "budget:time=3", "contract:calls=3", "yes"} {
		if _, err := ParseStrategy(s); !errors.Is(err, ErrBadStrategy) {
			t.Errorf("ParseStrategy(%q) = %v, want ErrBadStrategy", s, err)
		}
	}
}

func TestPendingAreBounded(t *testing.T) {
	t.Parallel()
	s := NewSet(&SetOptions{MaxPending: 3})
	defer s.Close()
	ctx := t.Context()
	if err := s.Install(ctx, probe(t, Contract{Reads: []string{"*"}}), Grant{Strategy: Strategy{Kind: CallByCall}}); err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range 10 {
		_, err := s.Call(ctx, req("touch", touch(Read, fmt.Sprintf("x:%d", i))))
		var ar *ApprovalRequired
		if !errors.As(err, &ar) {
			t.Fatal(err)
		}
		if i == 0 {
			first = ar.Pending.ID
		}
	}
	if n := len(s.Pending()); n != 3 {
		t.Errorf("%d pending, want 3", n)
	}
	if err := s.Decide(ctx, first, Decision{Approve: true, By: "alice"}); !errors.Is(err, ErrNoPending) {
		t.Errorf("deciding a dropped approval = %v, want ErrNoPending", err)
	}
}

// Many goroutines calling, deciding and installing at once: the race detector's test.
func TestSetConcurrency(t *testing.T) {
	t.Parallel()
	s, _ := newTestSet(t, "alice", Strategy{Kind: BudgetBased, Budget: Budget{Calls: 1000, Bytes: 1 << 20}}, nil)
	ctx := context.Background()
	_, err := s.Call(ctx, req("touch", touch(Read, "file:notes/x")))
	var ar *ApprovalRequired
	if !errors.As(err, &ar) {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				_, _ = s.Call(ctx, req("touch", fmt.Sprintf(`{"access":"writes","resource":"file:notes/%d-%d","bytes":10}`, i, j)))
				_ = s.Installed()
				_ = s.Tools()
			}
		})
	}
	wg.Go(func() { _ = s.Decide(ctx, ar.Pending.ID, Decision{Approve: true, By: "alice"}) })
	wg.Go(func() { _ = s.SetStrategy(ctx, "probe", "ctx", Strategy{Kind: PreApproved}, "alice") })
	wg.Wait()
	u := s.Installed()[1].Usage[""]
	if u.Calls > 400 || u.Bytes != 10*u.Calls {
		t.Errorf("usage = %+v: every call charged 10 bytes once", u)
	}
}

func TestMemoryAuditKeepsTheLast(t *testing.T) {
	t.Parallel()
	a := NewMemoryAudit(3)
	ctx := t.Context()
	for i := range 10 {
		_ = a.Append(ctx, Record{Principal: "alice", Capability: fmt.Sprint(i)})
		_ = a.Append(ctx, Record{Principal: "bob", Capability: fmt.Sprint(i)})
	}
	recs, _ := a.Records(ctx, AuditQuery{Principal: "alice", Limit: 100})
	var got []string
	for _, r := range recs {
		got = append(got, r.Capability)
	}
	if !slices.Equal(got, []string{"7", "8", "9"}) {
		t.Errorf("alice's records: %q, want the last 3", got)
	}
	if all, _ := a.Records(ctx, AuditQuery{All: true, Limit: 100}); len(all) != 6 {
		t.Errorf("every record: %d, want 6", len(all))
	}
}
