package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Op is what a proposal does to the mutable rules.
type Op string

// The proposal operations.
const (
	// OpAdd appends a rule.
	OpAdd Op = "add"
	// OpReplace replaces the rule with the same name.
	OpReplace Op = "replace"
	// OpRemove removes the rule named Rule.Name.
	OpRemove Op = "remove"
)

// Proposal is a change to an agent's mutable rules, with why and the observations behind it.
type Proposal struct {
	Op   Op
	Rule Rule
	// Justification says why; it must not be empty.
	Justification string
	// Evidence are IDs of observations in the agent's log that motivate the change; at least one.
	// The change must alter what the agent does on at least one of them.
	Evidence []string
}

// Difference is how a replayed observation came out under the current and proposed policy.
type Difference struct {
	Observation string
	Before      []string // "rule: action status" for each fired rule
	After       []string
}

// Decision is the outcome of a proposal.
type Decision struct {
	// Version is the policy version now in force (the new one when applied).
	Version int
	// Replayed is how many recent observations were replayed.
	Replayed int
	// Diff lists the observations whose outcome changes.
	Diff []Difference
	// Pending is the ID of the [Review] that holds the proposal for a human's approval, or ""
	// when the proposal was applied or rejected. See [Limits].Approval.
	Pending string
}

// Errors of [Agent.Propose]; each wraps ErrRejected.
var (
	ErrRejected = errors.New("agent: proposal rejected")
	// ErrFrozen: the proposal touches an axiom or the validation limits.
	ErrFrozen = fmt.Errorf("%w: frozen", ErrRejected)
	// ErrRateLimited: too many edits in the edit window.
	ErrRateLimited = fmt.Errorf("%w: rate limited", ErrRejected)
	// ErrReplayFailed: the new policy fails on, or does not change, the evidence.
	ErrReplayFailed = fmt.Errorf("%w: replay failed", ErrRejected)
	// ErrNoHistory: Rollback has no earlier version to return to.
	ErrNoHistory = errors.New("agent: no earlier policy version")
)

// Propose validates p and, if it passes, applies it as a new policy version. A rejection's
// error wraps ErrRejected (ErrFrozen, ErrRateLimited, ErrReplayFailed, ErrInvalidRule) and the
// Decision still reports the replay when there was one. A proposal that passes but touches a
// rule whose action is in Limits.Approval is not applied: the error is nil and
// Decision.Pending names the [Review] that [Agent.Approve] or [Agent.Reject] decides.
func (a *Agent) Propose(ctx context.Context, p Proposal) (Decision, error) {
	return call(ctx, a, func(c *core) (Decision, error) { return c.propose(context.WithoutCancel(ctx), p) })
}

func (c *core) propose(ctx context.Context, p Proposal) (Decision, error) {
	d, cp, err := c.check(ctx, p)
	if err != nil {
		return d, err
	}
	if c.needsApproval(p) {
		return c.hold(ctx, p, d)
	}
	return c.apply(ctx, p, cp, d, nil)
}

// check runs every automatic check of p against the policy in force and returns the policy p
// would make. It changes nothing.
func (c *core) check(ctx context.Context, p Proposal) (Decision, *compiledPolicy, error) {
	cur := c.versions[c.current]
	d := Decision{Version: c.current + 1}
	lim := cur.src.Limits
	reject := func(sentinel error, format string, args ...any) (Decision, *compiledPolicy, error) {
		return d, nil, fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
	}
	if slices.ContainsFunc(cur.src.Axioms, func(r Rule) bool { return r.Name == p.Rule.Name }) {
		return reject(ErrFrozen, "%q is an axiom", p.Rule.Name)
	}
	if strings.HasPrefix(p.Rule.Name, "limits.") || strings.HasPrefix(p.Rule.Name, "axiom.") {
		return reject(ErrFrozen, "%q names the validation rules", p.Rule.Name)
	}
	if strings.TrimSpace(p.Justification) == "" {
		return reject(ErrRejected, "no justification")
	}
	if len(p.Evidence) == 0 {
		return reject(ErrRejected, "no evidence")
	}
	for _, id := range p.Evidence {
		// Only the replay window can show a change; the resident log holds it.
		if i, ok := c.mem.byID[id]; !ok || i < len(c.mem.log)-lim.ReplayWindow {
			return reject(ErrRejected, "evidence %s is not among the %d most recent observations", id, lim.ReplayWindow)
		}
	}
	now := c.def.now()
	c.edits = slices.DeleteFunc(c.edits, func(t time.Time) bool { return now.Sub(t) >= lim.EditWindow })
	if len(c.edits) >= lim.MaxEdits {
		return reject(ErrRateLimited, "%d edits in %s", len(c.edits), lim.EditWindow)
	}
	next := cur.src.clone()
	i := slices.IndexFunc(next.Rules, func(r Rule) bool { return r.Name == p.Rule.Name })
	switch p.Op {
	case OpAdd:
		if i >= 0 {
			return reject(ErrRejected, "rule %q exists", p.Rule.Name)
		}
		next.Rules = append(next.Rules, p.Rule)
	case OpReplace:
		if i < 0 {
			return reject(ErrRejected, "no rule %q", p.Rule.Name)
		}
		next.Rules[i] = p.Rule
	case OpRemove:
		if i < 0 {
			return reject(ErrRejected, "no rule %q", p.Rule.Name)
		}
		next.Rules = slices.Delete(next.Rules, i, i+1)
	default:
		return reject(ErrRejected, "unknown op %q", p.Op)
	}
	cp, err := compile(next)
	if err != nil {
		return d, nil, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	// Replay the recent window under both policies, each on a fresh memory.
	log := c.mem.log
	window := log[max(0, len(log)-lim.ReplayWindow):]
	before, beforeErr := c.replay(ctx, cur, window)
	after, afterErr := c.replay(ctx, cp, window)
	d.Replayed = len(window)
	changed := false
	var broke error // the first error the new policy has where the current one had none
	for k, o := range window {
		if !slices.Equal(before[k], after[k]) {
			d.Diff = append(d.Diff, Difference{Observation: o.ID, Before: before[k], After: after[k]})
			if slices.Contains(p.Evidence, o.ID) {
				changed = true
			}
		}
		if afterErr[k] != nil && beforeErr[k] == nil && broke == nil {
			broke = fmt.Errorf("on %s: %w", o.ID, afterErr[k])
		}
	}
	if broke != nil {
		return reject(ErrReplayFailed, "%v", broke)
	}
	if !changed {
		return reject(ErrReplayFailed, "the change alters nothing on its evidence")
	}
	return d, cp, nil
}

// apply makes cp, which check made from p, the policy in force as a new version; r is the
// review that approved it, or nil.
func (c *core) apply(ctx context.Context, p Proposal, cp *compiledPolicy, d Decision, r *Review) (Decision, error) {
	now := c.def.now()
	pv := PolicyVersion{Version: len(c.versions) + 1, Rules: cloneRules(cp.src.Rules), Applied: now.UTC()}
	pp := p.clone()
	pv.Proposal = &pp
	if r != nil {
		pv.Approver, pv.Review = r.Reviewer, r.ID
	}
	b := &Batch{Policies: []PolicyVersion{pv}, Current: pv.Version}
	if r != nil {
		b.Reviews = []Review{r.clone()}
	}
	if err := c.commit(ctx, b); err != nil {
		return d, fmt.Errorf("agent: saving policy version %d: %w", pv.Version, err)
	}
	c.versions = append(c.versions, cp)
	c.history = append(c.history, pv)
	c.current = len(c.versions) - 1
	c.edits = append(c.edits, now)
	d.Version = c.current + 1
	return d, nil
}

// replay runs pol on the observations on a fresh memory, with no tools and no store, and
// returns for each observation the fired rules and their outcomes, and its first rule error.
// A proposal may thus fix a rule that fails today: only errors it introduces reject it.
func (c *core) replay(ctx context.Context, pol *compiledPolicy, obs []Observation) ([][]string, []error) {
	mem := newMemory()
	mem.knowledge = c.def.knowledge
	mem.nextSeq = 1 << 62 // a replay logs what rules observe under IDs no real observation has
	v := newView(mem)
	m := newMind(c.def.name, v, pol, c.def.now)
	m.hasModel = c.def.model != nil
	out := make([][]string, len(obs))
	errs := make([]error, len(obs))
	for k, o := range obs {
		v.appendObs(o)
		var run Run
		errs[k] = m.integrate(ctx, o, &run)
		for _, e := range run.Log {
			if e.Kind == EntryResult {
				out[k] = append(out[k], e.Rule+": "+string(e.Action)+" "+e.Result["status"])
			}
		}
	}
	return out, errs
}

// Rollback returns to the policy version before the current one, and returns that version.
// Versions stay in the history; a rollback is not a new edit for the rate limit.
func (a *Agent) Rollback(ctx context.Context) (int, error) {
	return call(ctx, a, func(c *core) (int, error) {
		ctx := context.WithoutCancel(ctx) // once taken, the rollback is saved whole
		if c.current == 0 {
			return 0, ErrNoHistory
		}
		if err := c.commit(ctx, &Batch{Current: c.current}); err != nil {
			return 0, fmt.Errorf("agent: saving policy version %d: %w", c.current, err)
		}
		c.current--
		return c.current + 1, nil
	})
}
