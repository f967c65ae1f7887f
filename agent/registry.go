package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrIndiscernible is returned by [Registry.Register] for an agent identical to one already
// registered in rules, memory view and capabilities.
var ErrIndiscernible = errors.New("agent: indiscernible from a registered agent")

// Registry holds distinct agents: by the identity of indiscernibles, two agents alike in every
// rule, belief and capability are one agent, so the second is refused. Identity is taken at
// registration. The zero value is ready to use.
type Registry struct {
	mu    sync.Mutex // guards byID and names
	byID  map[string]string
	names map[string]string // name -> identity
}

// Register adds a, or refuses it with an error wrapping ErrIndiscernible that names the agent
// it is identical to and why.
func (r *Registry) Register(ctx context.Context, a *Agent) error {
	id, err := a.Identity(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID, r.names = map[string]string{}, map[string]string{}
	}
	if other, ok := r.byID[id]; ok {
		return fmt.Errorf("%w: %q has the same rules, memory view and capabilities as %q (identity %.12s)", ErrIndiscernible, a.Name(), other, id)
	}
	if _, ok := r.names[a.Name()]; ok {
		return fmt.Errorf("agent: the name %q is taken", a.Name())
	}
	r.byID[id] = a.Name()
	r.names[a.Name()] = id
	return nil
}

// Unregister removes the agent named name.
func (r *Registry) Unregister(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.names[name]; ok {
		delete(r.byID, id)
		delete(r.names, name)
	}
}
