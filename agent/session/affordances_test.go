package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHistory(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	for n := 1; n <= 5; n++ {
		chat(t, s, at(n), fmt.Sprint("q", n), fmt.Sprint("a", n))
	}
	s.Reset(at(6))
	chat(t, s, at(7), "q6", "a6")
	h := s.History(0, 2)
	if len(h.Turns) != 2 || h.Turns[0].Number != 1 || h.Next != 3 || h.Total != 6 || !cmp.Equal(h.Resets, []int{5}) {
		t.Errorf("History(0, 2) = %+v", h)
	}
	h = s.History(h.Next, 10)
	if len(h.Turns) != 4 || h.Turns[3].Number != 6 || h.Next != 0 {
		t.Errorf("History(3, 10) = %+v", h)
	}
	h.Turns[0].User.Content = "changed"
	if s.Turns()[2].User.Content != "q3" {
		t.Error("History returned the session's own turns, not copies")
	}
	if h := s.History(100, 0); len(h.Turns) != 0 || h.Turns == nil {
		t.Errorf("History past the end = %+v, want an empty, non-nil page", h)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Strategy: Sliding, Budget: Budget{Turns: 10, Wall: time.Hour}})
	s.Offer(at(0), "t1", User("one"))
	s.Prepare("")
	s.End(at(2), Outcome{Status: Completed, Response: "1", Usage: usage(100, 10), Model: "m"}, Prices{"m": {1, 1}})
	s.Offer(at(10), "t2", User("two"))
	s.End(at(14), Outcome{Status: Failed, Usage: usage(50, 0), Error: "x"}, Prices{"m": {1, 1}})
	s.Offer(at(20), "t3", User("three"))
	m := s.Metrics(at(30))
	if m.State != Streaming || m.Turn != 2 || m.Running != 3 {
		t.Errorf("state %s, turn %d, running %d", m.State, m.Turn, m.Running)
	}
	if !cmp.Equal(m.Turns, map[TurnStatus]int{Completed: 1, Failed: 1}) {
		t.Errorf("Turns = %v", m.Turns)
	}
	if m.Used.In != 150 || m.Used.Out != 10 || m.Used.Cost != 110 || m.Used.Turns != 1 {
		t.Errorf("Used = %+v", m.Used)
	}
	if m.LatencyMean != 2*time.Second || m.LatencyMax != 2*time.Second {
		t.Errorf("latency mean %v, max %v; want 2s over the turns that answered", m.LatencyMean, m.LatencyMax)
	}
	want := []BudgetStatus{{Budget: ReasonTurns, Limit: 10, Used: 1, Left: 9}, {Budget: ReasonWall, Limit: 3_600_000, Used: 30_000, Left: 3_570_000}}
	if diff := cmp.Diff(want, m.Budgets); diff != "" {
		t.Errorf("Budgets (-want +got):\n%s", diff)
	}
	if m.Context <= 0 || m.Window != DefaultWindow || m.Strategy != Sliding || m.Deadline == nil || !m.Deadline.Equal(at(3600)) {
		t.Errorf("context %d, window %d, strategy %s, deadline %v", m.Context, m.Window, m.Strategy, m.Deadline)
	}
	b, err := json.Marshal(m)
	if err != nil || !strings.Contains(string(b), `"latencyMean":"2s"`) {
		t.Errorf("json %s, %v", b, err)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(back, m) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

// TestReset: the conversation starts afresh; the history keeps the old turns; numbers go on.
func TestReset(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "my name is Alice", "hello Alice")
	if err := s.Reset(at(1)); err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Context(""); w.Verbatim != nil || len(w.Messages) != 0 {
		t.Errorf("Context() after a reset = %+v, want nothing", w)
	}
	res := chat(t, s, at(2), "who am I?", "I don't know")
	if res.Turn.Number != 2 {
		t.Errorf("the turn after a reset is number %d, want 2", res.Turn.Number)
	}
	if w, _ := s.Context(""); !cmp.Equal(w.Verbatim, []int{2}) {
		t.Errorf("Verbatim = %v, want [2]", w.Verbatim)
	}
	if h := s.History(0, 0); len(h.Turns) != 2 || !cmp.Equal(h.Resets, []int{1}) {
		t.Errorf("History() = %+v", h)
	}
	before := stored(t, s)
	s.Reset(at(3))
	s.Reset(at(4)) // nothing since the last: no second reset recorded
	if got := s.Record().Resets; !cmp.Equal(got, []int{1, 2}) {
		t.Errorf("Resets = %v (before: %s)", got, before)
	}
}

// TestFork: a new session from this one at turn N, with provenance and fresh budgets; the
// parent is untouched; a collapsed session forks too.
func TestFork(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Turns: 3}})
	for n := 1; n <= 3; n++ {
		chat(t, s, at(n), fmt.Sprint("q", n), fmt.Sprint("a", n), fact(fmt.Sprint("b", n), fmt.Sprint("fact ", n)))
	}
	if s.State() != Collapsed {
		t.Fatalf("State() = %s, want collapsed", s.State())
	}
	parent := stored(t, s)
	f, err := s.Fork(at(10), "ctx-fork", 2)
	if err != nil {
		t.Fatal(err)
	}
	if stored(t, s) != parent {
		t.Error("Fork changed the parent")
	}
	rec := f.Record()
	if f.ID() != "ctx-fork" || f.State() != Waiting || f.Last() != 2 || rec.Next != 3 ||
		!cmp.Equal(rec.Origin, &Origin{Session: "ctx-1", Turn: 2}) || rec.Used != (Totals{}) || rec.Collapse != nil {
		t.Errorf("fork = %+v", rec)
	}
	if diff := cmp.Diff(s.Turns()[:2], f.Turns()); diff != "" {
		t.Errorf("fork's turns (-parent +fork):\n%s", diff)
	}
	res := chat(t, f, at(11), "q3'", "a3'")
	if res.Turn.Number != 3 || f.State() != Waiting {
		t.Errorf("the fork's next turn: %+v, state %s", res.Turn, f.State())
	}
	if w, _ := f.Context(""); !cmp.Equal(w.Verbatim, []int{1, 2, 3}) {
		t.Errorf("fork context %v", w.Verbatim)
	}
	empty, err := s.Fork(at(12), "ctx-empty", 0)
	if err != nil || empty.State() != Ready || empty.Last() != 0 {
		t.Errorf("Fork at 0 = %+v, %v", empty, err)
	}
	for _, bad := range []struct {
		id string
		at int
	}{{"ctx-1", 1}, {"", 1}, {"x", 4}, {"x", -1}} {
		if _, err := s.Fork(at(13), bad.id, bad.at); !errors.Is(err, ErrInvalid) {
			t.Errorf("Fork(%q, %d) = %v, want ErrInvalid", bad.id, bad.at, err)
		}
	}
}

// TestForkKeepsResetsAndSummary: a fork after a reset starts its conversation where the parent's
// did; a summary that applies comes along.
func TestForkKeepsResetsAndSummary(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Coherent)
	p, _ := s.Plan(testSystem)
	sum, _ := Compact(t.Context(), p, &fakeSummarizer{write: keepAll})
	s.Install(at(20), sum, nil)
	f, _ := s.Fork(at(21), "f", 12)
	if f.Record().Summary == nil || f.Record().Summary.Through != p.Through {
		t.Errorf("fork's summary = %+v", f.Record().Summary)
	}
	early, _ := s.Fork(at(21), "g", p.Through-1)
	if early.Record().Summary != nil {
		t.Error("a fork before the summary's last turn kept the summary")
	}
	s.Reset(at(22))
	chat(t, s, at(23), "new", "start")
	g, _ := s.Fork(at(24), "h", s.Last())
	if !cmp.Equal(g.Record().Resets, []int{12}) || g.Record().Summary != nil {
		t.Errorf("fork after reset: resets %v, summary %v", g.Record().Resets, g.Record().Summary)
	}
	if w, _ := g.Context(""); !cmp.Equal(w.Verbatim, []int{13}) {
		t.Errorf("fork after reset: context %v, want [13]", w.Verbatim)
	}
}

// TestMergeTurns: another session's conversation is appended, renumbered, each turn with its
// origin; failed turns are not merged; nothing is charged.
func TestMergeTurns(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "mine", "ok")
	o, _ := New("ctx-2", Config{})
	chat(t, o, at(1), "theirs 1", "ok 1", fact("b9", "x is 9"))
	o.Offer(at(2), "tf", User("fails"))
	o.End(at(3), Outcome{Status: Failed, Usage: &Usage{}}, nil)
	chat(t, o, at(4), "theirs 2", "ok 2")
	used := s.Record().Used
	added, err := s.Merge(at(5), o, MergeTurns)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 2 || added[0].Number != 2 || added[1].Number != 3 ||
		!cmp.Equal(added[0].Origin, &Origin{Session: "ctx-2", Turn: 1, Task: "task-theirs 1"}) || added[0].Task != "" ||
		!cmp.Equal(added[0].Facts, []Fact{fact("b9", "x is 9")}) {
		t.Errorf("Merge() = %+v", added)
	}
	if s.Record().Used != used {
		t.Error("a merge was charged")
	}
	w, _ := s.Context("")
	if !cmp.Equal(w.Verbatim, []int{1, 2, 3}) || w.Messages[3].Content != "theirs 1" {
		t.Errorf("context after merge: %v %+v", w.Verbatim, w.Messages)
	}
	// Merged again into a third session, the origin stays the first source.
	third, _ := New("ctx-3", Config{})
	added, err = third.Merge(at(6), s, MergeTurns)
	if err != nil || added[1].Origin.Session != "ctx-2" || added[0].Origin.Session != "ctx-1" || third.State() != Waiting {
		t.Errorf("second-hand merge: %+v, %v", added, err)
	}
}

// TestMergeSummary: one entry with the other's summary and facts, shown in the system message.
func TestMergeSummary(t *testing.T) {
	t.Parallel()
	o := summarizing(t, Coherent)
	p, _ := o.Plan(testSystem)
	sum, _ := Compact(t.Context(), p, &fakeSummarizer{write: keepAll})
	if _, err := o.Install(at(20), sum, nil); err != nil {
		t.Fatal(err)
	}
	s, _ := New("ctx-main", Config{})
	chat(t, s, at(0), "mine", "ok")
	added, err := s.Merge(at(21), o, MergeSummary)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0].Kind != KindMerge || added[0].Number != 2 || added[0].Response.Content != sum.Text ||
		len(added[0].Facts) != 12 || !cmp.Equal(added[0].Origin, &Origin{Session: o.ID(), From: 1, Through: 12}) {
		t.Fatalf("Merge() = %+v", added)
	}
	w, _ := s.Context("")
	sys := w.Messages[0].Content
	if !strings.Contains(sys, "Merged from session ctx-1 (turns 1 to 12):") {
		t.Errorf("system message lacks the merged summary:\n%s", sys)
	}
	for n := 1; n <= 12; n++ { // turns after the other's summary are carried by their facts
		if f := fact("", fmt.Sprint("fact number ", n)); !Recoverable(f, sys) {
			t.Errorf("fact %d of the merged session is not in the context", n)
		}
	}
	if len(w.Messages) != 3 {
		t.Errorf("a merged summary made chat messages: %+v", w.Messages)
	}
}

func TestMergeRefusals(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "x", "y")
	empty, _ := New("ctx-2", Config{})
	if _, err := s.Merge(at(1), empty, MergeTurns); !errors.Is(err, ErrNothing) {
		t.Errorf("merge of an empty session = %v, want ErrNothing", err)
	}
	if _, err := s.Merge(at(1), s, MergeTurns); !errors.Is(err, ErrInvalid) {
		t.Errorf("merge into itself = %v, want ErrInvalid", err)
	}
	if _, err := s.Merge(at(1), s.Clone(), MergeTurns); !errors.Is(err, ErrInvalid) {
		t.Errorf("merge of a session with the same ID = %v, want ErrInvalid", err)
	}
	if _, err := s.Merge(at(1), empty, "all"); !errors.Is(err, ErrInvalid) {
		t.Errorf("merge mode all = %v, want ErrInvalid", err)
	}
}
