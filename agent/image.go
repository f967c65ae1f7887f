package agent

// Images: an instance's self at a moment (policy version, capability set, memory), taken by
// Checkpoint and brought back by Restore; and speculative forks, private copies of an instance
// to try a change in and throw away. docs/self-development.md is the design.
//
// Concurrency: Checkpoint and Restore run in the instance's goroutine (call), like Propose;
// Restore's store write is one commit. A fork is a private Host of its own.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// Image is an instance's self at a moment: plain data (JSON), what Restore brings back.
type Image struct {
	Label string    `json:"label"`
	Taken time.Time `json:"taken"`
	// Policy is the policy version in force.
	Policy int `json:"policy"`
	// Capabilities is the capability set's state (capability.State).
	Capabilities json.RawMessage `json:"capabilities"`
	// Beliefs and Goals are every belief and goal, as they stood; Working the working memory.
	Beliefs []Belief     `json:"beliefs"`
	Goals   []Goal       `json:"goals"`
	Working WorkingState `json:"working"`
	// Observations is how many observations the log held: the log is history, not restored.
	Observations int `json:"observations"`
}

// RestoreReport says what Restore did.
type RestoreReport struct {
	// Policy is the policy version now in force.
	Policy int `json:"policy"`
	// Restored counts the beliefs and goals brought back to the image's state; Retired those
	// written since and retired.
	Restored int `json:"restored"`
	Retired  int `json:"retired"`
	// Uninstalled are the capabilities installed since, and uninstalled; Missing those of the
	// image that could not be made again.
	Uninstalled []string `json:"uninstalled,omitempty"`
	Missing     []string `json:"missing,omitempty"`
	// Observation is the ID of the checkpoint observation that records the restore.
	Observation string `json:"observation"`
}

// ErrImage reports an image that does not belong to the instance (a policy version it does not
// have) or is malformed.
var ErrImage = errors.New("agent: bad image")

// Checkpoint returns the instance's image, named label: its committed state (a turn in flight
// is not in it).
func (a *Agent) Checkpoint(ctx context.Context, label string) (Image, error) {
	return call(ctx, a, func(c *core) (Image, error) {
		m := c.mem
		img := Image{Label: label, Taken: c.def.now().UTC(), Policy: c.current + 1, Capabilities: c.in.capabilitiesJSON(),
			Beliefs: cloneAll(m.beliefs, Belief.clone), Goals: cloneAll(m.goals, Goal.clone), Observations: m.count}
		img.Working.Notes = cloneAll(m.working, func(n WorkingNote) WorkingNote { n.Observations = slices.Clone(n.Observations); return n })
		img.Working.Pending = maps.Clone(m.pending)
		return img, nil
	})
}

// Restore brings the instance back to img, one of its own images: the policy version in force
// becomes the image's, beliefs and goals return to the image's state and those written since
// are retired (with the reason), the working memory is the image's, capabilities installed
// since are uninstalled and those the image held are held again as they were; a checkpoint
// observation records it. Memory and policy change in one store commit.
func (a *Agent) Restore(ctx context.Context, img Image) (RestoreReport, error) {
	return call(ctx, a, func(c *core) (RestoreReport, error) { return c.restore(context.WithoutCancel(ctx), img) })
}

func (c *core) restore(ctx context.Context, img Image) (RestoreReport, error) {
	var rep RestoreReport
	if img.Policy < 1 || img.Policy > len(c.versions) {
		return rep, fmt.Errorf("%w: no policy version %d", ErrImage, img.Policy)
	}
	var st capability.State
	if len(img.Capabilities) > 0 {
		if err := json.Unmarshal(img.Capabilities, &st); err != nil {
			return rep, fmt.Errorf("%w: its capabilities: %v", ErrImage, err)
		}
	}
	now := c.def.now()
	why := fmt.Sprintf("restored to checkpoint %q of %s", img.Label, img.Taken.UTC().Format(time.RFC3339))
	b := &Batch{Working: &WorkingState{Notes: img.Working.Notes, Pending: img.Working.Pending}}
	if img.Policy != c.current+1 {
		b.Current = img.Policy
	}
	then := map[string]Belief{}
	for _, x := range img.Beliefs {
		then[x.ID] = x
	}
	for _, x := range c.mem.beliefs {
		switch y, ok := then[x.ID]; {
		case ok && !sameJSON(x, y):
			b.Beliefs = append(b.Beliefs, y.clone())
			rep.Restored++
		case !ok && (x.Status == StatusActive || x.Status == StatusDisputed):
			x = x.clone()
			x.Status, x.Updated = StatusForgotten, now
			x.Provenance.Reason += "; " + why
			b.Beliefs = append(b.Beliefs, x)
			rep.Retired++
		}
	}
	goals := map[string]Goal{}
	for _, g := range img.Goals {
		goals[g.ID] = g
	}
	for _, g := range c.mem.goals {
		switch y, ok := goals[g.ID]; {
		case ok && !sameJSON(g, y):
			b.Goals = append(b.Goals, y.clone())
			rep.Restored++
		case !ok && g.Status == GoalOpen:
			g = g.clone()
			g.Status, g.Updated = GoalDropped, now
			g.Provenance.Reason += "; " + why
			b.Goals = append(b.Goals, g)
			rep.Retired++
		}
	}
	// The capability set: what was installed since goes, what the image held comes back.
	keep := map[string]bool{"loader": true}
	for _, h := range st.Held {
		keep[h.Name] = true
	}
	for _, h := range c.in.caps.Installed() {
		if !keep[h.Name] && c.def.toolCaps[h.Name] == nil {
			if c.in.caps.Uninstall(ctx, h.Name, why) == nil {
				rep.Uninstalled = append(rep.Uninstalled, h.Name)
			}
		}
	}
	st.Pending = nil // the approvals waiting now stay; the image's were asked then
	missing, err := c.in.caps.Restore(ctx, st)
	if err != nil {
		return rep, fmt.Errorf("%w: %v", ErrImage, err)
	}
	rep.Missing = missing
	b.Capabilities = c.in.capabilitiesJSON()
	c.in.capsDirty.Store(false)
	seq := c.mem.nextSeq
	c.mem.nextSeq++
	o := Observation{ID: "o" + fmt.Sprint(seq), Seq: seq, Time: now.UTC(), Kind: "checkpoint", Source: Source{Kind: SourceSelf},
		Text: fmt.Sprintf("%s: policy version %d, %d beliefs and goals restored, %d retired", why, img.Policy, rep.Restored, rep.Retired),
		Data: map[string]string{"label": img.Label, "policy": fmt.Sprint(img.Policy)}}
	b.Observations = []Observation{o}
	if err := c.commit(ctx, b); err != nil {
		c.in.capsDirty.Store(true)
		return rep, fmt.Errorf("agent: saving the restore: %w", err)
	}
	c.current = img.Policy - 1
	rep.Policy, rep.Observation = img.Policy, o.ID
	return rep, nil
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// Fork returns a speculative copy of the instance: its committed state (rules, memory,
// reviews, capability set) in a private host with an in-memory store, for the same principal.
// Its capabilities are read-only copies of the instance's (no writes, executes or spawns), and
// the definition's Go tools are not in it, so nothing it does reaches the instance, its store
// or the world. Close it to throw it away.
func (a *Agent) Fork(ctx context.Context) (*Agent, error) {
	d := a.h.def
	key := Key{Agent: a.name, Principal: a.p}
	caps, err := call(ctx, a, func(c *core) (json.RawMessage, error) { return c.in.capabilitiesJSON(), nil })
	if err != nil {
		return nil, err
	}
	snap, err := a.h.store.Load(ctx, key, max(d.policy.Limits.withDefaults().ReplayWindow, contextObservations))
	if err != nil {
		return nil, fmt.Errorf("agent: forking %s: %w", a.name, err)
	}
	store := NewMemoryStore()
	b := &Batch{Observations: snap.Observations, Beliefs: snap.Beliefs, Goals: snap.Goals, Working: &snap.Working,
		Policies: snap.Policies, Current: snap.Current, Reviews: snap.Reviews, Capabilities: caps}
	if err := store.Commit(ctx, key, b); err != nil {
		return nil, fmt.Errorf("agent: forking %s: %w", a.name, err)
	}
	def := d.src
	def.Tools, def.ToolHelp, def.Audit = nil, nil, nil
	def.Capabilities = readOnly(d.catalog)
	h, err := NewHost(&def, &HostOptions{Store: store, IdleTimeout: -1, Limiter: a.h.opts.Limiter})
	if err != nil {
		return nil, err
	}
	f, err := h.Instance(ctx, a.p)
	if err != nil {
		_ = h.Close()
		return nil, err
	}
	f.own = true
	return f, nil
}

// readOnly is catalog with each offer making a read-only copy (revoked with what it was
// derived from).
func readOnly(catalog *capability.Catalog) *capability.Catalog {
	ro := capability.NewCatalog()
	for _, o := range catalog.Offers() {
		next := o.New
		o.New = func(ctx context.Context, env capability.Env) (*capability.Capability, error) {
			c, err := next(ctx, env)
			if err != nil {
				return nil, err
			}
			r, err := c.Derive(capability.Restrictions{ReadOnly: true})
			if err != nil {
				c.Revoke(err)
				return nil, err
			}
			go func() { // the copy's owner revokes it: then what it was made of goes too
				<-r.Done()
				c.Revoke(r.Err())
			}()
			return r, nil
		}
		_ = ro.Add(o) // it was accepted once: the same offer is accepted again
	}
	return ro
}
