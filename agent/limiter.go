package agent

// Concurrency model: Limiter.mu guards every gate. A slot freed goes straight to the first
// waiter (FIFO, no barging); a waiter that gives up removes itself, or, if it was granted the
// slot meanwhile, passes it on. The queued callback runs outside the lock.

import (
	"context"
	"slices"
	"sync"
)

// Limiter bounds concurrent model calls: in all (per server, when every host of a server
// shares it) and per principal. Calls beyond a bound wait in first-come order, and the turn
// that waits says so (an [EntryQueued] entry; a "queued" working status over A2A).
type Limiter struct {
	mu           sync.Mutex
	server       *gate
	perPrincipal int
	principals   map[Principal]*gate
}

type gate struct {
	bound, used int
	waiters     []*waiter
	refs        int // acquirers between finding the gate and taking or queuing
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

// NewLimiter bounds model calls to server at once in all and perPrincipal at once for each
// principal; zero means no bound at that level.
func NewLimiter(server, perPrincipal int) *Limiter {
	l := &Limiter{perPrincipal: perPrincipal, principals: map[Principal]*gate{}}
	if server > 0 {
		l.server = &gate{bound: server}
	}
	return l
}

// acquire waits for a slot for p at both levels; queued is told when it has to wait, with
// the level ("principal" or "server"), how many wait before it, and the bound.
func (l *Limiter) acquire(ctx context.Context, p Principal, queued func(scope string, ahead, bound int)) (func(), error) {
	if l == nil {
		return func() {}, nil
	}
	var pg *gate
	if l.perPrincipal > 0 {
		l.mu.Lock()
		pg = l.principals[p]
		if pg == nil {
			pg = &gate{bound: l.perPrincipal}
			l.principals[p] = pg
		}
		pg.refs++ // so that free does not drop it before take
		l.mu.Unlock()
	}
	relP, err := l.take(ctx, pg, p, "principal", queued)
	if err != nil {
		return nil, err
	}
	relS, err := l.take(ctx, l.server, p, "server", queued)
	if err != nil {
		relP()
		return nil, err
	}
	return func() { relS(); relP() }, nil
}

func (l *Limiter) take(ctx context.Context, g *gate, p Principal, scope string, queued func(string, int, int)) (func(), error) {
	if g == nil {
		return func() {}, nil
	}
	release := func() { l.free(g, p) }
	l.mu.Lock()
	if g != l.server {
		g.refs--
	}
	if g.used < g.bound && len(g.waiters) == 0 {
		g.used++
		l.mu.Unlock()
		return release, nil
	}
	w := &waiter{ready: make(chan struct{})}
	ahead := len(g.waiters)
	g.waiters = append(g.waiters, w)
	l.mu.Unlock()
	if queued != nil {
		queued(scope, ahead, g.bound)
	}
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if w.granted {
		l.mu.Unlock()
		release()
	} else {
		g.waiters = slices.DeleteFunc(g.waiters, func(x *waiter) bool { return x == w })
		l.mu.Unlock()
	}
	return nil, context.Cause(ctx)
}

// free gives g's slot to its first waiter, or frees it.
func (l *Limiter) free(g *gate, p Principal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(g.waiters) > 0 {
		w := g.waiters[0]
		g.waiters = g.waiters[1:]
		w.granted = true
		close(w.ready)
		return
	}
	g.used--
	if g != l.server && g.used == 0 && g.refs == 0 && l.principals[p] == g {
		delete(l.principals, p) // an idle principal costs nothing
	}
}
