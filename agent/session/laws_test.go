package session

// The composition laws of chat sessions (docs/sessions.md, "The laws"), as property tests over
// random turn sequences. The generator is seeded (-seed), so a run is reproducible and a failure
// prints the sequence that broke the law.

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	seed  = flag.Int64("seed", 1, "seed of the property tests' generator")
	cases = flag.Int("cases", 100, "cases each property test tries (more for a deeper run, e.g. -cases 5000)")
)

func quickConfig() *quick.Config {
	return &quick.Config{MaxCount: *cases, Rand: rand.New(rand.NewSource(*seed))}
}

var (
	lawWords = strings.Fields("alice bob the sky is blue meeting on tuesday room 4b likes tea and a of x y z")
	lawFacts = []Fact{
		fact("b1", "the sky is blue"), fact("b2", "alice likes tea"), fact("b3", "the meeting is on tuesday"),
		{ID: "o4", Kind: FactObservation, Text: "bob is in room 4b"}, fact("b5", "x y z"), fact("b6", "tea and a sky"),
	}
)

// step is one turn of a script: a message and how its turn ends.
type step struct {
	Task, User, Answer string
	Status             TurnStatus
	Usage              *Usage // nil: estimated
	Facts              []Fact
	Took               time.Duration
}

func (st step) String() string {
	return fmt.Sprintf("{%q→%q %s %v facts %d %v}", st.User, st.Answer, st.Status, st.Usage, len(st.Facts), st.Took)
}

// script is a sequence of turns.
type script []step

func randText(r *rand.Rand, max int) string {
	n := r.Intn(max + 1)
	w := make([]string, n)
	for i := range w {
		w[i] = lawWords[r.Intn(len(lawWords))]
	}
	return strings.Join(w, " ")
}

func randStep(r *rand.Rand) step {
	st := step{Task: fmt.Sprint("task-", r.Int63()), User: randText(r, 12), Answer: randText(r, 16), Status: Completed, Took: time.Duration(r.Intn(5000)) * time.Millisecond}
	if st.User == "" && r.Intn(2) == 0 {
		st.User = "  " // an empty message: the identity
	}
	switch r.Intn(10) {
	case 0:
		st.Status = Failed
	case 1:
		st.Status = InputRequired
	case 2:
		st.Status = Aborted
	}
	if r.Intn(3) > 0 {
		st.Usage = usage(int64(r.Intn(300)), int64(r.Intn(80)))
	}
	for range r.Intn(3) {
		st.Facts = append(st.Facts, lawFacts[r.Intn(len(lawFacts))])
	}
	if r.Intn(2) == 0 && len(st.Facts) > 0 { // the answer says the fact, sometimes
		st.Answer += " " + st.Facts[0].Text
	}
	return st
}

// Generate makes scripts of up to 16 turns.
func (script) Generate(r *rand.Rand, size int) reflect.Value {
	sc := make(script, r.Intn(min(size, 16)+1))
	for i := range sc {
		sc[i] = randStep(r)
	}
	return reflect.ValueOf(sc)
}

// lawConfig is a random configuration: any strategy, a small window (so strategies act), and
// sometimes budgets.
type lawConfig struct{ Config }

func (lawConfig) Generate(r *rand.Rand, _ int) reflect.Value {
	strategies := []Strategy{Sliding, Forget, Summarize, Coherent}
	c := Config{Strategy: strategies[r.Intn(len(strategies))], Window: 64 + r.Intn(400)}
	if r.Intn(3) == 0 {
		c.Budget = Budget{Tokens: int64(r.Intn(3000)), Turns: r.Intn(12), Cost: Micros(r.Intn(2000)), Wall: time.Duration(r.Intn(60)) * time.Second}
	}
	return reflect.ValueOf(lawConfig{c})
}

var lawPrices = Prices{"*": {Input: 1, Output: 2}}

// apply runs sc on s from time now and returns the time after it. Each step is a whole turn
// (messages to ended sessions are refused, empty messages change nothing); a context that
// does not fit fails the turn.
func apply(t testing.TB, s *Session, now time.Time, sc script) time.Time {
	t.Helper()
	for i, st := range sc {
		now = now.Add(time.Second)
		d, err := s.Offer(now, st.Task, User(st.User))
		if err != nil {
			continue
		}
		if d.Action != Start {
			t.Fatalf("step %d: %+v on a session that was not streaming", i, d)
		}
		o := Outcome{Status: st.Status, Response: st.Answer, Usage: st.Usage, Model: "m", Facts: st.Facts}
		if _, err := s.Prepare(testSystem); err != nil {
			o = Outcome{Status: Failed, Usage: &Usage{}, Error: err.Error()}
		}
		now = now.Add(st.Took)
		if _, err := s.End(now, o, lawPrices); err != nil {
			t.Fatalf("step %d: End() = %v", i, err)
		}
	}
	return now
}

// TestLawIdentity: an empty message leaves any session unchanged, and its context too.
func TestLawIdentity(t *testing.T) {
	t.Parallel()
	law := func(c lawConfig, sc script, blank uint8) bool {
		s, err := New("ctx", c.Config)
		if err != nil {
			return true
		}
		now := apply(t, s, t0, sc)
		before, w1 := stored(t, s), fmt.Sprint(s.Context(testSystem))
		msg := strings.Repeat(" \t\n"[blank%3:blank%3+1], int(blank%5))
		_, err = s.Offer(now.Add(time.Hour), "task-x", User(msg))
		return err == ErrEmpty && stored(t, s) == before && fmt.Sprint(s.Context(testSystem)) == w1
	}
	if err := quick.Check(law, quickConfig()); err != nil {
		t.Error(err)
	}
}

// TestLawAssociativity: (a >> b) >> c = a >> (b >> c) = a ++ b ++ c, with the session stored and
// loaded between the parts as the runtime does between turns (so nothing outside the stored
// record may matter).
func TestLawAssociativity(t *testing.T) {
	t.Parallel()
	law := func(c lawConfig, a, b, cc script) bool {
		run := func(parts ...script) string {
			s, err := New("ctx", c.Config)
			if err != nil {
				t.Fatal(err)
			}
			now := t0
			for _, p := range parts {
				now = apply(t, s, now, p)
				s = roundTrip(t, s)
			}
			return stored(t, s)
		}
		ab := append(slices.Clone(a), b...)
		bc := append(slices.Clone(b), cc...)
		flat := run(append(slices.Clone(ab), cc...))
		left, right := run(ab, cc), run(a, bc)
		if left != flat || right != flat {
			t.Logf("(a ++ b) >> c (-flat +got):\n%s\na >> (b ++ c) (-flat +got):\n%s", cmp.Diff(flat, left), cmp.Diff(flat, right))
			return false
		}
		return true
	}
	if err := quick.Check(law, quickConfig()); err != nil {
		t.Error(err)
	}
}

// eligibleNumbers are the numbers of the conversation's turns a context may show.
func eligibleNumbers(s *Session) []int {
	var ns []int
	for _, t := range s.conversation() {
		if t.eligible() {
			ns = append(ns, t.Number)
		}
	}
	return ns
}

// project is the session a context stands for: only the turns it shows.
func project(t testing.TB, s *Session, w Window) *Session {
	t.Helper()
	rec := s.Record()
	rec.Resets, rec.Summary = nil, nil
	var turns []Turn
	for _, tr := range s.Turns() {
		if slices.Contains(w.Verbatim, tr.Number) {
			turns = append(turns, tr)
		}
	}
	p, err := Load(rec, turns)
	if err != nil {
		t.Fatalf("Load(projection) = %v", err)
	}
	return p
}

// TestLawProjection: for sliding and forget, the context is within the window; its turns are
// the newest of the conversation's, contiguous and in order (expand(compress(s)) ⊆ s);
// projecting is idempotent; and it is incremental: W(s ++ t) = W(W(s) ++ t).
func TestLawProjection(t *testing.T) {
	t.Parallel()
	for _, strategy := range []Strategy{Sliding, Forget} {
		law := func(window uint16, sc, next script) bool {
			cfg := Config{Strategy: strategy, Window: 64 + int(window%500)}
			s, err := New("ctx", cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := apply(t, s, t0, sc)
			w, err := s.Context("")
			if err != nil {
				return false
			}
			el := eligibleNumbers(s)
			if w.Tokens > w.Limit || !cmp.Equal(w.Verbatim, el[len(el)-len(w.Verbatim):], cmpEmpty) {
				t.Logf("%s: window %v of %v, %d tokens of %d", strategy, w.Verbatim, el, w.Tokens, w.Limit)
				return false
			}
			for i, n := range w.Verbatim { // the messages are those turns'
				if tr := s.turns[slices.IndexFunc(s.turns, func(x Turn) bool { return x.Number == n })]; w.Messages[2*i].Content != tr.User.Content {
					return false
				}
			}
			p := project(t, s, w)
			if pw, _ := p.Context(""); !cmp.Equal(pw.Messages, w.Messages, cmpEmpty) {
				t.Logf("%s: not idempotent: %v then %v", strategy, w.Verbatim, pw.Verbatim)
				return false
			}
			apply(t, s, now, next)
			apply(t, p, now, next)
			w1, err1 := s.Context("")
			w2, err2 := p.Context("")
			if (err1 == nil) != (err2 == nil) || !cmp.Equal(w1.Messages, w2.Messages, cmpEmpty) {
				t.Logf("%s: not incremental:\n  W(s++t)    %v\n  W(W(s)++t) %v", strategy, w1.Verbatim, w2.Verbatim)
				return false
			}
			return true
		}
		if err := quick.Check(law, quickConfig()); err != nil {
			t.Errorf("%s: %v", strategy, err)
		}
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []int) bool { return len(a) == 0 && len(b) == 0 || slices.Equal(a, b) })

// lossy is a summarizer that drops facts at random (seeded by the request) and sometimes
// writes too much.
type lossy struct{ r *rand.Rand }

func (l lossy) Summarize(_ context.Context, req SummaryRequest) (string, *Usage, error) {
	var b strings.Builder
	b.WriteString("So far:")
	for _, f := range req.Facts {
		if l.r.Intn(4) > 0 {
			b.WriteString(" " + f.Text + ".")
		}
	}
	if l.r.Intn(8) == 0 {
		b.WriteString(strings.Repeat(" filler", 4*req.MaxTokens))
	}
	return b.String(), &Usage{In: 50, Out: 20}, nil
}

// TestLawCoherence: under Coherent, whatever a summarizer writes, every fact of the
// conversation is recoverable from the context, or the context is refused as full; and every
// strategy keeps its context within the window.
func TestLawCoherence(t *testing.T) {
	t.Parallel()
	law := func(c lawConfig, sc script, summarizerSeed int64) bool {
		s, err := New("ctx", c.Config)
		if err != nil {
			return true
		}
		m := lossy{rand.New(rand.NewSource(summarizerSeed))}
		now := t0
		for i := range sc {
			now = apply(t, s, now, sc[i:i+1])
			if p, ok := s.Plan(testSystem); ok {
				if sum, _ := Compact(t.Context(), p, m); sum != nil {
					s.Install(now, sum, lawPrices)
				}
			}
			w, err := s.Context(testSystem)
			if err != nil {
				continue // ErrNoRoom: refused, not truncated
			}
			if w.Tokens > w.Limit {
				t.Logf("%s: %d tokens in %d", c.Strategy, w.Tokens, w.Limit)
				return false
			}
			if c.Config.strategy() != Coherent {
				continue
			}
			var text strings.Builder
			for _, msg := range w.Messages {
				text.WriteString(msg.Content + "\n")
			}
			for _, tr := range s.conversation() {
				if !tr.eligible() {
					continue
				}
				for _, f := range tr.Facts {
					if !Recoverable(f, text.String()) {
						t.Logf("fact %s of turn %d lost from:\n%s", f.ID, tr.Number, text.String())
						return false
					}
				}
			}
		}
		return true
	}
	if err := quick.Check(law, quickConfig()); err != nil {
		t.Error(err)
	}
}

// TestLawSummaryIsSuffix: with a summary, the turns a summarizing strategy shows verbatim are
// the newest of those after it, contiguous.
func TestLawSummaryIsSuffix(t *testing.T) {
	t.Parallel()
	law := func(sc script, coherent bool) bool {
		strategy := Summarize
		if coherent {
			strategy = Coherent
		}
		s, _ := New("ctx", Config{Strategy: strategy, Window: 300})
		now := t0
		for i := range sc {
			now = apply(t, s, now, sc[i:i+1])
			if p, ok := s.Plan(testSystem); ok {
				sum, _ := Compact(t.Context(), p, &fakeSummarizer{write: keepAll})
				s.Install(now, sum, nil)
			}
		}
		w, err := s.Context(testSystem)
		if err != nil {
			return true
		}
		var after []int
		for _, n := range eligibleNumbers(s) {
			if w.Summary == nil || n > w.Summary.Through {
				after = append(after, n)
			}
		}
		return cmp.Equal(w.Verbatim, after[len(after)-len(w.Verbatim):], cmpEmpty)
	}
	if err := quick.Check(law, quickConfig()); err != nil {
		t.Error(err)
	}
}
