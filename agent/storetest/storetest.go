// Package storetest is the behaviour suite every agent.Store must pass.
package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/a2awebcap/a2awebcap/agent"
)

// Run checks the agent.Store that open returns (a fresh, empty one per call).
func Run(t *testing.T, open func(t *testing.T) agent.Store) {
	t.Run("ObservationsAreAppendOnlyAndPerAgent", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		o1 := agent.Observation{ID: "o1", Seq: 1, Time: at, Kind: "message", Source: agent.Source{Kind: agent.SourceUser},
			Context: agent.Context{Task: "t", Session: "s", Turn: 1}, Text: "hello", Data: map[string]string{"k": "v"}}
		o2 := agent.Observation{ID: "o2", Seq: 2, Time: at, Kind: "tool-result", Source: agent.Source{Kind: agent.SourceTool, Name: "clock"}, Text: "noon"}
		for _, o := range []agent.Observation{o1, o2} {
			if err := s.Append(ctx, "a", o); err != nil {
				t.Fatalf("Append(%s) = %v", o.ID, err)
			}
		}
		if err := s.Append(ctx, "a", o1); !errors.Is(err, agent.ErrDuplicateObservation) {
			t.Errorf("Append(o1 again) = %v, want ErrDuplicateObservation", err)
		}
		if err := s.Append(ctx, "b", o1); err != nil {
			t.Errorf("Append(o1 for another agent) = %v", err)
		}
		got, err := s.Observations(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.Observation{o1, o2}, got); diff != "" {
			t.Errorf("Observations(a) (-want +got):\n%s", diff)
		}
		if got, _ := s.Observations(ctx, "nobody"); len(got) != 0 {
			t.Errorf("Observations(nobody) = %v, want none", got)
		}
	})
	t.Run("BeliefsKeepOrderAndUpdateInPlace", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		b1 := agent.Belief{ID: "b1", Subject: "sky", Value: "blue", Confidence: 0.9, Status: agent.StatusActive, Created: at, Updated: at,
			Provenance: agent.Provenance{Source: agent.Source{Kind: agent.SourceUser}, Observations: []string{"o1"}, Rule: "r", Reason: "told"}}
		b2 := b1
		b2.ID, b2.Value, b2.Supersedes = "b2", "green", "b1"
		for _, b := range []agent.Belief{b1, b2} {
			if err := s.SaveBelief(ctx, "a", b); err != nil {
				t.Fatal(err)
			}
		}
		b1.Status, b1.SupersededBy = agent.StatusSuperseded, "b2"
		if err := s.SaveBelief(ctx, "a", b1); err != nil {
			t.Fatal(err)
		}
		got, err := s.Beliefs(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.Belief{b1, b2}, got); diff != "" {
			t.Errorf("Beliefs(a) (-want +got):\n%s", diff)
		}
	})
	t.Run("GoalsKeepOrderAndUpdateInPlace", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		g1 := agent.Goal{ID: "g1", Text: "learn the capitals", Status: agent.GoalOpen, Created: at, Updated: at,
			Provenance: agent.Provenance{Source: agent.Source{Kind: agent.SourceUser}, Observations: []string{"o1"}, Rule: "r", Reason: "asked"}}
		g2 := g1
		g2.ID, g2.Text = "g2", "tidy up"
		for _, g := range []agent.Goal{g1, g2} {
			if err := s.SaveGoal(ctx, "a", g); err != nil {
				t.Fatal(err)
			}
		}
		g1.Status = agent.GoalAchieved
		if err := s.SaveGoal(ctx, "a", g1); err != nil {
			t.Fatal(err)
		}
		got, err := s.Goals(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.Goal{g1, g2}, got); diff != "" {
			t.Errorf("Goals(a) (-want +got):\n%s", diff)
		}
	})
	t.Run("PoliciesAreAppendOnly", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		if vs, cur, err := s.Policies(ctx, "a"); err != nil || len(vs) != 0 || cur != 0 {
			t.Fatalf("Policies(new agent) = %v, %d, %v, want none", vs, cur, err)
		}
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		rule := agent.Rule{Name: "r", When: "true", Action: agent.Reply, Params: map[string]string{"text": `"x"`}, Reason: "why"}
		v1 := agent.PolicyVersion{Version: 1, Rules: []agent.Rule{rule}, Applied: at}
		v2 := agent.PolicyVersion{Version: 2, Applied: at.Add(time.Second),
			Proposal: &agent.Proposal{Op: agent.OpRemove, Rule: agent.Rule{Name: "r"}, Justification: "j", Evidence: []string{"o1"}}}
		for _, v := range []agent.PolicyVersion{v1, v2} {
			if err := s.AddPolicy(ctx, "a", v); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.AddPolicy(ctx, "a", v1); !errors.Is(err, agent.ErrDuplicatePolicy) {
			t.Errorf("AddPolicy(v1 again) = %v, want ErrDuplicatePolicy", err)
		}
		for _, v := range []int{2, 1} {
			if err := s.SetPolicy(ctx, "a", v); err != nil {
				t.Fatal(err)
			}
		}
		vs, cur, err := s.Policies(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.PolicyVersion{v1, v2}, vs); diff != "" || cur != 1 {
			t.Errorf("Policies(a) = version %d (-want +got):\n%s", cur, diff)
		}
	})
	t.Run("AnAgentKeepsItsPolicyVersions", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		start := func() *agent.Agent {
			a, err := agent.New(t.Context(), "p", &agent.Options{Policy: agent.Notes(), Store: s})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		a := start()
		hello, err := a.Ask(t.Context(), agent.UserText("hello"))
		if err != nil {
			t.Fatal(err)
		}
		greet := agent.Rule{Name: "greet", When: `command == "hello"`, Action: agent.Reply,
			Params: map[string]string{"text": `"Hi."`}, Reason: "users greet"}
		if _, err := a.Propose(t.Context(), agent.Proposal{Op: agent.OpAdd, Rule: greet, Justification: "j",
			Evidence: []string{hello.Observation}}); err != nil {
			t.Fatal(err)
		}
		_ = a.Close()
		a = start()
		v, _ := a.View(t.Context())
		if v.Version != 2 || len(v.History) != 2 || v.History[1].Proposal == nil || v.History[1].Proposal.Rule.Name != "greet" {
			t.Fatalf("after a restart: version %d, history %+v", v.Version, v.History)
		}
		if _, err := a.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		_ = a.Close()
		a = start()
		defer a.Close()
		if v, _ := a.View(t.Context()); v.Version != 1 || len(v.History) != 2 {
			t.Errorf("after a rollback and a restart: version %d, %d versions", v.Version, len(v.History))
		}
	})
	t.Run("AnAgentReloadsFromIt", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a, err := agent.New(t.Context(), "n", &agent.Options{Policy: agent.Notes(), Store: s})
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"remember x is 1", "actually x is 2"} {
			if _, err := a.Ask(t.Context(), agent.UserText(text)); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := a.View(t.Context())
		_ = a.Close()
		b, err := agent.New(t.Context(), "n", &agent.Options{Policy: agent.Notes(), Store: s})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		after, _ := b.View(t.Context())
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("View after reload (-before +after):\n%s", diff)
		}
	})
	t.Run("WorkingStateSurvivesARestart", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		WorkingStateSurvivesARestart(t, func(*testing.T) agent.Store { return s }, func(agent.Store) {})
	})
	t.Run("ReviewsKeepOrderAndUpdateInPlace", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := t.Context()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		p := agent.Proposal{Op: agent.OpAdd, Rule: agent.Rule{Name: "r", When: "true", Action: agent.Forget,
			Params: map[string]string{"subject": `"x"`}, Reason: "why"}, Justification: "j", Evidence: []string{"o1"}}
		r1 := agent.Review{ID: "r1", Proposal: p, Status: agent.ReviewPending, Base: 1, Proposed: at}
		r2 := r1
		r2.ID = "r2"
		for _, r := range []agent.Review{r1, r2} {
			if err := s.SaveReview(ctx, "a", r); err != nil {
				t.Fatal(err)
			}
		}
		r1.Status, r1.Reviewer, r1.Reason, r1.Decided = agent.ReviewRejected, "bob", "no", at.Add(time.Minute)
		if err := s.SaveReview(ctx, "a", r1); err != nil {
			t.Fatal(err)
		}
		got, err := s.Reviews(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.Review{r1, r2}, got); diff != "" {
			t.Errorf("Reviews(a) (-want +got):\n%s", diff)
		}
		if got, _ := s.Reviews(ctx, "b"); len(got) != 0 {
			t.Errorf("Reviews(b) = %v, want none", got)
		}
	})
	t.Run("PendingProposalSurvivesARestart", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		PendingProposalSurvivesARestart(t, func(*testing.T) agent.Store { return s }, func(agent.Store) {})
	})
}

// PendingProposalSurvivesARestart checks that a proposal held for approval is still pending, and
// still not in force, after closing the agent (and, with reopen, its store), and that approving
// it then applies it and records the approver across another restart.
func PendingProposalSurvivesARestart(t *testing.T, reopen func(*testing.T) agent.Store, closeStore func(agent.Store)) {
	t.Helper()
	ctx := t.Context()
	pol := agent.Notes()
	pol.Limits.Approval = []agent.Action{agent.Reply}
	s := reopen(t)
	start := func(s agent.Store) *agent.Agent {
		t.Helper()
		a, err := agent.New(ctx, "h", &agent.Options{Policy: pol, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ask := func(a *agent.Agent, text string) agent.Run {
		t.Helper()
		run, err := a.Ask(ctx, agent.UserText(text))
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	a := start(s)
	hello := ask(a, "hello")
	greet := agent.Rule{Name: "greet", When: `command == "hello"`, Action: agent.Reply,
		Params: map[string]string{"text": `"Hi."`}, Reason: "users greet"}
	d, err := a.Propose(ctx, agent.Proposal{Op: agent.OpAdd, Rule: greet, Justification: "j", Evidence: []string{hello.Observation}})
	if err != nil || d.Pending == "" {
		t.Fatalf("Propose() = %+v, %v, want pending", d, err)
	}
	before, _ := a.View(ctx)
	_ = a.Close()
	closeStore(s)

	s = reopen(t)
	a = start(s)
	after, _ := a.View(ctx)
	if diff := cmp.Diff(before.Reviews, after.Reviews); diff != "" || len(after.Reviews) != 1 || after.Version != 1 {
		t.Fatalf("after a restart: version %d, reviews (-before +after):\n%s", after.Version, diff)
	}
	if run := ask(a, "hello"); strings.Contains(run.Reply, "Hi.") {
		t.Errorf("a pending proposal is in force after a restart")
	}
	if _, err := a.Approve(ctx, d.Pending, "alice"); err != nil {
		t.Fatalf("Approve() after a restart = %v", err)
	}
	_ = a.Close()
	closeStore(s)

	s = reopen(t)
	a = start(s)
	defer a.Close()
	v, _ := a.View(ctx)
	if h := v.History[len(v.History)-1]; v.Version != 2 || h.Approver != "alice" || h.Review != d.Pending ||
		len(v.Reviews) != 1 || v.Reviews[0].Status != agent.ReviewApproved {
		t.Errorf("after approval and a restart: version %d, last version %+v, reviews %+v", v.Version, h, v.Reviews)
	}
	if run := ask(a, "hello"); !strings.Contains(run.Reply, "Hi.") {
		t.Errorf("after approval and a restart hello → %q, want Hi.", run.Reply)
	}
	if _, err := a.Approve(ctx, d.Pending, "bob"); !errors.Is(err, agent.ErrReviewed) {
		t.Errorf("Approve() again after a restart = %v, want ErrReviewed", err)
	}
}

// WorkingStateSurvivesARestart checks that an agent's working memory and pending questions
// survive closing the agent (and, with reopen, its store) and starting it again. reopen returns
// the store to use after closeStore closed the first one.
func WorkingStateSurvivesARestart(t *testing.T, reopen func(*testing.T) agent.Store, closeStore func(agent.Store)) {
	t.Helper()
	ctx := t.Context()
	s := reopen(t)
	a, err := agent.New(ctx, "w", &agent.Options{Policy: agent.Notes(), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(a *agent.Agent, task, text string) agent.Run {
		t.Helper()
		ev := agent.UserText(text)
		ev.Context.Task = task
		run, err := a.Ask(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	ask(a, "", "remember the sky is blue")
	ask(a, "", "remember the sky is green") // a contradiction: a working note
	if run := ask(a, "t1", "remember the sea"); run.Question != "What is the sea?" {
		t.Fatalf("question = %q", run.Question)
	}
	before, _ := a.View(ctx)
	if len(before.Working) != 1 {
		t.Fatalf("working memory before the restart = %+v, want one note", before.Working)
	}
	_ = a.Close()
	closeStore(s)

	s = reopen(t)
	b, err := agent.New(ctx, "w", &agent.Options{Policy: agent.Notes(), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	after, _ := b.View(ctx)
	if diff := cmp.Diff(before.Working, after.Working, cmpopts.IgnoreUnexported(agent.WorkingNote{})); diff != "" {
		t.Errorf("working memory after a restart (-before +after):\n%s", diff)
	}
	if run := ask(b, "t1", "green"); run.Reply != "Noted: the sea is green." {
		t.Errorf("the answer to the pending question = %q, want it stored", run.Reply)
	}
	// The note's uses survived too: two more make three, which promotes it.
	ask(b, "", "remember the sky is green")
	ask(b, "", "remember the sky is green")
	r, _ := b.Recall(ctx, agent.Query{Text: "sky"})
	if len(r.Beliefs) != 1 || r.Beliefs[0].Value != "green" {
		t.Errorf("beliefs about the sky = %+v, want the promoted note", r.Beliefs)
	}
}
