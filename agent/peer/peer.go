package peer

// The a2a capability: call, find and card, for one holder.
//
// Concurrency: a holder is one instance's capability; its calls run on the goroutines of the
// turns' effects, side by side. holder.mu guards tasks (the callee tasks this holder started,
// which `task` may continue); the pool has its own lock. A call follows the callee's task on
// its own goroutine (the effect's) and streams what arrives into the caller's turn as it
// arrives (agent.RelayEvent), so nothing slow holds a lock.

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/netguard"
	"github.com/a2awebcap/a2awebcap/x402"
)

// Name is the capability's name.
const Name = "a2a"

// maxTasks bounds the callee tasks a holder remembers for `task`.
const maxTasks = 1024

// cancelTime bounds the CancelTask sent to a callee when the caller's call ends early.
const cancelTime = 10 * time.Second

// Options configure Offer. Nil means the defaults each field documents.
type Options struct {
	// Self is the base URL of the agent that holds the capability (its card's URL works too):
	// what it adds to the chain of the calls it makes, so that a call back to it is a loop.
	// "": the agent is not in the chains it sends (loops through it are then stopped by depth
	// and budget only).
	Self string
	// Getenv reads the environment (credentials). Nil: os.Getenv.
	Getenv func(string) string
	// TLS configures TLS to agents (its roots, for a test). Nil: the system's.
	TLS *tls.Config
	// Strategy is the operator's default strategy. Zero: the manifest's recommended one
	// (contract).
	Strategy capability.Strategy
	// Spending keeps what each principal's payer spent of its budget (settings' payer), under
	// the principal: the agent store's (agent/sqlitestore's or agent/pgstore's
	// Spending(agent name)), so that the budget survives restarts and is shared by replicas.
	// Nil: kept in memory for as long as the offer lives — a restart grants every budget anew.
	Spending x402.Spending
}

// Manifest is the a2a capability's manifest under settings allow.
func Manifest(allow []string) capability.Manifest {
	return capability.Manifest{Name: Name, Version: "1",
		Description: "Call other A2A agents: send a message and follow the task, find agents by skill, read their cards",
		Contract:    capability.Contract{Network: allow},
		Strategy:    capability.Strategies{Minimum: capability.AuditOnly, Recommended: capability.ContractBased},
		Methods:     methods()}
}

// Offer offers the a2a capability under s: each holder gets its own, with its own connections
// and callee tasks.
func Offer(s Settings, opts *Options) (capability.Offer, error) {
	if err := s.check(); err != nil {
		return capability.Offer{}, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Self != "" {
		if _, err := agentURL(o.Self); err != nil {
			return capability.Offer{}, fmt.Errorf("%w: self: %v", ErrBadSettings, err)
		}
	}
	guard := netguard.New(&netguard.Options{Allow: s.networks})
	pay, err := newPayers(s.Payer, o.Getenv, o.Spending)
	if err != nil {
		return capability.Offer{}, err
	}
	m := Manifest(s.Allow)
	return capability.Offer{Manifest: m, Strategy: o.Strategy, New: func(ctx context.Context, env capability.Env) (*capability.Capability, error) {
		h := &holder{s: &s, o: &o, env: env, pool: newPool(&s, guard, o.TLS, o.Getenv), payers: pay, tasks: map[a2a.TaskID]calleeTask{}}
		c, err := capability.New(capability.Description{Name: Name, Description: m.Description, Methods: m.Methods, Contract: m.Contract},
			capability.Funcs{"call": h.call, "find": h.find, "card": h.card})
		if err != nil {
			return nil, err
		}
		// The set revokes what New made when the holder lets go of it (or is put away): its
		// connections close then. This goroutine lives exactly as long.
		go func() {
			<-c.Done()
			h.pool.close()
		}()
		return c, nil
	}}, nil
}

// holder is one instance's a2a capability.
type holder struct {
	s      *Settings
	o      *Options
	env    capability.Env
	pool   *pool
	payers *payers // nil without a payer

	mu    sync.Mutex
	tasks map[a2a.TaskID]calleeTask
	order []a2a.TaskID // oldest first, for the bound
}

// calleeTask is a task of another agent this holder started.
type calleeTask struct {
	cardURL string
	context string
}

func (h *holder) remember(id a2a.TaskID, t calleeTask) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.tasks[id]; !ok {
		h.order = append(h.order, id)
	}
	h.tasks[id] = t
	for len(h.order) > maxTasks {
		delete(h.tasks, h.order[0])
		h.order = h.order[1:]
	}
}

func (h *holder) task(id a2a.TaskID) (calleeTask, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.tasks[id]
	return t, ok
}

// ---- schemas ----

func methods() []capability.Method {
	summary := capability.Object("an agent", map[string]*capability.Schema{
		"name": capability.String(""), "url": capability.String("its base URL"), "description": capability.String(""),
		"skills": capability.Array("", capability.Object("", map[string]*capability.Schema{
			"id": capability.String(""), "name": capability.String(""), "description": capability.String(""),
			"tags": capability.Array("", capability.String("")),
		})),
		"source":     capability.String("where it was found: agents (the operator's list), registry, or card"),
		"interfaces": capability.Array("", capability.Object("", map[string]*capability.Schema{"url": capability.String(""), "protocolBinding": capability.String(""), "protocolVersion": capability.String("")})),
	}, "name", "url", "skills")
	str := func(desc string, n int) *capability.Schema {
		return &capability.Schema{Type: "string", Description: desc, MaxLength: &n}
	}
	return []capability.Method{
		{Name: "call", Description: "Send a message to another agent and follow its task to the end; its events stream into this task",
			Params: capability.Object("", map[string]*capability.Schema{
				"agent":   str("the agent's URL: its base URL or the URL of its card", 2048),
				"skill":   str("find an agent with this skill instead", 256),
				"message": str("the text to send", 1<<16),
				"task":    str("continue this task of the agent's (one this capability started)", 256),
				"answers": {Type: "string", Description: "who answers the agent's questions: the user (default), or this agent's memory first", Enum: []string{"user", "memory"}},
			}, "message"),
			Result: capability.Object("the callee's task as it ended", map[string]*capability.Schema{
				"agent": capability.String("its URL"), "name": capability.String(""), "binding": capability.String(""),
				"task": capability.String(""), "context": capability.String(""), "state": capability.String(""),
				"text": capability.String("its final message, else its artifacts' text"),
				"artifacts": capability.Array("", capability.Object("", map[string]*capability.Schema{
					"name": capability.String(""), "text": capability.String("")})),
				"paid": capability.Object("what the call paid the agent (x402)", map[string]*capability.Schema{
					"amount": capability.String("in atomic units"), "asset": capability.String(""), "network": capability.String(""),
					"payTo": capability.String(""), "receipt": {Description: "the agent's settlement receipt"}}),
			}, "agent", "name", "binding", "task", "context", "state", "text", "artifacts")},
		{Name: "find", Description: "The agents known to have a skill, tag or name (all given must hold; case is ignored)",
			Params: capability.Object("", map[string]*capability.Schema{
				"skill": str("a skill whose id or name contains it", 256), "tag": str("a skill with this tag", 256),
				"name": str("a card whose name contains it", 256)}),
			Result: capability.Array("", summary)},
		{Name: "card", Description: "An agent's card, summarized, with its interfaces",
			Params: capability.Object("", map[string]*capability.Schema{"agent": str("its base URL or the URL of its card", 2048)}, "agent"),
			Result: summary},
	}
}

// ---- call ----

type callArgs struct {
	Agent   string `json:"agent"`
	Skill   string `json:"skill"`
	Message string `json:"message"`
	Task    string `json:"task"`
	Answers string `json:"answers"`
}

type artifactOut struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type callResult struct {
	Agent     string        `json:"agent"`
	Name      string        `json:"name"`
	Binding   string        `json:"binding"`
	Task      string        `json:"task"`
	Context   string        `json:"context"`
	State     string        `json:"state"`
	Text      string        `json:"text"`
	Artifacts []artifactOut `json:"artifacts"`
	Paid      *paidOut      `json:"paid,omitempty"`
}

// dataText bounds the callee's text that a result's observation data repeats (the result
// itself keeps all of it).
const dataText = 16 << 10

// data is what rules read of a call's result as its observation's data: where it came from,
// the callee's text, and what it was paid, so that no rule needs to take the result's JSON apart.
func (r *callResult) data() map[string]string {
	d := map[string]string{"agent": r.Agent, "name": r.Name, "task": r.Task, "state": r.State, "text": truncate(r.Text, dataText)}
	if p := r.Paid; p != nil {
		d["paidAmount"], d["paidAsset"], d["paidNetwork"] = p.Amount, p.Asset, p.Network
		if rc, ok := p.Receipt.(x402.Receipt); ok {
			d["paidTransaction"] = rc.Transaction
		}
	}
	return d
}

func (h *holder) call(ctx context.Context, c *capability.Call) (any, error) {
	var a callArgs
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	var cont calleeTask
	target := a.Agent
	if a.Task != "" {
		t, ok := h.task(a2a.TaskID(a.Task))
		if !ok {
			return nil, fmt.Errorf("%w: a2a: task %q is not one this capability started", capability.ErrBadArgs, truncate(a.Task, 64))
		}
		if target != "" && !sameAgent(target, t.cardURL) {
			return nil, fmt.Errorf("%w: a2a: task %q is another agent's", capability.ErrBadArgs, truncate(a.Task, 64))
		}
		cont, target = t, t.cardURL
	}
	if target == "" {
		if a.Skill == "" {
			return nil, fmt.Errorf("%w: a2a: call needs an agent or a skill", capability.ErrBadArgs)
		}
		found, err := h.search(ctx, query{skill: a.Skill}, true)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("a2a: no agent with a skill %s is known", a.Skill)
		}
		target = found[0].URL
	}
	cardURL, err := agentURL(target)
	if err != nil {
		return nil, fmt.Errorf("%w: a2a: agent: %v", capability.ErrBadArgs, err)
	}
	base := baseOf(cardURL)
	hp, err := h.s.plan(ctx, h.o.Self, base)
	if err != nil {
		return nil, err
	}
	ctx = withTrace(ctx)
	ctx, cancel := context.WithTimeoutCause(ctx, h.s.timeout, fmt.Errorf("a2a: the call to %s took longer than %s", strings.TrimSuffix(base, "/"), h.s.timeout))
	defer cancel()
	cn, err := h.pool.get(ctx, c, cardURL)
	if err != nil {
		return nil, err
	}
	f := &follow{h: h, c: c, cn: cn, base: strings.TrimSuffix(base, "/"), hop: hp, answers: a.Answers}
	f.name = cmpOr(cn.client.Card().Name, nameOf(base))
	res, err := f.run(ctx, a.Message, a2a.TaskID(a.Task), cont.context)
	h.pool.put(cn, err != nil && ctx.Err() == nil && f.task == "")
	if err != nil {
		return nil, err
	}
	// What the callee said is an observation from it, never a write of its into this agent.
	agent.ResultFrom(ctx, agent.Source{Kind: agent.SourceAgent, Name: res.Agent}, res.data())
	return res, nil
}

// follow is one call following its callee's task.
type follow struct {
	h       *holder
	c       *capability.Call
	cn      *conn
	base    string // the callee's base URL, without its final slash
	name    string
	hop     hop
	answers string

	task      a2a.TaskID
	context   string
	state     a2a.TaskState
	final     *a2a.Message
	artifacts []*a2a.Artifact // in order of first appearance, parts appended
	kept      int             // bytes of text the artifacts hold
	events    int             // events received
	paid      *paidOut
}

func (f *follow) source() string { return "agent " + f.base }

// run sends text (on task, when continuing one) and follows the task to its end, asking the
// caller's user (or memory) whatever the callee asks.
func (f *follow) run(ctx context.Context, text string, task a2a.TaskID, contextID string) (res *callResult, err error) {
	f.task, f.context = task, contextID
	defer func() {
		if ctx.Err() != nil && f.task != "" && !f.state.Terminal() {
			// The caller's task was canceled, or its turn ended: so does the callee's.
			f.cancel(ctx)
			res, err = nil, context.Cause(ctx)
		}
	}()
	const maxRounds = 64 // questions answered, streams resumed
	next := f.message(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
	for range maxRounds {
		if err := f.stream(ctx, f.cn.client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: next})); err != nil {
			return nil, err
		}
		for range maxRounds {
			if f.state.Terminal() || f.state == a2a.TaskStateInputRequired || f.state == a2a.TaskStateAuthRequired || f.task == "" {
				break
			}
			// The stream ended before the task did: follow it again.
			if err := f.stream(ctx, f.cn.client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: f.task})); err != nil {
				return nil, err
			}
		}
		switch {
		case f.task == "" || f.state == a2a.TaskStateCompleted:
			f.settled()
			return f.result(), nil
		case f.state.Terminal():
			return nil, fmt.Errorf("agent %s ended the task %s: %s", f.name, stateName(f.state), f.text())
		case f.state == a2a.TaskStateAuthRequired:
			f.cancel(ctx)
			return nil, fmt.Errorf("agent %s needs authentication: %s", f.name, f.text())
		case x402.StatusOf(f.final) == x402.StatusRequired:
			// A question of payment is not the user's: the payer's, within its budget.
			msg, err := f.pay(ctx)
			if err != nil {
				f.cancel(ctx)
				return nil, err
			}
			next = f.message(msg)
		default:
			answer, err := f.ask(ctx)
			if err != nil {
				return nil, err
			}
			next = f.message(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(answer)))
		}
		f.state = a2a.TaskStateWorking
	}
	f.cancel(ctx)
	return nil, fmt.Errorf("agent %s: more than %d rounds in one call", f.name, maxRounds)
}

// message is m sent on the callee's task (once known), carrying the call's hops, chain and
// budget.
func (f *follow) message(m *a2a.Message) *a2a.Message {
	m.TaskID, m.ContextID = f.task, f.context
	for k, v := range f.hop.meta() {
		m.SetMeta(k, v)
	}
	return m
}

// cancel cancels the callee's task, the call having ended before it.
func (f *follow) cancel(ctx context.Context) {
	if f.task == "" || f.state.Terminal() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTime)
	defer cancel()
	_, _ = f.cn.client.CancelTask(cctx, &a2a.CancelTaskRequest{ID: f.task})
}

// Bounds of what one call takes from its callee: the events it relays (each is held by the
// caller's turn until it ends) and the text it keeps for the result.
const (
	maxEvents       = 10000
	maxArtifactText = 1 << 20
)

// stream reads events until the stream ends, relaying each into the caller's task.
func (f *follow) stream(ctx context.Context, seq func(func(a2a.Event, error) bool)) error {
	for ev, err := range seq {
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("a2a: agent %s: %w", f.name, err)
		}
		if f.events++; f.events > f.h.s.maxEvents() {
			f.cancel(ctx)
			return fmt.Errorf("a2a: agent %s sent more than %d events in one call", f.name, f.h.s.maxEvents())
		}
		switch e := ev.(type) {
		case *a2a.Message: // an answer with no task
			f.final, f.state = e, a2a.TaskStateCompleted
			if f.task != "" {
				continue
			}
			return nil
		case *a2a.Task:
			f.started(e.ID, e.ContextID)
			f.state = e.Status.State
			for _, art := range e.Artifacts {
				f.artifact(ctx, art, false, true)
			}
			if e.Status.Message != nil {
				f.final = e.Status.Message
			}
		case *a2a.TaskStatusUpdateEvent:
			f.started(e.TaskID, e.ContextID)
			f.state = e.Status.State
			if e.Status.Message != nil {
				f.final = e.Status.Message
			}
			if f.state != a2a.TaskStateInputRequired && f.state != a2a.TaskStateAuthRequired {
				_ = agent.RelayEvent(ctx, agent.Relay{Source: f.source(), Agent: f.name, Task: string(f.task), State: stateName(f.state), Message: e.Status.Message})
			}
		case *a2a.TaskArtifactUpdateEvent:
			f.started(e.TaskID, e.ContextID)
			f.artifact(ctx, e.Artifact, e.Append, e.LastChunk)
		}
	}
	return nil
}

// started notes the callee's task, the first time it is known.
func (f *follow) started(id a2a.TaskID, contextID string) {
	if id == "" || f.task == id {
		return
	}
	f.task, f.context = id, contextID
	f.h.remember(id, calleeTask{cardURL: f.cn.cardURL, context: contextID})
}

// maxArtifacts bounds the artifacts a call keeps for its result.
const maxArtifacts = 64

func (f *follow) artifact(ctx context.Context, art *a2a.Artifact, appendParts, last bool) {
	if art == nil {
		return
	}
	_ = agent.RelayEvent(ctx, agent.Relay{Source: f.source(), Agent: f.name, Task: string(f.task), State: stateName(f.state),
		Artifact: art, Append: appendParts, LastChunk: last})
	size := len(partsText(art.Parts))
	if f.kept+size > maxArtifactText {
		return // relayed, but not kept for the result: it would outgrow it
	}
	f.kept += size
	for _, a := range f.artifacts {
		if a.ID == art.ID {
			if appendParts {
				a.Parts = append(a.Parts, art.Parts...)
			} else {
				a.Parts = art.Parts
			}
			return
		}
	}
	if len(f.artifacts) < maxArtifacts {
		cp := *art
		f.artifacts = append(f.artifacts, &cp)
	}
}

// text is the callee's final status message, else its artifacts' text.
func (f *follow) text() string {
	if t := messageText(f.final); t != "" {
		return t
	}
	var parts []string
	for _, a := range f.artifacts {
		if t := partsText(a.Parts); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

func (f *follow) result() *callResult {
	r := &callResult{Paid: f.paid, Agent: f.base, Name: f.name, Binding: string(f.cn.client.Binding()), Task: string(f.task), Context: f.context,
		State: stateName(f.state), Text: f.text(), Artifacts: []artifactOut{}}
	if f.task == "" && f.final != nil {
		r.Context = f.final.ContextID
	}
	for _, a := range f.artifacts {
		r.Artifacts = append(r.Artifacts, artifactOut{Name: a.Name, Text: partsText(a.Parts)})
	}
	return r
}

// ask gets the answer to the callee's question: from the caller's memory when asked to and
// a belief answers it, else from the caller's user.
func (f *follow) ask(ctx context.Context) (string, error) {
	q := messageText(f.final)
	if q == "" {
		q = "(no question given)"
	}
	if f.answers == "memory" {
		if ans, note, ok := f.fromMemory(ctx, q); ok {
			_ = agent.RelayEvent(ctx, agent.Relay{Source: "memory", Agent: f.name, Task: string(f.task), State: stateName(f.state),
				Message: a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(note))})
			return ans, nil
		}
	}
	meta := map[string]any{agent.MetaKey: map[string]any{"kind": "relay", "source": f.source(), "agent": f.name,
		"task": string(f.task), "state": stateName(f.state)}}
	ans, err := agent.AskUserWith(ctx, f.name+" asks: "+q, meta)
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fmt.Errorf("agent %s asked %q, and it could not be asked: %w", f.name, truncate(q, 200), err)
	}
	return ans, nil
}

// fromMemory looks for a current belief of the caller whose subject the question names,
// through the caller's own self view (the instance must hold self).
func (f *follow) fromMemory(ctx context.Context, q string) (answer, note string, ok bool) {
	set := f.h.env.Set
	if set == nil {
		return "", "", false
	}
	args := fmt.Sprintf(`{"query":%q,"limit":20}`, truncate(q, 1000))
	out, err := set.Call(ctx, capability.Request{Capability: "self", Method: "memory", Args: []byte(args),
		Session: f.c.Session, Origin: f.c.Origin})
	if err != nil {
		return "", "", false
	}
	b, ok := matchBelief(out, q)
	if !ok {
		return "", "", false
	}
	return b.Value, fmt.Sprintf("answered from memory: %s is %s (belief %s)", b.Subject, b.Value, b.ID), true
}

// stateName is a task state as the result and the metadata say it: completed,
// input-required, …
func stateName(s a2a.TaskState) string {
	n := strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_"))
	return strings.ReplaceAll(n, "_", "-")
}

func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return partsText(m.Parts)
}

func partsText(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			out = append(out, string(t))
		}
	}
	return strings.Join(out, "")
}
