package agent

import (
	"context"
	"strings"
	"testing"
)

// A long message is judged whole by the axioms: padding a message past the cost a rule may
// spend on a short one does not get it past the safety axiom, and a message longer than the
// rules read at all is refused, not judged on a part of itself.
func TestLongMessagesAreJudgedWhole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, reply, failure string
	}{
		{"8 KiB secret", "remember the api key is SECRET123 " + strings.Repeat("pad ", 2_000), "I do not keep secrets", ""},
		{"60 KiB secret", strings.Repeat("pad ", 15_000) + "remember the password is hunter2", "I do not keep secrets", ""},
		{"60 KiB note", "remember the plan is " + strings.Repeat("step ", 12_000), "", ""},
		{"over the limit", "remember the plan is " + strings.Repeat("step ", 14_000), "", "bytes long; I read messages of at most 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := New(t.Context(), "x", &Options{Policy: Assistant()})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			run, _ := a.Ask(t.Context(), UserText(tc.text))
			for _, e := range run.Log {
				if e.Kind == EntryThought && strings.Contains(e.Text, "rule failed") {
					t.Errorf("a rule failed on a %d-byte message: %s", len(tc.text), e.Text)
				}
			}
			if !strings.Contains(run.Reply, tc.reply) {
				t.Errorf("Reply = %.80q, want it to contain %q", run.Reply, tc.reply)
			}
			if !strings.Contains(run.Failure, tc.failure) || (tc.failure == "") != (run.Failure == "") {
				t.Errorf("Failure = %q, want %q", run.Failure, tc.failure)
			}
			rec, err := a.Recall(t.Context(), Query{Text: "password api key plan"})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range rec.Beliefs {
				if strings.Contains(b.Value, "SECRET") || strings.Contains(b.Value, "hunter2") {
					t.Errorf("a secret was stored: %s = %.40s", b.Subject, b.Value)
				}
			}
			if wantStored := tc.name == "60 KiB note"; wantStored != (len(rec.Beliefs) == 1) {
				t.Errorf("Recall found %d beliefs, want the plan stored: %v", len(rec.Beliefs), wantStored)
			}
		})
	}
}

// An axiom that cannot be evaluated fails the run closed; an ordinary rule that cannot is
// skipped.
func TestAxiomErrorsFailClosed(t *testing.T) {
	t.Parallel()
	broken := Rule{Name: "broken", When: `data.missing == "x"`, Action: Reply, Params: map[string]string{"text": `"matched"`}, Reason: "test"}
	echo := Rule{Name: "echo", When: `true`, Action: Reply, Params: map[string]string{"text": `"echo " + text`}, Reason: "test"}
	for _, tc := range []struct {
		name    string
		pol     *Policy
		reply   string
		failure bool
	}{
		{"axiom", &Policy{Axioms: []Rule{broken}, Rules: []Rule{echo}}, "", true},
		{"rule", &Policy{Rules: []Rule{broken, echo}}, "echo hi", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := New(t.Context(), "x", &Options{Policy: tc.pol})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			run, _ := a.Ask(t.Context(), UserText("hi"))
			if run.Reply != tc.reply || (run.Failure != "") != tc.failure {
				t.Errorf("Ask() = reply %q, failure %q; want reply %q, failure %v", run.Reply, run.Failure, tc.reply, tc.failure)
			}
		})
	}
}

// A tool result longer than the rules read is logged cut, with its full length in its data.
func TestLongToolResultsAreCut(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100_000)
	pol := &Policy{Rules: []Rule{
		{Name: "call", When: `source == "user"`, Action: CallTool, Params: map[string]string{"tool": `"big"`, "input": `""`}, Reason: "test"},
		{Name: "seen", When: `kind == "tool-result"`, Action: Reply, Params: map[string]string{"text": `string(size(text)) + " of " + data.truncated`}, Reason: "test"},
	}}
	a, err := New(t.Context(), "x", &Options{Policy: pol, Tools: map[string]Tool{
		"big": func(context.Context, string) (string, error) { return big, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	run, err := a.Ask(t.Context(), UserText("go"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "65536 of 100000"; run.Reply != want {
		t.Errorf("Reply = %q, want %q", run.Reply, want)
	}
}
