package agent

// Capabilities in the runtime. Each instance holds a capability.Set: the loader, the
// definition's tools (each a capability the operator granted, pre-approved), and whatever the
// instance installed from the definition's catalog or a client lent it. Rules' call action and
// the model's tool calls both go through it, as effects of the turn; a call that needs the
// user's approval parks the turn on an input-required question (AskUser) and goes on with the
// answer.
//
// Concurrency: instance.caps is set once, when the instance loads, and is safe for concurrent
// use (capability.Set has its own lock); capsDirty is atomic. A set's records reach the turn
// whose effect made them through turn.capRecords (its own mutex: they arrive on the effect's
// goroutine) and are logged as observations when the turn takes the state back.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// legacyMethod is the one method of a capability made of a Tool: it takes {"input": string}.
const legacyMethod = "call"

// toolCapability makes a Definition's tool a capability: the operator's own code, with no
// contract of its own (what it reaches is the operator's business), and one method, "call".
func toolCapability(name, help string, tool Tool) (*capability.Capability, error) {
	return capability.New(capability.Description{Name: name, Description: help, Methods: []capability.Method{{
		Name: legacyMethod, Description: help,
		Params: capability.Object("", map[string]*capability.Schema{"input": capability.String("the tool's input")}, "input"),
		Result: capability.String("the tool's output"),
	}}}, capability.Funcs{legacyMethod: func(ctx context.Context, c *capability.Call) (any, error) {
		var a struct{ Input string }
		if err := c.Decode(&a); err != nil {
			return nil, err
		}
		return tool(ctx, a.Input)
	}})
}

// newCapabilitySet makes the set of the instance in: the loader, the definition's tools, then
// what the store kept (saved) or, for an instance never saved, what the definition
// preinstalls.
func newCapabilitySet(ctx context.Context, in *instance, saved json.RawMessage) (*capability.Set, error) {
	d := in.h.def
	s := capability.NewSet(&capability.SetOptions{Principal: in.key.Principal.String(), Catalog: d.catalog, Audit: in.h.audit,
		Observe: observeCapability, Changed: in.capabilitiesChanged, Self: &selfView{a: &Agent{name: d.name, h: in.h, p: in.key.Principal}},
		Now: d.now})
	for _, name := range slices.Sorted(maps.Keys(d.toolCaps)) {
		if err := s.Install(ctx, d.toolCaps[name], capability.Grant{Strategy: capability.Strategy{Kind: capability.PreApproved},
			Approved: true, By: "the operator", Silent: true}); err != nil {
			s.Close()
			return nil, err
		}
	}
	if d.reflect != nil {
		if err := s.Install(ctx, reflectCapability(&Agent{name: d.name, h: in.h, p: in.key.Principal}), capability.Grant{
			Strategy: capability.Strategy{Kind: capability.PreApproved}, Approved: true, By: "the operator", Silent: true}); err != nil {
			s.Close()
			return nil, err
		}
	}
	if d.rehydrate != nil {
		d.rehydrate(ctx, in.key.Principal.String(), s)
	}
	if saved != nil {
		var st capability.State
		if err := json.Unmarshal(saved, &st); err != nil {
			s.Close()
			return nil, fmt.Errorf("agent: loading %s's capabilities: %w", in.key.Principal, err)
		}
		// What cannot be made again (no longer offered, lent by a client gone since) is dropped:
		// the next save forgets it.
		if _, err := s.Restore(ctx, st); err != nil {
			s.Close()
			return nil, fmt.Errorf("agent: loading %s's capabilities: %w", in.key.Principal, err)
		}
		return s, nil
	}
	for _, name := range d.preinstall {
		if _, err := s.InstallOffered(ctx, name, "", nil, capability.Origin{Kind: capability.OriginOperator, Name: "the operator"}, "", "", nil); err != nil {
			s.Close()
			return nil, fmt.Errorf("agent: preinstalling %s: %w", name, err)
		}
	}
	return s, nil
}

// capabilitiesChanged marks the instance's set as changed: the turn in flight saves it with
// its writes; a change outside any turn (a client lending a capability, a decision made over
// the network) is saved by a commit of its own, posted without waiting.
func (in *instance) capabilitiesChanged() {
	if in.capsDirty.Swap(true) {
		return // a save is due already
	}
	select {
	case in.mailbox <- func(c *core) { c.saveCapabilities() }:
	default: // a full mailbox: the next turn's commit saves it
	}
}

// saveCapabilities commits the set's state if it changed since it was last saved.
func (c *core) saveCapabilities() {
	if !c.in.capsDirty.Swap(false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := c.commit(ctx, &Batch{Capabilities: c.in.capabilitiesJSON()}); err != nil {
		c.in.capsDirty.Store(true) // the next turn tries again
	}
}

// capabilitiesJSON is the set's state to save.
func (in *instance) capabilitiesJSON() json.RawMessage {
	data, _ := json.Marshal(in.caps.State()) // plain data: it always encodes
	return data
}

// observeCapability hands a set's record to the turn whose effect caused it, to be logged as an
// observation with provenance: a decision is the user's, the rest the instance's own news.
// Records made outside a turn are in the audit log only.
func observeCapability(ctx context.Context, r capability.Record) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return
	}
	t.capMu.Lock()
	t.capRecords = append(t.capRecords, r)
	t.capMu.Unlock()
}

// logCapabilityRecords logs the records the turn's effects received, holding the state.
func (t *turn) logCapabilityRecords() {
	t.capMu.Lock()
	recs := t.capRecords
	t.capRecords = nil
	t.capMu.Unlock()
	for _, r := range recs {
		src := Source{Kind: SourceSelf, Name: "capabilities"}
		if r.Outcome == capability.OutcomeApproved || r.Outcome == capability.OutcomeDenied || r.Origin.Kind == capability.OriginUser {
			src = Source{Kind: SourceUser, Name: r.By}
		}
		t.m.observe(Event{Kind: "capability", Source: src, Context: t.ev.Context, Text: r.Text(), Data: r.Data()})
	}
}

// callCapability makes req as an effect of the turn. A call that needs the user's decision
// asks it (AskUser: the task goes input-required with the question) and is made again with
// the answer (Set.CallAsking); so does a call that the call's own code makes through the set
// (a Starlark capability's), inside the call.
func (t *turn) callCapability(ctx context.Context, req capability.Request) (json.RawMessage, *provenance, error) {
	var out json.RawMessage
	prov := &provenance{}
	ctx = context.WithValue(ctx, provenanceKey{}, prov)
	ctx = capability.WithAsker(ctx, t.decide)
	err := t.await(func() error {
		var err error
		out, err = t.in.caps.CallAsking(ctx, req)
		return err
	})
	t.logCapabilityRecords()
	return out, prov, err
}

// decide puts the pending approval p to the user of the turn ctx belongs to (askApproval) and
// reads their answer.
func (t *turn) decide(ctx context.Context, p capability.Pending) (capability.Decision, error) {
	answer, err := askApproval(ctx, p)
	if err != nil {
		return capability.Decision{}, err
	}
	approve, reason := parseDecision(answer)
	return capability.Decision{Approve: approve, By: t.in.key.Principal.String(), Reason: reason}, nil
}

// provenance is where a call's result came from, when its capability says (ResultFrom).
type provenance struct {
	mu   sync.Mutex
	src  Source
	data map[string]string
}

// event is the tool-result observation of a call of tool whose result is text: from the tool
// itself, or from what the capability named (ResultFrom). data are the runtime's own keys.
func (p *provenance) event(tool, text string, ctx Context, data map[string]string) Event {
	src := Source{Kind: SourceTool, Name: tool}
	if p != nil {
		p.mu.Lock()
		if p.src.Kind != "" {
			src = p.src
			for k, v := range p.data {
				if _, own := data[k]; !own {
					data[k] = v
				}
			}
		}
		p.mu.Unlock()
	}
	return Event{Kind: "tool-result", Source: src, Context: ctx, Text: text, Data: data}
}

// parseDecision reads the user's answer to an approval: yes, y, approve, ok or allow (any
// case, with anything after) approves; anything else refuses, with the answer, past a no,
// as the reason.
func parseDecision(answer string) (approve bool, reason string) {
	cmd, rest := splitCommand(answer)
	cmd = strings.TrimRight(cmd, ".!,")
	switch cmd {
	case "yes", "y", "approve", "approved", "ok", "okay", "allow":
		return true, rest
	case "no", "n", "refuse", "deny", "reject":
		return false, rest
	}
	return false, strings.TrimSpace(answer)
}

// request turns a tool name as rules or the model name it, and its arguments, into a request.
// A definition's tool is named as it is and takes {"input": string}; a capability's method is
// "cap.method" for rules and "cap__method" for the model. For a rule, input is the method's
// arguments as a JSON object or, when the method takes exactly one required string parameter
// (fs.read's path, loader.install's name), that parameter's value.
func (m *mind) request(tool, input string, fromModel bool) (capability.Request, error) {
	if _, ok := m.t.in.h.def.toolCaps[tool]; ok {
		args := input
		if !fromModel {
			b, _ := json.Marshal(map[string]string{"input": input})
			args = string(b)
		}
		return capability.Request{Capability: tool, Method: legacyMethod, Args: json.RawMessage(args)}, nil
	}
	var name, method string
	var ok bool
	if fromModel {
		name, method, ok = capability.ParseToolName(tool)
	} else {
		name, method, ok = strings.Cut(tool, ".")
	}
	if !ok {
		return capability.Request{}, errNoTool
	}
	req := capability.Request{Capability: name, Method: method, Args: json.RawMessage(input)}
	if fromModel || strings.HasPrefix(strings.TrimSpace(input), "{") {
		return req, nil
	}
	d, held := m.t.in.caps.Describe(name)
	i := slices.IndexFunc(d.Methods, func(x capability.Method) bool { return x.Name == method })
	if !held || i < 0 {
		return capability.Request{}, errNoTool
	}
	ps := d.Methods[i].Params
	if ps == nil || len(ps.Required) != 1 || ps.Properties[ps.Required[0]].Type != "string" {
		return capability.Request{}, fmt.Errorf("%w: %s.%s takes a JSON object of arguments", capability.ErrBadArgs, name, method)
	}
	b, _ := json.Marshal(map[string]string{ps.Required[0]: input})
	req.Args = b
	return req, nil
}

var errNoTool = errors.New("no such tool")

// callStatus is a failed call's status for rules (last.status) and the log.
func callStatus(err error) string {
	switch {
	case errors.Is(err, errNoTool), errors.Is(err, capability.ErrNotHeld), errors.Is(err, capability.ErrNoMethod):
		return "no-such-tool"
	case errors.Is(err, capability.ErrBadArgs):
		return "bad-arguments"
	case errors.Is(err, capability.ErrOutsideContract):
		return "refused"
	case errors.Is(err, capability.ErrDenied):
		return "denied"
	case errors.Is(err, capability.ErrBudgetExhausted):
		return "exhausted"
	case errors.Is(err, capability.ErrRevoked):
		return "revoked"
	case errors.Is(err, capability.ErrApprovalRequired):
		return "unapproved"
	}
	return "failed"
}

// resultText is a call's result as an observation's text: a JSON string's value, else the
// JSON.
func resultText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}

// toolSpecs describes the capabilities the instance holds to a model: a definition's tools as
// before (one string, "input"), every other method as "cap__method" with its parameter
// schema. The loader is offered only when the catalog offers something.
func (m *mind) toolSpecs() []ToolSpec {
	d := m.t.in.h.def
	var specs []ToolSpec
	for _, tl := range m.t.in.caps.Tools() {
		switch {
		case d.toolCaps[tl.Capability] != nil:
			specs = append(specs, ToolSpec{Name: tl.Capability, Description: cmpOr(d.toolHelp[tl.Capability], "the tool "+tl.Capability)})
		case tl.Capability == "loader" && d.catalog.Empty():
		default:
			specs = append(specs, ToolSpec{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters})
		}
	}
	return specs
}

// ---- the agent's view of itself ----

// selfView is an instance's capability.Self: read through the instance's mailbox, so it is
// what the instance has committed (a turn's own writes show once it commits).
type selfView struct{ a *Agent }

func (s *selfView) Memory(ctx context.Context, query string, limit int) (any, error) {
	r, err := s.a.Recall(ctx, Query{Text: query, Limit: limit})
	if err != nil {
		return nil, err
	}
	type belief struct {
		ID         string     `json:"id"`
		Subject    string     `json:"subject"`
		Value      string     `json:"value"`
		Confidence float64    `json:"confidence"`
		Status     Status     `json:"status"`
		Provenance Provenance `json:"provenance"`
	}
	type obs struct {
		ID     string    `json:"id"`
		Time   time.Time `json:"time"`
		Kind   string    `json:"kind"`
		Source Source    `json:"source"`
		Text   string    `json:"text"`
	}
	out := struct {
		Beliefs      []belief `json:"beliefs"`
		Observations []obs    `json:"observations"`
	}{[]belief{}, []obs{}}
	for _, b := range r.Beliefs {
		out.Beliefs = append(out.Beliefs, belief{b.ID, b.Subject, b.Value, b.Confidence, b.Status, b.Provenance})
	}
	for _, o := range r.Observations {
		out.Observations = append(out.Observations, obs{o.ID, o.Time, o.Kind, o.Source, o.Text})
	}
	return out, nil
}

func (s *selfView) Policy(ctx context.Context) (any, error) {
	v, err := s.a.View(ctx)
	if err != nil {
		return nil, err
	}
	return struct {
		Version int    `json:"version"`
		Axioms  []Rule `json:"axioms"`
		Rules   []Rule `json:"rules"`
	}{v.Version, v.Policy.Axioms, v.Policy.Rules}, nil
}

// Uses reports, for each capability, the rules that call it: a call rule whose tool is a
// constant string names it ("fs.read", or a tool's own name); a consult rule lets the model
// call any, so it uses every one ("*"); a call rule whose tool is computed may call any too.
func (s *selfView) Uses(ctx context.Context) (map[string][]string, error) {
	v, err := s.a.View(ctx)
	if err != nil {
		return nil, err
	}
	uses := map[string][]string{}
	for _, r := range slices.Concat(v.Policy.Axioms, v.Policy.Rules) {
		switch r.Action {
		case Consult:
			uses["*"] = append(uses["*"], r.Name)
		case CallTool:
			var tool string
			if json.Unmarshal([]byte(r.Params["tool"]), &tool) != nil { // not a constant: any capability
				uses["*"] = append(uses["*"], r.Name)
				continue
			}
			name, _, _ := strings.Cut(tool, ".")
			uses[name] = append(uses[name], r.Name)
		}
	}
	return uses, nil
}

// ---- the user's commands ----

// capabilityCommand runs a user's /capabilities or /capability command, the loader and the
// set as the user's own (their request is their approval), and replies. It reports whether
// o was one; the rules do not see a command. It runs holding the state, and lets go of it
// while the set works (making a capability may be slow).
func (t *turn) capabilityCommand(ctx context.Context, o Observation) bool {
	text := strings.TrimSpace(o.Text)
	if o.Source.Kind != SourceUser || (text != "/capabilities" && !strings.HasPrefix(text, "/capability ")) {
		return false
	}
	var reply string
	_ = t.await(func() error {
		reply = t.runCommand(ctx, strings.Fields(text)[1:], o.Context)
		return nil
	})
	t.logCapabilityRecords()
	t.m.record(&t.run, Entry{Kind: EntryOutput, Text: reply})
	t.run.Reply = joinLine(t.run.Reply, reply)
	return true
}

const commandHelp = "Commands: /capabilities; /capability show NAME; /capability install NAME [STRATEGY]; " +
	"/capability uninstall NAME; /capability strategy NAME STRATEGY [session]; /capability pending; " +
	"/capability approve ID [REASON]; /capability refuse ID [REASON]; /capability audit [NAME]. " +
	"Strategies: pre-approved, audit-only, contract, call-by-call, budget:calls=N,bytes=N,files=N."

// runCommand runs one command (its words after the first) and returns the reply.
func (t *turn) runCommand(ctx context.Context, args []string, at Context) string {
	s := t.in.caps
	user := capability.Origin{Kind: capability.OriginUser, Name: t.in.key.Principal.String(), Task: at.Task}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	fail := func(err error) string { return "That did not work: " + err.Error() }
	switch {
	case len(args) == 0:
		return listCapabilities(s)
	case args[0] == "show" && len(args) == 2:
		o, ok := s.Catalog().Lookup(args[1])
		if !ok {
			return "No capability " + strconvQuote(args[1]) + " is offered."
		}
		m := o.Manifest
		var methods []string
		for _, x := range m.Methods {
			methods = append(methods, x.Name)
		}
		return fmt.Sprintf("%s %s: %s\nIts contract allows: %s.\nMethods: %s.\nStrategies: at least %s, recommended %s.",
			m.Name, m.Version, m.Description, m.Contract, cmpOr(strings.Join(methods, ", "), "(shown once installed)"), m.Strategy.Minimum, m.Strategy.Recommended)
	case args[0] == "install" && (len(args) == 2 || len(args) == 3):
		in, err := s.InstallOffered(ctx, args[1], arg(2), nil, user, at.Session, "", nil)
		if err != nil {
			return fail(err)
		}
		return fmt.Sprintf("Installed %s under %s. Its contract allows: %s.", in.Name, in.Strategy, in.Contract)
	case args[0] == "uninstall" && len(args) == 2:
		if err := s.Uninstall(ctx, args[1], user.Name); err != nil {
			return fail(err)
		}
		return "Uninstalled " + args[1] + "."
	case args[0] == "strategy" && (len(args) == 3 || len(args) == 4 && args[3] == "session"):
		st, err := capability.ParseStrategy(args[2])
		if err != nil {
			return fail(err)
		}
		session, where := "", "every session"
		if len(args) == 4 {
			session, where = at.Session, "this session"
		}
		if err := s.SetStrategy(ctx, args[1], session, st, user.Name); err != nil {
			return fail(err)
		}
		return fmt.Sprintf("%s is now under %s in %s.", args[1], st, where)
	case args[0] == "pending" && len(args) == 1:
		ps := s.Pending()
		if len(ps) == 0 {
			return "No approval is waiting."
		}
		lines := []string{"Waiting for your decision:"}
		for _, p := range ps {
			lines = append(lines, "- "+p.Prompt())
		}
		return strings.Join(lines, "\n")
	case (args[0] == "approve" || args[0] == "refuse") && len(args) >= 2:
		d := capability.Decision{Approve: args[0] == "approve", By: user.Name, Reason: strings.Join(args[2:], " ")}
		if err := s.Decide(ctx, args[1], d); err != nil {
			return fail(err)
		}
		return fmt.Sprintf("Recorded: %sd %s.", args[0], args[1])
	case args[0] == "audit" && len(args) <= 2:
		recs, err := s.Audit(ctx, capability.AuditQuery{Capability: arg(1), Limit: 20})
		if err != nil {
			return fail(err)
		}
		if len(recs) == 0 {
			return "The audit log has nothing for you yet."
		}
		lines := []string{"Your capability audit log, oldest first:"}
		for _, r := range recs {
			lines = append(lines, "- "+r.Time.UTC().Format(time.RFC3339)+" "+r.Text())
		}
		return strings.Join(lines, "\n")
	}
	return commandHelp
}

// listCapabilities is the reply to /capabilities.
func listCapabilities(s *capability.Set) string {
	lines := []string{"Installed:"}
	for _, h := range s.Installed() {
		st := h.Strategy.String()
		if h.Approved && h.Strategy.Kind != capability.PreApproved {
			st += ", approved by " + h.ApprovedBy
		}
		if h.Revoked != "" {
			st += ", revoked"
		}
		lines = append(lines, fmt.Sprintf("- %s (%s): %s. Contract: %s.", h.Name, st, h.Description, h.Contract))
	}
	var avail []string
	for _, e := range s.Available() {
		if !e.Installed {
			avail = append(avail, fmt.Sprintf("- %s %s: %s. Contract: %s. Default strategy: %s.",
				e.Manifest.Name, e.Manifest.Version, e.Manifest.Description, e.Manifest.Contract, e.Default))
		}
	}
	if len(avail) > 0 {
		lines = append(lines, "Available:")
		lines = append(lines, avail...)
	}
	return strings.Join(lines, "\n")
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", truncateText(s, 64)) }

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ---- for bindings and operators ----

// Capabilities returns principal p's capability set, loading its instance, and keeps the
// instance resident until release is called (a client that lends the agent a capability
// holds it for as long as the capability lives). Calls made on the set directly run outside
// any turn: what they change is saved, and recorded in the audit log.
func (h *Host) Capabilities(ctx context.Context, p Principal) (set *capability.Set, release func(), err error) {
	e, err := h.acquire(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return e.in.caps, func() { once.Do(func() { h.release(e) }) }, nil
}

// Audit returns the capability audit log of every instance of the host: the operator's view
// (a principal reads its own through its set, or the /capability audit command).
func (h *Host) Audit() capability.Audit { return h.audit }

// CallerCapabilities is [Host.Capabilities] for a caller of the A2A bindings, named as the
// executor names principals (tenant, and the user when authenticated): what
// binding.Options.AgentCapabilities takes.
func (h *Host) CallerCapabilities(ctx context.Context, tenant string, user *a2asrv.User) (*capability.Set, func(), error) {
	return h.Capabilities(ctx, PrincipalOf(&a2asrv.ExecutorContext{Tenant: tenant, User: user}))
}
