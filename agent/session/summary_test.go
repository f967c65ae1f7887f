package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeSummarizer writes summaries by a function of the request and the attempt, and records
// the requests.
type fakeSummarizer struct {
	mu    sync.Mutex
	reqs  []SummaryRequest
	write func(req SummaryRequest, attempt int) string
	err   error
}

func (f *fakeSummarizer) Summarize(_ context.Context, req SummaryRequest) (string, *Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return "", nil, f.err
	}
	text := f.write(req, len(f.reqs))
	return text, &Usage{In: 100, Out: int64(EstimateTokens(text))}, nil
}

// keepAll writes a summary that carries every fact, and is short.
func keepAll(req SummaryRequest, _ int) string {
	var b strings.Builder
	b.WriteString("Summary.")
	for _, f := range req.Facts {
		b.WriteString(" " + f.Text + ".")
	}
	return b.String()
}

// dropping writes summaries that lose fact id on the attempts listed (all when none are).
func dropping(id string, attempts ...int) func(SummaryRequest, int) string {
	return func(req SummaryRequest, attempt int) string {
		if len(attempts) > 0 && !containsInt(attempts, attempt) {
			return keepAll(req, attempt)
		}
		var b strings.Builder
		b.WriteString("Summary.")
		for _, f := range req.Facts {
			if f.ID != id {
				b.WriteString(" " + f.Text + ".")
			}
		}
		return b.String()
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// summarizing is a session whose next context is past the high-water mark: a 400-token window
// (high 320, low 200, summaries up to 100) and 12 turns of 28 tokens, each citing a fact.
func summarizing(t *testing.T, strategy Strategy) *Session {
	t.Helper()
	s := newSession(t, Config{Strategy: strategy, Window: 400, SummaryTokens: 100})
	for n := 1; n <= 12; n++ {
		chat(t, s, at(n), text40(fmt.Sprint("q", n)), text40(fmt.Sprint("a", n)), fact(fmt.Sprint("b", n), fmt.Sprint("fact number ", n)))
	}
	return s
}

// TestPlanHysteresis: a summary is planned only past the high-water mark, brings the context
// down to the low-water mark, and the next one waits until the context passes the high-water
// mark again: the session does not summarize at every turn.
func TestPlanHysteresis(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Strategy: Summarize, Window: 400, SummaryTokens: 100})
	m := &fakeSummarizer{write: keepAll}
	var summarizedAt []int
	for n := 1; n <= 40; n++ {
		chat(t, s, at(n), text40(fmt.Sprint("q", n)), text40(fmt.Sprint("a", n)))
		size, _ := s.windowTokens()
		p, ok := s.Plan(testSystem)
		if ok != (size > 320) {
			t.Fatalf("turn %d: context %d tokens, Plan() = %v; want a plan exactly past 320", n, size, ok)
		}
		if !ok {
			continue
		}
		summarizedAt = append(summarizedAt, n)
		sum, err := Compact(t.Context(), p, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Install(at(n), sum, nil); err != nil {
			t.Fatal(err)
		}
		if size, _ := s.windowTokens(); size > 200 {
			t.Errorf("turn %d: after the summary the context is %d tokens, above the low-water mark 200", n, size)
		}
		if _, again := s.Plan(testSystem); again {
			t.Errorf("turn %d: a summary is planned right after one was installed", n)
		}
	}
	if len(summarizedAt) < 3 {
		t.Fatalf("summarized at turns %v, want several", summarizedAt)
	}
	// Between the marks are 120 tokens: at 28 a turn, at least 4 turns between summaries.
	for i := 1; i < len(summarizedAt); i++ {
		if gap := summarizedAt[i] - summarizedAt[i-1]; gap < 4 {
			t.Errorf("summaries at turns %v: %d turns apart, the hysteresis allows no fewer than 4", summarizedAt, gap)
		}
	}
	w, _ := s.Context("")
	if w.Summary == nil || w.Summary.From != 1 || !strings.Contains(w.Messages[0].Content, "Summary of the conversation so far (turns 1 to ") {
		t.Errorf("Context() = %+v, want the summary in the system message", w)
	}
	if w.Omitted != nil {
		t.Errorf("Omitted = %v with a summary covering them", w.Omitted)
	}
}

// TestCoherentRefusesLostFact: a summary that lost a cited fact is refused, after one retry
// that names it; the loss is reported; the session keeps no such summary and still shows the
// fact; what the summaries cost is charged.
func TestCoherentRefusesLostFact(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Coherent)
	p, ok := s.Plan("")
	if !ok {
		t.Fatal("no plan")
	}
	m := &fakeSummarizer{write: dropping("b2")}
	sum, err := Compact(t.Context(), p, m)
	var serr *SummaryError
	if !errors.Is(err, ErrIncoherent) || !errors.As(err, &serr) {
		t.Fatalf("Compact() = %v, want a *SummaryError matching ErrIncoherent", err)
	}
	if len(serr.Report.Lost) != 1 || serr.Report.Lost[0].ID != "b2" || serr.Report.Facts != len(p.Facts) {
		t.Errorf("Report = %+v, want b2 lost of %d", serr.Report, len(p.Facts))
	}
	if !strings.Contains(err.Error(), `[b2] "fact number 2"`) {
		t.Errorf("error %q does not name the lost fact", err)
	}
	if len(m.reqs) != 2 || len(m.reqs[1].Lost) != 1 || m.reqs[1].Lost[0].ID != "b2" {
		t.Errorf("requests %+v: want a retry naming b2", m.reqs)
	}
	if sum == nil || sum.Attempts != 2 || sum.Usage.In != 200 {
		t.Fatalf("refused summary = %+v, want its two attempts' usage", sum)
	}
	before := s.Record().Used.In
	if _, err := s.Install(at(20), sum, nil); !errors.Is(err, ErrIncoherent) {
		t.Errorf("Install(a lossy summary) = %v, want ErrIncoherent", err)
	}
	if s.Record().Summary != nil {
		t.Error("the session kept a summary that lost a fact")
	}
	if got := s.Record().Used.In - before; got != 200 {
		t.Errorf("Install charged %d tokens in, want 200", got)
	}
	w, err := s.Context("")
	if err != nil {
		t.Fatal(err)
	}
	if !Recoverable(fact("b2", "fact number 2"), w.Messages[0].Content) {
		t.Errorf("fact b2 left the context:\n%s", w.Messages[0].Content)
	}
}

// TestCoherentRetryRecovers: a retry that restores the fact is accepted.
func TestCoherentRetryRecovers(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Coherent)
	p, _ := s.Plan("")
	sum, err := Compact(t.Context(), p, &fakeSummarizer{write: dropping("b1", 1)})
	if err != nil || sum.Attempts != 2 || sum.Report.Lost != nil {
		t.Fatalf("Compact() = %+v, %v; want accepted on the second attempt", sum, err)
	}
	if _, err := s.Install(at(20), sum, nil); err != nil {
		t.Fatal(err)
	}
	w, _ := s.Context("")
	if w.Summary == nil || w.Summary.Through != p.Through {
		t.Errorf("Context().Summary = %+v, want through %d", w.Summary, p.Through)
	}
	for _, f := range w.Facts { // the summary carries them: none is listed twice
		if f.ID == "b1" {
			t.Errorf("fact b1 listed although the summary carries it")
		}
	}
}

// TestInstallChecksAgain: Install does not trust what Compact said: a summary altered to lose
// a fact is refused.
func TestInstallChecksAgain(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Coherent)
	p, _ := s.Plan("")
	sum, err := Compact(t.Context(), p, &fakeSummarizer{write: keepAll})
	if err != nil {
		t.Fatal(err)
	}
	sum.Text = strings.Replace(sum.Text, "fact number 1.", "", 1)
	if _, err := s.Install(at(20), sum, nil); !errors.Is(err, ErrIncoherent) {
		t.Errorf("Install(altered) = %v, want ErrIncoherent", err)
	}
}

// TestSummarizeReportsLoss: the summarize strategy accepts a lossy summary, and reports the loss.
func TestSummarizeReportsLoss(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Summarize)
	p, _ := s.Plan("")
	sum, err := Compact(t.Context(), p, &fakeSummarizer{write: dropping("b2")})
	if err != nil || sum.Attempts != 1 || len(sum.Report.Lost) != 1 || sum.Report.Lost[0].ID != "b2" {
		t.Fatalf("Compact() = %+v, %v; want accepted with b2 reported lost", sum, err)
	}
	if _, err := s.Install(at(20), sum, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Record().Summary.Report.Lost; len(got) != 1 {
		t.Errorf("installed report lost %v", got)
	}
}

// TestSummaryTooLong: a summary past its bound is refused (it would thrash).
func TestSummaryTooLong(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Summarize)
	p, _ := s.Plan("")
	long := func(SummaryRequest, int) string { return strings.Repeat("word ", 200) }
	m := &fakeSummarizer{write: long}
	sum, err := Compact(t.Context(), p, m)
	if !errors.Is(err, ErrSummaryTooLong) || sum == nil || !m.reqs[1].TooLong {
		t.Fatalf("Compact() = %v (retry said too long: %v), want ErrSummaryTooLong", err, len(m.reqs) > 1 && m.reqs[1].TooLong)
	}
	if _, err := s.Install(at(20), sum, nil); !errors.Is(err, ErrSummaryTooLong) {
		t.Errorf("Install() = %v, want ErrSummaryTooLong", err)
	}
}

// TestStaleSummary: a summary made for a conversation that was reset meanwhile, or older than
// the one installed, is refused.
func TestStaleSummary(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Coherent)
	p, _ := s.Plan("")
	sum, _ := Compact(t.Context(), p, &fakeSummarizer{write: keepAll})
	reset := s.Clone()
	reset.Reset(at(30))
	if _, err := reset.Install(at(31), sum, nil); !errors.Is(err, ErrStale) {
		t.Errorf("Install after a reset = %v, want ErrStale", err)
	}
	if _, err := s.Install(at(31), sum, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(at(32), sum, nil); !errors.Is(err, ErrStale) {
		t.Errorf("Install of the same summary again = %v, want ErrStale", err)
	}
}

// TestCompactFailure: a summarizer that fails makes no summary.
func TestCompactFailure(t *testing.T) {
	t.Parallel()
	s := summarizing(t, Coherent)
	p, _ := s.Plan("")
	boom := errors.New("model down")
	sum, err := Compact(t.Context(), p, &fakeSummarizer{err: boom})
	if sum != nil || !errors.Is(err, boom) {
		t.Errorf("Compact() = %v, %v; want nil and the model's error", sum, err)
	}
}

// TestNewSummarizer: the model is told what to keep word for word, and on a retry what it lost.
func TestNewSummarizer(t *testing.T) {
	t.Parallel()
	var got [][]Message
	complete := func(_ context.Context, msgs []Message) (string, *Usage, error) {
		got = append(got, msgs)
		return "Summary: the user is Alice.", &Usage{In: 50, Out: 7}, nil
	}
	m := NewSummarizer(complete)
	req := SummaryRequest{Previous: "Earlier: greetings.", MaxTokens: 100,
		Turns: []Turn{{Number: 3, User: User("I am Alice"), Response: Message{RoleAssistant, "Hello Alice"}, Status: Completed}},
		Facts: []Fact{fact("b1", "the user is Alice")}, Lost: []Fact{fact("b1", "the user is Alice")}}
	text, u, err := m.Summarize(t.Context(), req)
	if err != nil || text != "Summary: the user is Alice." || !cmp.Equal(u, &Usage{In: 50, Out: 7}) {
		t.Fatalf("Summarize() = %q, %+v, %v", text, u, err)
	}
	if len(got) != 1 || len(got[0]) != 2 || got[0][0].Role != RoleSystem || got[0][1].Role != RoleUser {
		t.Fatalf("messages %+v, want a system and a user message", got)
	}
	sys, user := got[0][0].Content, got[0][1].Content
	for _, want := range []string{"word for word", "- the user is Alice", "left out these facts"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system message lacks %q:\n%s", want, sys)
		}
	}
	for _, want := range []string{"Earlier: greetings.", "Turn 3.", "User: I am Alice", "Assistant: Hello Alice"} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q:\n%s", want, user)
		}
	}
}
