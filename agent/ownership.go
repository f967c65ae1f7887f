package agent

// Instances across replicas (cluster mode, docs/cluster.md).
//
// Concurrency model. With HostOptions.Ownership, every use of an instance (acquire … release)
// is bracketed by hold … unhold of its principal's ownedKey. Host.omu guards the map of
// ownedKeys and their user counts; ownedKey.mu serializes the store calls for one principal
// (taking the lease, giving it back), so that a principal's first user takes the lease and its
// last gives it up, while other principals are served on: no store call is made under
// Host.omu or Host.mu. Lock order: ownedKey.mu, then Host.omu or Host.mu (never both).
// The renewal goroutine (renewOwned), started by NewHost and waited for by Close (Host.bg),
// renews the leases held, and closes an instance whose lease another replica took.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Ownership keeps each instance on one replica at a time when several replicas share a Store:
// a replica uses an instance — runs its turns, answers calls on it — only while it holds the
// instance's lease, and other replicas wait for it; and a replica that takes the lease after
// another held it reloads the instance from the store, so its memory is never stale against
// another replica's commits. Package cluster's Limits.Ownership (PostgreSQL) is one.
type Ownership interface {
	// Hold takes this replica's lease on key, or renews it, unless another replica holds it
	// (ok false). epoch is the lease's epoch: it changes whenever a replica takes the
	// instance after another one held it.
	Hold(ctx context.Context, key Key) (epoch int64, ok bool, err error)
	// Release gives up this replica's lease on key; the next Hold by this replica keeps the
	// epoch, unless another took it meanwhile.
	Release(ctx context.Context, key Key) error
	// Renewal is how often a held lease must be renewed (held again) to stay held.
	Renewal() time.Duration
}

// ErrBusy is returned when an instance stays in use on another replica longer than the caller
// would wait (its context ended first).
var ErrBusy = errors.New("agent: the instance is in use on another replica")

// ownedKey is this replica's hold on one principal's instance.
type ownedKey struct {
	mu     sync.Mutex // serializes Hold and Release for the principal
	users  int        // under Host.omu: acquires not released yet
	held   bool       // under mu: the lease is held
	epoch  int64      // under mu: the epoch the resident instance was loaded at, when loaded
	loaded bool
}

// hold takes p's lease for a use of its instance (waiting, within ctx, while another replica
// holds it), and drops a resident copy of the instance another replica has used since it was
// loaded. The caller calls unhold once the use is over.
func (h *Host) hold(ctx context.Context, p Principal) error {
	h.omu.Lock()
	o := h.owned[p]
	if o == nil {
		o = &ownedKey{}
		h.owned[p] = o
	}
	o.users++
	h.omu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held {
		return nil
	}
	key := Key{Agent: h.def.name, Principal: p}
	wait := 20 * time.Millisecond
	for {
		epoch, ok, err := h.opts.Ownership.Hold(ctx, key)
		if err != nil {
			h.dropUser(p, o)
			return fmt.Errorf("agent: taking the instance of %s: %w", p, err)
		}
		if ok {
			if o.loaded && epoch != o.epoch {
				// Another replica used the instance since ours was loaded: ours is stale.
				h.dropResident(p)
			}
			o.held, o.epoch, o.loaded = true, epoch, true
			return nil
		}
		select {
		case <-time.After(wait):
			wait = min(2*wait, 500*time.Millisecond)
		case <-ctx.Done():
			h.dropUser(p, o)
			return fmt.Errorf("%w: %s (%w)", ErrBusy, p, context.Cause(ctx))
		}
	}
}

// dropUser undoes hold's count of a user that got no hold.
func (h *Host) dropUser(p Principal, o *ownedKey) {
	h.omu.Lock()
	o.users--
	if o.users == 0 && !o.held && !o.loaded && h.owned[p] == o {
		delete(h.owned, p)
	}
	h.omu.Unlock()
}

// unhold ends a use of p's instance; the last one gives the lease up.
func (h *Host) unhold(p Principal) {
	h.omu.Lock()
	o := h.owned[p]
	if o == nil {
		h.omu.Unlock()
		return
	}
	o.users--
	last := o.users == 0
	h.omu.Unlock()
	if !last {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h.omu.Lock()
	still := o.users == 0
	h.omu.Unlock()
	if !still || !o.held {
		return // a new user came meanwhile, and keeps it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A release that fails leaves the lease to expire by itself: another replica waits for it
	// until then.
	_ = h.opts.Ownership.Release(ctx, Key{Agent: h.def.name, Principal: p})
	o.held = false
}

// dropResident evicts p's resident instance, which nobody here uses (its lease was not held).
func (h *Host) dropResident(p Principal) {
	h.mu.Lock()
	e := h.live[p]
	if e != nil && e.refs == 0 {
		delete(h.live, p)
	} else {
		e = nil
	}
	h.mu.Unlock()
	if e != nil {
		<-e.ready
		if e.in != nil {
			e.in.close()
		}
	}
}

// renewOwned renews the leases this replica holds until Close; an instance whose lease another
// replica took (this one could not renew it in time) is closed, its turns canceled: they would
// commit on stale memory.
func (h *Host) renewOwned() {
	defer h.bg.Done()
	tick := time.NewTicker(h.opts.Ownership.Renewal())
	defer tick.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-tick.C:
		}
		h.omu.Lock()
		var ps []Principal
		for p, o := range h.owned {
			if o.users > 0 {
				ps = append(ps, p)
			}
		}
		h.omu.Unlock()
		for _, p := range ps {
			h.renewOne(p)
		}
	}
}

func (h *Host) renewOne(p Principal) {
	h.omu.Lock()
	o := h.owned[p]
	h.omu.Unlock()
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.Ownership.Renewal())
	defer cancel()
	epoch, ok, err := h.opts.Ownership.Hold(ctx, Key{Agent: h.def.name, Principal: p})
	if err != nil || (ok && epoch == o.epoch) {
		return // renewed (or the store is unreachable: the next tick tries again)
	}
	// Lost: close the instance; the next use takes the lease again, and reloads.
	o.held, o.loaded = false, false
	h.mu.Lock()
	e := h.live[p]
	delete(h.live, p)
	h.mu.Unlock()
	if e != nil {
		// close waits for the instance's turns, whose ends take o.mu (unhold): not here.
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			<-e.ready
			if e.in != nil {
				e.in.close()
			}
		}()
	}
}
