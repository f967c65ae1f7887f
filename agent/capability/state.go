package capability

// A set's state as data, for the runtime to save with its instance and bring back: what is
// installed and how, the approvals given and asked, the budgets spent.

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// State is a set's state as data.
type State struct {
	// Held are the capabilities held, the loader aside.
	Held []Held `json:"held"`
	// Pending are the approvals asked and not yet carried out.
	Pending []Pending `json:"pending,omitempty"`
	// Next numbers the next approval asked.
	Next int64 `json:"next"`
}

// State returns the set's state. Capabilities the set holds only while something lives — one
// a client lends — are in it too; Restore skips what it cannot make again.
func (s *Set) State() State {
	st := State{}
	for _, h := range s.Installed() {
		if h.Name != loaderName {
			st.Held = append(st.Held, h)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pending {
		st.Pending = append(st.Pending, p.clone())
	}
	st.Next = s.nextPending
	return st
}

// Restore brings st back into a new set: it installs again what came from the catalog (made
// anew by its offer, narrowed by the same restrictions), gives what the set already holds
// under the same name (installed by the program before Restore) its strategies, approvals and
// budgets spent, and restores the approvals asked. It returns the names it could not restore:
// no longer offered, failing to be made, or not installed by the program. It records nothing:
// nothing new happened.
func (s *Set) Restore(ctx context.Context, st State) (missing []string, err error) {
	for _, h := range st.Held {
		if h.Name == loaderName {
			continue
		}
		if err := h.Strategy.Validate(); err != nil {
			return missing, fmt.Errorf("capability: restoring %s: %w", h.Name, err)
		}
		s.mu.Lock()
		_, held := s.held[h.Name]
		s.mu.Unlock()
		if !held && h.Offered {
			if err := s.reinstall(ctx, h); err != nil {
				missing = append(missing, h.Name)
				continue
			}
		}
		s.mu.Lock()
		g := s.held[h.Name]
		if g != nil {
			g.strategy, g.sessions = h.Strategy, maps.Clone(h.Sessions)
			// An approval is of a contract: one held now under a contract that is not inside
			// the one approved (its files edited since) keeps none.
			if g.cap.Contract().Within(h.Contract) == nil {
				g.approved, g.approvedBy = h.Approved, h.ApprovedBy
			}
			g.installed, g.by = h.Installed, h.By
			if h.Minimum.Valid() && h.Minimum.AtLeast(g.minimum) {
				g.minimum = h.Minimum
			}
			g.meters = nil
			for scope, u := range h.Usage {
				st, _ := g.strategyFor(scope)
				if st.Kind == BudgetBased {
					m := g.meter(scope, st.Budget)
					m.used = Usage{Calls: u.Calls, Bytes: u.Bytes, Files: slices.Clone(u.Files)}
				}
			}
		}
		s.mu.Unlock()
		if g == nil {
			missing = append(missing, h.Name)
		}
	}
	s.mu.Lock()
	for _, p := range st.Pending {
		p := p.clone()
		s.pending = append(s.pending, &p)
	}
	if len(s.pending) > s.maxPending {
		s.pending = slices.Delete(s.pending, 0, len(s.pending)-s.maxPending)
	}
	s.nextPending = max(s.nextPending, st.Next)
	s.mu.Unlock()
	return missing, nil
}

// reinstall makes an offered capability again for the set, as it was installed.
func (s *Set) reinstall(ctx context.Context, h Held) error {
	o, ok := s.catalog.Lookup(h.Name)
	if !ok {
		return fmt.Errorf("%w: %s is no longer offered", ErrNotHeld, h.Name)
	}
	c, err := o.New(ctx, Env{Principal: s.principal, Set: s, Self: s.self})
	if err != nil {
		return err
	}
	if c.name != h.Name || c.contract.Within(o.Manifest.Contract) != nil {
		c.Revoke(ErrBadManifest)
		return fmt.Errorf("%w: the offer %s changed", ErrBadManifest, h.Name)
	}
	copy, err := c.Derive(h.Restrictions)
	if err != nil {
		c.Revoke(err)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.held[h.Name] != nil {
		c.Revoke(ErrSetClosed)
		return ErrSetClosed
	}
	s.tools = nil
	s.held[h.Name] = &grant{cap: copy, strategy: h.Strategy, minimum: o.Manifest.Strategy.Minimum, offered: true,
		restrictions: h.Restrictions, installed: h.Installed, by: h.By, made: c}
	return nil
}
