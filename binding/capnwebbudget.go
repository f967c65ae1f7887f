package binding

// Memory budgets of the capnweb binding (docs/security.md, "capnweb limits and memory
// budgets"): each connection has its session's budget (capnweb Limits.MaxHeldBytes); the
// sessions of one principal share a pool, and all of them the server's. A connection that has
// not authenticated on a server that requires it is held to tight limits, in a pool of its IP
// address's inside one for all such connections, until authenticate or restore succeeds on it;
// then its limits are lifted and its bytes move to its principal's pool.
//
// Concurrency model. A poolSet's mutex guards its map of pools by key, held only to find, make
// or forget a pool. A pool lives as long as a session holds it (the map holds it weakly): the
// map's entry is removed by a cleanup once no session references the pool. Charging a pool
// takes no lock (capnweb's pools are atomics).

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"weak"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2awebcap/a2awebcap/capnweb"
)

// CapnwebBudget bounds the memory the capnweb binding's sessions hold for their peers,
// together, beside what each one holds alone (the session limits of Options.Capnweb, 64 MiB by
// default): per principal and for the whole server. It also says what a connection may do
// before it authenticates. Over a budget, the session whose charge would go over it is aborted
// with a message naming the budget; other sessions go on.
type CapnwebBudget struct {
	// Total bounds the bytes all capnweb sessions hold together.
	// Zero: DefaultCapnwebTotal (1 GiB). Negative: no bound.
	Total int64

	// PerPrincipal bounds the bytes the sessions of one principal (one IP address's, for
	// anonymous callers) hold together. Zero: DefaultCapnwebPerPrincipal (256 MiB). Negative:
	// no bound.
	PerPrincipal int64

	// Unauthenticated are the limits of a connection that has not authenticated, on a server
	// that requires it (Authenticate refused the credentials of its upgrade or batch request, or
	// it sent none), until authenticate or restore succeeds on it. Such a connection can get the
	// card and authenticate, and little else: every other call fails with UNAUTHENTICATED. The
	// sessions of such connections from one IP address hold at most 16 times
	// Unauthenticated.MaxHeldBytes together, and all of them at most a quarter of Total.
	// Zero fields: DefaultUnauthenticatedLimits'.
	Unauthenticated capnweb.Limits
}

// Defaults of CapnwebBudget.
const (
	DefaultCapnwebTotal        = 1 << 30
	DefaultCapnwebPerPrincipal = 256 << 20
)

// DefaultUnauthenticatedLimits are the limits of a capnweb connection that has not
// authenticated on a server that requires it: enough for getAgentCard and authenticate, a few
// at a time; nothing to hold large values with.
var DefaultUnauthenticatedLimits = capnweb.Limits{
	MaxMessageSize:  64 << 10,
	MaxHeldBytes:    1 << 20,
	MaxImports:      64,
	MaxExports:      64,
	MaxPendingCalls: 8,
}

// capnwebBudgets are the binding's pools and the limits it gives sessions.
type capnwebBudgets struct {
	limits     capnweb.Limits // a session's, from Options.Capnweb (defaults applied by capnweb)
	preauth    capnweb.Limits // an unauthenticated connection's
	principals *poolSet       // one pool per principal, in the total
	addresses  *poolSet       // one pool per IP address for unauthenticated connections
}

func newCapnwebBudgets(o *CapnwebBudget, session capnweb.Limits) *capnwebBudgets {
	var c CapnwebBudget
	if o != nil {
		c = *o
	}
	total := orDefault(c.Total, DefaultCapnwebTotal)
	pre := c.Unauthenticated
	d := DefaultUnauthenticatedLimits
	for _, f := range []struct{ v, d *int }{
		{&pre.MaxMessageSize, &d.MaxMessageSize}, {&pre.MaxDepth, &d.MaxDepth}, {&pre.MaxBigIntDigits, &d.MaxBigIntDigits},
		{&pre.MaxImports, &d.MaxImports}, {&pre.MaxExports, &d.MaxExports}, {&pre.MaxPendingCalls, &d.MaxPendingCalls},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if pre.MaxHeldBytes == 0 {
		pre.MaxHeldBytes = d.MaxHeldBytes
	}
	all := capnweb.NewPool("server", total, nil)
	var perAddress int64 = -1
	if pre.MaxHeldBytes > 0 {
		perAddress = 16 * pre.MaxHeldBytes
	}
	unauth := capnweb.NewPool("unauthenticated connections", max(total/4, 0), all)
	return &capnwebBudgets{
		limits:     session,
		preauth:    pre,
		principals: newPoolSet(all, orDefault(c.PerPrincipal, DefaultCapnwebPerPrincipal)),
		addresses:  newPoolSet(unauth, perAddress),
	}
}

// orDefault is v, or d for zero; negative stays negative (no bound).
func orDefault(v, d int64) int64 {
	if v == 0 {
		return d
	}
	return v
}

// preauth reports whether the connection must authenticate before anything but the card.
func (s *agentSession) preauth() bool {
	return s.b.auth != nil && s.user == nil && s.authErr != nil
}

// sessionOptions gives the capnweb session of a connection its limits and pool: tight ones in
// its address's pool before it authenticates, else its principal's.
func (b *capnwebBinding) sessionOptions(base func(*http.Request, any) *capnweb.Options, def capnweb.Options) func(*http.Request, any) *capnweb.Options {
	return func(r *http.Request, main any) *capnweb.Options {
		o := def
		if base != nil {
			if bo := base(r, main); bo != nil {
				o = *bo
			}
		}
		svc, ok := main.(*a2aService)
		if !ok {
			return &o
		}
		if svc.preauth() {
			o.Limits = b.budgets.preauth
			o.Pool = b.budgets.addresses.get("address "+hostOf(svc.remote), "ip:"+hostOf(svc.remote))
			return &o
		}
		o.Pool = b.principalPool(svc.user, svc.remote)
		return &o
	}
}

// principalPool is the pool of the principal u (the address's, for an anonymous caller).
func (b *capnwebBinding) principalPool(u *a2asrv.User, remote string) *capnweb.Pool {
	key := principalKey(withUser(context.Background(), u), remote)
	name := "address " + hostOf(remote)
	if u != nil && u.Authenticated {
		name = "principal " + u.Name
	}
	return b.budgets.principals.get(name, key)
}

// authenticated lifts the limits of the connection whose method call runs with ctx, now that
// it has authenticated as u, and moves its bytes to u's pool.
func (b *capnwebBinding) authenticated(ctx context.Context, u *a2asrv.User, remote string) {
	_ = capnweb.SetLimits(ctx, b.budgets.limits, b.principalPool(u, remote))
}

// poolSet keeps one pool per key (a principal, an address) inside a parent, for as long as a
// session holds it.
type poolSet struct {
	parent *capnweb.Pool
	limit  int64
	mu     sync.Mutex
	m      map[string]weak.Pointer[capnweb.Pool]
}

func newPoolSet(parent *capnweb.Pool, limit int64) *poolSet {
	return &poolSet{parent: parent, limit: limit, m: map[string]weak.Pointer[capnweb.Pool]{}}
}

// get returns the pool of key, named name (the peer sees the name in an abort message), making
// it if no session holds one.
func (ps *poolSet) get(name, key string) *capnweb.Pool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[key].Value(); p != nil {
		return p
	}
	p := capnweb.NewPool(name, ps.limit, ps.parent)
	w := weak.Make(p)
	ps.m[key] = w
	runtime.AddCleanup(p, func(key string) {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if ps.m[key] == w {
			delete(ps.m, key)
		}
	}, key)
	return p
}

// size returns how many pools the set keeps (tests).
func (ps *poolSet) size() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.m)
}
