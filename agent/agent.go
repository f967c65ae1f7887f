package agent

// Concurrency: an Agent's state (its mind: memory, policy, pending questions) is owned by the
// goroutine run starts in New. Every exported method posts a closure to the mailbox and, except
// Send, waits for it; nothing else touches the state. Close stops the goroutine and waits for it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
)

// ErrClosed is returned by an agent's methods after Close.
var ErrClosed = errors.New("agent: closed")

// Options configure an agent. The zero value (or nil) is an agent with an empty policy, an
// in-memory store and no tools.
type Options struct {
	// Policy is the agent's policy; nil means no rules. Its axioms and limits always apply; its
	// rules are version 1 of a new agent, while an agent the store knows keeps its own versions.
	Policy *Policy
	// Store keeps the observation log and beliefs; nil means NewMemoryStore(). New loads what
	// the store holds under the agent's name.
	Store Store
	// Tools are the capabilities rules, and the model, may call; nil means none.
	Tools map[string]Tool
	// ToolHelp describes tools to the model, by name; a tool without one is described by its
	// name. Nil means none.
	ToolHelp map[string]string
	// Model is the language model the Consult action asks; nil means none (Consult then
	// reports "no-model", and rules go on without it).
	Model Model
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Mailbox is the mailbox capacity; zero means 64.
	Mailbox int
}

// Agent is a rule-driven actor. See the package doc.
type Agent struct {
	name    string
	mailbox chan func(*core)
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	stop    context.CancelCauseFunc // ends the agent's lifetime context (mind.life)
}

// core is the state the agent's goroutine owns.
type core struct {
	mind     *mind
	store    Store
	versions []*compiledPolicy // every policy version; versions[i] is version i+1
	history  []PolicyVersion   // history[i] is how versions[i] came about
	current  int               // index in versions
	edits    []time.Time       // when proposals were applied, for the rate limit
	reviews  []Review          // proposals held for approval, pending or decided, in order
	sendErr  error             // the first store error of a Send, for the next Ask
}

// New starts an agent named name.
func New(ctx context.Context, name string, opts *Options) (*Agent, error) {
	if opts == nil {
		opts = &Options{}
	}
	pol := opts.Policy
	if pol == nil {
		pol = &Policy{}
	}
	if _, err := compile(pol); err != nil {
		return nil, err
	}
	st := opts.Store
	if st == nil {
		st = NewMemoryStore()
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	mem := newMemory()
	log, err := st.Observations(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("agent: loading %s: %w", name, err)
	}
	for _, o := range log {
		mem.append(o)
	}
	beliefs, err := st.Beliefs(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("agent: loading %s: %w", name, err)
	}
	for _, b := range beliefs {
		mem.putBelief(b)
	}
	if mem.goals, err = st.Goals(ctx, name); err != nil {
		return nil, fmt.Errorf("agent: loading %s: %w", name, err)
	}
	work, err := st.Working(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("agent: loading %s: %w", name, err)
	}
	for _, n := range work.Notes {
		n.key = subjectKey(n.Subject) + "\x00" + subjectKey(n.Value)
		mem.working = append(mem.working, n)
	}
	hist, cur, err := st.Policies(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("agent: loading %s: %w", name, err)
	}
	if len(hist) == 0 {
		v1 := PolicyVersion{Version: 1, Rules: cloneRules(pol.Rules), Applied: now().UTC()}
		if err := st.AddPolicy(ctx, name, v1); err != nil {
			return nil, fmt.Errorf("agent: saving %s: %w", name, err)
		}
		if err := st.SetPolicy(ctx, name, 1); err != nil {
			return nil, fmt.Errorf("agent: saving %s: %w", name, err)
		}
		hist, cur = []PolicyVersion{v1}, 1
	}
	c := &core{store: st, history: hist, current: cur - 1}
	for i, h := range hist {
		if h.Version != i+1 {
			return nil, fmt.Errorf("agent: loading %s: policy version %d is at position %d", name, h.Version, i+1)
		}
		// Axioms and limits are the program's; the rules are the agent's own history.
		p := pol.clone()
		p.Rules = h.Rules
		cp, err := compile(p)
		if err != nil {
			return nil, fmt.Errorf("agent: loading %s: policy version %d: %w", name, h.Version, err)
		}
		c.versions = append(c.versions, cp)
		if i > 0 {
			c.edits = append(c.edits, h.Applied)
		}
	}
	if c.current < 0 || c.current >= len(c.versions) {
		return nil, fmt.Errorf("agent: loading %s: no policy version %d", name, cur)
	}
	if c.reviews, err = st.Reviews(ctx, name); err != nil {
		return nil, fmt.Errorf("agent: loading %s: %w", name, err)
	}
	// An approval saves its version before its review: a review still pending whose version
	// was saved was approved when the agent stopped.
	for _, h := range hist {
		i := slices.IndexFunc(c.reviews, func(r Review) bool { return h.Review != "" && r.ID == h.Review })
		if i >= 0 && c.reviews[i].Status == ReviewPending {
			r := &c.reviews[i]
			r.Status, r.Reviewer, r.Decided, r.Version = ReviewApproved, h.Approver, h.Applied, h.Version
			if err := st.SaveReview(ctx, name, *r); err != nil {
				return nil, fmt.Errorf("agent: saving %s: %w", name, err)
			}
		}
	}
	m := newMind(name, mem, c.versions[c.current], now)
	maps.Copy(m.pending, work.Pending)
	c.mind = m
	m.tools = map[string]Tool{}
	for k, t := range opts.Tools {
		m.tools[k] = t
	}
	m.toolHelp = maps.Clone(opts.ToolHelp)
	m.model, m.hasModel = opts.Model, opts.Model != nil
	size := opts.Mailbox
	if size <= 0 {
		size = 64
	}
	a := &Agent{name: name, mailbox: make(chan func(*core), size), quit: make(chan struct{}), done: make(chan struct{})}
	m.life, a.stop = context.WithCancelCause(context.Background())
	go a.run(c)
	return a, nil
}

func (a *Agent) run(c *core) {
	defer close(a.done)
	for {
		select {
		case f := <-a.mailbox:
			f(c)
		case <-a.quit:
			return
		}
	}
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.name }

// Close stops the agent and waits for its goroutine. It is idempotent. A model call in progress
// is canceled; a tool call runs to its end.
func (a *Agent) Close() error {
	a.once.Do(func() { close(a.quit); a.stop(ErrClosed) })
	<-a.done
	return nil
}

// Done is closed when the agent has stopped.
func (a *Agent) Done() <-chan struct{} { return a.done }

// post puts f in the mailbox.
func (a *Agent) post(ctx context.Context, f func(*core)) error {
	select {
	case a.mailbox <- f:
		return nil
	case <-a.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs f in the agent's goroutine and waits for it.
func (a *Agent) do(ctx context.Context, f func(*core)) error {
	ran := make(chan struct{})
	if err := a.post(ctx, func(c *core) { f(c); close(ran) }); err != nil {
		return err
	}
	select {
	case <-ran:
		return nil
	case <-a.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call runs f in the agent's goroutine and returns its result.
func call[T any](ctx context.Context, a *Agent, f func(*core) (T, error)) (T, error) {
	var v T
	var err error
	if e := a.do(ctx, func(c *core) { v, err = f(c) }); e != nil {
		var zero T
		return zero, e
	}
	return v, err
}

// Send posts ev to the mailbox without waiting for the agent to integrate it. ctx bounds only
// the wait for room in the mailbox. A store error while integrating is reported by the next Ask.
func (a *Agent) Send(ctx context.Context, ev Event) error {
	run := context.WithoutCancel(ctx)
	return a.post(ctx, func(c *core) {
		if _, err := c.integrate(run, ev); err != nil && c.sendErr == nil {
			c.sendErr = err
		}
	})
}

// Ask posts ev and returns the run it caused. Once the agent takes the event the run completes
// even if ctx ends (an agent does not half-integrate an observation); tools see ctx without its
// cancellation. Rule errors do not stop a run: they are logged as thoughts. The error is a
// store error (this run's, or an earlier Send's), ErrClosed or the context's.
func (a *Agent) Ask(ctx context.Context, ev Event) (Run, error) {
	return call(ctx, a, func(c *core) (Run, error) {
		run, err := c.integrate(context.WithoutCancel(ctx), ev)
		if err == nil && c.sendErr != nil {
			err, c.sendErr = c.sendErr, nil
		}
		return run, err
	})
}

func (c *core) integrate(ctx context.Context, ev Event) (Run, error) {
	o := c.mind.observe(ev)
	run := Run{Observation: o.ID, Policy: c.current + 1}
	before := len(c.mind.mem.log) - 1
	_ = c.mind.integrate(ctx, o, &run)
	err := c.save(ctx, before)
	status := "completed"
	switch {
	case err != nil, run.Failure != "":
		status = "failed"
	case run.Question != "":
		status = "input-required"
	}
	c.mind.record(&run, Entry{Kind: EntryEnd, Text: "run " + o.ID + " ended", Result: map[string]string{
		"status": status, "observation": o.ID, "policy": strconv.Itoa(run.Policy), "reply": run.Reply, "question": run.Question, "failure": run.Failure}})
	return run, err
}

// Stream is Ask that yields the run's working log as the agent writes it. The last entry is
// EntryEnd, whose Result has the run's status ("completed", "input-required", or "failed" when
// its memory could not be saved), observation, policy, reply and question; a store error
// follows it. The agent waits for each entry to be taken (backpressure): a consumer that stops
// early, or whose ctx ends, releases it, and the run still completes.
func (a *Agent) Stream(ctx context.Context, ev Event) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		entries := make(chan Entry, 16)
		stop := make(chan struct{})
		var runErr error
		err := a.post(ctx, func(c *core) {
			defer close(entries)
			c.mind.emit = func(e Entry) {
				select {
				case entries <- e:
				case <-stop:
				}
			}
			defer func() { c.mind.emit = nil }()
			_, runErr = c.integrate(context.WithoutCancel(ctx), ev)
		})
		if err != nil {
			yield(Entry{}, err)
			return
		}
		defer close(stop)
		for {
			select {
			case e, ok := <-entries:
				if !ok {
					if runErr != nil {
						yield(Entry{}, runErr)
					}
					return
				}
				if !yield(e, nil) {
					return
				}
			case <-a.done:
				yield(Entry{}, ErrClosed)
				return
			case <-ctx.Done():
				yield(Entry{}, ctx.Err())
				return
			}
		}
	}
}

// save writes the observations from log index from on, and the dirty beliefs.
func (c *core) save(ctx context.Context, from int) error {
	name := c.mind.name
	for _, o := range c.mind.mem.log[from:] {
		if err := c.store.Append(ctx, name, o); err != nil {
			return fmt.Errorf("agent: saving %s: %w", o.ID, err)
		}
	}
	seen := map[string]bool{}
	for _, id := range c.mind.dirty { // in the order written, so new beliefs keep their order
		if seen[id] {
			continue
		}
		seen[id] = true
		b := c.mind.mem.beliefs[c.mind.mem.beliefAt[id]]
		if err := c.store.SaveBelief(ctx, name, b); err != nil {
			return fmt.Errorf("agent: saving %s: %w", b.ID, err)
		}
	}
	c.mind.dirty = c.mind.dirty[:0]
	for _, i := range c.mind.dirtyGoals {
		if err := c.store.SaveGoal(ctx, name, c.mind.mem.goals[i]); err != nil {
			return fmt.Errorf("agent: saving %s: %w", c.mind.mem.goals[i].ID, err)
		}
	}
	c.mind.dirtyGoals = c.mind.dirtyGoals[:0]
	if c.mind.workDirty {
		if err := c.store.SaveWorking(ctx, name, c.mind.workingState()); err != nil {
			return fmt.Errorf("agent: saving the working state: %w", err)
		}
		c.mind.workDirty = false
	}
	return nil
}

// Recall searches the agent's memory. What it returns is a copy.
func (a *Agent) Recall(ctx context.Context, q Query) (Recollection, error) {
	return call(ctx, a, func(c *core) (Recollection, error) { return c.mind.mem.recall(q), nil })
}

// View is a copy of an agent's state.
type View struct {
	Name string
	// Policy is the current policy and Version its number; History has every version of the
	// rules with the proposal that made it.
	Policy  Policy
	Version int
	History []PolicyVersion
	// Reviews are the proposals held for a human's approval, pending or decided, in order.
	Reviews []Review
	// Beliefs are all beliefs, current and past, in the order written.
	Beliefs      []Belief
	Goals        []Goal
	Working      []WorkingNote
	Observations int
	Tools        []string
}

// View returns a copy of the agent's state.
func (a *Agent) View(ctx context.Context) (View, error) {
	return call(ctx, a, func(c *core) (View, error) { return c.view(), nil })
}

func (c *core) view() View {
	m := c.mind
	v := View{Name: m.name, Policy: *c.versions[c.current].src.clone(), Version: c.current + 1,
		Observations: len(m.mem.log)}
	for _, b := range m.mem.beliefs {
		v.Beliefs = append(v.Beliefs, b.clone())
	}
	for _, g := range m.mem.goals {
		v.Goals = append(v.Goals, g.clone())
	}
	for _, n := range m.mem.working {
		n.Observations = slices.Clone(n.Observations)
		v.Working = append(v.Working, n)
	}
	for _, h := range c.history {
		v.History = append(v.History, h.clone())
	}
	for _, r := range c.reviews {
		v.Reviews = append(v.Reviews, r.clone())
	}
	for k := range m.tools {
		v.Tools = append(v.Tools, k)
	}
	slices.Sort(v.Tools)
	return v
}

// Identity is a digest of what makes the agent this agent: its rules, its memory view (current
// beliefs and open goals) and its capabilities. Names are labels, not identity.
func (a *Agent) Identity(ctx context.Context) (string, error) {
	return call(ctx, a, func(c *core) (string, error) {
		v := c.view()
		type fact struct{ Subject, Value string }
		var facts []fact
		for _, b := range v.Beliefs {
			if b.current() {
				facts = append(facts, fact{subjectKey(b.Subject), subjectKey(b.Value)})
			}
		}
		for _, g := range v.Goals {
			if g.Status == GoalOpen {
				facts = append(facts, fact{"goal", subjectKey(g.Text)})
			}
		}
		data, _ := json.Marshal(struct {
			Axioms, Rules []Rule
			Limits        Limits
			Facts         []fact
			Tools         []string
		}{v.Policy.Axioms, v.Policy.Rules, v.Policy.Limits, facts, v.Tools})
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:]), nil
	})
}
