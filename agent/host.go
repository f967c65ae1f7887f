package agent

// Concurrency model of a Host. Host.mu guards live (the resident instances and their use
// counts) and tasks (the turns in flight, by task ID). Loading an instance reads the store
// outside the lock: the first acquirer loads it, later ones wait on its ready channel. The
// janitor goroutine, started by NewHost and waited for by Close, evicts instances nobody uses:
// refs counts the method calls and turns (parked ones included) using an instance, and an
// instance is evicted only at zero, so never while a turn is in flight. Instances are closed
// outside the lock.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/internal/gopool"
)

// Definition is what an operator writes once and every principal's instance shares: the policy
// template, the tools on offer, the model and read-only knowledge.
type Definition struct {
	// Name names the agent; instances are stored under it.
	Name string
	// Policy is the policy template: its axioms and limits bind every instance, its rules are
	// version 1 of each new instance (which then keeps its own versions). Nil means no rules.
	Policy *Policy
	// Tools are the capabilities rules, and the model, may call; nil means none.
	Tools map[string]Tool
	// ToolHelp describes tools to the model, by name; nil means none.
	ToolHelp map[string]string
	// Model is the language model the Consult action asks; nil means none.
	Model Model
	// Capabilities is what the operator offers every instance through its loader
	// (docs/capabilities.md); nil means nothing: an instance holds the loader and Tools.
	Capabilities *capability.Catalog
	// Preinstall names capabilities of Capabilities that every new instance holds from the
	// start, under the operator's default strategy; nil means none (deny by default).
	Preinstall []string
	// Reflect, when set, gives every instance the reflect capability (reflect.run, for its
	// rules and its model) and, with Every, runs reflect phases on a schedule
	// (docs/self-development.md). Nil means neither.
	Reflect *ReflectOptions
	// Rehydrate, when set, installs what an instance keeps outside the store — the
	// capabilities its factory committed as files (factory.Options.Rehydrate) — into its
	// capability set as it loads, before the set's saved state is restored, so that those get
	// back their strategies and approvals. Nil means nothing.
	Rehydrate func(ctx context.Context, principal string, set *capability.Set)
	// Audit keeps the capability records of every instance (readable by each principal, its
	// own, and by the operator, all); nil means the store's when it keeps them (the memory
	// store, agent/sqlitestore and agent/pgstore do: Audit(name)), else an in-memory log.
	Audit capability.Audit
	// Knowledge is what the operator wants every instance to know: a read-only layer, visible
	// in recall and in a model's working context as beliefs from the source "operator" (IDs
	// k1, k2, …), which no instance can write, demote or forget. Nil means none.
	Knowledge []Fact
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sessions configures every instance's chat sessions (A2A contexts; package agent/session):
	// the context strategy, the window, interruption, budgets. Zero fields are the session
	// package's defaults, except the window: zero means the policy's Limits.ContextTokens.
	Sessions session.Config
	// ModelName names the model for the price table (HostOptions.Prices); "" means "*".
	ModelName string
}

// Fact is an item of a definition's read-only knowledge.
type Fact struct {
	Subject, Value string
	// Reason says why every instance should know it; "" means "the operator's knowledge".
	Reason string
	// Confidence is in (0, 1]; zero means 1.
	Confidence float64
}

// definition is a checked Definition.
type definition struct {
	src        Definition // as given: a fork's is made of it (image.go)
	name       string
	policy     *Policy
	tools      map[string]Tool
	toolHelp   map[string]string
	toolCaps   map[string]*capability.Capability // the tools as capabilities, by name
	catalog    *capability.Catalog
	preinstall []string
	rehydrate  func(context.Context, string, *capability.Set)
	reflect    *ReflectOptions
	model      Model
	now        func() time.Time
	knowledge  *knowledge
	sessions   session.Config // checked, with the window set
	modelName  string

	mu       sync.Mutex                 // guards compiled
	compiled map[string]*compiledPolicy // policy versions by their rules (JSON): instances share them
}

// compile returns the definition's policy with rules, compiled once for every instance that
// has that version (a compiled policy is immutable, and CEL programs are safe for concurrent
// use): loading an instance then costs no compilation, and an idle one holds no programs.
func (d *definition) compile(rules []Rule) (*compiledPolicy, error) {
	key, err := json.Marshal(rules)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	cp := d.compiled[string(key)]
	d.mu.Unlock()
	if cp != nil {
		return cp, nil
	}
	p := d.policy.clone()
	p.Rules = cloneRules(rules)
	if cp, err = compile(p); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.compiled == nil {
		d.compiled = map[string]*compiledPolicy{}
	}
	if x := d.compiled[string(key)]; x != nil {
		cp = x
	} else {
		d.compiled[string(key)] = cp
	}
	d.mu.Unlock()
	return cp, nil
}

// HostOptions configure a Host. The zero value (or nil) is an in-memory store, no bound on model
// calls, and the defaults below.
type HostOptions struct {
	// Store keeps every instance; nil means NewMemoryStore().
	Store Store
	// Limiter bounds concurrent model calls (share one between hosts to bound a whole server);
	// nil means no bound.
	Limiter *Limiter
	// IdleTimeout evicts an instance nobody has used for that long (it loads again when next
	// used); zero means 10 minutes, negative never.
	IdleTimeout time.Duration
	// ParkTimeout is how long a turn waits for the user's answer to a question an effect asked
	// ([AskUser]) before it is abandoned; zero means one hour.
	ParkTimeout time.Duration
	// Mailbox is each instance's mailbox capacity; zero means 64.
	Mailbox int
	// Prices is the operator's price table, which sessions charge their cost budgets by; nil
	// means no prices (costs are unknown, and the sessions say so).
	Prices session.Prices
	// Ownership keeps each instance on one replica at a time, when several replicas share the
	// Store (ownership.go): nil means this host is the only one.
	Ownership Ownership
}

// Host serves a Definition to many principals, each with an instance of its own. See the
// package doc.
type Host struct {
	def   *definition
	store Store
	opts  HostOptions
	audit capability.Audit

	mu    sync.Mutex
	live  map[Principal]*hostEntry
	tasks map[string]*turn // turns in flight (or parked), by task
	// woken are the turns that stopped waiting for an answer without one (park: the question
	// expired, or was decided another way), by task, each with the output index its task's
	// run goes on from, until that run (the engine's, woken: Executor) takes it.
	woken map[string]wokenTurn
	// wake is the engine's Waker function, once an engine runs the Executor (SetWake).
	wake atomic.Pointer[wakeFunc]
	shut bool

	omu   sync.Mutex // guards owned (ownership.go)
	owned map[Principal]*ownedKey

	quit chan struct{}
	done chan struct{}
	bg   sync.WaitGroup // goroutines besides the janitor: the reflect schedule, the renewal of owned instances
	once sync.Once
	// pool runs turns on goroutines that keep their grown stacks: a turn evaluates CEL, which
	// grows a new goroutine's stack every time (runtime.copystack was a fifth of a turn's CPU).
	pool *gopool.Pool
}

type hostEntry struct {
	p     Principal
	in    *instance
	err   error
	ready chan struct{} // closed once in or err is set
	refs  int
	used  time.Time
}

// NewHost checks def and returns a host for it. Instances load on first use.
func NewHost(def *Definition, opts *HostOptions) (*Host, error) {
	if def == nil || def.Name == "" {
		return nil, errors.New("agent: a definition needs a name")
	}
	var o HostOptions
	if opts != nil {
		o = *opts
	}
	if o.Store == nil {
		o.Store = NewMemoryStore()
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 10 * time.Minute
	}
	if o.ParkTimeout <= 0 {
		o.ParkTimeout = time.Hour
	}
	if o.Mailbox <= 0 {
		o.Mailbox = 64
	}
	pol := def.Policy
	if pol == nil {
		pol = &Policy{}
	}
	if _, err := compile(pol); err != nil {
		return nil, err
	}
	d := &definition{src: *def, name: def.Name, policy: pol.clone(), tools: maps.Clone(def.Tools), toolHelp: maps.Clone(def.ToolHelp),
		model: def.Model, now: def.Now, knowledge: &knowledge{}, sessions: def.Sessions, modelName: def.ModelName}
	if d.sessions.Window == 0 { // the policy's context budget (its default), at least the session's least
		d.sessions.Window = session.DefaultWindow
		if pol.Limits.ContextTokens > 0 {
			d.sessions.Window = max(pol.Limits.ContextTokens, 64)
		}
	}
	if err := d.sessions.Validate(); err != nil {
		return nil, fmt.Errorf("agent: the definition's sessions: %w", err)
	}
	if d.tools == nil {
		d.tools = map[string]Tool{}
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.catalog, d.preinstall = def.Capabilities, slices.Clone(def.Preinstall)
	d.rehydrate, d.reflect = def.Rehydrate, def.Reflect
	if d.catalog == nil {
		d.catalog = capability.NewCatalog()
	}
	for _, name := range d.preinstall {
		if _, ok := d.catalog.Lookup(name); !ok {
			return nil, fmt.Errorf("agent: preinstall %s: the catalog does not offer it", name)
		}
	}
	d.toolCaps = map[string]*capability.Capability{}
	for name, tool := range d.tools {
		if tool == nil {
			continue
		}
		c, err := toolCapability(name, cmpOr(d.toolHelp[name], "the tool "+name), tool)
		if err != nil {
			return nil, fmt.Errorf("agent: tool %q: %w", name, err)
		}
		if _, clash := d.catalog.Lookup(name); clash || name == "loader" {
			return nil, fmt.Errorf("agent: tool %q: the name of a capability on offer", name)
		}
		d.toolCaps[name] = c
	}
	for i, f := range def.Knowledge {
		if f.Subject == "" || f.Value == "" {
			return nil, fmt.Errorf("agent: knowledge %d needs a subject and a value", i+1)
		}
		conf := f.Confidence
		if conf <= 0 || conf > 1 {
			conf = 1
		}
		b := Belief{ID: fmt.Sprintf("k%d", i+1), Subject: f.Subject, Value: f.Value, Confidence: conf, Status: StatusActive,
			Provenance: Provenance{Source: Source{Kind: SourceOperator}, Reason: cmpOr(f.Reason, "the operator's knowledge")}}
		d.knowledge.beliefs = append(d.knowledge.beliefs, b)
		d.knowledge.terms = append(d.knowledge.terms, terms(b.Subject+" "+b.Value))
	}
	h := &Host{def: d, store: o.Store, opts: o, live: map[Principal]*hostEntry{}, tasks: map[string]*turn{},
		quit: make(chan struct{}), done: make(chan struct{}), audit: def.Audit, pool: gopool.New(time.Second)}
	if as, ok := o.Store.(auditStore); ok && h.audit == nil {
		h.audit = as.Audit(d.name)
	}
	if h.audit == nil {
		h.audit = capability.NewMemoryAudit(0)
	}
	go h.janitor()
	if o.Ownership != nil {
		h.owned = map[Principal]*ownedKey{}
		h.bg.Add(1)
		go h.renewOwned()
	}
	if d.reflect != nil && d.reflect.Every > 0 {
		h.bg.Add(1)
		go h.reflectEvery(d.reflect.Every)
	}
	return h, nil
}

// Name is the definition's name.
func (h *Host) Name() string { return h.def.name }

// Store is the host's store.
func (h *Host) Store() Store { return h.store }

// Instance returns the instance of principal p, loading it if it is not resident (so that a
// store error shows here). The handle stays valid across evictions.
func (h *Host) Instance(ctx context.Context, p Principal) (*Agent, error) {
	e, err := h.acquire(ctx, p)
	if err != nil {
		return nil, err
	}
	h.release(e)
	return &Agent{name: h.def.name, h: h, p: p}, nil
}

// Resident is how many instances are loaded.
func (h *Host) Resident() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.live)
}

// Close evicts every instance (canceling their turns: a model call is canceled, a tool call runs
// to its end) and stops the host. It is idempotent.
func (h *Host) Close() error {
	h.once.Do(func() {
		close(h.quit)
		<-h.done // the janitor
		h.bg.Wait()
		h.mu.Lock()
		h.shut = true
		entries := make([]*hostEntry, 0, len(h.live))
		for _, e := range h.live {
			entries = append(entries, e)
		}
		clear(h.live)
		h.mu.Unlock()
		for _, e := range entries {
			<-e.ready
			if e.in != nil {
				e.in.close()
			}
		}
		h.pool.Close()
	})
	return nil
}

// Done is closed once Close has begun.
func (h *Host) Done() <-chan struct{} { return h.quit }

// acquire returns p's resident instance, loading it if needed, counted as in use until
// release. With Ownership, it holds the instance's lease first (see ownership.go).
func (h *Host) acquire(ctx context.Context, p Principal) (*hostEntry, error) {
	if h.opts.Ownership == nil {
		return h.acquireEntry(ctx, p)
	}
	if err := h.hold(ctx, p); err != nil {
		return nil, err
	}
	e, err := h.acquireEntry(ctx, p)
	if err != nil {
		h.unhold(p)
	}
	return e, err
}

// acquireEntry is acquire without the lease.
func (h *Host) acquireEntry(ctx context.Context, p Principal) (*hostEntry, error) {
	h.mu.Lock()
	if h.shut {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	e := h.live[p]
	if e != nil {
		e.refs++
		h.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			h.releaseEntry(e)
			return nil, ctx.Err()
		}
		if e.err != nil {
			h.releaseEntry(e)
			return nil, e.err
		}
		return e, nil
	}
	e = &hostEntry{p: p, ready: make(chan struct{}), refs: 1}
	h.live[p] = e
	h.mu.Unlock()
	e.in, e.err = load(context.WithoutCancel(ctx), h, Key{Agent: h.def.name, Principal: p})
	if e.err != nil {
		h.mu.Lock()
		if h.live[p] == e {
			delete(h.live, p)
		}
		h.mu.Unlock()
	}
	close(e.ready)
	if e.err != nil {
		return nil, e.err
	}
	return e, nil
}

func (h *Host) release(e *hostEntry) {
	h.releaseEntry(e)
	if h.opts.Ownership != nil {
		h.unhold(e.p)
	}
}

func (h *Host) releaseEntry(e *hostEntry) {
	h.mu.Lock()
	e.refs--
	e.used = time.Now()
	h.mu.Unlock()
}

// janitor evicts idle instances until Close.
func (h *Host) janitor() {
	defer close(h.done)
	if h.opts.IdleTimeout < 0 {
		<-h.quit
		return
	}
	tick := time.NewTicker(max(h.opts.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-h.quit:
			return
		case now := <-tick.C:
			h.evict(now.Add(-h.opts.IdleTimeout))
		}
	}
}

// evict closes the instances nobody has used since before.
func (h *Host) evict(before time.Time) {
	var idle []*instance
	h.mu.Lock()
	for p, e := range h.live {
		if e.refs == 0 && e.in != nil && e.used.Before(before) {
			idle = append(idle, e.in)
			delete(h.live, p)
		}
	}
	h.mu.Unlock()
	for _, in := range idle {
		in.close()
	}
}

// ---- turns by task ----

func (h *Host) addTask(t *turn) {
	if t.ev.Context.Task == "" {
		return
	}
	h.mu.Lock()
	h.tasks[t.ev.Context.Task] = t
	h.mu.Unlock()
}

type wakeFunc = func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error

type wokenTurn struct {
	t    *turn
	from int
}

// setWoken records that t's task goes on without a message from output index from.
func (h *Host) setWoken(task string, t *turn, from int) {
	h.mu.Lock()
	if h.woken == nil {
		h.woken = map[string]wokenTurn{}
	}
	h.woken[task] = wokenTurn{t, from}
	h.mu.Unlock()
}

// takeWoken removes and returns the turn of p woken on task, if any.
func (h *Host) takeWoken(p Principal, task string) (*turn, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.woken[task]
	if !ok || w.t.in.key.Principal != p {
		return nil, 0
	}
	delete(h.woken, task)
	return w.t, w.from
}

func (h *Host) removeTask(t *turn) {
	h.mu.Lock()
	if h.tasks[t.ev.Context.Task] == t {
		delete(h.tasks, t.ev.Context.Task)
	}
	h.mu.Unlock()
}

// cancelTask cancels the turn in flight for task, if p runs one. It reports whether there
// was one.
func (h *Host) cancelTask(p Principal, task string, cause error) bool {
	h.mu.Lock()
	t := h.tasks[task]
	h.mu.Unlock()
	if t == nil || t.in.key.Principal != p {
		return false
	}
	t.cancel(cause)
	return true
}
