package agent

import (
	"errors"
	"strings"
	"testing"
)

// shout is a rule that changes what the notes agent does on "hello": it greets back first.
var shout = Rule{Name: "greet", When: `command == "hello"`, Action: Reply,
	Params: map[string]string{"text": `"Hello!"`}, Reason: "users greet"}

func TestProposals(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "notes", nil)
	hello := say(t, a, "hello").Observation
	say(t, a, "remember a is 1")
	tests := []struct {
		name string
		p    Proposal
		want error
	}{
		{"axiom", Proposal{Op: OpReplace, Rule: Rule{Name: "safety", When: "false", Action: Reply, Params: map[string]string{"text": `""`}},
			Justification: "too strict", Evidence: []string{hello}}, ErrFrozen},
		{"validation rules", Proposal{Op: OpAdd, Rule: Rule{Name: "limits.cost", When: "true", Action: Reply, Params: map[string]string{"text": `""`}},
			Justification: "more room", Evidence: []string{hello}}, ErrFrozen},
		{"does not compile", Proposal{Op: OpAdd, Rule: Rule{Name: "x", When: `command ==`, Action: Reply, Params: map[string]string{"text": `"x"`}},
			Justification: "j", Evidence: []string{hello}}, ErrInvalidRule},
		{"does not type-check", Proposal{Op: OpAdd, Rule: Rule{Name: "x", When: `command`, Action: Reply, Params: map[string]string{"text": `"x"`}},
			Justification: "j", Evidence: []string{hello}}, ErrInvalidRule},
		{"unknown action", Proposal{Op: OpAdd, Rule: Rule{Name: "x", When: `true`, Action: "launch"},
			Justification: "j", Evidence: []string{hello}}, ErrInvalidRule},
		{"fails on replay", Proposal{Op: OpAdd, Rule: Rule{Name: "x", When: `data.missing == "y"`, Action: Reply, Params: map[string]string{"text": `"x"`}},
			Justification: "j", Evidence: []string{hello}}, ErrReplayFailed},
		{"changes nothing on its evidence", Proposal{Op: OpAdd, Rule: Rule{Name: "x", When: `command == "never"`, Action: Reply, Params: map[string]string{"text": `"x"`}},
			Justification: "j", Evidence: []string{hello}}, ErrReplayFailed},
		{"runs away", Proposal{Op: OpAdd, Rule: Rule{Name: "x", When: `[1,2,3,4,5,6,7,8,9,10].all(i, [1,2,3,4,5,6,7,8,9,10].all(j, [1,2,3,4,5,6,7,8,9,10].all(k, [1,2,3,4,5,6,7,8,9,10].all(l, text.size() >= 0))))`, Action: Reply, Params: map[string]string{"text": `"x"`}},
			Justification: "j", Evidence: []string{hello}}, ErrReplayFailed},
		{"no evidence", Proposal{Op: OpAdd, Rule: shout, Justification: "j"}, ErrRejected},
		{"unknown evidence", Proposal{Op: OpAdd, Rule: shout, Justification: "j", Evidence: []string{"o999"}}, ErrRejected},
		{"no justification", Proposal{Op: OpAdd, Rule: shout, Evidence: []string{hello}}, ErrRejected},
	}
	for _, tc := range tests {
		if _, err := a.Propose(t.Context(), tc.p); !errors.Is(err, tc.want) || !errors.Is(err, ErrRejected) {
			t.Errorf("%s: Propose() = %v, want %v", tc.name, err, tc.want)
		}
	}
	if v, _ := a.View(t.Context()); v.Version != 1 {
		t.Fatalf("rejections changed the policy to version %d", v.Version)
	}

	// A good proposal: put the greeting first.
	good := Proposal{Op: OpAdd, Rule: shout, Justification: "users say hello and get the help text", Evidence: []string{hello}}
	d, err := a.Propose(t.Context(), good)
	if err != nil {
		t.Fatalf("Propose(good) = %v", err)
	}
	if d.Version != 2 || d.Replayed != 2 || len(d.Diff) != 1 || d.Diff[0].Observation != hello ||
		!strings.Contains(strings.Join(d.Diff[0].After, ","), "greet: reply sent") {
		t.Errorf("Decision = %+v, want version 2, one difference on %s", d, hello)
	}
	if got := say(t, a, "hello").Reply; !strings.Contains(got, "Hello!") {
		t.Errorf("after the edit hello → %q", got)
	}
	if v, err := a.Rollback(t.Context()); err != nil || v != 1 {
		t.Fatalf("Rollback() = %d, %v, want 1", v, err)
	}
	if got := say(t, a, "hello").Reply; strings.Contains(got, "Hello!") {
		t.Errorf("after the rollback hello → %q", got)
	}
	if _, err := a.Rollback(t.Context()); !errors.Is(err, ErrNoHistory) {
		t.Errorf("Rollback() at version 1 = %v, want ErrNoHistory", err)
	}
}

func TestProposalsAreRateLimited(t *testing.T) {
	t.Parallel()
	pol := Notes()
	pol.Limits.MaxEdits = 1
	a := newNotes(t, "notes", &Options{Policy: pol})
	hello := say(t, a, "hello").Observation
	if _, err := a.Propose(t.Context(), Proposal{Op: OpAdd, Rule: shout, Justification: "j", Evidence: []string{hello}}); err != nil {
		t.Fatal(err)
	}
	_, err := a.Propose(t.Context(), Proposal{Op: OpRemove, Rule: Rule{Name: "greet"}, Justification: "j", Evidence: []string{hello}})
	if !errors.Is(err, ErrRateLimited) {
		t.Errorf("second edit = %v, want ErrRateLimited", err)
	}
}

// A rule that fails today can be fixed: only errors a proposal introduces reject it.
func TestProposalMayFixAFailingRule(t *testing.T) {
	t.Parallel()
	pol := &Policy{Rules: []Rule{{Name: "tag", When: `data.tag == "x"`, Action: Reply,
		Params: map[string]string{"text": `"tagged"`}, Reason: "tags"}}}
	a := newNotes(t, "tags", &Options{Policy: pol})
	run := say(t, a, "untagged")
	if !strings.Contains(run.Log[0].Text, "no such key") {
		t.Fatalf("log = %+v, want the rule's failure as a thought", run.Log)
	}
	fix := Rule{Name: "tag", When: `"tag" in data && data.tag == "x" || text == "untagged"`, Action: Reply,
		Params: map[string]string{"text": `"tagged"`}, Reason: "tags"}
	if _, err := a.Propose(t.Context(), Proposal{Op: OpReplace, Rule: fix, Justification: "it failed on untagged events",
		Evidence: []string{run.Observation}}); err != nil {
		t.Errorf("Propose(fix) = %v", err)
	}
}
