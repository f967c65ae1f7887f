package capability

// The loader: the one capability every set holds from the start. It lists what the catalog
// offers, shows a contract before install, installs after approval, uninstalls and lists what
// is installed.

import (
	"context"
	"errors"
	"fmt"
)

const loaderName = "loader"

var (
	nameParams       = Object("", map[string]*Schema{"name": String("the capability's name")}, "name")
	restrictionsJSON = Object("narrow the capability: fewer methods, a narrower contract, or read-only", map[string]*Schema{
		"methods":  Array("the only methods to keep", String("")),
		"contract": contractSchema("the contract: each pattern inside the offered one"),
		"readOnly": Boolean("no writes, executes or spawns"),
	})
)

func contractSchema(desc string) *Schema {
	list := func(d string) *Schema {
		return &Schema{Type: "array", Description: d, Items: String(""), MaxItems: ptr(maxPatterns)}
	}
	return Object(desc, map[string]*Schema{
		"reads":    list("resource patterns it may read: file:notes/*"),
		"writes":   list("resource patterns it may write"),
		"executes": list("command patterns it may run"),
		"network":  list("URL patterns it may reach: https://api.example.com/*"),
		"spawns":   Boolean("whether it may create agents or capabilities"),
	})
}

func ptr[T any](v T) *T { return &v }

// newLoader makes the loader of s.
func newLoader(s *Set) *Capability {
	l := &loader{set: s}
	c, err := New(Description{Name: loaderName, Description: "Discover, install and uninstall capabilities",
		Methods: []Method{
			{Name: "available", Description: "List the capabilities on offer, with their manifests, default strategies and whether they are installed"},
			{Name: "show", Description: "Show one capability's manifest and contract before installing it", Params: nameParams},
			{Name: "install", Description: "Install a capability: the user approves its contract unless they asked for it themselves",
				Params: Object("", map[string]*Schema{
					"name":         String("the capability's name"),
					"strategy":     String("the permission strategy: pre-approved, audit-only, contract, call-by-call, or budget:calls=N,bytes=N,files=N; default: the operator's"),
					"restrictions": restrictionsJSON,
				}, "name")},
			{Name: "uninstall", Description: "Uninstall a capability: it stops working at once", Params: nameParams},
			{Name: "installed", Description: "List the capabilities installed, with their strategies, contracts and budgets spent"},
		}},
		Funcs{"available": l.available, "show": l.show, "install": l.install, "uninstall": l.uninstall, "installed": l.installed})
	if err != nil {
		panic(err) // the loader's own spec: a bug
	}
	return c
}

type loader struct{ set *Set }

// Entry is one capability on offer, as the loader lists it.
type Entry struct {
	Manifest Manifest `json:"manifest"`
	// Default is the operator's default strategy for it.
	Default   Strategy `json:"default"`
	Installed bool     `json:"installed"`
}

// Available lists the capabilities the set's catalog offers.
func (s *Set) Available() []Entry {
	var out []Entry
	for _, o := range s.catalog.Offers() {
		out = append(out, s.entry(o))
	}
	return out
}

func (s *Set) entry(o Offer) Entry {
	s.mu.Lock()
	_, installed := s.held[o.Manifest.Name]
	s.mu.Unlock()
	return Entry{Manifest: o.Manifest, Default: o.defaults(), Installed: installed}
}

func (l *loader) available(context.Context, *Call) (any, error) {
	return map[string]any{"capabilities": nonNilSlice(l.set.Available())}, nil
}

func (l *loader) show(_ context.Context, c *Call) (any, error) {
	var a struct{ Name string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	o, ok := l.set.catalog.Lookup(a.Name)
	if !ok {
		return nil, fmt.Errorf("%w: no capability %q is offered", ErrNotHeld, truncate(a.Name, 64))
	}
	return l.set.entry(o), nil
}

func (l *loader) installed(context.Context, *Call) (any, error) {
	return map[string]any{"capabilities": l.set.Installed()}, nil
}

func (l *loader) uninstall(ctx context.Context, c *Call) (any, error) {
	var a struct{ Name string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	if err := l.set.Uninstall(ctx, a.Name, decider(c.Origin)); err != nil {
		return nil, err
	}
	return map[string]any{"uninstalled": a.Name}, nil
}

// decider names who an origin's call acts for, in records.
func decider(o Origin) string {
	if trustedOrigin(o) && o.Name != "" {
		return o.Name
	}
	return o.String()
}

func (l *loader) install(ctx context.Context, c *Call) (any, error) {
	var a struct {
		Name         string
		Strategy     string
		Restrictions *Restrictions
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	return l.set.InstallOffered(ctx, a.Name, a.Strategy, a.Restrictions, c.Origin, c.Session, c.approval, c.Args)
}

// Installed is what installing returns: the capability's name, strategy and contract.
type Installed struct {
	Name     string   `json:"name"`
	Strategy Strategy `json:"strategy"`
	Contract Contract `json:"contract"`
	Approved bool     `json:"approved"`
}

// InstallOffered installs the catalog's capability name, as the loader's install does, for
// origin: under strategy (ParseStrategy's form; "" for the operator's default), narrowed by r
// (nil for none). The user (origin.Kind OriginUser) and the operator (OriginOperator) may choose
// any strategy at least as strict as the manifest's minimum, and install without being asked
// (their request is their approval); the model and rules only one at
// least as strict as the operator's default, and the user must approve the installation (an
// *ApprovalRequired; carry it out with approval set to its ID and the same args) unless the
// operator's default is pre-approved or audit-only. args identify the request for the
// approval: the loader's canonical arguments.
func (s *Set) InstallOffered(ctx context.Context, name, strategy string, r *Restrictions, origin Origin, session, approval string, args []byte) (Installed, error) {
	o, ok := s.catalog.Lookup(name)
	if !ok {
		return Installed{}, fmt.Errorf("%w: no capability %q is offered", ErrNotHeld, truncate(name, 64))
	}
	def, st := o.defaults(), o.defaults()
	if strategy != "" {
		var err error
		if st, err = ParseStrategy(strategy); err != nil {
			return Installed{}, err
		}
	}
	min := o.Manifest.Strategy.Minimum
	switch {
	case !st.Kind.AtLeast(min):
		return Installed{}, fmt.Errorf("%w: %s may not be held under %s, only %s or stricter", ErrBadStrategy, name, st.Kind, min)
	case !trustedOrigin(origin) && !st.Kind.AtLeast(def.Kind):
		return Installed{}, fmt.Errorf("%w: only the user may install %s under a strategy looser than %s", ErrBadStrategy, name, def.Kind)
	}
	var rs Restrictions
	if r != nil {
		rs = *r
	}
	shown := rs // what the user approves; methods are checked when the capability is made
	if len(o.Manifest.Methods) == 0 {
		shown.Methods = nil
	}
	contract, _, err := shown.apply(name, o.Manifest.Contract, o.Manifest.Methods)
	if err != nil {
		return Installed{}, err
	}
	trusted := trustedOrigin(origin) || def.Kind == PreApproved || def.Kind == AuditOnly
	approved, by := trustedOrigin(origin), decider(origin)
	if !trusted {
		want := Pending{Kind: PendingInstall, Capability: name, Method: "install", Args: args, Session: session}
		s.mu.Lock()
		p, err := s.approvedLocked(approval, want)
		if err == nil && p == nil {
			if s.held[name] != nil {
				err = fmt.Errorf("%w: %s", ErrInstalled, name)
			} else {
				want.Contract, want.Strategy, want.Origin = contract, st, origin
				err = s.askLocked(want)
			}
		}
		s.mu.Unlock()
		if err != nil {
			return Installed{}, err
		}
		approved, by = true, p.By
	}
	c, err := o.New(ctx, Env{Principal: s.principal, Set: s, Self: s.self})
	if err != nil {
		return Installed{}, fmt.Errorf("capability: making %s: %w", name, err)
	}
	if c.name != name {
		c.Revoke(ErrBadManifest)
		return Installed{}, fmt.Errorf("%w: the offer %s made a capability named %s", ErrBadManifest, name, c.name)
	}
	if err := c.contract.Within(o.Manifest.Contract); err != nil {
		c.Revoke(ErrBadManifest)
		return Installed{}, fmt.Errorf("%w: %s: its contract is wider than its manifest's: %v", ErrBadManifest, name, err)
	}
	if err := s.install(ctx, c, Grant{Strategy: st, Minimum: min, Approved: approved, By: by, Restrictions: rs}, true, origin); err != nil {
		c.Revoke(err)
		return Installed{}, err
	}
	return Installed{Name: name, Strategy: st, Contract: contract, Approved: approved}, nil
}

// trustedOrigin reports whether a request's origin speaks for the principal or the operator
// themselves, so that asking them would be asking them to confirm their own request.
func trustedOrigin(o Origin) bool { return o.Kind == OriginUser || o.Kind == OriginOperator }

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

var errNoSelf = errors.New("capability: this agent has no view of itself")
