package agent

// Chat sessions (package agent/session, docs/sessions.md) driven by the instance's turns. Every
// A2A context of an instance is a session: a message with text is offered to it (admitSession),
// and it decides — start a turn, queue the message, interrupt the running turn (abort, or restart
// it with the message merged in), or refuse it (a collapsed session). A turn's consult gets its
// working context from the session (the conversation as chat messages, by its strategy), and the
// turn's end records it in the session (finishSession): the turn record, the session's document
// and the turn's memory writes commit in one transaction.
//
// Concurrency: a session belongs to its slot, which the instance's core owns; it is read and
// changed on the instance goroutine, or by a turn while it holds the state (a turn hands the
// state back before anything slow). Loading a session reads the store off the instance goroutine
// (loadSession, an effect): the turns that arrive meanwhile wait in the slot, counted in flight,
// and are admitted in order once it is installed. A summary (Compact) runs as an effect of the
// turn that needs it.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/session"
)

// EntrySession is a working-log entry of the session for the user: a budget running low (Rule
// "warning") or the session's end (Rule "collapse"). The end entry repeats them under those keys.
const EntrySession EntryKind = "session"

// interrupted is what an aborted turn's task says.
const interrupted = "Interrupted by a newer message of this conversation."

// Causes of a running turn's interruption: by a newer message of its session, or by the
// session's wall-time budget running out.
var (
	errInterrupted = errors.New("agent: interrupted by a newer message of this conversation")
	errMerged      = errors.New("agent: restarted with a newer message merged in")
	errWallSpent   = errors.New("agent: the session's wall-time budget ran out")
)

// limitWall bounds the attempt t starts by its session's wall-time budget, holding the state:
// the attempt's context ends (cause errWallSpent) when the budget does, which interrupts
// whatever effect runs — a model call, a tool, a wait for the model or for the user — and a
// timer gives the budget's warning when it runs low, while the turn runs. Neither holds a
// goroutine or the mailbox while it waits: the deadline is the context's own timer, and the
// warning's timer posts to the mailbox only when it fires (bounded by the turn's life). Both
// end with the turn (stopWall).
func (t *turn) limitWall() {
	if !t.sess || t.slot.s == nil {
		return
	}
	s := t.slot.s
	end := s.Deadline()
	if end.IsZero() {
		return
	}
	now := t.c.def.now()
	if t.wallStop != nil {
		t.wallStop()
	}
	t.actx, t.wallStop = context.WithTimeoutCause(t.actx, end.Sub(now), errWallSpent)
	if low := s.WallLow(); t.wallLow == nil && !low.IsZero() && low.Before(end) {
		in, ctx := t.in, t.ctx
		t.wallLow = time.AfterFunc(max(low.Sub(now), 0), func() {
			_ = in.post(ctx, func(c *core) { c.wallRunsLow(t) })
		})
	}
}

// stopWall stops t's wall-time timers, holding the state, as t ends.
func (t *turn) stopWall() {
	if t.wallLow != nil {
		t.wallLow.Stop()
	}
	if t.wallStop != nil {
		t.wallStop()
	}
}

// wallRunsLow runs on the instance goroutine when t's session's wall-time budget runs low, while
// t does not hold the state: the session records the warning (committed with the turn), and the
// user is told at once. If the budget is spent already (the runtime's clock ran ahead of the
// timer), the session drains and t's attempt ends as its deadline would end it.
func (c *core) wallRunsLow(t *turn) {
	slot := t.slot
	if slot == nil || slot.running != t || slot.s == nil {
		return // t ended meanwhile
	}
	res := slot.s.Tick(c.def.now())
	for _, e := range warningEntries(res.Warnings) {
		t.said = append(t.said, e)
		t.out.push(e)
	}
	if res.Collapse != nil {
		t.acancel(errWallSpent)
		c.dropWaiting(slot, res.Dropped, res.Collapse)
	}
}

// wallSpent reports whether t's attempt ended because its session's wall time ran out (and not
// because t was canceled).
func (t *turn) wallSpent() bool {
	return t.ctx.Err() == nil && errors.Is(context.Cause(t.actx), errWallSpent)
}

// admitSession offers t's message to its session, and reports whether it did (a message without
// a session, or without text, is admitted as before; an empty message leaves its session
// unchanged and runs on a slot of its own).
func (c *core) admitSession(t *turn) bool {
	id := t.ev.Context.Session
	if id == "" {
		return false
	}
	if strings.TrimSpace(t.ev.Text) == "" {
		t.admitted <- nil
		c.inflight++
		t.c = c
		c.in.h.addTask(t)
		c.grant(&sessionSlot{}, t)
		return true
	}
	if t.ev.Context.Task == "" { // (a library caller's turn): the session tells its messages apart by task
		t.ev.Context.Task = localTask()
	}
	c.inflight++
	t.c = c
	c.in.h.addTask(t)
	slot := c.sessions[id]
	if slot == nil {
		slot = &sessionSlot{id: id}
		c.sessions[id] = slot
	}
	if slot.s == nil {
		slot.pending = append(slot.pending, t)
		if !slot.loading {
			slot.loading = true
			in := c.in
			cfg := c.def.sessions
			now := c.def.now
			go func() { // an effect: the store is read off the instance goroutine
				s, err := loadSession(in.life, in.h.store, in.key, id, cfg, now)
				// The instance serves this post even while closing: the waiting turns are in flight.
				in.mailbox <- func(c *core) { c.installSession(id, s, err) }
			}()
		}
		return true
	}
	c.offer(slot, t)
	return true
}

// loadSession reads session id of key from the store: a new one when there is none. A session
// stored in the middle of a turn (the process stopped) is settled: that turn is recorded failed,
// and the settlement saved.
func loadSession(ctx context.Context, st Store, key Key, id string, cfg session.Config, now func() time.Time) (*session.Session, error) {
	doc, err := st.Session(ctx, key, id)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return session.New(id, cfg)
	}
	var rec session.Record
	if err := json.Unmarshal(doc, &rec); err != nil {
		return nil, fmt.Errorf("agent: session %s: %w", id, err)
	}
	recs, err := st.Turns(ctx, key, id)
	if err != nil {
		return nil, err
	}
	var turns []session.Turn
	for _, r := range recs {
		if r.Detail != nil { // (turns of empty messages have none: they are not the session's)
			turns = append(turns, *r.Detail)
		}
	}
	s, err := session.Load(rec, turns)
	if err != nil {
		return nil, err
	}
	if res := s.Recover(now()); res.Turn.Number != 0 || len(res.Dropped) > 0 {
		b := &Batch{Sessions: []SessionDoc{sessionDoc(s)}}
		if res.Turn.Number != 0 {
			rec := sessionTurnRecord(id, res.Turn)
			b.Turn = &rec
		}
		if err := st.Commit(ctx, key, b); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parkKey names a question a turn asks (AskUser), so that the turn, run again after a restart,
// knows the question it asked before: a capability's approval by what it approves (its ID may
// differ), any other question by its words.
func parkKey(question string, extra map[string]string) string {
	var p capability.Pending
	if a := extra["approval"]; a != "" && json.Unmarshal([]byte(a), &p) == nil {
		return "approval " + string(p.Kind) + " " + p.Capability + "." + p.Method + " " + string(p.Args)
	}
	return "question " + question
}

// parkSession records, on the instance goroutine, that t's turn waits for the answer to
// question, and commits the session so: the question outlives the process (resume). The
// turn's memory writes are not committed: the turn is not over.
func (c *core) parkSession(t *turn, question, key string) error {
	slot := t.slot
	if slot == nil || slot.s == nil || slot.running != t {
		return nil
	}
	now := c.def.now()
	if err := slot.s.Park(now, question, key); err != nil {
		return err
	}
	b := &Batch{Sessions: []SessionDoc{sessionDoc(slot.s)}}
	capsDirty := t.in.capsDirty.Swap(false) // (an approval asked: the set's pending approvals)
	if capsDirty {
		b.Capabilities = t.in.capabilitiesJSON()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), commitTimeout)
	defer cancel()
	if err := c.commit(ctx, b); err != nil {
		_, _ = slot.s.Unpark(now)
		if capsDirty {
			t.in.capsDirty.Store(true)
		}
		return fmt.Errorf("agent: saving the question of turn %d: %w", t.number, err)
	}
	return nil
}

// parkedElsewhere is the question the session's turn waits for when no turn of this process
// runs it (it was asked before a restart), nil otherwise.
func parkedElsewhere(slot *sessionSlot) *session.Parked {
	if slot.running != nil {
		return nil
	}
	return slot.s.Parked()
}

// resume runs again, for t (the answer to the question the session's turn asked before a
// restart), the turn that asked it: from the turn's own message, in its slot and with its
// number; the question, asked again, is answered with t's message.
func (c *core) resume(slot *sessionSlot, t *turn, p *session.Parked) {
	cur, err := slot.s.Unpark(c.def.now())
	if err != nil {
		c.refuse(t, err)
		return
	}
	t.sess, t.slot = true, slot
	t.admitted <- nil
	t.resumed, t.resumeAs = &answer{question: p.Question, ev: t.ev}, p.Key
	t.ev.Text, t.number = cur.User.Content, cur.Number
	t.out.push(Entry{Kind: EntryThought, Text: "running the turn again from its message, with the answer to: " + p.Question,
		Result: map[string]string{"resume": "true"}})
	c.grant(slot, t)
}

// settleParked ends the session's turn that waits for an answer no turn of this process can
// take (it was asked before a restart) as a newer message of the session arrives: the turn is
// recorded failed, and the message goes on as any other.
func (c *core) settleParked(slot *sessionSlot) error {
	s := slot.s
	before := s.Clone()
	res, err := s.End(c.def.now(), session.Outcome{Status: session.Failed, Usage: &session.Usage{},
		Error: "the server restarted while this turn waited for an answer, and a newer message came first"}, nil)
	if err != nil {
		return err
	}
	rec := sessionTurnRecord(slot.id, res.Turn)
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := c.commit(ctx, &Batch{Turn: &rec, Sessions: []SessionDoc{sessionDoc(s)}}); err != nil {
		slot.s = before // the store still has the turn waiting: so does memory
		return err
	}
	slot.last = res.Turn.Number
	return nil
}

// warningEntries are the entries that tell a turn's caller of the session's warnings.
func warningEntries(ws []session.Warning) []Entry {
	es := make([]Entry, len(ws))
	for i, w := range ws {
		es[i] = Entry{Kind: EntrySession, Rule: "warning", Text: w.Text}
	}
	return es
}

// sessionDoc is s's document for the store.
func sessionDoc(s *session.Session) SessionDoc {
	doc, err := json.Marshal(s.Record())
	if err != nil {
		panic(fmt.Sprintf("agent: a session record does not encode: %v", err)) // plain data: cannot happen
	}
	return SessionDoc{ID: s.ID(), Doc: doc}
}

// sessionTurnRecord is the turn record of a session's turn that changed no memory.
func sessionTurnRecord(id string, st session.Turn) TurnRecord {
	return TurnRecord{Task: st.Task, Session: id, Number: st.Number, Status: TurnStatus(st.Status), Reply: st.Response.Content,
		TokensIn: int(st.Usage.In), TokensOut: int(st.Usage.Out), Estimated: st.Usage.Estimated, ContextBefore: st.ContextBefore,
		ContextAfter: st.ContextAfter, Started: st.Started, Ended: st.Ended, Latency: st.Latency, Detail: &st}
}

// installSession makes s the session of slot id and admits the turns that waited for it.
func (c *core) installSession(id string, s *session.Session, err error) {
	slot := c.sessions[id]
	slot.loading = false
	pend := slot.pending
	slot.pending = nil
	if err == nil && slot.s == nil { // (an affordance may have loaded it meanwhile: that one stays)
		slot.s = s
	}
	for _, t := range pend {
		switch {
		case err != nil:
			c.refuse(t, fmt.Errorf("agent: loading the session %s: %w", id, err))
		case t.in.closing() || t.ctx.Err() != nil:
			c.inflight--
			c.in.h.removeTask(t)
			t.abort(cmpErr(context.Cause(t.ctx), ErrClosed))
			t.admitted <- nil
		default:
			c.offer(slot, t)
		}
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// refuse tells t's starter that its message is refused: it holds nothing of the instance.
func (c *core) refuse(t *turn, err error) {
	c.inflight--
	c.in.h.removeTask(t)
	t.admitted <- err
}

// offer hands t's message to the session and does what it decides.
func (c *core) offer(slot *sessionSlot, t *turn) {
	if p := parkedElsewhere(slot); p != nil {
		if p.Task == t.ev.Context.Task {
			c.resume(slot, t, p)
			return
		}
		if err := c.settleParked(slot); err != nil {
			c.refuse(t, fmt.Errorf("agent: ending the turn of session %s that waited for an answer: %w", slot.id, err))
			return
		}
	}
	d, err := slot.s.Offer(c.def.now(), t.ev.Context.Task, session.User(t.ev.Text))
	if err != nil {
		var se *session.StateError
		if errors.As(err, &se) || errors.Is(err, session.ErrBusy) {
			// The session refuses the message as a terminal task refuses one: no task exists.
			err = fmt.Errorf("%w: %w", a2a.ErrUnsupportedOperation, err)
		}
		c.refuse(t, err)
		return
	}
	t.sess, t.slot = true, slot
	t.admitted <- nil
	t.notes = append(t.notes, warningEntries(d.Warnings)...)
	queued := func(text string) {
		slot.queue = append(slot.queue, t)
		t.out.push(Entry{Kind: EntryQueued, Text: text,
			Result: map[string]string{"scope": "session", "ahead": strconv.Itoa(max(d.Position, 1)), "bound": "1"}})
	}
	switch d.Action {
	case session.Start:
		t.number = d.Turn
		c.grant(slot, t)
	case session.Cancel:
		queued("waiting for the turn it interrupts to stop")
		if r := slot.running; r != nil {
			r.cancel(errInterrupted)
		}
	case session.Restart:
		queued("to be merged into the running turn")
		if r := slot.running; r != nil {
			r.acancel(errMerged)
		}
	default:
		queued("waiting for the previous turn of this session")
	}
}

// restart runs, holding the state, after t's attempt ended: when a merge interrupted it, the
// session takes the merged messages into the turn's message and t runs again (the attempt's
// writes are dropped with its view). It reports whether t runs again.
func (t *turn) restart() bool {
	if !t.sess || t.ctx.Err() != nil || !errors.Is(context.Cause(t.actx), errMerged) {
		return false
	}
	c, slot := t.c, t.slot
	out := session.Outcome{Response: t.run.Reply, Model: c.def.modelName, Usage: t.sessionUsage()}
	d, err := slot.s.Restart(c.def.now(), out, c.in.h.opts.Prices)
	if err != nil {
		return false
	}
	for _, task := range d.Merged {
		c.endQueued(slot, task, "completed", "", "Your message was taken into the answer of task "+t.ev.Context.Task+".")
	}
	t.ev.Text = d.Message.Content
	t.run, t.consult, t.cited = Run{}, nil, nil
	t.usage, t.estimate, t.calls = Usage{}, false, 0
	t.actx, t.acancel = context.WithCancelCause(t.ctx)
	t.out.push(Entry{Kind: EntryThought, Text: "starting again with the newer message merged in", Result: map[string]string{"restart": "true"}})
	return true
}

// sessionUsage is what t's model calls consumed, for its session: zero when no model ran.
func (t *turn) sessionUsage() *session.Usage {
	return &session.Usage{In: int64(t.usage.InputTokens), Out: int64(t.usage.OutputTokens), Estimated: t.estimate}
}

// finishSession ends a turn of a session, holding the state: the session records the turn,
// whatever its status, and the record, the session's document and (when the turn answered) its
// memory writes commit in one transaction. It returns the turn's final status and the session's
// notes for the user.
func (t *turn) finishSession(o *Observation, status string) (string, []Entry) {
	c, slot := t.c, t.slot
	s := slot.s
	if s.Parked() != nil && errors.Is(context.Cause(t.ctx), ErrClosed) {
		// The turn waits for an answer as the instance closes: the question outlives it, as
		// stored when it was asked, and the answer runs the turn again (resume). The messages
		// waiting behind it end now (the instance waits for every turn it admitted), as they
		// would be refused at the restart: their tasks do not survive either.
		for len(slot.queue) > 0 {
			c.endQueued(slot, slot.queue[0].ev.Context.Task, "failed", "The server closed before your message's turn.", "")
		}
		return "canceled", nil
	}
	now := c.def.now()
	out := session.Outcome{Model: c.def.modelName, Usage: t.sessionUsage(), Facts: t.facts()}
	switch status {
	case "completed":
		out.Status, out.Response = session.Completed, t.run.Reply
	case "input-required":
		out.Status, out.Response = session.InputRequired, t.run.Question
	case "canceled":
		out.Status, out.Response = session.Canceled, t.run.Reply
		if errors.Is(context.Cause(t.ctx), errInterrupted) {
			out.Status, out.Error = session.Aborted, interrupted
		}
		if t.wallSpent() {
			out.Status, out.Error = session.Aborted, wallInterrupted(s.Record().Config.Budget.Wall)
			if end := s.Deadline(); now.Before(end) { // (the timer's clock and the runtime's may differ)
				now = end
			}
		}
	default:
		out.Status, out.Error = session.Failed, cmpOr(t.run.Failure, "the turn failed")
	}
	before := s.Clone()
	res, err := s.End(now, out, c.in.h.opts.Prices)
	if err != nil { // facts the session refuses (a bug): the turn is recorded without them
		out.Facts = nil
		res, err = s.End(now, out, c.in.h.opts.Prices)
	}
	if err != nil {
		t.err = fmt.Errorf("agent: ending turn %d of session %s: %w", t.number, slot.id, err)
		return "failed", nil
	}
	answered := out.Status == session.Completed || out.Status == session.InputRequired
	rec := sessionTurnRecord(slot.id, res.Turn)
	rec.Message, rec.Policy, rec.ModelCalls, rec.Question = t.opts.message, t.policy, t.calls, t.run.Question
	if status == "completed" {
		rec.Reply = t.run.Reply
	}
	b := &Batch{}
	if answered && o != nil {
		b = t.v.batch(t.m.pol.src.Limits, now)
		rec.Observation = o.ID
	}
	b.Turn = &rec
	b.Sessions = []SessionDoc{sessionDoc(s)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), commitTimeout)
	defer cancel()
	if err := c.commit(ctx, b); err != nil {
		// The store has the session as it was: record the turn failed, and say so, memory unsaved.
		t.err = fmt.Errorf("agent: saving turn %d of %s: %w", t.number, t.in.key.Agent, err)
		slot.s = before
		failed, ferr := before.End(now, session.Outcome{Status: session.Failed, Usage: out.Usage, Error: "the turn could not be saved"}, c.in.h.opts.Prices)
		if ferr == nil {
			frec := sessionTurnRecord(slot.id, failed.Turn)
			_ = c.commit(ctx, &Batch{Turn: &frec, Sessions: []SessionDoc{sessionDoc(before)}}) // best effort: the next commit writes the document whole
			slot.nextStart = failed.Next
			c.dropWaiting(slot, failed.Dropped, failed.Collapse)
		}
		return "failed", nil
	}
	t.slot.last = t.number
	notes := append([]Entry(nil), t.notes...)
	notes = append(notes, warningEntries(res.Warnings)...)
	if res.Collapse != nil {
		se := &session.StateError{ID: slot.id, State: session.Collapsed, Collapse: res.Collapse}
		notes = append(notes, Entry{Kind: EntrySession, Rule: "collapse", Text: "This conversation has ended: " + se.Error() + "."})
	}
	c.dropWaiting(slot, res.Dropped, res.Collapse)
	slot.nextStart = res.Next
	if status == "canceled" && out.Status == session.Aborted {
		t.run.Failure = out.Error
		if t.wallSpent() { // not canceled: the session's budget failed it
			status = "failed"
		}
	}
	return status, notes
}

// wallInterrupted is what a turn interrupted by its session's wall-time budget says.
func wallInterrupted(wall time.Duration) string {
	return "Interrupted: this conversation's wall-time budget (" + wall.String() + ") ran out during this turn."
}

// dropWaiting ends, without running them, the turns of the messages the session refused as it
// ended.
func (c *core) dropWaiting(slot *sessionSlot, dropped []session.Pending, col *session.Collapse) {
	why := "This conversation ended before your message's turn."
	if col != nil {
		why = "This conversation ended before your message's turn: " + (&session.StateError{ID: slot.id, State: session.Collapsed, Collapse: col}).Error() + "."
	}
	for _, p := range dropped {
		for _, task := range append([]string{p.Task}, p.Merged...) {
			c.endQueued(slot, task, "failed", why, "")
		}
	}
}

// nextSessionTurn starts the turn the session started as the last one ended (a queued message,
// or the merged ones joined), ending the turns whose messages it took in.
func (c *core) nextSessionTurn(slot *sessionSlot) {
	d := slot.nextStart
	slot.nextStart = nil
	if d == nil {
		return
	}
	i := queuedIndex(slot, d.Task)
	if i < 0 {
		return // its turn is gone (its starter gave up): the session's record says so at its end
	}
	next := slot.queue[i]
	slot.queue = append(slot.queue[:i], slot.queue[i+1:]...)
	for _, task := range d.Merged {
		c.endQueued(slot, task, "completed", "", "Your message was taken into the answer of task "+d.Task+".")
	}
	next.number, next.ev.Text = d.Turn, d.Message.Content
	c.grant(slot, next)
}

func queuedIndex(slot *sessionSlot, task string) int {
	for i, t := range slot.queue {
		if t.ev.Context.Task == task {
			return i
		}
	}
	return -1
}

// endQueued ends the queued turn of task without running it: status "completed" with reply, or
// "failed" with failure. It reports whether there was one.
func (c *core) endQueued(slot *sessionSlot, task, status, failure, reply string) bool {
	i := queuedIndex(slot, task)
	if i < 0 {
		return false
	}
	t := slot.queue[i]
	slot.queue = append(slot.queue[:i], slot.queue[i+1:]...)
	c.inflight--
	c.in.h.removeTask(t)
	t.cancel(errTurnEnded)
	c.in.h.release(t.e)
	t.out.push(Entry{Kind: EntryEnd, Text: "run ended", Result: map[string]string{"status": status, "reply": reply, "failure": failure}})
	return true
}

// facts are the beliefs t relied on (those its consult was given) and those it wrote.
func (t *turn) facts() []session.Fact {
	fs := t.cited
	if t.v != nil {
		for _, id := range t.v.border {
			if b := t.v.beliefs[id]; b.current() {
				fs = append(fs, beliefFact(b))
			}
		}
	}
	fs = slices.DeleteFunc(slices.Clone(fs), func(f session.Fact) bool {
		return len(f.Text) > 4<<10 || !strings.ContainsFunc(f.Text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
	})
	if len(fs) > 256 {
		fs = fs[len(fs)-256:]
	}
	return fs
}

func beliefFact(b Belief) session.Fact {
	return session.Fact{ID: b.ID, Kind: session.FactBelief, Text: b.Subject + " is " + b.Value}
}

// sessionContext is the conversation a consult of a session's turn sends the model: a system
// message with the agent's identity and memory (within half the session's window: the memory
// layers give way first, as always) and what the session's strategy keeps of the conversation,
// then the conversation's turns as user and assistant messages, then prompt. When the session
// is due a summary, the model writes it first (an effect of the turn).
func (m *mind) sessionContext(ctx context.Context, o Observation, prompt string) ([]ChatMessage, error) {
	t := m.t
	s := t.slot.s
	window := t.c.def.sessions.Window
	m.conversation = s.ID()
	sys, err := m.workingContext(o, prompt).assemble(prompt, window/2)
	if err != nil {
		return nil, err
	}
	if p, ok := s.Plan(sys); ok && m.model != nil && s.Last() >= t.slot.summarizeAfter {
		t.summarize(ctx, p)
	}
	w, err := s.PrepareWith(sys, session.User(prompt))
	if err != nil {
		return nil, err
	}
	t.consulted(o, prompt, w.Tokens)
	msgs := make([]ChatMessage, len(w.Messages))
	for i, msg := range w.Messages {
		msgs[i] = ChatMessage{Role: string(msg.Role), Content: msg.Content}
	}
	return msgs, nil
}

// summaryBackoff is how many turns a session waits before it asks the model for a summary
// again, after one was refused or failed.
const summaryBackoff = 3

// summarize makes the summary p asks for with the model, as an effect of t (the instance goes on
// meanwhile), and installs it in t's session: the session checks it again, charges what it
// cost, and, for the coherent strategy, refuses one that lost a fact (the turn notes why).
func (t *turn) summarize(ctx context.Context, p *session.Plan) {
	model := t.c.def.model
	complete := func(ctx context.Context, msgs []session.Message) (string, *session.Usage, error) {
		cm := make([]ChatMessage, len(msgs))
		for i, msg := range msgs {
			cm[i] = ChatMessage{Role: string(msg.Role), Content: msg.Content}
		}
		release, err := t.in.h.opts.Limiter.acquire(ctx, t.in.key.Principal, func(string, int, int) {})
		if err != nil {
			return "", nil, err
		}
		defer release()
		ans, err := model.Complete(ctx, cm, nil, nil)
		if err != nil || ans.Usage == nil {
			return ans.Content, nil, err
		}
		return ans.Content, &session.Usage{In: int64(ans.Usage.InputTokens), Out: int64(ans.Usage.OutputTokens)}, nil
	}
	var sum *session.Summary
	var cerr error
	_ = t.await(func() error {
		sum, cerr = session.Compact(ctx, p, session.NewSummarizer(complete))
		return nil
	})
	if sum == nil {
		t.slot.summarizeAfter = t.slot.s.Last() + summaryBackoff
		t.out.push(Entry{Kind: EntryThought, Text: "summarizing the conversation failed: " + cerr.Error()})
		return
	}
	sum.Model = t.c.def.modelName
	res, err := t.slot.s.Install(t.c.def.now(), sum, t.in.h.opts.Prices)
	t.notes = append(t.notes, warningEntries(res.Warnings)...)
	if err != nil {
		// Not again before a few more turns: a model that keeps losing facts is not asked twice a turn.
		t.slot.summarizeAfter = t.slot.s.Last() + summaryBackoff
		t.out.push(Entry{Kind: EntryThought, Text: "the conversation's summary was refused: " + err.Error()})
		return
	}
	t.out.push(Entry{Kind: EntryThought, Text: fmt.Sprintf("summarized turns %d to %d of the conversation", sum.From, sum.Through)})
}

// localTask names the turn of a message that came without an A2A task.
func localTask() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "local-" + hex.EncodeToString(b[:])
}
