package binding

// The agent's capabilities over capnweb (docs/capnweb-binding.md, "Capabilities"): a session's
// capabilities() is a typed Capabilities object through which its principal runs the loader of
// its agent instance, decides pending approvals, reads its audit log, and lends the agent a
// capability of its own — an RpcTarget with its description and declared contract — that dies
// when the client disposes of the lease or the connection ends.
//
// Concurrency: a Capabilities object and its leases are capnweb targets, called from the
// session's goroutines; the set they work on is safe for concurrent use. An object and each of
// its leases count one reference to the agent instance (refs, under mu) so that it stays
// resident while any of them lives; the last to go releases it. A lease's revocation runs once.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/capnweb"
)

// AgentCapabilities returns the capability set of the agent instance of the principal
// (tenant, user; user nil or not authenticated: the anonymous principal), keeping the instance
// loaded until release. agent.Host.Capabilities, wrapped, is one.
type AgentCapabilities func(ctx context.Context, tenant string, user *a2asrv.User) (set *capability.Set, release func(), err error)

// capabilitiesOptions are capabilities()'s options.
type capabilitiesOptions struct {
	Tenant string `json:"tenant"`
}

// Capabilities returns the Capabilities object of the session's principal.
func (s *agentSession) Capabilities(ctx context.Context, options any) (*capabilitiesObject, error) {
	if s.b.agentCaps == nil {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "this agent has no capabilities to manage")
	}
	var o capabilitiesOptions
	if err := fromWire(options, &o); err != nil {
		return nil, err
	}
	if s.authErr != nil && s.user == nil {
		return nil, s.authErr
	}
	if err := s.grant.permit("Capabilities", nil, s.user, time.Now()); err != nil {
		return nil, err
	}
	for g := s.grant; g != nil; g = g.parent {
		if g.tasks != nil {
			return nil, a2a.NewError(a2a.ErrUnauthorized, "a session limited to tasks cannot manage the agent's capabilities")
		}
	}
	if err := s.b.checkRevoked(ctx, s.grant); err != nil {
		return nil, err
	}
	capnweb.Blocking(ctx) // loading the instance reads the store
	set, release, err := s.b.agentCaps(ctx, o.Tenant, s.user)
	if err != nil {
		return nil, err
	}
	c := &capabilitiesObject{set: set, release: release, refs: 1,
		user: capability.Origin{Kind: capability.OriginUser, Name: set.Principal()}}
	return c, nil
}

// capabilitiesObject is a Capabilities capability: one principal's agent capabilities, acted on
// as that principal (the user: their requests are their approval).
type capabilitiesObject struct {
	capnweb.Target
	set     *capability.Set
	user    capability.Origin
	mu      sync.Mutex // guards refs
	refs    int        // the object and its live leases
	release func()
}

func (c *capabilitiesObject) hold() {
	c.mu.Lock()
	c.refs++
	c.mu.Unlock()
}

func (c *capabilitiesObject) drop() {
	c.mu.Lock()
	c.refs--
	last := c.refs == 0
	c.mu.Unlock()
	if last {
		c.release()
	}
}

// Dispose lets the instance go (once every lease made through the object is gone too).
func (c *capabilitiesObject) Dispose() { c.drop() }

// capErr turns a capability error into one the client may read: its text names nothing but
// what the client sent and the capability's own terms.
func capErr(err error) error {
	var ae *a2a.Error
	if err == nil || errors.As(err, &ae) || errors.Is(err, context.Canceled) {
		return err
	}
	return a2a.NewError(a2a.ErrInvalidParams, err.Error())
}

// asJSON sends v as the JSON encoding/json makes of it.
func asJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return b, err
}

// Available lists what the agent's operator offers, with manifests and default strategies.
func (c *capabilitiesObject) Available() (json.RawMessage, error) { return asJSON(c.set.Available()) }

// Installed lists what the instance holds.
func (c *capabilitiesObject) Installed() (json.RawMessage, error) { return asJSON(c.set.Installed()) }

// Pending lists the approvals waiting for the principal's decision.
func (c *capabilitiesObject) Pending() (json.RawMessage, error) {
	ps := c.set.Pending()
	if ps == nil {
		ps = []capability.Pending{}
	}
	return asJSON(ps)
}

// Show returns one offered capability's manifest and default strategy.
func (c *capabilitiesObject) Show(name string) (json.RawMessage, error) {
	for _, e := range c.set.Available() {
		if e.Manifest.Name == name {
			return asJSON(e)
		}
	}
	return nil, capErr(fmt.Errorf("%w: no capability %q is offered", capability.ErrNotHeld, name))
}

// Install installs an offered capability under strategy ("" or undefined: the operator's
// default), narrowed by restrictions.
func (c *capabilitiesObject) Install(ctx context.Context, name, strategy string, restrictions json.RawMessage) (json.RawMessage, error) {
	var r *capability.Restrictions
	if len(restrictions) > 0 && string(restrictions) != "null" {
		r = new(capability.Restrictions)
		if err := json.Unmarshal(restrictions, r); err != nil {
			return nil, invalidParams("restrictions: " + err.Error())
		}
	}
	capnweb.Blocking(ctx) // making a capability may open files or start a sandbox
	in, err := c.set.InstallOffered(ctx, name, strategy, r, c.user, "", "", nil)
	if err != nil {
		return nil, capErr(err)
	}
	return asJSON(in)
}

// Uninstall removes a capability: its calls stop at once.
func (c *capabilitiesObject) Uninstall(ctx context.Context, name string) error {
	return capErr(c.set.Uninstall(ctx, name, c.user.Name))
}

// SetStrategy sets a capability's strategy, for a session (an A2A context ID) or, with ""
// or undefined, for every session without its own.
func (c *capabilitiesObject) SetStrategy(ctx context.Context, name, strategy, session string) error {
	st, err := capability.ParseStrategy(strategy)
	if err != nil {
		return capErr(err)
	}
	return capErr(c.set.SetStrategy(ctx, name, session, st, c.user.Name))
}

// Decide approves (approve true) or refuses a pending approval, with an optional reason.
func (c *capabilitiesObject) Decide(ctx context.Context, id string, approve bool, reason string) error {
	return capErr(c.set.Decide(ctx, id, capability.Decision{Approve: approve, By: c.user.Name, Reason: reason}))
}

// auditQuery is audit()'s query.
type auditQuery struct {
	Capability string `json:"capability"`
	After      int64  `json:"after"`
	Limit      int    `json:"limit"`
}

// Audit reads the principal's own audit records, oldest first.
func (c *capabilitiesObject) Audit(ctx context.Context, query any) (json.RawMessage, error) {
	var q auditQuery
	if err := fromWire(query, &q); err != nil {
		return nil, err
	}
	capnweb.Blocking(ctx)
	recs, err := c.set.Audit(ctx, capability.AuditQuery{Capability: q.Capability, After: q.After, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	if recs == nil {
		recs = []capability.Record{}
	}
	return asJSON(recs)
}

// lendOptions are lend()'s options.
type lendOptions struct {
	// Strategy is the strategy the lent capability is held under; "" means contract (approved
	// by lending it).
	Strategy string `json:"strategy"`
}

// Lend gives the agent instance a capability of the client: target is an RpcTarget, description
// its name, description, methods (with schemas and declared effects) and contract. The agent
// holds it under options.strategy (default: contract, approved by lending it) until the client
// disposes of the returned Lease, calls its revoke(), or the connection ends.
func (c *capabilitiesObject) Lend(ctx context.Context, description json.RawMessage, target *capnweb.Stub, options any) (*lease, error) {
	if target == nil {
		return nil, invalidParams("lend takes a description and a target")
	}
	var o lendOptions
	if err := fromWire(options, &o); err != nil {
		return nil, err
	}
	d, err := capability.ParseDescription(description)
	if err != nil {
		return nil, capErr(err)
	}
	st := capability.Strategy{Kind: capability.ContractBased}
	if o.Strategy != "" {
		if st, err = capability.ParseStrategy(o.Strategy); err != nil {
			return nil, capErr(err)
		}
	}
	stub := target.Dup() // the argument is the call's: keep our own
	lent, err := capability.Remote(d, func(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
		var out json.RawMessage
		p := stub.Call(method, args)
		defer p.Release()
		if err := p.Decode(ctx, &out); err != nil {
			return nil, fmt.Errorf("the client's %s.%s: %w", d.Name, method, err)
		}
		return out, nil
	})
	if err != nil {
		stub.Release()
		return nil, capErr(err)
	}
	if err := c.set.Install(ctx, lent, capability.Grant{Strategy: st, Approved: true, By: c.user.Name}); err != nil {
		lent.Revoke(err)
		stub.Release()
		return nil, capErr(err)
	}
	l := &lease{c: c, cap: lent, stub: stub}
	c.hold()
	return l, nil
}

// lease is a Lease: the client's hold on a capability it lent. Disposing of it revokes the
// capability.
type lease struct {
	capnweb.Target
	c    *capabilitiesObject
	cap  *capability.Capability
	stub *capnweb.Stub
	once sync.Once
}

// Name is the lent capability's name, as the agent sees it.
func (l *lease) Name() string { return l.cap.Name() }

// RPCProperties serves name as a property.
func (l *lease) RPCProperties() []string { return []string{"name"} }

// Revoke revokes the lent capability: every call of it fails from now on, in every holder.
func (l *lease) Revoke(ctx context.Context) {
	l.end(context.WithoutCancel(ctx), errors.New("the client revoked it"))
}

// Dispose is called when the client lets go of the lease, or the connection ends.
func (l *lease) Dispose() { l.end(context.Background(), errors.New("the client let it go")) }

func (l *lease) end(ctx context.Context, why error) {
	l.once.Do(func() {
		l.cap.Revoke(why)
		_ = l.c.set.UninstallCapability(ctx, l.cap, l.c.user.Name)
		l.stub.Release()
		l.c.drop()
	})
}
