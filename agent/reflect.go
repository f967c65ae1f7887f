package agent

// The reflect phase (docs/self-development.md, "Reflection"): the instance reviews its recent
// turns — corrections, contradicted beliefs, refusals — asks its model for policy edits, and
// puts each through Propose. It runs from the program (Agent.Reflect), from rules and the model
// (the reflect capability, with Definition.Reflect), and on a schedule (ReflectOptions.Every).
//
// Concurrency: the findings are gathered in the instance's goroutine (call); the model is
// asked outside it, through the host's model-call limiter; each proposal goes through the
// instance's goroutine again, like any other. A scheduled phase runs on the host's reflect
// goroutine, one instance at a time.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// ReflectOptions configure a definition's reflect phase.
type ReflectOptions struct {
	// MaxProposals bounds the proposals of one phase; 0 means 3.
	MaxProposals int
	// Every, when positive, runs a phase for each resident instance that has had a turn since
	// its last one, that often.
	Every time.Duration
}

// Finding is what a reflect phase found in the recent log.
type Finding struct {
	// Kind is "correction" (a user said the agent was wrong), "contradiction" (a belief was
	// disputed or superseded) or "refusal" (a capability call was refused, denied or exhausted).
	Kind string `json:"kind"`
	// Observation is the observation that shows it.
	Observation string `json:"observation"`
	Text        string `json:"text"`
}

// Reflected is one proposal of a reflect phase and what became of it.
type Reflected struct {
	Proposal Proposal `json:"proposal"`
	Decision Decision `json:"decision"`
	// Error says why it was rejected; "" when it was applied or held for approval
	// (Decision.Pending).
	Error string `json:"error,omitempty"`
}

// Reflection is what a reflect phase did.
type Reflection struct {
	Findings  []Finding   `json:"findings"`
	Proposals []Reflected `json:"proposals"`
	// Observation is the ID of the reflection observation it logged; "" when it found
	// nothing.
	Observation string `json:"observation,omitempty"`
}

// ErrNoModel: the reflect phase found something but the agent has no model to ask.
var ErrNoModel = errors.New("agent: no model to reflect with")

// correctionPrefixes begin a user's message that corrects the agent.
var correctionPrefixes = []string{"no", "wrong", "that's wrong", "that is wrong", "incorrect", "actually", "not "}

func isCorrection(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	for _, p := range correctionPrefixes {
		if t == p || strings.HasPrefix(t, p) && (strings.HasSuffix(p, " ") || !isLetter(t[len(p)])) {
			return true
		}
	}
	return false
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// reflectInput is what the model is shown.
type reflectInput struct {
	rules    []Rule
	findings []Finding
	recent   []string
}

// Reflect runs a reflect phase now: see ReflectOptions and docs/self-development.md.
func (a *Agent) Reflect(ctx context.Context) (Reflection, error) {
	r := Reflection{Findings: []Finding{}, Proposals: []Reflected{}}
	in, err := call(ctx, a, func(c *core) (reflectInput, error) { return c.reflectInput(), nil })
	if err != nil {
		return r, err
	}
	r.Findings = in.findings
	if len(in.findings) == 0 {
		return r, nil
	}
	d := a.h.def
	if d.model == nil {
		return r, ErrNoModel
	}
	ps, err := a.askReflection(ctx, in)
	if err != nil {
		return r, err
	}
	for _, p := range ps {
		dec, err := a.Propose(ctx, p)
		x := Reflected{Proposal: p, Decision: dec}
		if err != nil {
			x.Error = err.Error()
		}
		r.Proposals = append(r.Proposals, x)
	}
	r.Observation, err = call(ctx, a, func(c *core) (string, error) { return c.logReflection(context.WithoutCancel(ctx), r) })
	return r, err
}

// reflectInput gathers the findings of the recent log, holding the state.
func (c *core) reflectInput() reflectInput {
	m := c.mem
	lim := c.versions[c.current].src.Limits
	window := m.log[max(0, len(m.log)-lim.ReplayWindow):]
	in := reflectInput{rules: cloneRules(c.versions[c.current].src.Rules)}
	inWindow := map[string]bool{}
	for _, o := range window {
		inWindow[o.ID] = true
		switch {
		case o.Kind == "message" && o.Source.Kind == SourceUser && isCorrection(o.Text):
			in.findings = append(in.findings, Finding{Kind: "correction", Observation: o.ID, Text: truncateText(o.Text, 300)})
		case o.Kind == "capability" && (o.Data["outcome"] == string(capability.OutcomeRefused) ||
			o.Data["outcome"] == string(capability.OutcomeDenied) || o.Data["outcome"] == string(capability.OutcomeExhausted)):
			in.findings = append(in.findings, Finding{Kind: "refusal", Observation: o.ID, Text: truncateText(o.Text, 300)})
		}
		if o.Kind != "reflection" && o.Text != "" {
			in.recent = append(in.recent, o.ID+" "+o.Kind+" from "+string(o.Source.Kind)+": "+truncateText(o.Text, 200))
		}
	}
	for _, b := range m.beliefs {
		against := slices.Concat(b.Provenance.Against, []string{b.SupersededBy})
		if (b.Status == StatusDisputed || b.Status == StatusSuperseded) && slices.ContainsFunc(against, func(id string) bool { return inWindow[id] }) {
			at := b.Provenance.Against
			o := ""
			if len(at) > 0 {
				o = at[len(at)-1]
			}
			in.findings = append(in.findings, Finding{Kind: "contradiction", Observation: o,
				Text: fmt.Sprintf("the belief %s is %s was %s", b.Subject, b.Value, b.Status)})
		}
	}
	return in
}

const reflectInstructions = `You are the reflect phase of an agent of the a2aWebCap runtime. Review its recent turns and the findings below (corrections by its user, contradicted beliefs, refused capability calls) and propose changes to its rules that would avoid them. Each rule is {"name", "when" (a CEL predicate over text, command, args, kind, source, data, pending, goals, state, last), "action" (remember, note, promote, demote, forget, revise, recall, reply, ask, call, adopt, achieve, drop, consult), "params" (CEL string expressions), "stop", "reason"}. Answer with JSON only: {"proposals": [{"op": "add" | "replace" | "remove", "rule": {...}, "justification": "why", "evidence": ["observation IDs that motivate it"]}]} — at most %d proposals, none if nothing should change. Each is checked: it is replayed on the recent observations, and must change what the agent does on its evidence.`

// askReflection asks the model for proposals.
func (a *Agent) askReflection(ctx context.Context, in reflectInput) ([]Proposal, error) {
	d := a.h.def
	maxP := 3
	if d.reflect != nil && d.reflect.MaxProposals > 0 {
		maxP = d.reflect.MaxProposals
	}
	rules, _ := json.MarshalIndent(in.rules, "", "  ")
	findings, _ := json.MarshalIndent(in.findings, "", "  ")
	user := "Current rules:\n" + string(rules) + "\n\nFindings:\n" + string(findings) + "\n\nRecent observations, oldest first:\n" + strings.Join(in.recent, "\n")
	msgs := []ChatMessage{{Role: "system", Content: fmt.Sprintf(reflectInstructions, maxP)}, {Role: "user", Content: user}}
	release, err := a.h.opts.Limiter.acquire(ctx, a.p, nil)
	if err != nil {
		return nil, err
	}
	ans, err := d.model.Complete(ctx, msgs, nil, nil)
	release()
	if err != nil {
		return nil, fmt.Errorf("agent: reflecting: %w", err)
	}
	return parseReflection(ans.Content, maxP)
}

// parseReflection reads the model's proposals: the JSON object in its answer, strictly.
func parseReflection(answer string, maxP int) ([]Proposal, error) {
	i, j := strings.Index(answer, "{"), strings.LastIndex(answer, "}")
	if i < 0 || j < i {
		return nil, fmt.Errorf("agent: reflecting: the model's answer holds no JSON object")
	}
	var out struct {
		Proposals []struct {
			Op            Op       `json:"op"`
			Rule          Rule     `json:"rule"`
			Justification string   `json:"justification"`
			Evidence      []string `json:"evidence"`
		} `json:"proposals"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(answer[i : j+1])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("agent: reflecting: the model's proposals: %w", err)
	}
	var ps []Proposal
	for _, p := range out.Proposals[:min(len(out.Proposals), maxP)] {
		ps = append(ps, Proposal{Op: p.Op, Rule: p.Rule, Justification: p.Justification, Evidence: p.Evidence})
	}
	return ps, nil
}

// logReflection commits a reflection observation for r.
func (c *core) logReflection(ctx context.Context, r Reflection) (string, error) {
	var parts []string
	for _, p := range r.Proposals {
		what := "applied as version " + fmt.Sprint(p.Decision.Version)
		switch {
		case p.Error != "":
			what = "rejected: " + p.Error
		case p.Decision.Pending != "":
			what = "held for approval as " + p.Decision.Pending
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", p.Proposal.Op, p.Proposal.Rule.Name, what))
	}
	text := fmt.Sprintf("reflected on %d findings; %d proposals", len(r.Findings), len(r.Proposals))
	if len(parts) > 0 {
		text += ": " + strings.Join(parts, "; ")
	}
	data, _ := json.Marshal(r.Findings)
	seq := c.mem.nextSeq
	c.mem.nextSeq++
	o := Observation{ID: "o" + fmt.Sprint(seq), Seq: seq, Time: c.def.now().UTC(), Kind: "reflection", Source: Source{Kind: SourceSelf},
		Text: truncateText(text, 2000), Data: map[string]string{"findings": truncateText(string(data), 4000)}}
	if err := c.commit(ctx, &Batch{Observations: []Observation{o}}); err != nil {
		return "", fmt.Errorf("agent: saving the reflection: %w", err)
	}
	return o.ID, nil
}

// reflectCapability is an instance's reflect capability: run runs a phase.
func reflectCapability(a *Agent) *capability.Capability {
	c, err := capability.New(capability.Description{Name: "reflect", Description: "Review your recent turns and propose changes to your rules",
		Methods:  []capability.Method{{Name: "run", Description: "Run a reflect phase: corrections, contradictions and refusals of the recent turns become proposals to change your rules, each checked before it applies"}},
		Contract: capability.Contract{Reads: []string{"self:memory", "self:policy"}, Writes: []string{"self:policy"}}},
		capability.Funcs{"run": func(ctx context.Context, c *capability.Call) (any, error) {
			for _, r := range []string{"self:memory", "self:policy"} {
				if err := c.Check(capability.Read, r); err != nil {
					return nil, err
				}
			}
			if err := c.Check(capability.Write, "self:policy"); err != nil {
				return nil, err
			}
			return a.Reflect(ctx)
		}})
	if err != nil {
		panic(err) // a fixed spec: a bug
	}
	return c
}

// reflectEvery runs reflect phases on schedule until the host closes: for each resident
// instance whose log grew since its last phase here.
func (h *Host) reflectEvery(every time.Duration) {
	defer h.bg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-h.quit
		cancel()
	}()
	seen := map[Principal]int{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Which instances' logs grew, read without touching them: a phase refreshes an
		// instance's use, a mere look must not keep it from being put away.
		h.mu.Lock()
		grown := map[Principal]int64{}
		for p, e := range h.live {
			select {
			case <-e.ready: // e.in is set
			default:
				continue
			}
			if e.in != nil {
				if n := e.in.logged.Load(); n > int64(seen[p]) {
					grown[p] = n
				}
			}
		}
		for p := range seen {
			if h.live[p] == nil {
				delete(seen, p) // put away: it starts afresh when it loads again
			}
		}
		h.mu.Unlock()
		for p := range grown {
			a := &Agent{name: h.def.name, h: h, p: p}
			_, _ = a.Reflect(ctx) // what it did is in the instance's log
			n, _ := call(ctx, a, func(c *core) (int, error) { return c.mem.count, nil })
			seen[p] = n
		}
	}
}
