package agent

// Concurrency model of an instance. Each resident instance (one principal's agent) is an actor:
// one goroutine (instance.run) owns its state, the core; every exported method posts a closure
// to its mailbox, and nothing else touches the core. Turns run as coroutines of that goroutine
// (turn.go): a turn's goroutine touches the core only while the instance goroutine has handed
// it the state, and hands it back before anything slow (a model call, a tool call, waiting for
// the user), so the mailbox keeps moving. A store commit is the only I/O done while holding the
// state: it keeps memory and store in the same order.
//
// Instances belong to a Host (host.go), which loads them on first use and evicts them when
// idle. An *Agent is a handle (definition, principal) that outlives evictions.

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
	"sync/atomic"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// ErrClosed is returned by an agent's methods after Close.
var ErrClosed = errors.New("agent: closed")

// Options configure an agent made by [New]. The zero value (or nil) is an agent with an empty
// policy, an in-memory store and no tools.
type Options struct {
	// Policy is the agent's policy; nil means no rules. Its axioms and limits always apply; its
	// rules are version 1 of a new agent, while an agent the store knows keeps its own versions.
	Policy *Policy
	// Store keeps the agent's memory; nil means NewMemoryStore(). New loads what the store holds
	// under the agent's name (for the anonymous principal).
	Store Store
	// Tools are the capabilities rules, and the model, may call; nil means none.
	Tools map[string]Tool
	// ToolHelp describes tools to the model, by name; a tool without one is described by its
	// name. Nil means none.
	ToolHelp map[string]string
	// Model is the language model the Consult action asks; nil means none (Consult then
	// reports "no-model", and rules go on without it).
	Model Model
	// Knowledge is the operator's read-only knowledge; nil means none. See [Definition].
	Knowledge []Fact
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Mailbox is the mailbox capacity; zero means 64.
	Mailbox int
	// Limiter bounds concurrent model calls; nil means no bound.
	Limiter *Limiter
	// Capabilities, Preinstall, Audit and Rehydrate: see [Definition].
	Capabilities *capability.Catalog
	Preinstall   []string
	Audit        capability.Audit
	Rehydrate    func(ctx context.Context, principal string, set *capability.Set)
}

// Agent is a handle on one instance of a definition: the one [New] made, or one principal's
// from [Host.Instance]. Its methods load the instance when it is not resident.
type Agent struct {
	name string
	h    *Host
	p    Principal
	own  bool // made by New: Close closes the host
}

// New starts an agent named name: one instance (the anonymous principal's) of a private host
// that never evicts it. It loads what opts.Store holds for it.
func New(ctx context.Context, name string, opts *Options) (*Agent, error) {
	if opts == nil {
		opts = &Options{}
	}
	h, err := NewHost(&Definition{Name: name, Policy: opts.Policy, Tools: opts.Tools, ToolHelp: opts.ToolHelp,
		Model: opts.Model, Knowledge: opts.Knowledge, Now: opts.Now, Capabilities: opts.Capabilities, Preinstall: opts.Preinstall, Audit: opts.Audit,
		Rehydrate: opts.Rehydrate},
		&HostOptions{Store: opts.Store, IdleTimeout: -1, Mailbox: opts.Mailbox, Limiter: opts.Limiter})
	if err != nil {
		return nil, err
	}
	a, err := h.Instance(ctx, Principal{})
	if err != nil {
		_ = h.Close()
		return nil, err
	}
	a.own = true
	return a, nil
}

// Name returns the agent's name (its definition's).
func (a *Agent) Name() string { return a.name }

// Host returns the host a's instance belongs to (for New, a private one, whose anonymous
// principal a is: Executor(a.Host()) serves a to callers that do not authenticate).
func (a *Agent) Host() *Host { return a.h }

// Principal returns the principal whose instance a is.
func (a *Agent) Principal() Principal { return a.p }

// Close stops an agent made by New and waits for it: a model call in progress is canceled, a
// tool call runs to its end. It is idempotent. On a handle from Host.Instance it does nothing:
// the host owns its instances.
func (a *Agent) Close() error {
	if a.own {
		return a.h.Close()
	}
	return nil
}

// Done is closed when the agent's host has stopped.
func (a *Agent) Done() <-chan struct{} { return a.h.Done() }

// instance is a resident instance: its mailbox and the goroutine that owns its core.
type instance struct {
	h       *Host
	key     Key
	mailbox chan func(*core)
	life    context.Context // canceled by close: turns derive from it
	stop    context.CancelCauseFunc
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	turns   sync.WaitGroup // the turns' goroutines

	mu     sync.Mutex       // guards parked and unparked
	parked map[string]*turn // turns waiting for the user's answer, by task
	// unparked says why the last tasks whose turn stopped waiting without an answer (park)
	// wait no more, by task, for an answer that comes after (ErrNotWaiting); the oldest of
	// more than maxUnparked are forgotten, in the order of unparkedOrder.
	unparked      map[string]string
	unparkedOrder []string

	caps      *capability.Set // its capabilities; set by load (capabilities.go)
	capsDirty atomic.Bool     // caps changed since it was last saved
	// logged is how many observations the log held at the last commit, for the reflect
	// schedule, which must not load or touch an instance to know whether its log grew.
	logged atomic.Int64
}

// core is the state an instance's goroutine owns.
type core struct {
	in       *instance
	def      *definition
	mem      *memory
	store    Store
	versions []*compiledPolicy // every policy version; versions[i] is version i+1
	history  []PolicyVersion   // history[i] is how versions[i] came about
	current  int               // index in versions
	unsaved  int               // versions at the start of history not saved yet (v1 of a new instance)
	edits    []time.Time       // when proposals were applied, for the rate limit
	reviews  []Review          // proposals held for approval, pending or decided, in order
	sendErr  error             // the first store error of a Send, for the next Ask
	sessions map[string]*sessionSlot
	inflight int // turns admitted and not finished
}

// load reads an instance from the store and starts its goroutine.
func load(ctx context.Context, h *Host, key Key) (*instance, error) {
	d := h.def
	// What must be resident is what a turn reads: the newest observations (a consult's recent
	// ones, a proposal's replay window), beliefs, goals, working state and policy. The rest of
	// the log stays in the store, which searches it for Recall.
	lim := d.policy.Limits.withDefaults()
	tail := max(lim.ReplayWindow, contextObservations)
	snap, err := h.store.Load(ctx, key, tail)
	if err != nil {
		return nil, fmt.Errorf("agent: loading %s: %w", key.Agent, err)
	}
	mem := newMemory()
	mem.knowledge = d.knowledge
	mem.tail = tail
	mem.load(snap)
	c := &core{def: d, mem: mem, store: h.store, history: snap.Policies, current: snap.Current - 1,
		reviews: snap.Reviews, sessions: map[string]*sessionSlot{}}
	if len(c.history) == 0 {
		c.history = []PolicyVersion{{Version: 1, Rules: cloneRules(d.policy.Rules), Applied: d.now().UTC()}}
		c.current, c.unsaved = 0, 1
	}
	for i, pv := range c.history {
		if pv.Version != i+1 {
			return nil, fmt.Errorf("agent: loading %s: policy version %d is at position %d", key.Agent, pv.Version, i+1)
		}
		// Axioms and limits are the program's; the rules are the instance's own history.
		cp, err := d.compile(pv.Rules)
		if err != nil {
			return nil, fmt.Errorf("agent: loading %s: policy version %d: %w", key.Agent, pv.Version, err)
		}
		c.versions = append(c.versions, cp)
		if i > 0 {
			c.edits = append(c.edits, pv.Applied)
		}
	}
	if c.current < 0 || c.current >= len(c.versions) {
		return nil, fmt.Errorf("agent: loading %s: no policy version %d", key.Agent, c.current+1)
	}
	// An approval saves its version with its review; a review still pending whose version was
	// saved comes from a store of an older layout, written in two steps.
	var fixed []Review
	for _, pv := range c.history {
		i := slices.IndexFunc(c.reviews, func(r Review) bool { return pv.Review != "" && r.ID == pv.Review })
		if i >= 0 && c.reviews[i].Status == ReviewPending {
			r := &c.reviews[i]
			r.Status, r.Reviewer, r.Decided, r.Version = ReviewApproved, pv.Approver, pv.Applied, pv.Version
			fixed = append(fixed, *r)
		}
	}
	if len(fixed) > 0 {
		if err := h.store.Commit(ctx, key, &Batch{Reviews: fixed}); err != nil {
			return nil, fmt.Errorf("agent: saving %s: %w", key.Agent, err)
		}
	}
	in := &instance{h: h, key: key, mailbox: make(chan func(*core), h.opts.Mailbox), quit: make(chan struct{}),
		done: make(chan struct{}), parked: map[string]*turn{}}
	in.life, in.stop = context.WithCancelCause(context.Background())
	c.in = in
	if in.caps, err = newCapabilitySet(ctx, in, snap.Capabilities); err != nil {
		return nil, err
	}
	go in.run(c)
	return in, nil
}

func (in *instance) run(c *core) {
	defer close(in.done)
	for {
		select {
		case f := <-in.mailbox:
			f(c)
		case <-in.quit:
			// Closing: the turns in flight (their contexts canceled) still need the state to
			// end; nothing else is served.
			for c.inflight > 0 {
				f := <-in.mailbox
				f(c)
			}
			c.saveCapabilities()
			return
		}
	}
}

// close cancels the instance's turns, lets them end, stops its goroutine and waits for it
// and for them. It is idempotent.
func (in *instance) close() {
	in.once.Do(func() { in.stop(ErrClosed); close(in.quit) })
	<-in.done
	in.turns.Wait()
	in.caps.Close() // after the turns: what it held is saved, and restored when it loads again
}

// closing reports whether close has begun.
func (in *instance) closing() bool {
	select {
	case <-in.quit:
		return true
	default:
		return false
	}
}

// post puts f in the mailbox.
func (in *instance) post(ctx context.Context, f func(*core)) error {
	select {
	case in.mailbox <- f:
		return nil
	case <-in.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs f in the instance's goroutine and waits for it. When do returns an error, f has not
// run and never will: a caller whose ctx ends while f waits in the mailbox abandons it, and one
// whose f has already started waits for it (f is short, it runs on the instance goroutine), so a
// closure never touches its caller's variables after do has returned.
func (in *instance) do(ctx context.Context, f func(*core)) error {
	const (
		queued = iota
		running
		abandoned
	)
	var state atomic.Int32
	ran := make(chan struct{})
	if err := in.post(ctx, func(c *core) {
		if state.CompareAndSwap(queued, running) {
			f(c)
		}
		close(ran)
	}); err != nil {
		return err
	}
	select {
	case <-ran:
		return nil
	case <-in.done:
	case <-ctx.Done():
	}
	if state.CompareAndSwap(queued, abandoned) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return ErrClosed
	}
	<-ran // f is running: it finishes before the instance goroutine can end
	return nil
}

// call runs f in the goroutine of a's instance and returns its result.
func call[T any](ctx context.Context, a *Agent, f func(*core) (T, error)) (T, error) {
	var v T
	var err error
	e, aerr := a.h.acquire(ctx, a.p)
	if aerr != nil {
		return v, aerr
	}
	defer a.h.release(e)
	if e := e.in.do(ctx, func(c *core) { v, err = f(c) }); e != nil {
		var zero T
		return zero, e
	}
	return v, err
}

// commit saves b (with the policy versions not saved yet) in one store transaction and, once
// saved, applies it to the resident memory.
func (c *core) commit(ctx context.Context, b *Batch) error {
	if c.unsaved > 0 {
		b.Policies = append(cloneAll(c.history[:c.unsaved], PolicyVersion.clone), b.Policies...)
		if b.Current == 0 {
			b.Current = c.current + 1
		}
	}
	if err := c.store.Commit(ctx, c.in.key, b); err != nil {
		if c.unsaved > 0 {
			b.Policies = b.Policies[c.unsaved:]
		}
		return err
	}
	c.unsaved = 0
	c.mem.apply(b)
	c.in.logged.Store(int64(c.mem.count))
	return nil
}

// Send posts ev as a new turn without waiting for it. ctx bounds only the wait for room in
// the mailbox. A store error of the turn is reported by the next Ask.
func (a *Agent) Send(ctx context.Context, ev Event) error {
	_, _, err := a.start(ctx, ev, turnOptions{send: true})
	return err
}

// Ask posts ev as a new turn and returns the run it caused, once its memory is committed (or
// the turn parked waiting for the user: then Run.Question is the question, and the next Ask
// on the same task is the answer). Once the instance takes the event the turn completes even
// if ctx ends; Close cancels it. Rule errors do not stop a run: they are logged as thoughts.
// The error is a store error (this turn's, or an earlier Send's), ErrClosed or the context's.
func (a *Agent) Ask(ctx context.Context, ev Event) (Run, error) {
	t, from, err := a.start(ctx, ev, turnOptions{})
	if err != nil {
		return Run{}, err
	}
	run := Run{Log: make([]Entry, 0, 16)}
	for i := from; ; i++ {
		e, err := t.out.wait(ctx, i)
		if err != nil {
			return Run{}, err
		}
		run.Log = append(run.Log, e)
		if e.Kind == EntryEnd {
			run.Observation, run.Reply, run.Question, run.Failure = e.Result["observation"], e.Result["reply"], e.Result["question"], e.Result["failure"]
			run.Policy, _ = strconv.Atoi(e.Result["policy"])
			return run, t.endErr()
		}
		if parkedEntry(e) {
			run.Observation, run.Question = e.Result["observation"], e.Text
			run.Policy, _ = strconv.Atoi(e.Result["policy"])
			return run, nil
		}
	}
}

// Stream is Ask that yields the run's working log as the turn writes it. The last entry is
// EntryEnd, whose Result has the run's status ("completed", "input-required", "failed" when the
// model did not answer or the memory could not be saved, "canceled"), observation, policy,
// reply and question; a store error follows it. A turn that parks waiting for the user ends its
// stream with an EntryInput entry whose Result["parked"] is "true". The turn never waits for
// the consumer: a consumer that stops early, or whose ctx ends, leaves the turn running.
func (a *Agent) Stream(ctx context.Context, ev Event) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		t, from, err := a.start(ctx, ev, turnOptions{})
		if err != nil {
			yield(Entry{}, err)
			return
		}
		for i := from; ; i++ {
			e, err := t.out.wait(ctx, i)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			if !yield(e, nil) || parkedEntry(e) {
				return
			}
			if e.Kind == EntryEnd {
				if err := t.endErr(); err != nil {
					yield(Entry{}, err)
				}
				return
			}
		}
	}
}

// Recall searches the instance's memory (and the operator's knowledge). What it returns is a
// copy, and sees only committed turns. Observations are searched in the store, outside the
// instance's goroutine: the whole log need not be resident.
func (a *Agent) Recall(ctx context.Context, q Query) (Recollection, error) {
	var cited map[int64]int
	r, err := call(ctx, a, func(c *core) (Recollection, error) {
		cited = maps.Clone(c.mem.citedSeq)
		return c.mem.recall(q), nil
	})
	if err != nil {
		return r, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	r.Observations, err = a.h.store.SearchLog(ctx, Key{Agent: a.h.def.name, Principal: a.p}, LogQuery{Terms: SearchTerms(q.Text), Limit: limit, Cited: cited})
	return r, err
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

// View returns a copy of the instance's committed state.
func (a *Agent) View(ctx context.Context) (View, error) {
	return call(ctx, a, func(c *core) (View, error) { return c.view(), nil })
}

func (c *core) view() View {
	m := c.mem
	v := View{Name: c.def.name, Policy: *c.versions[c.current].src.clone(), Version: c.current + 1,
		Observations: m.count}
	for _, b := range m.beliefs {
		v.Beliefs = append(v.Beliefs, b.clone())
	}
	for _, g := range m.goals {
		v.Goals = append(v.Goals, g.clone())
	}
	for _, n := range m.working {
		n.Observations = slices.Clone(n.Observations)
		v.Working = append(v.Working, n)
	}
	for _, h := range c.history {
		v.History = append(v.History, h.clone())
	}
	for _, r := range c.reviews {
		v.Reviews = append(v.Reviews, r.clone())
	}
	for k := range c.def.tools {
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
