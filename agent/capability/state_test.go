package capability

import (
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// A set's state survives a restart: what was installed through the loader comes back from the
// catalog with its strategy, approval and budget spent; what the program installs gets its
// state back; approvals asked can still be decided and carried out.
func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := probe(t, Contract{Reads: []string{"file:notes/*"}, Writes: []string{"file:notes/*"}})
	cat := NewCatalog()
	if err := cat.Add(Offering(root, Strategies{Minimum: AuditOnly, Recommended: ContractBased})); err != nil {
		t.Fatal(err)
	}
	var changes atomic.Int64
	opts := func() *SetOptions {
		return &SetOptions{Principal: "alice", Catalog: cat, Changed: func() { changes.Add(1) }}
	}
	a := NewSet(opts())
	defer a.Close()
	if _, err := loaderCall(ctx, a, OriginUser, "install", `{"name":"probe","strategy":"budget:calls=3","restrictions":{"readOnly":true}}`, ""); err != nil {
		t.Fatal(err)
	}
	clock := Clock(nil)
	if err := a.Install(ctx, clock, Grant{Strategy: Strategy{Kind: ContractBased}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Call(ctx, req("touch", touch(Read, "file:notes/a"))); err != nil {
		t.Fatal(err)
	}
	_, err := a.Call(ctx, Request{Capability: "clock", Method: "now"})
	var ar *ApprovalRequired
	if !errors.As(err, &ar) {
		t.Fatal(err)
	}
	if changes.Load() < 3 {
		t.Errorf("Changed was called %d times", changes.Load())
	}
	st := a.State()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()

	var back State
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	b := NewSet(opts())
	defer b.Close()
	if err := b.Install(ctx, clock, Grant{Strategy: Strategy{Kind: ContractBased}}); err != nil {
		t.Fatal(err)
	}
	missing, err := b.Restore(ctx, back)
	if err != nil || len(missing) != 0 {
		t.Fatalf("Restore = %v, %v", missing, err)
	}
	h := b.Installed()
	i := slices.IndexFunc(h, func(h Held) bool { return h.Name == "probe" })
	if i < 0 || h[i].Strategy.String() != "budget:calls=3" || !h[i].Approved || h[i].Usage[""].Calls != 1 || !h[i].Restrictions.ReadOnly {
		t.Fatalf("the probe after Restore = %+v", h)
	}
	// Still read-only, and two calls left (a refused call counts).
	if _, err := b.Call(ctx, req("touch", touch(Write, "file:notes/a"))); !errors.Is(err, ErrOutsideContract) {
		t.Errorf("a write = %v, want ErrOutsideContract", err)
	}
	if _, err := b.Call(ctx, req("touch", touch(Read, "file:notes/a"))); err != nil {
		t.Errorf("the third call = %v", err)
	}
	if _, err := b.Call(ctx, req("touch", touch(Read, "file:notes/a"))); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("a fourth call = %v, want ErrBudgetExhausted", err)
	}
	// The approval asked before the restart is decided and carried out after it.
	if err := b.Decide(ctx, ar.Pending.ID, Decision{Approve: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Call(ctx, Request{Capability: "clock", Method: "now", Approval: ar.Pending.ID}); err != nil {
		t.Errorf("the clock after its approval = %v", err)
	}
	// What the catalog no longer offers, and what the program did not install, is missing.
	cat.Remove("probe")
	c := NewSet(opts())
	defer c.Close()
	missing, err = c.Restore(ctx, back)
	if err != nil || !slices.Equal(missing, []string{"clock", "probe"}) {
		t.Errorf("Restore = %v, %v; want clock and probe missing", missing, err)
	}
}
