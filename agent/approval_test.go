package agent

import (
	"errors"
	"strings"
	"testing"
)

// gated is the notes policy with replies (and forgetting) held for a human's approval.
func gated(edits int) *Policy {
	pol := Notes()
	pol.Limits.Approval = []Action{Reply, Forget}
	pol.Limits.MaxEdits = edits
	return pol
}

func review(t *testing.T, a *Agent, id string) Review {
	t.Helper()
	v, err := a.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Reviews {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("View().Reviews = %+v, want %s", v.Reviews, id)
	return Review{}
}

func TestApprovalAppliesOnlyAfterApproval(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", &Options{Policy: gated(0)})
	hello := say(t, a, "hello").Observation
	d, err := a.Propose(t.Context(), Proposal{Op: OpAdd, Rule: shout, Justification: "users greet", Evidence: []string{hello}})
	if err != nil || d.Pending == "" || d.Version != 1 || len(d.Diff) != 1 {
		t.Fatalf("Propose(gated) = %+v, %v, want pending at version 1 with its replay", d, err)
	}
	if got := say(t, a, "hello").Reply; strings.Contains(got, "Hello!") {
		t.Errorf("a pending proposal is in force: hello → %q", got)
	}
	if r := review(t, a, d.Pending); r.Status != ReviewPending || r.Base != 1 || r.Proposal.Rule.Name != "greet" {
		t.Errorf("review = %+v, want pending on version 1", r)
	}
	if v, _ := a.View(t.Context()); v.Version != 1 || len(v.History) != 1 {
		t.Errorf("while pending: version %d, %d versions, want 1, 1", v.Version, len(v.History))
	}

	ad, err := a.Approve(t.Context(), d.Pending, "alice")
	if err != nil || ad.Version != 2 || ad.Pending != "" {
		t.Fatalf("Approve() = %+v, %v, want version 2", ad, err)
	}
	if got := say(t, a, "hello").Reply; !strings.Contains(got, "Hello!") {
		t.Errorf("after approval hello → %q", got)
	}
	v, _ := a.View(t.Context())
	if h := v.History[len(v.History)-1]; v.Version != 2 || h.Approver != "alice" || h.Review != d.Pending || h.Proposal == nil {
		t.Errorf("after approval: version %d, last version %+v, want 2 approved by alice", v.Version, h)
	}
	if r := review(t, a, d.Pending); r.Status != ReviewApproved || r.Reviewer != "alice" || r.Version != 2 || r.Decided.IsZero() {
		t.Errorf("review = %+v, want approved by alice as version 2", r)
	}

	for name, err := range map[string]error{
		"approve twice":     second(a.Approve(t.Context(), d.Pending, "bob")),
		"reject approved":   second(a.Reject(t.Context(), d.Pending, "bob", "too late")),
		"unknown approve":   second(a.Approve(t.Context(), "r99", "bob")),
		"unknown reject":    second(a.Reject(t.Context(), "r99", "bob", "no")),
		"no approver":       second(a.Approve(t.Context(), d.Pending, " ")),
		"no rejection why":  second(a.Reject(t.Context(), d.Pending, "bob", "")),
		"no rejection name": second(a.Reject(t.Context(), d.Pending, "", "no")),
	} {
		want := map[string]error{"approve twice": ErrReviewed, "reject approved": ErrReviewed,
			"unknown approve": ErrNoReview, "unknown reject": ErrNoReview}[name]
		if err == nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	if v, _ := a.View(t.Context()); v.Version != 2 || len(v.History) != 2 {
		t.Errorf("the refused calls changed the policy: version %d, %d versions", v.Version, len(v.History))
	}
}

func second[T any](_ T, err error) error { return err }

func TestRejectedProposalIsNeverApplied(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", &Options{Policy: gated(0)})
	hello := say(t, a, "hello").Observation
	d, err := a.Propose(t.Context(), Proposal{Op: OpAdd, Rule: shout, Justification: "users greet", Evidence: []string{hello}})
	if err != nil || d.Pending == "" {
		t.Fatalf("Propose(gated) = %+v, %v, want pending", d, err)
	}
	if _, err := a.Reject(t.Context(), d.Pending, "bob", "we do not shout"); err != nil {
		t.Fatalf("Reject() = %v", err)
	}
	r := review(t, a, d.Pending)
	if r.Status != ReviewRejected || r.Reviewer != "bob" || r.Reason != "we do not shout" || r.Version != 0 || r.Decided.IsZero() {
		t.Errorf("review = %+v, want rejected by bob, with why", r)
	}
	if _, err := a.Approve(t.Context(), d.Pending, "alice"); !errors.Is(err, ErrReviewed) || !strings.Contains(err.Error(), "rejected by bob") {
		t.Errorf("Approve(rejected) = %v, want ErrReviewed naming bob", err)
	}
	if got := say(t, a, "hello").Reply; strings.Contains(got, "Hello!") {
		t.Errorf("a rejected proposal is in force: hello → %q", got)
	}
	if v, _ := a.View(t.Context()); v.Version != 1 || len(v.History) != 1 {
		t.Errorf("after a rejection: version %d, %d versions, want 1, 1", v.Version, len(v.History))
	}
}

// Which proposals are held: those whose new or old rule has a gated action; the setting itself
// cannot be proposed away.
func TestApprovalClassesAndTheirFreeze(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", &Options{Policy: gated(0)})
	hello := say(t, a, "hello").Observation
	say(t, a, "remember a is 1")
	forget := say(t, a, "forget a").Observation
	ungated := Rule{Name: "greet", When: `command == "hello"`, Action: Adopt,
		Params: map[string]string{"goal": `"greet back"`}, Reason: "users greet"}
	tests := []struct {
		name    string
		p       Proposal
		pending bool
		err     error
	}{
		{"drop the approval class", Proposal{Op: OpRemove, Rule: Rule{Name: "limits.approval"},
			Justification: "approval is slow", Evidence: []string{hello}}, false, ErrFrozen},
		{"replace the approval class", Proposal{Op: OpReplace, Rule: Rule{Name: "limits.approval", When: "true", Action: Reply,
			Params: map[string]string{"text": `""`}}, Justification: "approval is slow", Evidence: []string{hello}}, false, ErrFrozen},
		{"ungated action applies at once", Proposal{Op: OpAdd, Rule: ungated, Justification: "j", Evidence: []string{hello}}, false, nil},
		{"replacing with a gated action is held", Proposal{Op: OpReplace, Rule: shout, Justification: "j", Evidence: []string{hello}}, true, nil},
		{"removing a gated rule is held", Proposal{Op: OpRemove, Rule: Rule{Name: "forget"}, Justification: "j", Evidence: []string{forget}}, true, nil},
	}
	for _, tc := range tests {
		d, err := a.Propose(t.Context(), tc.p)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) || (d.Pending != "") != tc.pending {
			t.Errorf("%s: Propose() = %+v, %v, want pending %v, error %v", tc.name, d, err, tc.pending, tc.err)
		}
	}
	if v, _ := a.View(t.Context()); v.Version != 2 || len(v.Reviews) != 2 || v.Policy.Limits.Approval == nil {
		t.Errorf("version %d, reviews %+v, want 2 and two pending", v.Version, v.Reviews)
	}

	bad := gated(0)
	bad.Limits.Approval = append(bad.Limits.Approval, "revize")
	if _, err := New(t.Context(), "typo", &Options{Policy: bad}); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("New(approval of an unknown action) = %v, want ErrInvalidRule", err)
	}
}

// Pending proposals count toward nothing; approval re-runs the checks against the policy then in
// force, and a failed re-check leaves the review pending.
func TestStaleProposalIsRecheckedAtApproval(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", &Options{Policy: gated(2)})
	hello := say(t, a, "hello").Observation
	p := Proposal{Op: OpAdd, Rule: shout, Justification: "users greet", Evidence: []string{hello}}
	var ids []string
	for range 3 { // more than MaxEdits: pending proposals do not count toward the rate limit
		d, err := a.Propose(t.Context(), p)
		if err != nil || d.Pending == "" {
			t.Fatalf("Propose() = %+v, %v, want pending", d, err)
		}
		ids = append(ids, d.Pending)
	}
	if _, err := a.Approve(t.Context(), ids[0], "alice"); err != nil {
		t.Fatalf("Approve(%s) = %v", ids[0], err)
	}
	// The policy changed: greet exists now, so the same proposal no longer holds.
	if _, err := a.Approve(t.Context(), ids[1], "alice"); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "exists") {
		t.Errorf("Approve(stale) = %v, want rejected: the rule exists", err)
	}
	if r := review(t, a, ids[1]); r.Status != ReviewPending {
		t.Errorf("after a failed re-check the review is %s, want pending", r.Status)
	}
	// After a rollback it holds again, and counts toward the rate limit once applied.
	if _, err := a.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d, err := a.Approve(t.Context(), ids[1], "alice"); err != nil || d.Version != 3 {
		t.Fatalf("Approve(%s) after rollback = %+v, %v, want version 3", ids[1], d, err)
	}
	if _, err := a.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Approve(t.Context(), ids[2], "alice"); !errors.Is(err, ErrRateLimited) {
		t.Errorf("Approve(third) = %v, want ErrRateLimited: two approved edits spent the budget", err)
	}
	if _, err := a.Reject(t.Context(), ids[2], "alice", "rate limited"); err != nil {
		t.Errorf("Reject(third) = %v", err)
	}
}
