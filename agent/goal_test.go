package agent

import (
	"testing"
)

func goalPolicy() *Policy {
	return &Policy{Rules: []Rule{
		{Name: "adopt", When: `command == "goal"`, Action: Adopt, Params: map[string]string{"goal": `args`}, Reason: "the user set it"},
		{Name: "achieve", When: `command == "done"`, Action: Achieve, Params: map[string]string{"goal": `args`}, Reason: "the user did it"},
		{Name: "drop", When: `command == "drop"`, Action: Drop, Params: map[string]string{"goal": `args`}, Reason: "the user gave up"},
		{Name: "status", When: `command == "status"`, Action: Reply,
			Params: map[string]string{"text": `goals.size() == 0 ? "No goals." : "Goals: " + goals.join(", ")`}, Reason: "report"},
		{Name: "ack", When: `last.action in ["adopt", "achieve", "drop"]`, Action: Reply,
			Params: map[string]string{"text": `last.subject + ": " + last.status`}, Reason: "confirm"},
	}}
}

func TestGoals(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	a := newNotes(t, "g", &Options{Policy: goalPolicy(), Store: st})
	steps := []struct{ say, reply string }{
		{"goal water the plants", "water the plants: adopted"},
		{"goal water the plants", "water the plants: exists"},
		{"goal learn Go", "learn Go: adopted"},
		{"status", "Goals: water the plants, learn Go"},
		{"done water the plants", "water the plants: achieved"},
		{"drop fly", "fly: missing"},
		{"status", "Goals: learn Go"},
	}
	for _, s := range steps {
		if got := say(t, a, s.say).Reply; got != s.reply {
			t.Fatalf("Ask(%q) = %q, want %q", s.say, got, s.reply)
		}
	}
	v, _ := a.View(t.Context())
	if len(v.Goals) != 2 || v.Goals[0].Status != GoalAchieved || v.Goals[0].Provenance.Reason == "" || len(v.Goals[0].Provenance.Observations) != 2 {
		t.Errorf("goals = %+v", v.Goals)
	}
	_ = a.Close()
	b := newNotes(t, "g", &Options{Policy: goalPolicy(), Store: st})
	if got := say(t, b, "status").Reply; got != "Goals: learn Go" {
		t.Errorf("after a reload status = %q", got)
	}
}
