package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// enqueueLocked adds a delivery of every event from seq first on to each push config of the
// task. s.mu must be held for writing.
func (s *Store) enqueueLocked(id a2a.TaskID, r *record, first int64, now time.Time) {
	for seq := first; seq <= r.lastSeq(); seq++ {
		for cfg := range r.push {
			s.enqueued++
			s.outbox[outKey{id, cfg, seq}] = &outRow{order: s.enqueued, due: now}
		}
	}
}

// ClaimDeliveries implements store.Store.
func (s *Store) ClaimDeliveries(ctx context.Context, limit int, lease time.Duration) ([]*store.Delivery, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckClaim(limit); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	now := codec.Now()
	var due []outKey
	for k, row := range s.outbox {
		if !row.due.After(now) && !row.lease.After(now) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b outKey) int {
		x, y := s.outbox[a], s.outbox[b]
		if c := x.due.Compare(y.due); c != 0 {
			return c
		}
		return cmp.Compare(x.order, y.order)
	})
	out := []*store.Delivery{}
	for _, k := range due[:min(limit, len(due))] {
		r := s.tasks[k.task]
		cfg, err := codec.DecodePushConfig(r.push[k.config])
		if err != nil {
			return nil, err
		}
		ev, err := codec.DecodeEvent(r.events[k.seq-1].data)
		if err != nil {
			return nil, fmt.Errorf("claim: task %s seq %d: %w", k.task, k.seq, err)
		}
		row := s.outbox[k]
		row.lease, row.claim = now.Add(lease), uuid.NewString()
		row.attempts++
		out = append(out, &store.Delivery{TaskID: k.task, ConfigID: k.config, Seq: k.seq, Owner: r.owner,
			Config: cfg, Event: ev, Attempts: row.attempts, Claim: row.claim})
	}
	return out, nil
}

// claimed returns the outbox row d claimed, if the claim still holds. s.mu must be held.
func (s *Store) claimed(d *store.Delivery) (outKey, *outRow, error) {
	if s.closed {
		return outKey{}, nil, errClosed
	}
	k := outKey{d.TaskID, d.ConfigID, d.Seq}
	row, ok := s.outbox[k]
	if !ok || row.claim != d.Claim || d.Claim == "" {
		return k, nil, fmt.Errorf("delivery of task %s seq %d to %s: claim lost: %w", d.TaskID, d.Seq, d.ConfigID, store.ErrConflict)
	}
	return k, row, nil
}

// CompleteDelivery implements store.Store.
func (s *Store) CompleteDelivery(ctx context.Context, d *store.Delivery) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, _, err := s.claimed(d)
	if err != nil {
		return err
	}
	delete(s.outbox, k)
	return nil
}

// RetryDelivery implements store.Store.
func (s *Store) RetryDelivery(ctx context.Context, d *store.Delivery, delay time.Duration) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, row, err := s.claimed(d)
	if err != nil {
		return err
	}
	row.due, row.lease, row.claim = codec.Now().Add(delay), time.Time{}, ""
	return nil
}

// LoadOrStore implements store.Store.
func (s *Store) LoadOrStore(ctx context.Context, name string, value []byte) ([]byte, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if v, ok := s.settings[name]; ok {
		return slices.Clone(v), nil
	}
	s.settings[name] = slices.Clone(value)
	return slices.Clone(value), nil
}
