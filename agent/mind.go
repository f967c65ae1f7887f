package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// EntryKind is the kind of an entry in a run's working log.
type EntryKind string

// The working-log entry kinds.
const (
	// EntryThought notes that a rule matched (or failed to evaluate).
	EntryThought EntryKind = "thought"
	// EntryCall is an action about to run, with its evaluated parameters.
	EntryCall EntryKind = "call"
	// EntryResult is what the action did.
	EntryResult EntryKind = "result"
	// EntryOutput is text for whoever sent the event.
	EntryOutput EntryKind = "output"
	// EntryInput is a question: the agent needs input to go on.
	EntryInput EntryKind = "input-required"
	// EntryStep closes one fired rule.
	EntryStep EntryKind = "step"
	// EntryEnd ends the run.
	EntryEnd EntryKind = "end"
	// EntryText is a fragment of a model's answer, as it streams in.
	EntryText EntryKind = "text"
)

// Entry is one item of a run's working log.
type Entry struct {
	Kind   EntryKind         `json:"kind"`
	Rule   string            `json:"rule,omitempty"`
	Action Action            `json:"action,omitempty"`
	Params map[string]string `json:"params,omitempty"`
	Result map[string]string `json:"result,omitempty"`
	Text   string            `json:"text,omitempty"`
}

// Run is what integrating one event did.
type Run struct {
	// Observation is the ID the event got in the observation log.
	Observation string
	// Policy is the version of the policy that ran.
	Policy int
	Log    []Entry
	// Reply is the run's outputs, joined by newlines.
	Reply string
	// Question is set when the agent asks for input.
	Question string
	// Failure, when set, says why the run failed (a model that did not answer); it is meant
	// for the sender and holds no internal detail (that is in the log's thoughts).
	Failure string
}

// Tool is a capability an agent's rules may call. Its result comes back as an observation.
type Tool func(ctx context.Context, input string) (string, error)

// maxToolDepth bounds tool results that trigger further tool calls within one run.
const maxToolDepth = 4

// mind applies a compiled policy to a view of an instance's memory. Each turn has its own, and
// so does each replay; a mind is used only by the goroutine that holds the instance's state
// (see turn.go), except for record, which only touches the turn's own log.
type mind struct {
	name     string
	v        *view
	pol      *compiledPolicy
	now      func() time.Time
	tools    map[string]Tool   // nil in a replay: calls are logged, not made
	toolHelp map[string]string // tool descriptions for a model
	model    Model             // nil: Consult answers "no-model"
	hasModel bool              // a model is configured (kept in a replay, which has none)
	// t is the turn the mind runs, through which it runs effects (tool and model calls); nil
	// in a replay.
	t *turn
	// conversation is the session whose turns a consult sends as chat messages: its
	// observations stay out of the working context's observations ("" for none).
	conversation string
}

func newMind(name string, v *view, pol *compiledPolicy, now func() time.Time) *mind {
	return &mind{name: name, v: v, pol: pol, now: now}
}

// observe logs ev as a new observation.
func (m *mind) observe(ev Event) Observation {
	if ev.Kind == "" {
		ev.Kind = "message"
	}
	if ev.Time.IsZero() {
		ev.Time = m.now()
	}
	if limit := m.pol.src.Limits.TextBytes; len(ev.Text) > limit {
		ev.Data = maps.Clone(ev.Data)
		if ev.Data == nil {
			ev.Data = map[string]string{}
		}
		ev.Data[truncatedKey] = strconv.Itoa(len(ev.Text))
		ev.Text = cutUTF8(ev.Text, limit)
	}
	seq := m.v.newSeq()
	o := Observation{ID: "o" + strconv.FormatInt(seq, 10), Seq: seq, Time: ev.Time.UTC(), Kind: ev.Kind,
		Source: ev.Source, Context: ev.Context, Text: ev.Text, Data: maps.Clone(ev.Data)}
	m.v.appendObs(o)
	return o
}

// integrate runs the policy on a logged observation.
func (m *mind) integrate(ctx context.Context, o Observation, run *Run) error {
	return m.integrateDepth(ctx, o, run, 0)
}

func (m *mind) integrateDepth(ctx context.Context, o Observation, run *Run, depth int) error {
	if n := o.Data[truncatedKey]; n != "" && o.Source.Kind == SourceUser {
		// Rules judge what they read: a message cut short would be judged on a part of itself.
		run.Failure = "Your message is " + n + " bytes long; I read messages of at most " +
			strconv.Itoa(m.pol.src.Limits.TextBytes) + " bytes."
		m.record(run, Entry{Kind: EntryThought, Text: "message refused: " + n + " bytes, over the limit"})
		return errTooLong
	}
	m.trimWorking()
	cmd, args := splitCommand(o.Text)
	pending, ok := m.v.pendingFor(o.Context.Task)
	if ok {
		delete(m.v.writePending(), o.Context.Task)
	}
	last := map[string]string{}
	setLast(last, nil)
	vars := map[string]any{
		"text": o.Text, "command": cmd, "args": args, "kind": o.Kind, "source": string(o.Source.Kind),
		"self": m.name, "pending": pending, "data": nonNil(o.Data), "last": last,
	}
	fired := 0
	var firstErr error
	// The input's size picks each rule's cost tier (policy.go): the event's strings, and the
	// last result's once a rule has fired.
	size := len(o.Text) + len(args) + stringsSize(o.Data)
	// bound is the largest variable (policy.go, tiered): the event's, and the state's and the
	// last result's, which change as rules fire.
	evBound := max(len(o.Text), len(cmd), len(args), len(o.Kind), len(o.Source.Kind), len(m.name), len(pending), mapBound(o.Data))
	stateBound, lastBound := 0, mapBound(last)
	bound := func() int { return max(evBound, stateBound, lastBound) }
	// The state the rules see changes only when one fires: it is computed then, not per rule.
	stale := true
	act, err := cel.NewActivation(vars)
	if err != nil {
		return err
	}
	for _, r := range m.pol.rules {
		if stale {
			goals := m.v.openGoals()
			vars["goals"] = goals
			state := map[string]int64{"observations": int64(m.v.observations()), "working": int64(len(m.v.working())),
				"beliefs": int64(m.v.beliefCount()), "goals": int64(len(goals)), "fired": int64(fired),
				"model": boolInt(m.hasModel)}
			vars["state"] = state
			stateBound = max(len(goals), len(state))
			for _, g := range goals {
				stateBound = max(stateBound, len(g))
			}
			stale = false
		}
		out, _, err := r.when.at(size, bound()).Eval(act)
		if err != nil {
			firstErr = firstErrOf(firstErr, fmt.Errorf("rule %q: %w", r.Name, err))
			m.record(run, Entry{Kind: EntryThought, Rule: r.Name, Text: "rule failed: " + err.Error()})
			if r.axiom {
				return m.axiomFailed(run, r, firstErr)
			}
			continue
		}
		if ok, _ := out.Value().(bool); !ok {
			continue
		}
		params := map[string]string{}
		for name, prg := range r.params {
			v, _, err := prg.at(size, bound()).Eval(act)
			if err == nil {
				s, isStr := v.Value().(string)
				if !isStr {
					err = fmt.Errorf("parameter %s is %T, not a string", name, v.Value())
				}
				params[name] = s
			}
			if err != nil {
				firstErr = firstErrOf(firstErr, fmt.Errorf("rule %q: %w", r.Name, err))
				m.record(run, Entry{Kind: EntryThought, Rule: r.Name, Text: "rule failed: " + err.Error()})
				params = nil
				break
			}
		}
		if params == nil {
			if r.axiom {
				return m.axiomFailed(run, r, firstErr)
			}
			continue
		}
		fired++
		stale = true
		m.record(run,
			Entry{Kind: EntryThought, Rule: r.Name, Text: "rule " + r.Name + " matched: " + r.Reason},
			Entry{Kind: EntryCall, Rule: r.Name, Action: r.Action, Params: params})
		res, follow := m.act(ctx, r, o, params, run, depth)
		setLast(last, res)
		size = len(o.Text) + len(args) + stringsSize(o.Data) + stringsSize(last)
		lastBound = mapBound(last)
		m.record(run, Entry{Kind: EntryResult, Rule: r.Name, Action: r.Action, Result: maps.Clone(res)})
		switch r.Action {
		case Reply:
			m.record(run, Entry{Kind: EntryOutput, Rule: r.Name, Text: params["text"]})
			run.Reply = joinLine(run.Reply, params["text"])
		case AskInput:
			m.record(run, Entry{Kind: EntryInput, Rule: r.Name, Text: params["text"]})
			run.Question = params["text"]
		}
		m.record(run, Entry{Kind: EntryStep, Rule: r.Name, Text: "step " + strconv.Itoa(fired)})
		if follow != nil && depth < maxToolDepth {
			if err := m.integrateDepth(ctx, *follow, run, depth+1); err != nil {
				firstErr = firstErrOf(firstErr, err)
			}
		}
		if r.Stop {
			break
		}
	}
	return firstErr
}

// truncatedKey is the data key of an observation whose text was cut to Limits.TextBytes: its
// full length in bytes.
const truncatedKey = "truncated"

// errTooLong is the run error of a user's message over Limits.TextBytes.
var errTooLong = errors.New("agent: the message is longer than the rules read")

// axiomFailed ends a run whose axiom could not be evaluated: axioms bind the agent, so one it
// cannot check fails the run closed rather than being skipped.
func (m *mind) axiomFailed(run *Run, r *compiledRule, err error) error {
	run.Failure = "I could not check this message against my rule " + strconv.Quote(r.Name) + ", so I did not act on it."
	return err
}

// mapBound is the most of m's entries and the bytes of any of its keys and values.
func mapBound(m map[string]string) int {
	n := len(m)
	for k, v := range m {
		n = max(n, len(k), len(v))
	}
	return n
}

// stringsSize is the total length of m's keys and values.
func stringsSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// cutUTF8 returns s cut to at most n bytes, at a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// trimWorking applies the working-memory limits.
func (m *mind) trimWorking() {
	lim := m.pol.src.Limits
	m.v.trimWorking(m.now(), lim.WorkingSize, lim.WorkingTTL)
}

// record appends entries to the run's log, showing each to emit.
func (m *mind) record(run *Run, entries ...Entry) {
	for _, e := range entries {
		run.Log = append(run.Log, e)
		if m.t != nil {
			m.t.out.push(e)
		}
	}
}

// resultKeys are the keys of `last`, all present so rules need no `in` checks.
var resultKeys = []string{"action", "status", "subject", "value", "previous", "result"}

// setLast makes last the result res, with "" for the keys res lacks.
func setLast(last, res map[string]string) {
	clear(last)
	for _, k := range resultKeys {
		last[k] = res[k]
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func firstErrOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func joinLine(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// act performs one action. It returns the result and, for a tool call, the observation of the
// tool's answer to integrate next.
func (m *mind) act(ctx context.Context, r *compiledRule, o Observation, p map[string]string, run *Run, depth int) (map[string]string, *Observation) {
	res := map[string]string{"action": string(r.Action), "subject": p["subject"], "value": p["value"]}
	reason := r.Reason
	if p["reason"] != "" {
		reason = p["reason"]
	}
	switch r.Action {
	case Remember:
		res["status"], res["previous"] = m.remember(r.Name, reason, o, p["subject"], p["value"])
	case Note:
		res["status"] = m.note(r.Name, o, p["subject"], p["value"])
	case Promote:
		res["status"] = "missing"
		w := m.v.working()
		for i := len(w) - 1; i >= 0; i-- {
			if subjectKey(w[i].Subject) == subjectKey(p["subject"]) {
				res["status"], res["previous"] = m.promote(r.Name, reason, o, i)
				break
			}
		}
	case Demote:
		res["status"] = "missing"
		if b, ok := m.v.belief(p["subject"]); ok {
			m.demote(&b, o, reason)
			res["status"], res["value"] = "demoted", b.Value
		}
	case Forget:
		res["status"] = "missing"
		if b, ok := m.v.belief(p["subject"]); ok {
			b.Status, b.Updated = StatusForgotten, m.now()
			b.Provenance.Reason += "; forgotten: " + reason
			m.put(b)
			res["status"], res["value"] = "forgotten", b.Value
		}
	case Revise:
		res["status"], res["previous"] = m.revise(r.Name, reason, o, p["subject"], p["value"])
	case Recall:
		found := m.v.recallBeliefs(Query{Text: p["query"], Limit: 5})
		res["result"] = describe(found)
		res["status"] = "found"
		if len(found) == 0 {
			res["status"] = "none"
		}
		for _, b := range found {
			if x, ok := m.v.belief(b.Subject); ok && x.ID == b.ID { // the operator's knowledge is not the instance's to change
				x.Uses++
				m.put(x)
			}
		}
	case Reply:
		res["status"], res["result"] = "sent", p["text"]
	case AskInput:
		m.v.writePending()[o.Context.Task] = p["subject"]
		res["status"], res["result"] = "asked", p["text"]
	case CallTool:
		return m.call(ctx, o, r, p["tool"], p["input"], res)
	case Consult:
		return m.consult(ctx, r, o, p, run, depth), nil
	case Adopt, Achieve, Drop:
		res["subject"], res["status"] = p["goal"], m.goal(r, reason, o, p["goal"])
	}
	return res, nil
}

func (m *mind) call(ctx context.Context, o Observation, r *compiledRule, name, input string, res map[string]string) (map[string]string, *Observation) {
	res["subject"] = name
	if m.tools == nil {
		res["status"] = "replayed"
		return res, nil
	}
	req, err := m.request(name, input, false)
	if errors.Is(err, errNoTool) {
		res["status"] = "no-such-tool"
		return res, nil
	}
	var raw []byte
	var prov *provenance
	if err == nil {
		req.Session = o.Context.Session
		req.Origin = capability.Origin{Kind: capability.OriginRule, Name: r.Name, Task: o.Context.Task}
		raw, prov, err = m.t.callCapability(ctx, req)
	}
	if err != nil {
		res["status"], res["result"] = callStatus(err), err.Error()
		return res, nil
	}
	out := resultText(raw)
	res["status"], res["result"] = "done", out
	follow := m.observe(prov.event(name, out, o.Context, map[string]string{"call": o.ID, "input": input, "tool": name}))
	return res, &follow
}

// confidence is the starting confidence of what a source says.
func confidence(s SourceKind) float64 {
	switch s {
	case SourceUser:
		return 0.9
	case SourceTool:
		return 0.8
	case SourceSelf:
		return 0.7
	}
	return 0.6
}

func sameValue(a, b string) bool { return subjectKey(a) == subjectKey(b) }

func (m *mind) put(b Belief) { m.v.putBelief(b) }

// newBelief writes a fresh current belief from o.
func (m *mind) newBelief(rule, reason string, o Observation, subject, value string, obs []string) Belief {
	return m.newBeliefID(m.v.newBeliefID(), rule, reason, o, subject, value, obs)
}

func (m *mind) newBeliefID(id, rule, reason string, o Observation, subject, value string, obs []string) Belief {
	now := m.now()
	b := Belief{ID: id, Subject: subject, Value: value,
		Confidence: confidence(o.Source.Kind), Status: StatusActive, Created: now, Updated: now,
		Provenance: Provenance{Source: o.Source, Observations: obs, Context: o.Context, Rule: rule, Reason: reason}}
	m.put(b)
	return b
}

func (m *mind) remember(rule, reason string, o Observation, subject, value string) (status, previous string) {
	cur, ok := m.v.belief(subject)
	switch {
	case !ok:
		m.newBelief(rule, reason, o, subject, value, []string{o.ID})
		return "stored", ""
	case sameValue(cur.Value, value):
		m.corroborate(&cur, o)
		return "corroborated", cur.Value
	default:
		m.demote(&cur, o, "contradicted by "+o.ID)
		m.note(rule, o, subject, value)
		return "contradiction", cur.Value
	}
}

func (m *mind) corroborate(b *Belief, o Observation) {
	b.Confidence += (1 - b.Confidence) / 2
	b.Uses++
	b.Provenance.Observations = append(b.Provenance.Observations, o.ID)
	if b.Status == StatusDisputed && b.Confidence >= 0.5 {
		b.Status = StatusActive
	}
	b.Updated = m.now()
	m.put(*b)
}

func (m *mind) demote(b *Belief, o Observation, reason string) {
	b.Confidence /= 2
	b.Provenance.Against = append(b.Provenance.Against, o.ID)
	if b.Confidence < 0.5 {
		b.Status = StatusDisputed
	}
	b.Provenance.Reason += "; demoted: " + reason
	b.Updated = m.now()
	m.put(*b)
}

// note adds to working memory; a note used PromoteAfter times is promoted.
func (m *mind) note(rule string, o Observation, subject, value string) string {
	w := m.v.writeWorking()
	key := noteKey(subject, value)
	for i := range *w {
		n := &(*w)[i]
		if n.key == key {
			n.Uses++
			n.Observations = append(n.Observations, o.ID)
			n.Time = m.now()
			if n.Uses >= m.pol.src.Limits.PromoteAfter {
				st, _ := m.promote(rule, fmt.Sprintf("corroborated by %d observations", n.Uses), o, i)
				return st
			}
			return "noted"
		}
	}
	*w = append(*w, WorkingNote{key: key, Subject: subject, Value: value, Observations: []string{o.ID}, Uses: 1, Time: m.now()})
	m.trimWorking()
	return "noted"
}

// promote moves working note i to long-term memory: it corroborates or supersedes the current
// belief on its subject.
func (m *mind) promote(rule, reason string, o Observation, i int) (status, previous string) {
	w := m.v.writeWorking()
	n := (*w)[i]
	*w = append((*w)[:i], (*w)[i+1:]...)
	cur, ok := m.v.belief(n.Subject)
	switch {
	case ok && sameValue(cur.Value, n.Value):
		m.corroborate(&cur, o)
		return "promoted", cur.Value
	case ok:
		m.supersede(rule, reason, o, cur, n.Value, n.Observations)
		return "promoted", cur.Value
	}
	m.newBelief(rule, reason, o, n.Subject, n.Value, n.Observations)
	return "promoted", ""
}

func (m *mind) revise(rule, reason string, o Observation, subject, value string) (status, previous string) {
	cur, ok := m.v.belief(subject)
	if !ok {
		m.newBelief(rule, reason, o, subject, value, []string{o.ID})
		return "stored", ""
	}
	if sameValue(cur.Value, value) {
		m.corroborate(&cur, o)
		return "corroborated", cur.Value
	}
	m.supersede(rule, reason, o, cur, value, []string{o.ID})
	return "revised", cur.Value
}

func (m *mind) supersede(rule, reason string, o Observation, old Belief, value string, obs []string) {
	old.Status = StatusSuperseded
	next := m.v.newBeliefID()
	old.SupersededBy, old.Updated = next, m.now()
	m.put(old)
	b := m.newBeliefID(next, rule, reason, o, old.Subject, value, obs)
	b.Supersedes = old.ID
	m.put(b)
}

// goal adopts, achieves or drops a goal.
func (m *mind) goal(r *compiledRule, reason string, o Observation, text string) string {
	g, open := m.v.openGoal(text)
	now := m.now()
	if r.Action == Adopt {
		if open {
			return "exists"
		}
		m.v.putGoal(Goal{ID: m.v.newGoalID(), Text: text, Status: GoalOpen, Created: now, Updated: now,
			Provenance: Provenance{Source: o.Source, Observations: []string{o.ID}, Context: o.Context, Rule: r.Name, Reason: reason}})
		return "adopted"
	}
	if !open {
		return "missing"
	}
	g.Status, g.Updated = GoalAchieved, now
	if r.Action == Drop {
		g.Status = GoalDropped
	}
	g.Provenance.Observations = append(g.Provenance.Observations, o.ID)
	g.Provenance.Reason += "; " + string(g.Status) + ": " + reason
	m.v.putGoal(g)
	return string(g.Status)
}
