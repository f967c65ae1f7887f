package session

// Concurrency: a Session is a plain value with no lock and no goroutine. It belongs to the one
// goroutine that owns it (in the runtime, the agent instance's); another goroutine gets a
// Clone, or a Plan, never the Session itself. Nothing here blocks, does I/O or calls user
// code, except Compact, which calls a Summarizer and is meant to run off the owner's goroutine
// on a Plan.

import (
	"fmt"
	"slices"
	"time"
)

// State is where a session stands (docs/sessions.md, "States").
type State string

// Session states.
const (
	// Dormant: a context named but not opened; nothing is stored yet.
	Dormant State = "dormant"
	// Ready: open, and no turn taken in the current conversation (also after a reset).
	Ready State = "ready"
	// Streaming: a turn is running.
	Streaming State = "streaming"
	// Waiting: the last turn ended; waiting for the user.
	Waiting State = "waiting"
	// Draining: ending; the running turn finishes, nothing new is accepted.
	Draining State = "draining"
	// Collapsed: ended for good; messages are refused.
	Collapsed State = "collapsed"
)

func (st State) valid() bool {
	switch st {
	case Dormant, Ready, Streaming, Waiting, Draining, Collapsed:
		return true
	}
	return false
}

// Reason is why a session collapsed, or which budget a warning is about.
type Reason string

// Reasons.
const (
	ReasonTokens Reason = "tokens"
	ReasonTurns  Reason = "turns"
	ReasonCost   Reason = "cost"
	ReasonWall   Reason = "wall"
	// ReasonClosed: the session was closed (Session.Close).
	ReasonClosed Reason = "closed"
)

// Collapse says why and when a session ended.
type Collapse struct {
	Reason Reason `json:"reason"`
	// Turn is the last turn of the session when it ended.
	Turn int `json:"turn"`
	// At is when it collapsed; zero while it is draining.
	At     time.Time `json:"at,omitzero"`
	Detail string    `json:"detail,omitempty"`
}

func (c *Collapse) describe() string {
	if c == nil {
		return "ended"
	}
	if c.Reason == ReasonClosed {
		return "closed at turn " + fmt.Sprint(c.Turn)
	}
	what := map[Reason]string{ReasonTokens: "token", ReasonTurns: "turn", ReasonCost: "cost", ReasonWall: "wall-time"}[c.Reason]
	return fmt.Sprintf("%s budget spent at turn %d", what, c.Turn)
}

// Warning says a budget is running low: Used of Limit (tokens, turns, micro-units, or
// milliseconds for wall time), when it first had Warn or less left.
type Warning struct {
	Budget Reason    `json:"budget"`
	Used   int64     `json:"used"`
	Limit  int64     `json:"limit"`
	Turn   int       `json:"turn"`
	At     time.Time `json:"at"`
	Text   string    `json:"text"`
}

// Totals is what a session has consumed.
type Totals struct {
	Usage
	Cost Micros `json:"costMicros"`
	// CostUnknown is set once a model without a price consumed tokens: Cost counts nothing
	// for them.
	CostUnknown bool `json:"costUnknown,omitempty"`
	// Turns counts the turns taken in this session that answered.
	Turns int `json:"turns"`
}

// RecordVersion is the version of the stored form, [Record].
const RecordVersion = 1

// Record is a session's stored form apart from its turns: what the runtime writes, as a JSON
// document, with every change, and the new turns beside it. Turns are written once each.
type Record struct {
	Version int    `json:"v"`
	ID      string `json:"id"`
	State   State  `json:"state"`
	Config  Config `json:"config"`
	// Opened is when it was opened (the wall-time budget counts from it); Updated when it last
	// changed.
	Opened  time.Time `json:"opened,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
	// Next is the number the next turn gets.
	Next int `json:"next"`
	// Resets are the resets, each as the number of the last turn before it, ascending; the
	// conversation is the turns after the last.
	Resets []int `json:"resets,omitempty"`
	// Used is what the session has consumed.
	Used Totals `json:"used"`
	// Warnings are the budget warnings given, in order, at most one per budget.
	Warnings []Warning `json:"warnings,omitempty"`
	// Collapse says why the session is draining or collapsed.
	Collapse *Collapse `json:"collapse,omitempty"`
	// Origin is the session and turn this one was forked from.
	Origin *Origin `json:"origin,omitempty"`
	// Summary is the current summary of the conversation's older turns: a cache of a
	// projection, not part of the record's truth.
	Summary *Summary `json:"summary,omitempty"`
	// Current is the running turn (Streaming, Draining), as far as it has got.
	Current *Turn `json:"current,omitempty"`
	// Queue are the messages waiting for the running turn; Merging those to be merged into it.
	Queue   []Pending `json:"queue,omitempty"`
	Merging []Pending `json:"merging,omitempty"`
	// Canceling is set once a Cancel was asked of the running turn, so that more messages
	// queue without asking again.
	Canceling bool `json:"canceling,omitempty"`
	// SystemTokens is the size of the system message the last Prepare saw: what the size of the
	// context the next turn starts from is counted with.
	SystemTokens int `json:"systemTokens,omitempty"`
	// Parked is set while the running turn waits for the user's answer to a question (Park).
	Parked *Parked `json:"parked,omitempty"`
}

func (r Record) clone() Record {
	r.Resets = slices.Clone(r.Resets)
	r.Warnings = slices.Clone(r.Warnings)
	if r.Collapse != nil {
		c := *r.Collapse
		r.Collapse = &c
	}
	if r.Origin != nil {
		o := *r.Origin
		r.Origin = &o
	}
	if r.Summary != nil {
		s := r.Summary.clone()
		r.Summary = &s
	}
	if r.Current != nil {
		t := r.Current.clone()
		r.Current = &t
	}
	if r.Parked != nil {
		p := *r.Parked
		r.Parked = &p
	}
	r.Queue = cloneAll(r.Queue, Pending.clone)
	r.Merging = cloneAll(r.Merging, Pending.clone)
	return r
}

func cloneAll[T any](xs []T, f func(T) T) []T {
	if xs == nil {
		return nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// Session is one chat session: an A2A context of an agent instance. See the package doc.
type Session struct {
	rec   Record
	turns []Turn
	// own caches, by turn number, which of a turn's facts its own text carries (ownFacts).
	own map[int][]bool
}

// New returns a dormant session with ID id (the A2A context ID) and configuration cfg.
func New(id string, cfg Config) (*Session, error) {
	if id == "" || len(id) > maxID {
		return nil, fmt.Errorf("%w: a session ID must have 1 to %d bytes", ErrInvalid, maxID)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Session{rec: Record{Version: RecordVersion, ID: id, State: Dormant, Config: cfg, Next: 1}}, nil
}

// Load restores a session from its record and its turns (in order), as Record and Turns gave
// them. It checks that they are consistent; a session stored while a turn was running is
// restored as it was: [Session.Recover] settles it.
func Load(rec Record, turns []Turn) (*Session, error) {
	bad := func(format string, args ...any) (*Session, error) {
		return nil, fmt.Errorf("%w record of session %q: "+format, append([]any{ErrInvalid, rec.ID}, args...)...)
	}
	switch {
	case rec.Version != RecordVersion:
		return bad("version %d, want %d", rec.Version, RecordVersion)
	case rec.ID == "" || len(rec.ID) > maxID:
		return bad("bad ID")
	case !rec.State.valid():
		return bad("unknown state %q", rec.State)
	}
	if err := rec.Config.Validate(); err != nil {
		return nil, err
	}
	last := 0
	for _, t := range turns {
		if t.Number <= last {
			return bad("turn %d after turn %d", t.Number, last)
		}
		if !t.Status.valid() || (t.Kind != KindChat && t.Kind != KindMerge) {
			return bad("turn %d has status %q, kind %q", t.Number, t.Status, t.Kind)
		}
		last = t.Number
	}
	if rec.Next <= last || rec.Next > maxTurns {
		return bad("next turn %d is not after the last, %d, or past %d", rec.Next, last, maxTurns)
	}
	prev := 0
	for _, r := range rec.Resets {
		if r < prev || r >= rec.Next {
			return bad("resets %v out of order", rec.Resets)
		}
		prev = r
	}
	running := rec.State == Streaming || rec.State == Draining
	switch {
	case running != (rec.Current != nil):
		return bad("state %s with a running turn: %v", rec.State, rec.Current != nil)
	case rec.Current != nil && (rec.Current.Number <= last || rec.Current.Number >= rec.Next):
		return bad("running turn %d out of place", rec.Current.Number)
	case (rec.State == Collapsed || rec.State == Draining) != (rec.Collapse != nil):
		return bad("state %s with a collapse: %v", rec.State, rec.Collapse != nil)
	case rec.Parked != nil && (rec.Current == nil || rec.Parked.Task != rec.Current.Task):
		return bad("a parked turn that is not the running one")
	case !running && (len(rec.Queue) > 0 || len(rec.Merging) > 0 || rec.Canceling):
		return bad("messages wait in state %s", rec.State)
	case rec.SystemTokens < 0 || len(rec.Queue)+len(rec.Merging) > rec.Config.queue():
		return bad("%d messages wait, system message of %d tokens", len(rec.Queue)+len(rec.Merging), rec.SystemTokens)
	case rec.Summary != nil && (rec.Summary.From < 1 || rec.Summary.Through < rec.Summary.From || rec.Summary.Through > last):
		return bad("summary of turns %d to %d", rec.Summary.From, rec.Summary.Through)
	}
	s := &Session{rec: rec.clone(), turns: cloneAll(turns, Turn.clone)}
	return s, nil
}

// Record is the session's stored form apart from its turns (a copy).
func (s *Session) Record() Record { return s.rec.clone() }

// Turns are the session's recorded turns, oldest first (copies).
func (s *Session) Turns() []Turn { return cloneAll(s.turns, Turn.clone) }

// Clone is a copy of s, for another goroutine to read, or to go back to. A recorded turn never
// changes (End sets the one it appends before it returns), so the copy shares them: its slice of
// turns is capped at its length, and what either session appends later the other never sees.
// A copy costs the record, not the conversation.
func (s *Session) Clone() *Session {
	c := *s
	c.rec = s.rec.clone()
	c.turns = s.turns[:len(s.turns):len(s.turns)]
	c.own = nil // filled again on demand: a clone lives on another goroutine
	return &c
}

// ID is the session's ID: the A2A context ID.
func (s *Session) ID() string { return s.rec.ID }

// State is the session's state.
func (s *Session) State() State { return s.rec.State }

// Config is the session's configuration.
func (s *Session) Config() Config { return s.rec.Config }

// Last is the number of the last recorded turn, 0 when there is none.
func (s *Session) Last() int {
	if len(s.turns) == 0 {
		return 0
	}
	return s.turns[len(s.turns)-1].Number
}

// base is the number of the last turn before the current conversation (the last reset), 0
// when there was no reset.
func (s *Session) base() int {
	if n := len(s.rec.Resets); n > 0 {
		return s.rec.Resets[n-1]
	}
	return 0
}

// conversation is the turns of the current conversation: those after the last reset.
func (s *Session) conversation() []Turn {
	b := s.base()
	i, _ := slices.BinarySearchFunc(s.turns, b+1, func(t Turn, n int) int { return t.Number - n })
	return s.turns[i:]
}

// Open opens a dormant session: it becomes ready. Opening an open session changes nothing.
func (s *Session) Open(now time.Time) {
	if s.rec.State == Dormant {
		s.rec.State, s.rec.Opened, s.rec.Updated = Ready, now, now
	}
}

func (s *Session) stateErr(op string) error {
	return &StateError{ID: s.rec.ID, State: s.rec.State, Op: op, Collapse: s.rec.Collapse}
}
