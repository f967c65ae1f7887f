package capability

// The catalog: what the operator offers, each capability with its manifest, its default
// strategy and how to make it for one holder.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/a2awebcap/a2awebcap/internal/strictjson"
)

// Manifest describes a capability before it is installed: what the loader lists and shows,
// and a package's manifest.json.
type Manifest struct {
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	Description string   `json:"description"`
	Contract    Contract `json:"contract"`
	// Strategy names the loosest strategy the capability may be held under, and the one its
	// author recommends.
	Strategy Strategies `json:"strategy"`
	// Methods, with their schemas; a package lists them so they can be shown before its code
	// runs.
	Methods []Method `json:"methods,omitempty"`
	// Runtime is what runs a package's source ("starlark"); "" for a capability built in.
	Runtime string `json:"runtime,omitempty"`
	// Source and Tests are a package's files of code and of tests.
	Source string `json:"source,omitempty"`
	Tests  string `json:"tests,omitempty"`
}

// Strategies are a manifest's minimum and recommended strategies.
type Strategies struct {
	Minimum     StrategyKind `json:"minimum"`
	Recommended StrategyKind `json:"recommended"`
}

// ErrBadManifest reports a manifest that cannot be offered.
var ErrBadManifest = errors.New("capability: bad manifest")

// Validate reports whether m is complete and consistent.
func (m Manifest) Validate() error {
	switch {
	case !ValidName(m.Name):
		return fmt.Errorf("%w: name %q", ErrBadManifest, m.Name)
	case m.Version == "" || len(m.Version) > 64:
		return fmt.Errorf("%w: %s: version %q", ErrBadManifest, m.Name, m.Version)
	case !m.Strategy.Minimum.Valid() || !m.Strategy.Recommended.Valid():
		return fmt.Errorf("%w: %s: strategy {minimum %q, recommended %q}", ErrBadManifest, m.Name, m.Strategy.Minimum, m.Strategy.Recommended)
	case !m.Strategy.Recommended.AtLeast(m.Strategy.Minimum):
		return fmt.Errorf("%w: %s: the recommended strategy is looser than the minimum", ErrBadManifest, m.Name)
	}
	if err := m.Contract.Validate(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadManifest, m.Name, err)
	}
	for _, p := range []string{m.Source, m.Tests} {
		if p != "" && !validPackagePath(p) {
			return fmt.Errorf("%w: %s: file %q", ErrBadManifest, m.Name, p)
		}
	}
	if len(m.Methods) > 0 { // the same checks as New's
		if _, err := New(Description{Name: m.Name, Methods: m.Methods, Contract: m.Contract}, Funcs{}); err != nil {
			return fmt.Errorf("%w: %v", ErrBadManifest, err)
		}
	}
	return nil
}

// ParseManifest reads a manifest strictly: RFC 8785-valid JSON (no duplicate keys), every key
// spelled exactly as documented and none unknown, and Validate.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if err := strictUnmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	return m, m.Validate()
}

// strictUnmarshal decodes data into v refusing duplicate keys, invalid UTF-8, keys that are
// not exactly a field's JSON name (encoding/json would match them case-insensitively) and
// unknown keys.
func strictUnmarshal(data []byte, v any) error { return strictjson.Unmarshal(data, v) }

// Env is what an offer's New knows of the holder it makes a capability for.
type Env struct {
	// Principal is the holder's principal.
	Principal string
	// Set is the holder's set.
	Set *Set
	// Self is the holder's view of itself (nil when it has none).
	Self Self
}

// Offer is a capability the operator offers.
type Offer struct {
	Manifest Manifest
	// Strategy is the operator's default strategy for it; the zero value means the manifest's
	// recommended one. It may not be looser than the manifest's minimum.
	Strategy Strategy
	// New makes the capability for one holder, at install. Its name must be the manifest's,
	// and its contract inside the manifest's. To revoke it in every holder at once, return
	// capabilities derived from one the operator keeps, and revoke that one.
	New func(ctx context.Context, env Env) (*Capability, error)
}

// defaults returns the offer's default strategy.
func (o Offer) defaults() Strategy {
	if o.Strategy.Kind == "" {
		return Strategy{Kind: o.Manifest.Strategy.Recommended}
	}
	return o.Strategy
}

// Catalog is what the operator offers to every holder. It is safe for concurrent use.
type Catalog struct {
	mu     sync.RWMutex // guards offers
	offers map[string]Offer
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog { return &Catalog{offers: map[string]Offer{}} }

// Add offers o, replacing an offer of the same name.
func (c *Catalog) Add(o Offer) error {
	if err := o.Manifest.Validate(); err != nil {
		return err
	}
	if o.New == nil {
		return fmt.Errorf("%w: %s: no New", ErrBadManifest, o.Manifest.Name)
	}
	if o.Manifest.Name == loaderName {
		return fmt.Errorf("%w: the loader is not offered, it is always held", ErrBadManifest)
	}
	if o.Manifest.Strategy.Recommended == BudgetBased && o.Strategy.Kind == "" {
		return fmt.Errorf("%w: %s: a budget strategy needs the operator's budget (Offer.Strategy)", ErrBadManifest, o.Manifest.Name)
	}
	d := o.defaults()
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadManifest, o.Manifest.Name, err)
	}
	if !d.Kind.AtLeast(o.Manifest.Strategy.Minimum) {
		return fmt.Errorf("%w: %s: default strategy %s is looser than the minimum %s", ErrBadStrategy, o.Manifest.Name, d.Kind, o.Manifest.Strategy.Minimum)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offers[o.Manifest.Name] = o
	return nil
}

// Remove withdraws the offer of name. Holders keep what they installed.
func (c *Catalog) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.offers, name)
}

// Lookup returns the offer of name.
func (c *Catalog) Lookup(name string) (Offer, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.offers[name]
	return o, ok
}

// Empty reports whether the catalog offers nothing.
func (c *Catalog) Empty() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.offers) == 0
}

// Offers lists the offers by name.
func (c *Catalog) Offers() []Offer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Offer, 0, len(c.offers))
	for _, k := range slices.Sorted(maps.Keys(c.offers)) {
		out = append(out, c.offers[k])
	}
	return out
}

// Self is an agent instance's read-only view of itself, for the self capability. The runtime
// implements it; every method returns a copy, as JSON-encodable values.
type Self interface {
	// Memory returns what the instance recalls for query, at most limit items of each kind.
	Memory(ctx context.Context, query string, limit int) (any, error)
	// Policy returns the instance's policy: its rules and axioms, and its version.
	Policy(ctx context.Context) (any, error)
	// Uses returns, for each capability name, the rules that call it; under "*", the rules
	// that may call any (a consult's model, a call whose capability is computed).
	Uses(ctx context.Context) (map[string][]string, error)
}
