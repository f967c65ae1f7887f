package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Summary is a model-written summary of the conversation's turns From through Through. It is a
// cache of a projection: the turns stay the truth, and a summary that no longer starts the
// current conversation (after a reset) is ignored.
type Summary struct {
	From    int    `json:"from"`
	Through int    `json:"through"`
	Text    string `json:"text"`
	// Tokens is the text's size.
	Tokens int `json:"tokens"`
	// Usage is what making it consumed, every attempt included; Model what made it.
	Usage Usage  `json:"usage"`
	Model string `json:"model,omitempty"`
	// Attempts is how many summaries the model wrote: 2 when the first was refused.
	Attempts int       `json:"attempts"`
	Made     time.Time `json:"made,omitzero"`
	Report   Report    `json:"report"`
}

func (s Summary) clone() Summary {
	s.Report.Lost = slices.Clone(s.Report.Lost)
	return s
}

// Report is what a summary kept and lost.
type Report struct {
	// Facts is how many facts the summarized turns relied on; Lost those the summary does not
	// carry ([Recoverable]). A Coherent session refuses a summary that lost any.
	Facts int    `json:"facts"`
	Lost  []Fact `json:"lost,omitempty"`
	// Before is the size of what the summary replaces (the previous summary and the turns), and
	// After the summary's.
	Before int `json:"tokensBefore"`
	After  int `json:"tokensAfter"`
}

// Plan is a summary to make: fold Turns into Previous (the current summary, which covers the
// turns from From on), so that the new summary covers From through Through. It is a snapshot:
// [Compact] runs it on any goroutine while the session goes on.
type Plan struct {
	Session  string
	Strategy Strategy
	From     int
	Through  int
	Previous string
	Turns    []Turn
	// Facts are the facts of every turn from From through Through: the summary must carry each
	// (Coherent), or is told which it lost (Summarize).
	Facts     []Fact
	MaxTokens int
	// Before is the size of what the summary replaces.
	Before int
}

// Plan says whether the conversation should be summarized now, and what to summarize: only
// for the Summarize and Coherent strategies, when the context (with system text system, and no
// new message) is past the high-water mark; enough of the oldest turns to bring it down to the
// low-water mark. Between the marks there is nothing to do: that is the hysteresis that keeps a
// session from summarizing at every turn.
func (s *Session) Plan(system string) (*Plan, bool) {
	cfg := s.rec.Config
	if st := cfg.strategy(); st != Summarize && st != Coherent || s.rec.State == Collapsed || s.rec.State == Dormant {
		return nil, false
	}
	limit := float64(cfg.window())
	sysTokens := EstimateTokens(system) + messageOverhead
	sum := s.validSummary()
	var rest []*Turn // eligible turns after the summary
	conv := s.conversation()
	for i := range conv {
		if conv[i].eligible() && (sum == nil || conv[i].Number > sum.Through) {
			rest = append(rest, &conv[i])
		}
	}
	if len(rest) == 0 {
		return nil, false
	}
	size := sysTokens
	if sum != nil {
		size += pieceTokens(summaryPiece(sum))
	}
	for _, t := range rest {
		size += turnTokens(t)
	}
	if float64(size) <= cfg.high()*limit {
		return nil, false
	}
	// Summarize the oldest turns until the rest, with a summary of the largest size allowed,
	// is under the low-water mark (or every turn is summarized).
	maxTok := cfg.summaryTokens()
	after := size - turnTokens(rest[0])
	n := 1
	if sum != nil {
		after -= pieceTokens(summaryPiece(sum))
	}
	for n < len(rest) && float64(after+maxTok) > cfg.low()*limit {
		after -= turnTokens(rest[n])
		n++
	}
	p := &Plan{Session: s.rec.ID, Strategy: cfg.strategy(), From: s.base() + 1, Through: rest[n-1].Number, MaxTokens: maxTok}
	if sum != nil {
		p.Previous = sum.Text
		p.Before = sum.Tokens
	}
	for _, t := range rest[:n] {
		p.Turns = append(p.Turns, t.clone())
		p.Before += turnTokens(t)
	}
	p.Facts = s.factsThrough(p.Through)
	return p, true
}

// factsThrough are the facts of the conversation's eligible turns up to turn n, deduplicated.
func (s *Session) factsThrough(n int) []Fact {
	var fs []Fact
	for _, t := range s.conversation() {
		if t.Number > n {
			break
		}
		if t.eligible() {
			fs = append(fs, t.Facts...)
		}
	}
	return dedupeFacts(fs)
}

// SummaryRequest asks a [Summarizer] for a summary.
type SummaryRequest struct {
	// Previous is the summary so far ("" for none), to extend with Turns.
	Previous string
	Turns    []Turn
	// Facts must appear in the summary word for word (each fact's text as a run of words).
	Facts []Fact
	// Lost are the facts a previous attempt dropped, when this is a retry.
	Lost []Fact
	// TooLong is set on a retry after a summary longer than MaxTokens.
	TooLong   bool
	MaxTokens int
}

// Summarizer writes summaries, usually with a model ([NewSummarizer]).
type Summarizer interface {
	// Summarize returns the summary's text and what writing it consumed (zero with Estimated
	// unset when nothing was measured: Compact then estimates it).
	Summarize(ctx context.Context, req SummaryRequest) (text string, u *Usage, err error)
}

// Compact makes the summary p asks for with m. For a Coherent plan, a summary that lost a fact,
// or that is longer than p.MaxTokens, is retried once with what was wrong, and refused if it
// still is: the error is a *SummaryError, and the returned Summary (non-nil whenever m wrote
// anything) still carries its Usage, so that Install charges the session for it. For Summarize,
// only the length is enforced; lost facts are reported. Compact may run on any goroutine: p is
// a snapshot.
func Compact(ctx context.Context, p *Plan, m Summarizer) (*Summary, error) {
	sum := &Summary{From: p.From, Through: p.Through}
	req := SummaryRequest{Previous: p.Previous, Turns: p.Turns, Facts: p.Facts, MaxTokens: p.MaxTokens}
	var serr *SummaryError
	for attempt := 1; attempt <= 2; attempt++ {
		text, u, err := m.Summarize(ctx, req)
		if err != nil {
			if sum.Attempts == 0 {
				return nil, fmt.Errorf("session: summarizing: %w", err)
			}
			return sum, errors.Join(serr, err)
		}
		sum.Attempts = attempt
		if u == nil {
			u = &Usage{In: int64(p.Before), Out: int64(EstimateTokens(text)), Estimated: true}
		}
		sum.Usage = sum.Usage.add(*u)
		sum.Text, sum.Tokens = text, EstimateTokens(text)
		sum.Report = report(p.Facts, text, p.Before)
		serr = checkSummary(p.Strategy, sum, p.MaxTokens)
		if serr == nil {
			return sum, nil
		}
		req.Lost, req.TooLong = sum.Report.Lost, errors.Is(serr, ErrSummaryTooLong)
	}
	return sum, serr
}

func report(facts []Fact, text string, before int) Report {
	r := Report{Facts: len(facts), Before: before, After: EstimateTokens(text)}
	n := normal(text)
	for _, f := range facts {
		if !strings.Contains(n, normal(f.Text)) {
			r.Lost = append(r.Lost, f)
		}
	}
	return r
}

// checkSummary is why sum must be refused under strategy, or nil.
func checkSummary(strategy Strategy, sum *Summary, maxTokens int) *SummaryError {
	switch {
	case len(sum.Text) > maxText || sum.Tokens > maxTokens:
		return &SummaryError{Err: ErrSummaryTooLong, Report: sum.Report, Tokens: sum.Tokens, Max: maxTokens}
	case strategy == Coherent && len(sum.Report.Lost) > 0:
		return &SummaryError{Err: ErrIncoherent, Report: sum.Report}
	}
	return nil
}

// Install makes sum, made by Compact from a Plan of this session, the current summary, and
// charges what making it consumed (priced by prices) whether it accepts it or not. It checks it
// again against the session as it is now: a summary that does not start the current
// conversation, covers turns the session no longer has, or is older than the current one is
// ErrStale; one longer than the bound is ErrSummaryTooLong; and for Coherent, one that does not
// carry every fact of the turns it covers is ErrIncoherent (a *SummaryError saying which).
func (s *Session) Install(now time.Time, sum *Summary, prices Prices) (Result, error) {
	if sum == nil {
		return Result{}, fmt.Errorf("%w: no summary", ErrInvalid)
	}
	res := s.Charge(now, sum.Usage, sum.Model, prices)
	cur := s.validSummary()
	switch {
	case s.rec.State == Collapsed || s.rec.State == Dormant:
		return res, s.stateErr("install a summary")
	case sum.From != s.base()+1 || sum.Through > s.Last() || sum.Through < sum.From:
		return res, fmt.Errorf("%w: it covers turns %d to %d; the conversation starts at turn %d and has %d", ErrStale, sum.From, sum.Through, s.base()+1, s.Last())
	case cur != nil && cur.Through >= sum.Through:
		return res, fmt.Errorf("%w: the current summary already covers turns up to %d", ErrStale, cur.Through)
	}
	checked := sum.clone()
	checked.Tokens = EstimateTokens(checked.Text)
	checked.Report = report(s.factsThrough(sum.Through), checked.Text, sum.Report.Before)
	if serr := checkSummary(s.rec.Config.strategy(), &checked, s.rec.Config.summaryTokens()); serr != nil {
		return res, serr
	}
	checked.Made = now
	s.rec.Summary = &checked
	s.rec.Updated = now
	return res, nil
}

// Complete is a chat model call: the messages in, the answer's text and what it consumed out
// (nil when the model reported nothing). The runtime adapts its model to it.
type Complete func(ctx context.Context, msgs []Message) (text string, u *Usage, err error)

// NewSummarizer is a Summarizer that asks a model: a system message that says what a summary
// is for and which facts it must keep word for word (and, on a retry, which it dropped or that
// it was too long), and a user message with the summary so far and the turns to fold in.
func NewSummarizer(complete Complete) Summarizer { return modelSummarizer{complete} }

type modelSummarizer struct{ complete Complete }

func (m modelSummarizer) Summarize(ctx context.Context, req SummaryRequest) (string, *Usage, error) {
	var sys strings.Builder
	fmt.Fprintf(&sys, "You write the running summary of a conversation between a user and an assistant, "+
		"for the assistant to continue it without the full transcript. Keep decisions, open questions, names, "+
		"numbers and what the user asked for; drop pleasantries and repetition. Write plain prose, at most "+
		"about %d words. Answer with the summary only.", req.MaxTokens*3/4)
	if len(req.Facts) > 0 {
		sys.WriteString("\n\nThe conversation relied on these facts. Each must appear in your summary word for word, exactly as written here:")
		for _, f := range req.Facts {
			sys.WriteString("\n- " + f.Text)
		}
	}
	if len(req.Lost) > 0 {
		sys.WriteString("\n\nYour previous summary left out these facts; this time include each one word for word:")
		for _, f := range req.Lost {
			sys.WriteString("\n- " + f.Text)
		}
	}
	if req.TooLong {
		fmt.Fprintf(&sys, "\n\nYour previous summary was too long: keep it under about %d words.", req.MaxTokens*3/4)
	}
	var user strings.Builder
	if req.Previous != "" {
		user.WriteString("The summary so far:\n" + req.Previous + "\n\n")
	}
	user.WriteString("The conversation to fold into it:")
	for _, t := range req.Turns {
		if t.Kind == KindMerge {
			user.WriteString("\n\n" + mergePiece(&t))
			continue
		}
		fmt.Fprintf(&user, "\n\nTurn %d.\nUser: %s\nAssistant: %s", t.Number, t.User.Content, t.Response.Content)
	}
	return m.complete(ctx, []Message{{Role: RoleSystem, Content: sys.String()}, {Role: RoleUser, Content: user.String()}})
}
