package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// RenewLeases implements store.Store.
func (s *Store) RenewLeases(ctx context.Context, holder string, ids []a2a.TaskID, ttl time.Duration) ([]a2a.TaskID, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckRenew(ttl); err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	until := codec.LeaseEnd(codec.Now(), ttl)
	var lost []a2a.TaskID
	for _, id := range ids {
		r := s.tasks[id]
		if holder == "" || r == nil || r.lease.Holder != holder || !codec.IsActive(r.state) {
			lost = append(lost, id)
			continue
		}
		r.lease.Until = until
	}
	return lost, nil
}

// ClaimExpired implements store.Store.
func (s *Store) ClaimExpired(ctx context.Context, holder string, ttl time.Duration, limit int) ([]*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckClaimExpired(holder, ttl, limit); err != nil {
		return nil, fmt.Errorf("claim expired: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	now := codec.Now()
	type match struct {
		id a2a.TaskID
		r  *record
	}
	var due []match
	for id, r := range s.tasks {
		if codec.IsActive(r.state) && r.lease.Until.Before(now) {
			due = append(due, match{id, r})
		}
	}
	slices.SortFunc(due, func(a, b match) int {
		if c := a.r.created.Compare(b.r.created); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := []*store.Task{}
	for _, m := range due[:min(limit, len(due))] {
		m.r.version++
		m.r.lease = store.Lease{Holder: holder, Until: codec.LeaseEnd(now, ttl)}
		t, err := m.r.toTask()
		if err != nil {
			return nil, fmt.Errorf("claim expired: task %s: %w", m.id, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// ReleaseLeases implements store.Store.
func (s *Store) ReleaseLeases(ctx context.Context, holder string, ids []a2a.TaskID) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	for _, id := range ids {
		if r := s.tasks[id]; r != nil && holder != "" && r.lease.Holder == holder {
			r.lease = store.Lease{}
		}
	}
	return nil
}
