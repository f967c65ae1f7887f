package session

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Result is what an operation that ends a turn, or charges a budget, changed.
type Result struct {
	// Turn is the turn recorded (End, Recover); its Number is 0 when none was.
	Turn Turn
	// Warnings are the budget warnings this change gave (each budget warns once).
	Warnings []Warning
	// Collapse is set when the session began draining or collapsed with this change.
	Collapse *Collapse
	// Dropped are the waiting messages the session refused because it is ending: the runtime
	// ends their tasks.
	Dropped []Pending
	// Next is the queued message whose turn started, if one did: run it.
	Next *Decision
}

// Offer hands the session a user message that arrived with A2A task task, and says what the
// runtime must do. In a dormant, ready or waiting session the message starts a turn (Start).
// While a turn streams, the session's interruption strategy decides: queue it (Queue), cancel
// the running turn (Cancel) or restart it with the message merged in (Restart). A draining or
// collapsed session refuses it (ErrDraining, ErrCollapsed), and so does a session whose wall
// time is spent (it collapses, or drains if a turn runs). An empty message is refused with
// ErrEmpty and changes nothing.
func (s *Session) Offer(now time.Time, task string, msg Message) (Decision, error) {
	if msg.Empty() {
		return Decision{}, ErrEmpty
	}
	if len(msg.Content) > maxText {
		return Decision{}, fmt.Errorf("%w: a message of %d bytes", ErrInvalid, len(msg.Content))
	}
	msg.Role = RoleUser
	p := Pending{Task: task, Message: msg, Received: now}
	switch s.rec.State {
	case Collapsed, Draining:
		return Decision{}, s.stateErr("send")
	case Dormant:
		s.Open(now)
		return s.start(now, p), nil
	case Ready, Waiting:
		res := s.account(now)
		if res.Collapse != nil {
			return Decision{}, s.stateErr("send")
		}
		d := s.start(now, p)
		d.Warnings = res.Warnings
		return d, nil
	}
	// Streaming: the interruption strategy decides. (A budget spent meanwhile is seen when the
	// turn ends, and refuses the waiting messages then: Result.Dropped.)
	if len(s.rec.Queue)+len(s.rec.Merging) >= s.rec.Config.queue() {
		return Decision{}, fmt.Errorf("%w: %d messages already wait for turn %d", ErrBusy, s.rec.Config.queue(), s.rec.Current.Number)
	}
	cur := s.rec.Current.Number
	s.rec.Updated = now
	switch s.rec.Config.interrupt() {
	case InterruptAbort:
		s.rec.Queue = append(s.rec.Queue, p)
		if s.rec.Canceling {
			return Decision{Action: Queue, Turn: cur, Position: len(s.rec.Queue)}, nil
		}
		s.rec.Canceling = true
		return Decision{Action: Cancel, Turn: cur, Position: len(s.rec.Queue)}, nil
	case InterruptMerge:
		s.rec.Merging = append(s.rec.Merging, p)
		if len(s.rec.Merging) > 1 {
			return Decision{Action: Queue, Turn: cur}, nil
		}
		return Decision{Action: Restart, Turn: cur}, nil
	default:
		s.rec.Queue = append(s.rec.Queue, p)
		return Decision{Action: Queue, Turn: cur, Position: len(s.rec.Queue)}, nil
	}
}

// start begins a turn for p: the session streams.
func (s *Session) start(now time.Time, p Pending) Decision {
	n := s.rec.Next
	s.rec.Next++
	s.rec.Current = &Turn{Number: n, Task: p.Task, Merged: p.Merged, User: p.Message, Started: now, Attempts: 1}
	s.rec.State, s.rec.Updated = Streaming, now
	s.rec.Canceling = false
	return Decision{Action: Start, Turn: n, Task: p.Task, Merged: p.Merged, Message: p.Message}
}

// Prepare computes the working context of the running turn: system (the runtime's system text:
// the agent's identity and memory) and what the strategy keeps of the conversation, then the
// turn's user message, within the window. It records the context's size as the turn's
// ContextBefore. ErrNoRoom means it cannot fit: end the turn Failed.
func (s *Session) Prepare(system string) (Window, error) {
	if s.rec.Current == nil {
		return Window{}, s.stateErr("prepare")
	}
	return s.PrepareWith(system, s.rec.Current.User)
}

// PrepareWith is Prepare with msg as the new message in place of the turn's own user message:
// for a runtime whose model is asked about something the turn derived from the message. The
// turn's record keeps its own user message.
func (s *Session) PrepareWith(system string, msg Message) (Window, error) {
	if s.rec.Current == nil {
		return Window{}, s.stateErr("prepare")
	}
	msg.Role = RoleUser
	w, err := s.window(system, &msg)
	s.rec.SystemTokens = EstimateTokens(system) + messageOverhead
	if err != nil {
		return w, err
	}
	s.rec.Current.ContextBefore = w.Tokens
	return w, nil
}

// End records the running turn with outcome o, prices its usage with prices (nil: cost
// unknown), charges the budgets, and moves on: to waiting, or collapsed when a budget is spent
// or the session was draining. If messages were queued and the session goes on, the next one's
// turn starts at once (Result.Next). Messages waiting to be merged that the turn finished
// before taking in become the next turn. The turn recorded is Result.Turn: the runtime commits
// it with the record, and with the turn's memory writes.
func (s *Session) End(now time.Time, o Outcome, prices Prices) (Result, error) {
	if s.rec.Current == nil {
		return Result{}, s.stateErr("end a turn")
	}
	if !o.Status.valid() {
		return Result{}, fmt.Errorf("%w: turn status %q", ErrInvalid, o.Status)
	}
	if err := validFacts(o.Facts); err != nil {
		return Result{}, err
	}
	t := *s.rec.Current
	s.rec.Current, s.rec.Parked = nil, nil
	s.rec.Canceling = false
	s.charge(&t, o, prices)
	t.Status, t.Response, t.Error = o.Status, Message{Role: RoleAssistant, Content: o.Response}, o.Error
	t.Facts = dedupeFacts(o.Facts)
	t.Ended = now
	t.Latency = max(now.Sub(t.Started), 0)
	if t.Status.answered() {
		s.rec.Used.Turns++
	}
	s.turns = append(s.turns, t)
	if len(s.rec.Merging) > 0 { // the turn ended before it could take them in: they run next
		s.rec.Queue = append([]Pending{joinPending(s.rec.Merging)}, s.rec.Queue...)
		s.rec.Merging = nil
	}
	s.rec.Updated = now
	var res Result
	if s.rec.State == Draining {
		s.rec.State, s.rec.Collapse.At, s.rec.Collapse.Turn = Collapsed, now, t.Number
		res.Dropped = s.dropWaiting()
	} else {
		s.rec.State = Waiting
		res = s.account(now)
	}
	// The context the next turn starts from: after the strategy, with the system text as the
	// last Prepare saw it.
	if w, err := s.windowTokens(); err == nil {
		t.ContextAfter = w
	}
	s.turns[len(s.turns)-1].ContextAfter = t.ContextAfter
	res.Turn = t.clone()
	if s.rec.State == Waiting {
		if len(s.rec.Queue) > 0 {
			p := s.rec.Queue[0]
			s.rec.Queue = s.rec.Queue[1:]
			if len(s.rec.Queue) == 0 {
				s.rec.Queue = nil
			}
			d := s.start(now, p)
			res.Next = &d
		}
	}
	return res, nil
}

// charge adds what one attempt of turn t consumed to t and to the session's totals.
func (s *Session) charge(t *Turn, o Outcome, prices Prices) {
	var u Usage
	if o.Usage != nil {
		u = *o.Usage
		u.In, u.Out = max(u.In, 0), max(u.Out, 0)
	} else {
		in := t.ContextBefore
		if in == 0 {
			in = messageTokens(t.User)
		}
		u = Usage{In: int64(in), Out: int64(EstimateTokens(o.Response)), Estimated: true}
	}
	t.Usage = t.Usage.add(u)
	if o.Model != "" {
		t.Model = o.Model
	}
	cost, unknown := s.price(u, o.Model, prices)
	t.Cost += cost
	t.CostUnknown = t.CostUnknown || unknown
}

// price prices u for model and adds it to the session's totals; unknown is set when tokens went
// unpriced.
func (s *Session) price(u Usage, model string, prices Prices) (cost Micros, unknown bool) {
	cost, ok := prices.Cost(model, u)
	unknown = !ok && u.Total() > 0
	s.rec.Used.Usage = s.rec.Used.Usage.add(u)
	s.rec.Used.Cost = addMicros(s.rec.Used.Cost, cost)
	s.rec.Used.CostUnknown = s.rec.Used.CostUnknown || unknown
	return cost, unknown
}

func addMicros(a, b Micros) Micros {
	if a > 1<<62 || b > 1<<62 {
		return 1<<63 - 1
	}
	return a + b
}

// joinPending merges waiting messages into one, in order.
func joinPending(ps []Pending) Pending {
	j := Pending{Task: ps[0].Task, Merged: ps[0].Merged, Received: ps[0].Received, Message: ps[0].Message}
	for _, p := range ps[1:] {
		j.Message.Content = joinText(j.Message.Content, p.Message.Content)
		j.Merged = append(append(j.Merged, p.Task), p.Merged...)
	}
	return j
}

func joinText(a, b string) string {
	return strings.TrimRight(a, "\n") + "\n\n" + strings.TrimLeft(b, "\n")
}

// Restart answers a Restart decision once the runtime has canceled the running turn's work: the
// messages waiting to be merged join the turn's user message, what the canceled attempt
// consumed (o.Usage, o.Model; nil Usage is estimated from o.Response, what it had written) is
// charged to the turn, and the turn runs again: the Decision says with which message. If the
// turn already ended, or nothing waits to be merged, it is ErrNothing.
func (s *Session) Restart(now time.Time, o Outcome, prices Prices) (Decision, error) {
	if s.rec.Current == nil || len(s.rec.Merging) == 0 {
		return Decision{}, fmt.Errorf("%w: no turn is waiting to restart", ErrNothing)
	}
	t := s.rec.Current
	s.charge(t, o, prices)
	j := joinPending(s.rec.Merging)
	s.rec.Merging = nil
	t.User.Content = joinText(t.User.Content, j.Message.Content)
	t.Merged = append(append(t.Merged, j.Task), j.Merged...)
	t.Attempts++
	t.ContextBefore = 0
	s.rec.Updated = now
	return Decision{Action: Start, Turn: t.Number, Task: t.Task, Merged: t.Merged, Message: t.User}, nil
}

// Close ends the session: a dormant, ready or waiting session collapses (ReasonClosed); a
// streaming one drains, and collapses when its turn ends. The waiting messages are refused
// (Result.Dropped). Closing an ended session changes nothing.
func (s *Session) Close(now time.Time, detail string) Result {
	switch s.rec.State {
	case Collapsed, Draining:
		return Result{}
	}
	c := &Collapse{Reason: ReasonClosed, Turn: s.Last(), Detail: detail}
	return s.end(now, c)
}

// end collapses the session for c, or drains it while a turn runs.
func (s *Session) end(now time.Time, c *Collapse) Result {
	s.rec.Collapse, s.rec.Updated = c, now
	if s.rec.State == Streaming {
		s.rec.State = Draining
	} else {
		if s.rec.State == Dormant {
			s.rec.Opened = now
		}
		s.rec.State, c.At = Collapsed, now
	}
	return Result{Collapse: c, Dropped: s.dropWaiting()}
}

func (s *Session) dropWaiting() []Pending {
	d := append(s.rec.Merging, s.rec.Queue...)
	s.rec.Queue, s.rec.Merging = nil, nil
	if len(d) == 0 {
		return nil
	}
	return d
}

// Tick checks the wall-time budget at now: it warns when little is left, and when it is spent
// the session collapses, or drains if a turn runs (the turn finishes). Runtimes call it from a
// timer (Deadline says when) or before reading a session; Offer checks it too.
func (s *Session) Tick(now time.Time) Result {
	switch s.rec.State {
	case Dormant, Collapsed, Draining:
		return Result{}
	}
	return s.account(now)
}

// Deadline is when the wall-time budget runs out; zero when there is none or the session is
// not open.
func (s *Session) Deadline() time.Time {
	if s.rec.Config.Budget.Wall == 0 || s.rec.Opened.IsZero() {
		return time.Time{}
	}
	return s.rec.Opened.Add(s.rec.Config.Budget.Wall)
}

// WallLow is when the wall-time budget runs low (Warn or less of it left), for a runtime's
// timer: a Tick at or after it gives the warning. Zero when there is no wall budget, the
// session is not open, or the warning was given.
func (s *Session) WallLow() time.Time {
	b := s.rec.Config.Budget
	if b.Wall == 0 || s.rec.Opened.IsZero() || s.warned(ReasonWall) {
		return time.Time{}
	}
	limit := b.Wall.Milliseconds()
	used := int64(math.Ceil(float64(limit) - b.warn()*float64(limit))) // the first use with Warn or less left
	return s.rec.Opened.Add(time.Duration(used) * time.Millisecond)
}

// Charge charges usage that belongs to no turn (a summary the session refused, say) to the
// budgets, priced by prices. It may warn, and collapse the session or make it drain.
func (s *Session) Charge(now time.Time, u Usage, model string, prices Prices) Result {
	switch s.rec.State {
	case Dormant, Collapsed:
		s.price(u, model, prices)
		return Result{}
	}
	s.price(u, model, prices)
	s.rec.Updated = now
	if s.rec.State == Draining {
		return Result{}
	}
	return s.account(now)
}

// Parked is a running turn that waits for the user's answer to a question: stored with the
// session, it outlives the process, so that the answer, when it comes, runs the turn again
// (docs/sessions.md, "A question that outlives the server").
type Parked struct {
	// Task is the running turn's task: the answer comes as its next message.
	Task string `json:"task"`
	// Question is what the turn asked; Key names it for the runtime (the same question asked
	// again by the turn run again is answered with the answer, without asking).
	Question string `json:"question"`
	Key      string `json:"key,omitempty"`
	// At is when it was asked.
	At time.Time `json:"at"`
}

// Park records that the running turn waits for the user's answer to question (key names it
// for the runtime). The session stays streaming: the turn is not over.
func (s *Session) Park(now time.Time, question, key string) error {
	if s.rec.Current == nil {
		return s.stateErr("park a turn")
	}
	if len(question) > maxText || len(key) > maxText {
		return fmt.Errorf("%w: a question of %d bytes", ErrInvalid, len(question))
	}
	s.rec.Parked = &Parked{Task: s.rec.Current.Task, Question: question, Key: key, At: now}
	s.rec.Updated = now
	return nil
}

// Parked is the running turn's question waiting for an answer (a copy), nil when there is none.
func (s *Session) Parked() *Parked {
	if s.rec.Parked == nil {
		return nil
	}
	p := *s.rec.Parked
	return &p
}

// Unpark records that the running turn got its answer, or runs again to get it: it is not
// waiting any more. The turn's own message is Current's: what a turn run again starts from.
func (s *Session) Unpark(now time.Time) (Turn, error) {
	if s.rec.Current == nil || s.rec.Parked == nil {
		return Turn{}, fmt.Errorf("%w: no turn waits for an answer", ErrNothing)
	}
	s.rec.Parked, s.rec.Updated = nil, now
	return s.rec.Current.clone(), nil
}

// Recover settles a session loaded in the middle of a turn (the process stopped): the turn is
// recorded Failed, with nothing of it but the user's message, and the waiting messages are
// refused (Result.Dropped), since their tasks did not survive either. A turn that waits for an
// answer (Park) is not settled: it survives, and only the waiting messages are refused. Other
// sessions are left as they are.
func (s *Session) Recover(now time.Time) Result {
	if s.rec.Current == nil {
		return Result{}
	}
	dropped := s.dropWaiting()
	if s.rec.Parked != nil {
		s.rec.Canceling = false
		if len(dropped) > 0 {
			s.rec.Updated = now
		}
		return Result{Dropped: dropped}
	}
	zero := Usage{}
	res, _ := s.End(now, Outcome{Status: Failed, Usage: &zero, Error: "the server stopped during this turn"}, nil)
	res.Dropped = append(dropped, res.Dropped...)
	if len(res.Dropped) == 0 {
		res.Dropped = nil
	}
	return res
}

// account checks every budget at now: it gives the warnings due (once per budget) and, when a
// budget is spent, ends the session (drains it while a turn runs).
func (s *Session) account(now time.Time) Result {
	var res Result
	b, used := s.rec.Config.Budget, s.rec.Used
	for _, c := range s.budgetUse(now) {
		if c.Used >= c.Limit {
			if res.Collapse == nil {
				col := &Collapse{Reason: c.Budget, Turn: s.Last(), Detail: fmt.Sprintf("used %d of %d", c.Used, c.Limit)}
				r := s.end(now, col)
				res.Collapse, res.Dropped = r.Collapse, r.Dropped
			}
			continue
		}
		if c.Low && !s.warned(c.Budget) {
			w := Warning{Budget: c.Budget, Used: c.Used, Limit: c.Limit, Turn: s.Last(), At: now,
				Text: fmt.Sprintf("the session's %s budget is running low: %d of %d used", c.Budget, c.Used, c.Limit)}
			s.rec.Warnings = append(s.rec.Warnings, w)
			res.Warnings = append(res.Warnings, w)
		}
	}
	if b.Cost > 0 && used.CostUnknown && !s.warned(ReasonCost) {
		w := Warning{Budget: ReasonCost, Used: int64(used.Cost), Limit: int64(b.Cost), Turn: s.Last(), At: now,
			Text: "a model without a price in the price table consumed tokens: the cost budget does not count them"}
		s.rec.Warnings = append(s.rec.Warnings, w)
		res.Warnings = append(res.Warnings, w)
	}
	return res
}

// budgetUse is the use of every budget that has a limit, at now (wall time counts up to the
// collapse of an ended session).
func (s *Session) budgetUse(now time.Time) []BudgetStatus {
	r, b := &s.rec, s.rec.Config.Budget
	elapsed := int64(0)
	if !r.Opened.IsZero() {
		end := now
		if r.Collapse != nil && !r.Collapse.At.IsZero() {
			end = r.Collapse.At
		}
		elapsed = max(end.Sub(r.Opened), 0).Milliseconds()
	}
	var out []BudgetStatus
	for _, c := range []BudgetStatus{
		{Budget: ReasonTokens, Used: r.Used.Total(), Limit: b.Tokens},
		{Budget: ReasonTurns, Used: int64(r.Used.Turns), Limit: int64(b.Turns)},
		{Budget: ReasonCost, Used: int64(r.Used.Cost), Limit: int64(b.Cost)},
		{Budget: ReasonWall, Used: elapsed, Limit: b.Wall.Milliseconds()},
	} {
		if c.Limit > 0 {
			c.Left = max(c.Limit-c.Used, 0)
			c.Low = float64(c.Left) <= b.warn()*float64(c.Limit)
			out = append(out, c)
		}
	}
	return out
}

func (s *Session) warned(r Reason) bool {
	for _, w := range s.rec.Warnings {
		if w.Budget == r {
			return true
		}
	}
	return false
}
