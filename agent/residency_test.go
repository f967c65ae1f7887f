package agent

import (
	"fmt"
	"testing"
	"time"
)

// A resident instance holds the newest part of its log only; Recall still finds the rest, in
// the store, and the count is the whole log's.
func TestTheLogStaysInTheStore(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	key := Key{Agent: "notes", Principal: Principal{Name: "alice"}}
	var b Batch
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		b.Observations = append(b.Observations, Observation{ID: fmt.Sprintf("o%d", i+1), Seq: int64(i + 1), Time: at, Kind: "message",
			Source: Source{Kind: SourceUser}, Text: fmt.Sprintf("note %d about topic%d", i, i)})
	}
	if err := st.Commit(t.Context(), key, &b); err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(&Definition{Name: "notes", Policy: Notes()}, &HostOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	a, err := h.Instance(t.Context(), key.Principal)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := a.Ask(t.Context(), UserText(fmt.Sprintf("remember thing%d is %d", i, i))); err != nil {
			t.Fatal(err)
		}
	}
	resident, err := call(t.Context(), a, func(c *core) (int, error) { return len(c.mem.log), nil })
	if err != nil {
		t.Fatal(err)
	}
	if tail := max(Notes().Limits.withDefaults().ReplayWindow, contextObservations); resident > 2*tail {
		t.Errorf("%d observations resident, want at most %d", resident, 2*tail)
	}
	if v, _ := a.View(t.Context()); v.Observations != 1300 {
		t.Errorf("View().Observations = %d, want 1300", v.Observations)
	}
	r, err := a.Recall(t.Context(), Query{Text: "topic7"})
	if err != nil || len(r.Observations) != 1 || r.Observations[0].ID != "o8" {
		t.Errorf("Recall(an old observation) = %+v, %v", r.Observations, err)
	}
	_, err = a.Propose(t.Context(), Proposal{Op: OpAdd, Rule: Rule{Name: "x", When: "true", Action: Reply, Params: map[string]string{"text": `"x"`}},
		Justification: "j", Evidence: []string{"o8"}})
	if err == nil {
		t.Errorf("a proposal citing evidence beyond the replay window was accepted")
	}
}
