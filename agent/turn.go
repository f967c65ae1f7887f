package agent

// Turns. A turn integrates one event (a user's message) and everything it causes until its
// effects settle, then commits its writes in one store transaction, or drops them.
//
// Concurrency model. A turn runs on a goroutine of its own, started by its instance, as a
// coroutine of the instance goroutine: it touches the instance's state (the core, its memory
// through the turn's view) only between receiving the baton (c.step sends it, then waits) and
// handing it back. Before anything slow — a model call, a tool call, waiting in the model-call
// queue or for the user — it hands the state back (await): the instance goroutine then serves
// other turns, views and proposals; when the effect is done the turn posts itself to the
// mailbox and waits for the state again, and the effect's result is integrated as an
// observation. What the turn owns alone (its Run, its output, its usage counters) it may touch
// at any time; its output is read by its consumers under output.mu.
//
// Order: turns of one session (Context.Session) take the session's slot one at a time, in the
// order admitted; turns of different sessions and instances run side by side.
//
// Seams for package agent/session: a turn starts in turn.begin (the session's slot is taken and
// its number known), the working context of a consult is computed in mind.workingContext /
// mind.consult, and the turn record is built and committed with the turn's writes in
// turn.finish.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/session"
)

// EntryQueued is a working-log entry saying the turn waits: for the model (Result "scope" is
// "server" or "principal": the bound of concurrent model calls it waits for) or for the
// previous turn of its session ("session"); "ahead" is how many wait before it, "bound" the
// bound.
const EntryQueued EntryKind = "queued"

// ErrCanceled is the cause of a turn canceled through the executor (tasks/cancel).
var ErrCanceled = errors.New("agent: turn canceled")

// ErrParkExpired is what AskUser returns when no answer came within HostOptions.ParkTimeout.
var ErrParkExpired = errors.New("agent: no answer came in time")

// ErrNotWaiting is what a message on a task returns when the task's turn stopped waiting for
// the user's answer without one: its question expired (ErrParkExpired), or the capability's
// approval it asked for was decided another way. The error says which.
var ErrNotWaiting = errors.New("agent: this task waits for no answer any more")

// maxUnparked bounds the tasks an instance remembers as no longer waiting (ErrNotWaiting).
const maxUnparked = 64

// ErrNoTurn is what AskUser returns outside a turn's effect.
var ErrNoTurn = errors.New("agent: AskUser called outside a turn")

// commitTimeout bounds a turn's commit, which outlives the turn's cancellation.
const commitTimeout = 30 * time.Second

type turnOptions struct {
	send    bool              // Agent.Send: nobody waits; a store error goes to the next Ask
	bound   bool              // canceled with the caller's context (the executor), not detached (Ask)
	message string            // the A2A message ID
	meta    map[string]any    // the A2A message's metadata (TurnMetadata)
	trace   [2]string         // the request's W3C traceparent and tracestate (TurnTraceContext)
	span    trace.SpanContext // the span this process records for the request, if any (TurnSpan)
	// wake has the task's run go on without a message once the turn stops waiting for an
	// answer without one (park); nil outside the Executor.
	wake func(context.Context) error
}

type turn struct {
	in     *instance
	e      *hostEntry
	ev     Event
	opts   turnOptions
	ctx    context.Context
	cancel context.CancelCauseFunc
	out    *output
	baton  chan struct{}
	back   chan struct{}
	// admitted says whether the instance took the turn (nil) or refused its message (a session
	// that is collapsed, say): start waits for it.
	admitted chan error

	// A turn of a session (sessions.go): sess is set when the turn is one of its session's,
	// actx is the context of the current attempt (a merge restarts the turn: acancel ends the
	// attempt, not the turn), cited are the facts it relied on.
	sess    bool
	actx    context.Context
	acancel context.CancelCauseFunc
	cited   []session.Fact
	notes   []Entry // the session's notes for the user given as the message arrived
	// The session's wall-time budget (sessions.go, limitWall): wallStop ends the current
	// attempt's deadline, wallLow is the timer of its warning, said the notes given mid-turn
	// (already in the output; repeated in the end's result). wallLow and said are set while
	// holding the state, or by the instance goroutine while the turn does not hold it.
	wallStop context.CancelFunc
	wallLow  *time.Timer
	said     []Entry

	// Set while holding the state, read by consumers only after the end entry (or a park).
	c      *core
	slot   *sessionSlot
	number int
	obsID  string
	policy int
	m      *mind
	v      *view
	run    Run
	err    error // the commit's error

	// The turn's own, touched by its goroutine only.
	started  time.Time
	consult  *consultInfo
	usage    Usage
	estimate bool
	calls    int
	answers  []answer // answers AskUser received, to log as observations
	gaveUp   bool     // a question stopped waiting without an answer (park)

	// Parking: the user's answer arrives on reply. resumed is the answer a turn run again
	// after a restart was started with (sessions.go, resume): the question it asked, by its
	// key, is answered with it without asking again. Set before the turn's goroutine starts.
	reply    chan Event
	parkedAt int // output index after the parked question
	resumed  *answer
	resumeAs string // the key of the question resumed answers

	// Records of the instance's capability set made by the turn's effects, to log as
	// observations (capabilities.go).
	capMu      sync.Mutex
	capRecords []capability.Record

	// Values of the turn's effects (relay.go: TurnValue).
	seamMu sync.Mutex
	values map[any]any
}

type consultInfo struct {
	o      Observation
	prompt string
	before int
}

type answer struct {
	question string
	ev       Event
}

// sessionSlot orders the turns of one session of an instance.
type sessionSlot struct {
	busy  bool
	queue []*turn
	last  int  // the last committed turn's number
	known bool // last was read from the store

	// Of a session (an A2A context): its state, loaded from the store on first use
	// (sessions.go). Turns admitted before it loaded wait in pending.
	id      string
	s       *session.Session
	loading bool
	pending []*turn
	running *turn // the turn holding the slot
	// nextStart is the turn the session started as the last one ended, for nextSessionTurn.
	nextStart *session.Decision
	// summarizeAfter is the turn before which no summary is asked for (after a refused one).
	summarizeAfter int
}

// start admits a turn for ev on a's instance, or gives ev to the turn of its task that waits
// for the user's answer. It returns the turn and the output index its consumer starts at.
func (a *Agent) start(ctx context.Context, ev Event, o turnOptions) (*turn, int, error) {
	e, err := a.h.acquire(ctx, a.p)
	if err != nil {
		return nil, 0, err
	}
	if ev.Context.Task != "" {
		t, why := e.in.takeParked(ev.Context.Task)
		if t != nil {
			a.h.release(e)
			t.reply <- ev
			return t, t.parkedAt, nil
		}
		if why != "" {
			a.h.release(e)
			return nil, 0, fmt.Errorf("%w: %s", ErrNotWaiting, why)
		}
	}
	t := &turn{in: e.in, e: e, ev: ev, opts: o, out: newOutput(), baton: make(chan struct{}), back: make(chan struct{}),
		reply: make(chan Event, 1), started: time.Now(), admitted: make(chan error, 1)}
	// A turn lives on the instance's lifetime, not its caller's request: a turn that parks
	// outlives the request that started it. The executor cancels it while attached (bound).
	t.ctx, t.cancel = context.WithCancelCause(e.in.life)
	t.ctx = context.WithValue(t.ctx, turnKey{}, t)
	t.actx, t.acancel = context.WithCancelCause(t.ctx)
	if err := e.in.post(ctx, func(c *core) { c.admit(t) }); err != nil {
		t.cancel(err)
		a.h.release(e)
		return nil, 0, err
	}
	// Admission is quick, but a session's first message waits for it to load from the store.
	select {
	case err = <-t.admitted:
	case <-ctx.Done():
		err = ctx.Err()
		t.cancel(err) // it may still be admitted: it then ends at once
		return nil, 0, err
	}
	if err != nil { // refused: it holds nothing of the instance
		t.cancel(err)
		a.h.release(e)
		return nil, 0, err
	}
	return t, 0, nil
}

type turnKey struct{}

// TurnInfo says which turn an effect (a tool call, a model call) runs for.
type TurnInfo struct {
	Agent     string
	Principal Principal
	Task      string
	Session   string
	// Number is the turn's number in its session.
	Number int
}

// TurnOf returns the turn whose effect ctx belongs to: a tool learns whom it acts for.
func TurnOf(ctx context.Context) (TurnInfo, bool) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return TurnInfo{}, false
	}
	return TurnInfo{Agent: t.in.key.Agent, Principal: t.in.key.Principal, Task: t.ev.Context.Task,
		Session: t.ev.Context.Session, Number: t.number}, true
}

// admit takes t into the instance: it starts now, or after the turns of its session before it.
// A message of a session goes to its session first (admitSession), which may queue it, have it
// interrupt the running turn, or refuse it.
func (c *core) admit(t *turn) {
	if t.in.closing() {
		t.c = c
		t.abort(ErrClosed)
		t.admitted <- nil
		return
	}
	if c.admitSession(t) {
		return
	}
	t.admitted <- nil
	c.inflight++
	t.c = c
	c.in.h.addTask(t)
	s := c.sessions[t.ev.Context.Session]
	if s == nil {
		s = &sessionSlot{}
		c.sessions[t.ev.Context.Session] = s
	}
	if s.busy {
		s.queue = append(s.queue, t)
		t.out.push(Entry{Kind: EntryQueued, Text: "waiting for the previous turn of this session",
			Result: map[string]string{"scope": "session", "ahead": strconv.Itoa(len(s.queue)), "bound": "1"}})
		return
	}
	c.grant(s, t)
}

// abort ends a turn that never ran.
func (t *turn) abort(err error) {
	t.err = err
	t.out.push(Entry{Kind: EntryEnd, Text: "run not started", Result: map[string]string{"status": "failed"}})
	t.cancel(err)
	t.in.h.release(t.e)
}

// grant gives s to t and starts t's goroutine, which asks for the state through the mailbox.
func (c *core) grant(s *sessionSlot, t *turn) {
	s.busy = true
	s.running = t
	t.slot = s
	if s.known && !t.sess { // (a session numbers its turns itself)
		t.number = s.last + 1
	}
	c.in.turns.Add(1)
	c.in.h.pool.Go(t.main)
}

// step hands the state to t until t hands it back.
func (c *core) step(t *turn) {
	t.baton <- struct{}{}
	<-t.back
}

// acquire waits for the state; the caller must not hold it.
func (t *turn) acquire() {
	// The instance serves its turns until they end, even while closing, so this post is
	// always taken.
	t.in.mailbox <- func(c *core) { c.step(t) }
	<-t.baton
}

// yieldState hands the state back to the instance goroutine.
func (t *turn) yieldState() { t.back <- struct{}{} }

// await runs effect without the state: the instance goes on meanwhile.
func (t *turn) await(effect func() error) error {
	t.yieldState()
	err := effect()
	t.acquire()
	if (len(t.answers) > 0 || t.gaveUp) && t.sess && t.slot.s != nil && t.slot.s.Parked() != nil {
		// Answered, or the wait ended without an answer: the turn waits no more. (Not so
		// when the instance closes: the question outlives it.)
		_, _ = t.slot.s.Unpark(t.c.def.now())
	}
	for _, a := range t.answers { // what the user answered while the effect waited
		t.m.observe(Event{Kind: "input", Source: Source{Kind: SourceUser}, Context: a.ev.Context, Text: a.ev.Text,
			Data: map[string]string{"question": a.question}})
	}
	t.answers, t.gaveUp = nil, false
	return err
}

func (t *turn) main() {
	defer t.in.turns.Done()
	if t.number == 0 { // the session's number, read without the state
		n, err := t.c.store.LastTurn(t.ctx, t.in.key, t.ev.Context.Session)
		if err != nil {
			t.acquire()
			t.err = fmt.Errorf("agent: reading the session's turns: %w", err)
			t.finish(nil)
			return
		}
		t.number = n + 1
	}
	t.acquire()
	c := t.c
	if !t.slot.known {
		t.slot.last, t.slot.known = t.number-1, true
	}
	for {
		t.limitWall()
		t.v = newView(c.mem)
		d := c.def
		t.m = &mind{name: d.name, v: t.v, pol: c.versions[c.current], now: d.now, tools: d.tools, toolHelp: d.toolHelp,
			model: d.model, hasModel: d.model != nil, t: t}
		t.policy = c.current + 1
		ev := t.ev
		ev.Context.Turn = t.number
		o := t.m.observe(ev)
		t.obsID = o.ID
		if t.actx.Err() == nil && !t.capabilityCommand(t.actx, o) {
			_ = t.m.integrate(t.actx, o, &t.run)
		}
		if !t.restart() { // a message merged into the turn: it runs again, with it
			t.finish(&o)
			return
		}
	}
}

// finish commits or drops the turn's writes, frees its session for the next turn, ends its
// output and hands the state back. It runs holding the state.
func (t *turn) finish(o *Observation) {
	c := t.c
	status := "completed"
	switch {
	case t.err != nil:
		status = "failed"
	case t.ctx.Err() != nil || t.actx.Err() != nil:
		status = "canceled"
	case t.run.Failure != "":
		status = "failed"
	case t.run.Question != "":
		status = "input-required"
	}
	if status == "input-required" && t.ev.Context.Task != "" { // its task asks anew
		t.in.mu.Lock()
		t.in.forgetUnparkedLocked(t.ev.Context.Task)
		t.in.mu.Unlock()
	}
	var notes []Entry
	if t.sess {
		status, notes = t.finishSession(o, status)
	} else if o != nil && (status == "completed" || status == "input-required") {
		now := c.def.now()
		rec := TurnRecord{Task: t.ev.Context.Task, Session: t.ev.Context.Session, Number: t.number, Message: t.opts.message,
			Observation: o.ID, Policy: t.policy, Status: TurnStatus(status), Reply: t.run.Reply, Question: t.run.Question,
			TokensIn: t.usage.InputTokens, TokensOut: t.usage.OutputTokens, Estimated: t.estimate, ModelCalls: t.calls,
			Started: t.started.UTC(), Ended: now.UTC(), Latency: time.Since(t.started)}
		if t.consult != nil {
			rec.ContextBefore = t.consult.before
			rec.ContextAfter = t.m.contextSize(t.consult.o, t.consult.prompt)
		}
		b := t.v.batch(t.m.pol.src.Limits, now)
		b.Turn = &rec
		capsDirty := t.in.capsDirty.Swap(false)
		if capsDirty {
			b.Capabilities = t.in.capabilitiesJSON()
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), commitTimeout)
		err := c.commit(ctx, b)
		cancel()
		if err != nil {
			status, t.err = "failed", fmt.Errorf("agent: saving turn %d of %s: %w", t.number, t.in.key.Agent, err)
			if capsDirty {
				t.in.capsDirty.Store(true) // saved with the next commit
			}
		} else {
			t.slot.last = t.number
		}
	}
	if t.opts.send && t.err != nil && c.sendErr == nil {
		c.sendErr, t.err = t.err, nil
	} else if !t.opts.send && t.err == nil && c.sendErr != nil {
		t.err, c.sendErr = c.sendErr, nil
	}
	// The next turn of the session.
	s := t.slot
	s.busy, s.running = false, nil
	if t.sess {
		c.nextSessionTurn(s)
	} else if len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		c.grant(s, next)
	}
	c.inflight--
	c.in.h.removeTask(t)
	res := map[string]string{"status": status, "policy": strconv.Itoa(t.policy), "reply": t.run.Reply,
		"question": t.run.Question, "failure": t.run.Failure}
	text := "run ended"
	if o != nil {
		res["observation"], text = o.ID, "run "+o.ID+" ended"
	}
	for _, n := range append(t.said, notes...) {
		res[n.Rule] = joinLine(res[n.Rule], n.Text)
	}
	t.stopWall()
	end := Entry{Kind: EntryEnd, Text: text, Result: res}
	t.run.Log = append(t.run.Log, end)
	t.yieldState()
	t.cancel(errTurnEnded)
	t.in.h.release(t.e)
	for _, n := range notes { // the session's warnings, before the end
		t.out.push(n)
	}
	t.out.push(end) // last: consumers see the end once the turn has let go of everything
}

var errTurnEnded = errors.New("agent: turn ended")

// endErr is the turn's error, once its output ended.
func (t *turn) endErr() error { return t.err }

// ---- effects ----

// complete asks the model as an effect of the turn, after waiting for a slot of the limiter.
func (t *turn) complete(ctx context.Context, model Model, msgs []ChatMessage, specs []ToolSpec, onText func(string)) (ChatMessage, error) {
	var ans ChatMessage
	err := t.await(func() error {
		release, err := t.in.h.opts.Limiter.acquire(ctx, t.in.key.Principal, func(scope string, ahead, bound int) {
			t.out.push(Entry{Kind: EntryQueued, Text: fmt.Sprintf("waiting for the model: %d ahead", ahead),
				Result: map[string]string{"scope": scope, "ahead": strconv.Itoa(ahead), "bound": strconv.Itoa(bound)}})
		})
		if err != nil {
			return err
		}
		defer release()
		t.calls++
		ans, err = model.Complete(ctx, msgs, specs, onText)
		if err != nil {
			return err
		}
		if ans.Usage != nil {
			t.usage.InputTokens += ans.Usage.InputTokens
			t.usage.OutputTokens += ans.Usage.OutputTokens
			return nil
		}
		t.estimate = true
		for _, m := range msgs {
			t.usage.InputTokens += EstimateTokens(m.Content)
		}
		out := EstimateTokens(ans.Content)
		for _, tc := range ans.ToolCalls {
			out += EstimateTokens(tc.Name) + EstimateTokens(tc.Arguments)
		}
		t.usage.OutputTokens += out
		return nil
	})
	return ans, err
}

// consulted notes the turn's first consult, for its record's context sizes.
func (t *turn) consulted(o Observation, prompt string, size int) {
	if t.consult == nil {
		t.consult = &consultInfo{o: o, prompt: prompt, before: size}
	}
}

// AskUser asks the user question from inside an effect of a turn — a tool, say a permission
// strategy that needs the user's yes before a call — and returns the answer. The task goes
// input-required with the question (the turn's stream ends with an EntryInput entry whose
// Result["parked"] is "true"); the turn stays in flight, uncommitted, holding its session; the
// user's next message on the task is the answer, logged as an observation of kind "input", and
// the same turn goes on. Without an answer within HostOptions.ParkTimeout it returns
// ErrParkExpired (if ctx ends, its cause): the turn goes on without the answer, its task too
// (run again by the engine, engine.Waker, to report the turn's end), and a later answer on the
// task is refused with ErrNotWaiting. Outside a turn it returns ErrNoTurn. In a turn of a session the question is committed
// with the session before it is asked, so it outlives the process: after a restart, the answer
// runs the turn again from its message, and this call, asking the same question again, returns
// the answer at once (docs/sessions.md, "A question that outlives the server").
func AskUser(ctx context.Context, question string) (string, error) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return "", ErrNoTurn
	}
	return t.park(ctx, question, nil)
}

// askApproval is AskUser for a capability's pending approval: the question is its prompt, and
// the parked entry carries the approval itself, as JSON, under Result["approval"] (which the
// bridge puts in the input-required status's metadata, for clients to show as buttons).
func askApproval(ctx context.Context, p capability.Pending) (string, error) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return "", ErrNoTurn
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return t.park(ctx, p.Prompt(), map[string]string{"approval": string(data)})
}

// park runs on the turn's goroutine, without the state. extra is added to the parked entry's
// Result.
func (t *turn) park(ctx context.Context, question string, extra map[string]string) (string, error) {
	task := t.ev.Context.Task
	if task == "" {
		return "", errors.New("agent: AskUser needs a turn with a task to answer")
	}
	key := parkKey(question, extra)
	if a := t.resumed; a != nil && key == t.resumeAs { // asked again as the turn runs again: answered
		t.resumed = nil
		t.answers = append(t.answers, *a)
		return a.ev.Text, nil
	}
	in := t.in
	if t.sess { // the question outlives the process: stored with the session before it is asked
		var err error
		if derr := in.do(ctx, func(c *core) { err = c.parkSession(t, question, key) }); derr != nil {
			return "", derr
		}
		if err != nil {
			return "", err
		}
	}
	in.mu.Lock()
	res := map[string]string{"parked": "true", "observation": t.obsID, "policy": strconv.Itoa(t.policy)}
	for k, v := range extra {
		res[k] = v
	}
	t.parkedAt = t.out.push(Entry{Kind: EntryInput, Text: question, Result: res})
	in.parked[task] = t
	in.forgetUnparkedLocked(task) // (it waits again)
	in.mu.Unlock()
	timer := time.NewTimer(in.h.opts.ParkTimeout)
	defer timer.Stop()
	var err error
	select {
	case ev := <-t.reply:
		t.answers = append(t.answers, answer{question, ev})
		return ev.Text, nil
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-timer.C:
		err = ErrParkExpired
	}
	in.mu.Lock()
	taken := in.parked[task] != t
	if !taken {
		delete(in.parked, task)
		if errors.Is(err, ErrParkExpired) || errors.Is(err, capability.ErrDecided) {
			in.unparkLocked(task, err.Error())
			t.gaveUp = true
		}
	}
	in.mu.Unlock()
	if taken { // an answer is on its way: take it, it belongs to this turn
		ev := <-t.reply
		t.answers = append(t.answers, answer{question, ev})
		return ev.Text, nil
	}
	if t.opts.wake != nil && (errors.Is(err, ErrParkExpired) || errors.Is(err, capability.ErrDecided)) {
		// The turn goes on without an answer; so must its task, which waits for input: the
		// engine runs it again, and that run reports the rest of the turn from here.
		in.h.setWoken(task, t, t.parkedAt)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), commitTimeout)
		if werr := t.opts.wake(wctx); werr != nil { // (engine.ErrNotWaiting: canceled meanwhile, say)
			in.h.takeWoken(in.key.Principal, task)
		}
		cancel()
	}
	return "", err
}

// takeParked removes and returns the turn parked on task, if any; else why task's turn waits
// no more, if it stopped waiting without an answer.
func (in *instance) takeParked(task string) (*turn, string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	t := in.parked[task]
	if t != nil {
		delete(in.parked, task)
	}
	return t, in.unparked[task]
}

// unparkLocked records why task's turn stopped waiting without an answer. Caller holds in.mu.
func (in *instance) unparkLocked(task, why string) {
	if in.unparked == nil {
		in.unparked = map[string]string{}
	}
	if _, ok := in.unparked[task]; !ok {
		in.unparkedOrder = append(in.unparkedOrder, task)
	}
	in.unparked[task] = why
	if len(in.unparkedOrder) > maxUnparked {
		delete(in.unparked, in.unparkedOrder[0])
		in.unparkedOrder = slices.Delete(in.unparkedOrder, 0, 1)
	}
}

// forgetUnparkedLocked forgets why task's turn stopped waiting: the task waits for an answer
// again. Caller holds in.mu.
func (in *instance) forgetUnparkedLocked(task string) {
	if _, ok := in.unparked[task]; ok {
		delete(in.unparked, task)
		in.unparkedOrder = slices.DeleteFunc(in.unparkedOrder, func(t string) bool { return t == task })
	}
}

// parkedEntry reports whether e is the question of a parked turn.
func parkedEntry(e Entry) bool { return e.Kind == EntryInput && e.Result["parked"] == "true" }

// ---- output ----

// output is a turn's working log as its consumers read it: appended by the turn, read by index.
type output struct {
	mu      sync.Mutex
	entries []Entry
	// wake is closed on the next push; nil while nobody waits (a turn pushes a dozen entries
	// or more, mostly before its consumer looks).
	wake chan struct{}
}

func newOutput() *output { return &output{entries: make([]Entry, 0, 16)} }

// push appends e and returns the index after it.
func (o *output) push(e Entry) int {
	o.mu.Lock()
	o.entries = append(o.entries, e)
	n := len(o.entries)
	if o.wake != nil {
		close(o.wake)
		o.wake = nil
	}
	o.mu.Unlock()
	return n
}

// wait returns entry i once there is one.
func (o *output) wait(ctx context.Context, i int) (Entry, error) {
	for {
		o.mu.Lock()
		if i < len(o.entries) {
			e := o.entries[i]
			o.mu.Unlock()
			return e, nil
		}
		if o.wake == nil {
			o.wake = make(chan struct{})
		}
		wake := o.wake
		o.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		}
	}
}
