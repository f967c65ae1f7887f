package capability

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// loaderSet returns a set whose catalog offers the probe (minimum audit-only, default contract)
// and the clock (pre-approved).
func loaderSet(t *testing.T) (*Set, *observed) {
	t.Helper()
	root := probe(t, Contract{Reads: []string{"file:notes/*"}, Writes: []string{"file:notes/*"}})
	o := Offering(root, Strategies{Minimum: AuditOnly, Recommended: ContractBased})
	o.Manifest.Version = "1.2.0"
	cat := NewCatalog()
	for _, o := range []Offer{o, ClockOffer(nil)} {
		if err := cat.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	obs := &observed{}
	s := NewSet(&SetOptions{Principal: "alice", Catalog: cat, Observe: obs.add})
	t.Cleanup(s.Close)
	return s, obs
}

func loaderCall(ctx context.Context, s *Set, origin, method, args, approval string) (json.RawMessage, error) {
	return s.Call(ctx, Request{Capability: "loader", Method: method, Args: json.RawMessage(args),
		Origin: Origin{Kind: origin, Name: "alice"}, Approval: approval})
}

func TestLoaderListsAndShows(t *testing.T) {
	t.Parallel()
	s, _ := loaderSet(t)
	ctx := t.Context()
	out, err := loaderCall(ctx, s, OriginModel, "available", `{}`, "")
	if err != nil {
		t.Fatal(err)
	}
	var avail struct{ Capabilities []Entry }
	if err := json.Unmarshal(out, &avail); err != nil {
		t.Fatal(err)
	}
	if len(avail.Capabilities) != 2 || avail.Capabilities[0].Manifest.Name != "clock" || avail.Capabilities[1].Manifest.Name != "probe" {
		t.Fatalf("available = %s", out)
	}
	p := avail.Capabilities[1]
	if p.Manifest.Version != "1.2.0" || p.Default.Kind != ContractBased || p.Installed || p.Manifest.Strategy.Minimum != AuditOnly ||
		p.Manifest.Contract.Writes[0] != "file:notes/*" || len(p.Manifest.Methods) != 5 {
		t.Errorf("the probe's entry = %+v", p)
	}
	out, err = loaderCall(ctx, s, OriginModel, "show", `{"name":"probe"}`, "")
	if err != nil || !strings.Contains(string(out), `"writes":["file:notes/*"]`) {
		t.Errorf("show = %s, %v", out, err)
	}
	if _, err := loaderCall(ctx, s, OriginModel, "show", `{"name":"nope"}`, ""); !errors.Is(err, ErrNotHeld) {
		t.Errorf("show nope = %v, want ErrNotHeld", err)
	}
}

func TestLoaderInstallAsksTheUser(t *testing.T) {
	t.Parallel()
	s, obs := loaderSet(t)
	ctx := t.Context()
	args := `{"name":"probe","restrictions":{"contract":{"reads":["file:notes/public/*"]}}}`
	_, err := loaderCall(ctx, s, OriginModel, "install", args, "")
	var ar *ApprovalRequired
	if !errors.As(err, &ar) {
		t.Fatalf("the model installing = %v, want *ApprovalRequired", err)
	}
	p := ar.Pending
	if p.Kind != PendingInstall || p.Capability != "probe" || p.Strategy.Kind != ContractBased ||
		!slices.Equal(p.Contract.Reads, []string{"file:notes/public/*"}) || len(p.Contract.Writes) != 0 {
		t.Errorf("pending = %+v", p)
	}
	if !strings.Contains(p.Prompt(), "install the capability probe") {
		t.Errorf("Prompt() = %q", p.Prompt())
	}
	if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/public/a"))); !errors.Is(err, ErrNotHeld) {
		t.Errorf("before approval: %v, want ErrNotHeld", err)
	}
	if err := s.Decide(ctx, p.ID, Decision{Approve: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	// Another install, with other arguments, cannot ride on this approval.
	if _, err := loaderCall(ctx, s, OriginModel, "install", `{"name":"probe"}`, p.ID); !errors.Is(err, ErrNoPending) {
		t.Errorf("another install with %s = %v, want ErrNoPending", p.ID, err)
	}
	out, err := loaderCall(ctx, s, OriginModel, "install", args, p.ID)
	if err != nil {
		t.Fatalf("the approved install = %v", err)
	}
	var inst Installed
	if err := json.Unmarshal(out, &inst); err != nil || !inst.Approved || inst.Strategy.Kind != ContractBased {
		t.Errorf("install = %s, %v", out, err)
	}
	// Installed under contract, approved: calls inside the narrowed contract run at once.
	if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/public/a"))); err != nil {
		t.Errorf("a call inside: %v", err)
	}
	if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/private"))); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("a call outside the narrowed contract = %v, want ErrOutsideContract", err)
	}
	out, _ = loaderCall(ctx, s, OriginModel, "installed", `{}`, "")
	if !strings.Contains(string(out), `"name":"probe"`) || !strings.Contains(string(out), `"approvedBy":"alice"`) {
		t.Errorf("installed = %s", out)
	}
	if _, err := loaderCall(ctx, s, OriginModel, "uninstall", `{"name":"probe"}`, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, req("touch", touch(Read, "file:notes/public/a"))); !errors.Is(err, ErrNotHeld) {
		t.Errorf("after uninstall: %v, want ErrNotHeld", err)
	}
	want := []Outcome{OutcomeApproved, OutcomeInstalled, OutcomeRefused, OutcomeUninstalled}
	if got := obs.outcomes(); !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

func TestLoaderInstallRefused(t *testing.T) {
	t.Parallel()
	s, _ := loaderSet(t)
	ctx := t.Context()
	_, err := loaderCall(ctx, s, OriginRule, "install", `{"name":"probe"}`, "")
	var ar *ApprovalRequired
	if !errors.As(err, &ar) {
		t.Fatal(err)
	}
	if err := s.Decide(ctx, ar.Pending.ID, Decision{By: "alice", Reason: "too much"}); err != nil {
		t.Fatal(err)
	}
	if _, err := loaderCall(ctx, s, OriginRule, "install", `{"name":"probe"}`, ar.Pending.ID); !errors.Is(err, ErrDenied) {
		t.Errorf("the refused install = %v, want ErrDenied", err)
	}
	if len(s.Installed()) != 1 {
		t.Errorf("Installed() = %+v", s.Installed())
	}
}

func TestLoaderStrategies(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tests := []struct {
		name, origin, args string
		err                error
		strategy           StrategyKind
	}{
		{"the user, directly", OriginUser, `{"name":"probe"}`, nil, ContractBased},
		{"the user, looser", OriginUser, `{"name":"probe","strategy":"audit-only"}`, nil, AuditOnly},
		{"the user, below the minimum", OriginUser, `{"name":"probe","strategy":"pre-approved"}`, ErrBadStrategy, ""},
		{"the model, looser", OriginModel, `{"name":"probe","strategy":"audit-only"}`, ErrBadStrategy, ""},
		{"the model, stricter", OriginModel, `{"name":"probe","strategy":"call-by-call"}`, ErrApprovalRequired, ""},
		{"a bad strategy", OriginUser, `{"name":"probe","strategy":"budget"}`, ErrBadStrategy, ""},
		{"a wider contract", OriginUser, `{"name":"probe","restrictions":{"contract":{"reads":["*"]}}}`, ErrBadSpec, ""},
		{"a method it lacks", OriginUser, `{"name":"probe","restrictions":{"methods":["fly"]}}`, ErrBadSpec, ""},
		{"nothing offered", OriginUser, `{"name":"nope"}`, ErrNotHeld, ""},
		{"the model, pre-approved by the operator", OriginModel, `{"name":"clock"}`, nil, PreApproved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := loaderSet(t)
			_, err := loaderCall(ctx, s, tt.origin, "install", tt.args, "")
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("install %s = %v, want %v", tt.args, err, tt.err)
			}
			if err != nil {
				return
			}
			h := s.Installed()
			i := slices.IndexFunc(h, func(h Held) bool { return h.Name != "loader" })
			if len(h) != 2 || h[i].Strategy.Kind != tt.strategy || !h[i].Offered || h[i].Depth != 2 {
				t.Errorf("Installed() = %+v", h)
			}
		})
	}
}

func TestLoaderInstallTwice(t *testing.T) {
	t.Parallel()
	s, _ := loaderSet(t)
	ctx := t.Context()
	if _, err := loaderCall(ctx, s, OriginUser, "install", `{"name":"clock"}`, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := loaderCall(ctx, s, OriginUser, "install", `{"name":"clock"}`, ""); !errors.Is(err, ErrInstalled) {
		t.Errorf("installing twice = %v, want ErrInstalled", err)
	}
	if out, err := s.Call(ctx, Request{Capability: "clock", Method: "now"}); err != nil || !strings.Contains(string(out), `"unix":`) {
		t.Errorf("clock.now = %s, %v", out, err)
	}
}

func TestOffersAreChecked(t *testing.T) {
	t.Parallel()
	cat := NewCatalog()
	good := ClockOffer(nil)
	mutate := []func(o *Offer){
		func(o *Offer) { o.Manifest.Name = "Clock" },
		func(o *Offer) { o.Manifest.Version = "" },
		func(o *Offer) { o.Manifest.Strategy.Minimum = "sometimes" },
		func(o *Offer) { o.Manifest.Strategy = Strategies{Minimum: ContractBased, Recommended: PreApproved} },
		func(o *Offer) { o.Manifest.Contract.Reads = []string{"bad"} },
		func(o *Offer) { o.Manifest.Strategy.Minimum = ContractBased; o.Strategy = Strategy{Kind: AuditOnly} },
		func(o *Offer) { o.New = nil },
		func(o *Offer) { o.Manifest.Name = "loader" },
		func(o *Offer) { o.Manifest.Strategy.Recommended = BudgetBased },
	}
	for i, m := range mutate {
		o := good
		o.Manifest.Strategy = good.Manifest.Strategy
		m(&o)
		if err := cat.Add(o); err == nil {
			t.Errorf("%d: Add(%+v) accepted", i, o.Manifest)
		}
	}
	// An offer whose capability is wider than its manifest is refused at install.
	wide := Offering(probe(t, Contract{Reads: []string{"*"}}), Strategies{Minimum: PreApproved, Recommended: PreApproved})
	wide.Manifest.Contract = Contract{Reads: []string{"file:*"}}
	if err := cat.Add(wide); err != nil {
		t.Fatal(err)
	}
	s := NewSet(&SetOptions{Catalog: cat})
	defer s.Close()
	if _, err := loaderCall(t.Context(), s, OriginUser, "install", `{"name":"probe"}`, ""); !errors.Is(err, ErrBadManifest) {
		t.Errorf("installing a capability wider than its manifest = %v, want ErrBadManifest", err)
	}
}

// What an offer makes for one holder (a file system on the holder's own directory, say) is
// revoked with the holder's grant, so what it holds open is let go.
func TestMadeForOneHolderIsRevokedWithTheGrant(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var made []*Capability
	o := Offering(probe(t, Contract{}), Strategies{Minimum: PreApproved, Recommended: PreApproved})
	o.New = func(context.Context, Env) (*Capability, error) {
		c := probe(t, Contract{})
		made = append(made, c)
		return c, nil
	}
	cat := NewCatalog()
	if err := cat.Add(o); err != nil {
		t.Fatal(err)
	}
	s := NewSet(&SetOptions{Catalog: cat})
	for range 2 {
		if _, err := loaderCall(ctx, s, OriginUser, "install", `{"name":"probe"}`, ""); err != nil {
			t.Fatal(err)
		}
		if made[len(made)-1].Err() != nil {
			t.Fatal("revoked while installed")
		}
		if len(made) == 1 {
			if err := s.Uninstall(ctx, "probe", "alice"); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()
	for i, c := range made {
		if c.Err() == nil {
			t.Errorf("what the offer made (%d) outlived its grant", i+1)
		}
	}
}
