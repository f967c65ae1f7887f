package session

import (
	"encoding/json"
	"fmt"
	"time"
)

// History is a page of a session's turns.
type History struct {
	Turns []Turn `json:"turns"`
	// Resets are the session's resets, each as the number of the last turn before it.
	Resets []int `json:"resets,omitempty"`
	// Total is how many turns the session has recorded.
	Total int `json:"total"`
	// Next is the number to ask from for the next page; 0 when this page reaches the end.
	Next int `json:"next,omitempty"`
}

// Bounds of a History page.
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 1000
)

// History returns the turns numbered from from on (1 or less: from the first), oldest first, at
// most limit of them (0 or less: DefaultHistoryLimit; at most MaxHistoryLimit). It changes
// nothing.
func (s *Session) History(from, limit int) History {
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	limit = min(limit, MaxHistoryLimit)
	h := History{Resets: append([]int(nil), s.rec.Resets...), Total: len(s.turns), Turns: []Turn{}}
	for i, t := range s.turns {
		if t.Number < from {
			continue
		}
		if len(h.Turns) == limit {
			h.Next = s.turns[i].Number
			break
		}
		h.Turns = append(h.Turns, t.clone())
	}
	return h
}

// Metrics are a session's measures.
type Metrics struct {
	ID    string `json:"id"`
	State State  `json:"state"`
	// Turn is the number of the last turn recorded; Running that of the running turn, if any.
	Turn    int `json:"turn"`
	Running int `json:"running,omitempty"`
	// Turns counts the turns recorded, by status.
	Turns map[TurnStatus]int `json:"turns"`
	// Used is what the session consumed, and Budgets each budget's use.
	Used    Totals         `json:"used"`
	Budgets []BudgetStatus `json:"budgets,omitempty"`
	// LatencyMean and LatencyMax are over the turns that answered.
	LatencyMean time.Duration `json:"-"`
	LatencyMax  time.Duration `json:"-"`
	// Context is the size of the context the next turn starts from, with a system message the
	// size the last Prepare saw.
	Context  int        `json:"context"`
	Window   int        `json:"window"`
	Strategy Strategy   `json:"strategy"`
	Summary  *Span      `json:"summary,omitempty"`
	Warnings []Warning  `json:"warnings,omitempty"`
	Collapse *Collapse  `json:"collapse,omitempty"`
	Origin   *Origin    `json:"origin,omitempty"`
	Waiting  int        `json:"waiting,omitempty"`
	Opened   time.Time  `json:"opened,omitzero"`
	Updated  time.Time  `json:"updated,omitzero"`
	Resets   []int      `json:"resets,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
}

// BudgetStatus is one budget's use: Used of Limit, Left remaining (tokens, turns, micro-units,
// or milliseconds of wall time).
type BudgetStatus struct {
	Budget Reason `json:"budget"`
	Limit  int64  `json:"limit"`
	Used   int64  `json:"used"`
	Left   int64  `json:"left"`
	// Low is set once it has Warn or less left.
	Low bool `json:"low,omitempty"`
}

type plainMetrics Metrics

type metricsJSON struct {
	plainMetrics
	LatencyMean Duration `json:"latencyMean"`
	LatencyMax  Duration `json:"latencyMax"`
}

// MarshalJSON writes the latencies as ProtoJSON durations.
func (m Metrics) MarshalJSON() ([]byte, error) {
	return json.Marshal(metricsJSON{plainMetrics(m), Duration(m.LatencyMean), Duration(m.LatencyMax)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Metrics) UnmarshalJSON(data []byte) error {
	var j metricsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*m = Metrics(j.plainMetrics)
	m.LatencyMean, m.LatencyMax = time.Duration(j.LatencyMean), time.Duration(j.LatencyMax)
	return nil
}

// Metrics measures the session at now (for the wall-time budget). It changes nothing.
func (s *Session) Metrics(now time.Time) Metrics {
	r := s.rec
	m := Metrics{ID: r.ID, State: r.State, Turn: s.Last(), Turns: map[TurnStatus]int{}, Used: r.Used,
		Window: r.Config.window(), Strategy: r.Config.strategy(), Warnings: append([]Warning(nil), r.Warnings...),
		Opened: r.Opened, Updated: r.Updated, Resets: append([]int(nil), r.Resets...),
		Waiting: len(r.Queue) + len(r.Merging)}
	if r.Current != nil {
		m.Running = r.Current.Number
	}
	if r.Collapse != nil {
		c := *r.Collapse
		m.Collapse = &c
	}
	if r.Origin != nil {
		o := *r.Origin
		m.Origin = &o
	}
	if sum := s.validSummary(); sum != nil {
		m.Summary = &Span{From: sum.From, Through: sum.Through}
	}
	var total time.Duration
	answered := 0
	for _, t := range s.turns {
		m.Turns[t.Status]++
		if t.Kind == KindChat && t.Status.answered() && t.Origin == nil {
			answered++
			total += t.Latency
			m.LatencyMax = max(m.LatencyMax, t.Latency)
		}
	}
	if answered > 0 {
		m.LatencyMean = total / time.Duration(answered)
	}
	m.Context, _ = s.windowTokens()
	if d := s.Deadline(); !d.IsZero() {
		m.Deadline = &d
	}
	m.Budgets = s.budgetUse(now)
	return m
}

// Reset clears the conversation: the next turn starts from an empty context, and the summary is
// dropped. The turns stay in the history (Resets marks where), and the budgets are not
// refunded. A reset while a turn runs is ErrBusy; of an ended session ErrCollapsed or
// ErrDraining. Resetting a dormant session, or one with no turn since its last reset, changes
// nothing.
func (s *Session) Reset(now time.Time) error {
	switch s.rec.State {
	case Streaming, Draining, Collapsed:
		return s.stateErr("reset")
	case Dormant:
		return nil
	}
	if last := s.rec.Next - 1; last > s.base() {
		s.rec.Resets = append(s.rec.Resets, last)
	}
	s.rec.Summary = nil
	s.rec.State, s.rec.Updated = Ready, now
	return nil
}

// Fork returns a new session, with ID id, that is this one as it was after turn at (0: before
// any; Last: now): its turns up to at, its resets up to there, its configuration, its summary
// if that still applies, fresh budgets, and Origin naming this session and turn. It works in
// every state, collapsed included (forking is how a spent conversation goes on), and changes
// nothing in this session. The new session is ready, or waiting if its conversation has turns.
func (s *Session) Fork(now time.Time, id string, at int) (*Session, error) {
	switch {
	case id == "" || len(id) > maxID:
		return nil, fmt.Errorf("%w: a session ID must have 1 to %d bytes", ErrInvalid, maxID)
	case id == s.rec.ID:
		return nil, fmt.Errorf("%w: a fork needs a new ID", ErrInvalid)
	case at < 0 || at > s.Last():
		return nil, fmt.Errorf("%w: no turn %d to fork at: the session has turns up to %d", ErrInvalid, at, s.Last())
	}
	f := &Session{rec: Record{Version: RecordVersion, ID: id, State: Ready, Config: s.rec.Config,
		Opened: now, Updated: now, Next: at + 1, Origin: &Origin{Session: s.rec.ID, Turn: at}}}
	for _, t := range s.turns {
		if t.Number > at {
			break
		}
		f.turns = append(f.turns, t.clone())
	}
	for _, r := range s.rec.Resets {
		if r <= at {
			f.rec.Resets = append(f.rec.Resets, r)
		}
	}
	if sum := s.validSummary(); sum != nil && sum.Through <= at && sum.From == f.base()+1 {
		c := sum.clone()
		f.rec.Summary = &c
	}
	if len(f.conversation()) > 0 {
		f.rec.State = Waiting
	}
	return f, nil
}

// MergeMode is what a merge folds in.
type MergeMode string

// Merge modes.
const (
	// MergeTurns appends the other session's conversation, turn by turn.
	MergeTurns MergeMode = "turns"
	// MergeSummary appends one entry: the other session's summary, if it has one, and the facts
	// of its conversation.
	MergeSummary MergeMode = "summary"
)

// Merge folds another session of the same instance into this one, with provenance: its
// current conversation's turns that answered (MergeTurns), renumbered after this session's,
// each with an Origin naming the session, turn and task it came from (or the origin it already
// had); or one KindMerge entry holding its summary and its facts (MergeSummary). It returns the
// turns appended, which the runtime commits. Nothing is charged: no model ran. A merge while a
// turn runs is ErrBusy; into an ended session ErrCollapsed or ErrDraining; of a session into
// itself ErrInvalid; of a session with nothing to merge ErrNothing.
func (s *Session) Merge(now time.Time, other *Session, mode MergeMode) ([]Turn, error) {
	switch {
	case mode != MergeTurns && mode != MergeSummary:
		return nil, fmt.Errorf("%w: merge mode %q", ErrInvalid, mode)
	case other == nil || other.rec.ID == s.rec.ID:
		return nil, fmt.Errorf("%w: a session cannot merge itself", ErrInvalid)
	}
	switch s.rec.State {
	case Streaming, Draining, Collapsed:
		return nil, s.stateErr("merge")
	}
	var from []Turn
	for _, t := range other.conversation() {
		if t.eligible() {
			from = append(from, t)
		}
	}
	if len(from) == 0 {
		return nil, fmt.Errorf("%w: session %s has no conversation to merge", ErrNothing, other.rec.ID)
	}
	var add []Turn
	switch mode {
	case MergeTurns:
		for _, t := range from {
			c := t.clone()
			if c.Origin == nil {
				c.Origin = &Origin{Session: other.rec.ID, Turn: t.Number, Task: t.Task}
			}
			c.Task, c.Merged = "", nil
			add = append(add, c)
		}
	case MergeSummary:
		text := ""
		if sum := other.validSummary(); sum != nil {
			text = sum.Text
		}
		var facts []Fact
		for _, t := range from {
			facts = append(facts, t.Facts...)
		}
		add = append(add, Turn{Kind: KindMerge, Status: Completed, Started: now, Ended: now,
			Response: Message{Role: RoleAssistant, Content: text}, Facts: dedupeFacts(facts),
			Origin: &Origin{Session: other.rec.ID, From: from[0].Number, Through: from[len(from)-1].Number}})
	}
	s.Open(now)
	for i := range add {
		add[i].Number = s.rec.Next
		s.rec.Next++
	}
	s.turns = append(s.turns, cloneAll(add, Turn.clone)...)
	s.rec.State, s.rec.Updated = Waiting, now
	return add, nil
}
