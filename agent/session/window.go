package session

import (
	"fmt"
	"strings"
)

// Window is a working context: the chat messages a model is given, and what of the
// conversation they hold.
type Window struct {
	Strategy Strategy `json:"strategy"`
	// Messages are a system message (the runtime's system text, then the summary, the facts and
	// any merged sessions' summaries), the turns shown as user and assistant messages, then the
	// new user message (a turn's window) or none (the context affordance).
	Messages []Message `json:"messages"`
	// Tokens is the size of Messages as the window counts it (never more than Limit).
	Tokens int `json:"tokens"`
	Limit  int `json:"limit"`
	// Verbatim are the turns shown: as messages, or, for merged summaries, in the system message.
	Verbatim []int `json:"verbatim,omitempty"`
	// Summary is the span of turns the summary shown covers.
	Summary *Span `json:"summary,omitempty"`
	// Facts are the facts listed in the system message: those of the conversation that nothing
	// else in the window carries (the Coherent strategy).
	Facts []Fact `json:"facts,omitempty"`
	// Omitted are the turns of the conversation that answered and are neither shown nor
	// summarized: what the model does not see.
	Omitted []int `json:"omitted,omitempty"`
}

// Span is a range of turns, both ends included.
type Span struct {
	From    int `json:"from"`
	Through int `json:"through"`
}

// Context is the working context the next message would get, without the message: what the
// context affordance shows. system is the runtime's system text, as for Prepare. It changes
// nothing.
func (s *Session) Context(system string) (Window, error) { return s.window(system, nil) }

const (
	factsHeader = "Facts this conversation relied on:"
	// piece separates the parts of the system message.
	piece = "\n\n"
)

// pieceTokens is what a part of the system message adds to it, its separator included. A sum of
// these bounds the estimate of the whole, so selection by sums never overruns the window.
func pieceTokens(p string) int { return EstimateTokens(piece + p) }

func factLine(f Fact) string { return "\n- [" + f.ID + "] " + f.Text }

func summaryPiece(sum *Summary) string {
	return fmt.Sprintf("Summary of the conversation so far (turns %d to %d):\n%s", sum.From, sum.Through, sum.Text)
}

// mergePiece renders a merged summary: its text, then its facts that the text does not carry.
func mergePiece(t *Turn) string {
	var b strings.Builder
	o := t.Origin
	if o == nil {
		o = &Origin{}
	}
	fmt.Fprintf(&b, "Merged from session %s (turns %d to %d):", o.Session, o.From, o.Through)
	if t.Response.Content != "" {
		b.WriteString("\n" + t.Response.Content)
	}
	for _, f := range t.Facts {
		if !Recoverable(f, t.Response.Content) {
			b.WriteString(factLine(f))
		}
	}
	return b.String()
}

// turnTokens is what turn t adds to a window.
func turnTokens(t *Turn) int {
	if t.Kind == KindMerge {
		return pieceTokens(mergePiece(t))
	}
	return messageTokens(t.User) + messageTokens(t.Response)
}

// turnText is what of turn t a window shows, for recoverability.
func turnText(t *Turn) string {
	if t.Kind == KindMerge {
		return mergePiece(t)
	}
	return t.User.Content + "\n" + t.Response.Content
}

// validSummary is the summary, if it covers the start of the current conversation.
func (s *Session) validSummary() *Summary {
	sum := s.rec.Summary
	if sum == nil || sum.From != s.base()+1 || sum.Through > s.Last() {
		return nil
	}
	return sum
}

// selection is what a window holds, before it is rendered.
type selection struct {
	summary  *Summary
	verbatim []*Turn
	facts    []Fact
	omitted  []int
	tokens   int // the bound: fixed parts, summary, facts and turns, each counted alone
}

// window computes the working context for system text system and, when msg is not nil, a new
// message.
func (s *Session) window(system string, msg *Message) (Window, error) {
	sel, err := s.selectWindow(system, EstimateTokens(system)+messageOverhead, msg)
	w := Window{Strategy: s.rec.Config.strategy(), Limit: s.rec.Config.window(), Tokens: sel.tokens}
	if err != nil {
		return w, err
	}
	parts := []string{}
	if system != "" {
		parts = append(parts, system)
	}
	if sel.summary != nil {
		parts = append(parts, summaryPiece(sel.summary))
		w.Summary = &Span{From: sel.summary.From, Through: sel.summary.Through}
	}
	if len(sel.facts) > 0 {
		var b strings.Builder
		b.WriteString(factsHeader)
		for _, f := range sel.facts {
			b.WriteString(factLine(f))
		}
		parts = append(parts, b.String())
		w.Facts = sel.facts
	}
	var chat []Message
	for _, t := range sel.verbatim {
		w.Verbatim = append(w.Verbatim, t.Number)
		if t.Kind == KindMerge {
			parts = append(parts, mergePiece(t))
			continue
		}
		chat = append(chat, t.User, t.Response)
	}
	if len(parts) > 0 {
		w.Messages = append(w.Messages, Message{Role: RoleSystem, Content: strings.Join(parts, piece)})
	}
	w.Messages = append(w.Messages, chat...)
	if msg != nil {
		w.Messages = append(w.Messages, *msg)
	}
	w.Omitted = sel.omitted
	w.Tokens = 0
	for _, m := range w.Messages {
		w.Tokens += messageTokens(m)
	}
	return w, nil
}

// windowTokens is the size of the context the next turn starts from, with a system text of
// the size the last Prepare saw (its words unknown: facts it might carry are counted as not).
func (s *Session) windowTokens() (int, error) {
	sel, err := s.selectWindow("", max(s.rec.SystemTokens, messageOverhead), nil)
	return sel.tokens, err
}

// selectWindow chooses what the window holds, by the strategy, within the window: system is
// the system text (for recoverability), sysTokens what it costs, msg the new message or nil.
func (s *Session) selectWindow(system string, sysTokens int, msg *Message) (selection, error) {
	cfg := s.rec.Config
	limit := cfg.window()
	var conv []*Turn
	all := s.conversation()
	for i := range all {
		if all[i].eligible() {
			conv = append(conv, &all[i])
		}
	}
	var sel selection
	fixed := sysTokens
	if msg != nil {
		fixed += messageTokens(*msg)
	}
	rest := conv
	strategy := cfg.strategy()
	if strategy == Summarize || strategy == Coherent {
		if sum := s.validSummary(); sum != nil {
			sel.summary = sum
			fixed += pieceTokens(summaryPiece(sum))
			for len(rest) > 0 && rest[0].Number <= sum.Through {
				rest = rest[1:]
			}
		}
	}
	sel.tokens = fixed
	if fixed > limit {
		return sel, fmt.Errorf("%w: the system message and the message need %d tokens of %d", ErrNoRoom, fixed, limit)
	}
	room := limit - fixed
	var k int // the last k turns of rest are shown
	var used int
	switch strategy {
	case Sliding, Summarize:
		k, used = suffixFitting(rest, room)
	case Forget:
		start, acc := forgetStart(rest, room)
		k, used = len(rest)-start, acc
	case Coherent:
		var err error
		k, used, sel.facts, err = s.coherentSplit(system, sel.summary, conv, rest, room)
		if err != nil {
			return sel, err
		}
	}
	sel.tokens += used
	sel.verbatim = rest[len(rest)-k:]
	for _, t := range rest[:len(rest)-k] {
		sel.omitted = append(sel.omitted, t.Number)
	}
	return sel, nil
}

// suffixFitting is the longest run of turns at the end of ts whose sizes sum to at most room,
// as its length, and that sum.
func suffixFitting(ts []*Turn, room int) (k, used int) {
	for k < len(ts) {
		c := turnTokens(ts[len(ts)-1-k])
		if used+c > room {
			break
		}
		used += c
		k++
	}
	return k, used
}

// forgetStart folds over ts oldest first: the conversation grows until the next turn would not
// fit in room, then everything before that turn is forgotten (and a turn that alone does not
// fit is forgotten too). It returns where the shown turns start, and their size.
func forgetStart(ts []*Turn, room int) (start, acc int) {
	for i, t := range ts {
		c := turnTokens(t)
		if acc+c > room {
			start, acc = i, 0
			if c > room {
				start = i + 1
				continue
			}
		}
		acc += c
	}
	return start, acc
}

// coherentSplit chooses how many of the last turns of rest to show (k) when every fact of the
// conversation (the turns of conv) that neither the system text, the summary nor a shown turn
// citing it carries must be listed. It shows as many turns as fit with the facts list, and
// fails with ErrNoRoom when even the facts alone do not fit.
func (s *Session) coherentSplit(system string, sum *Summary, conv, rest []*Turn, room int) (k, used int, facts []Fact, err error) {
	// What the system text and the summary carry, as words: computed at the first fact, since
	// a conversation that cited none (the common case) needs none of it.
	var carried string
	carriedBy := func() string {
		if carried == "" {
			carried = normal(system)
			if sum != nil {
				carried += normal(sum.Text)
			}
		}
		return carried
	}
	// hit[id] is the index in rest of the last turn citing the fact whose own text carries it;
	// -1 when none does (the fact must be listed whatever is shown).
	hit := map[string]int{}
	var order []Fact
	firstRest := len(conv) - len(rest)
	for i, t := range conv {
		own := s.ownFacts(t)
		for j, f := range t.Facts {
			if _, seen := hit[f.ID]; !seen {
				if strings.Contains(carriedBy(), normal(f.Text)) {
					hit[f.ID] = len(rest) // carried by the system text or the summary: never listed
					continue
				}
				hit[f.ID] = -1
				order = append(order, f)
			}
			if i >= firstRest && hit[f.ID] != len(rest) && own[j] {
				hit[f.ID] = i - firstRest
			}
		}
	}
	// Show all of rest, then one turn fewer at a time: a turn no longer shown lists the facts
	// only it carried. byHit[i] are the facts that rest[i] is the last to carry.
	byHit := make([][]Fact, len(rest))
	fcost, nfacts := 0, 0
	for _, f := range order {
		if h := hit[f.ID]; h >= 0 {
			byHit[h] = append(byHit[h], f)
		} else {
			fcost += EstimateTokens(factLine(f))
			nfacts++
		}
	}
	turns := 0
	for _, t := range rest {
		turns += turnTokens(t)
	}
	header := func() int {
		if nfacts > 0 {
			return pieceTokens(factsHeader)
		}
		return 0
	}
	for k = len(rest); ; k-- {
		if c := fcost + header() + turns; c <= room {
			cut := len(rest) - k // facts whose last carrier is before cut are listed
			for _, f := range order {
				if hit[f.ID] < cut {
					facts = append(facts, f)
				}
			}
			return k, c, facts, nil
		}
		if k == 0 {
			break
		}
		i := len(rest) - k // rest[i] is no longer shown
		turns -= turnTokens(rest[i])
		for _, f := range byHit[i] {
			fcost += EstimateTokens(factLine(f))
			nfacts++
		}
	}
	return 0, 0, nil, fmt.Errorf("%w: the %d facts the conversation relied on need %d tokens, %d are left: reset the session or fork it from an earlier turn",
		ErrNoRoom, nfacts, fcost+header(), room)
}

// ownFacts says, for each fact of t, whether t's own text carries it. Turns never change, so it
// is computed once per turn and kept.
func (s *Session) ownFacts(t *Turn) []bool {
	if own, ok := s.own[t.Number]; ok {
		return own
	}
	own := make([]bool, len(t.Facts))
	if len(t.Facts) > 0 {
		text := normal(turnText(t))
		for j, f := range t.Facts {
			own[j] = strings.Contains(text, normal(f.Text))
		}
	}
	if s.own == nil {
		s.own = map[int][]bool{}
	}
	s.own[t.Number] = own
	return own
}
