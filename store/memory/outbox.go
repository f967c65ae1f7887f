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

// ClaimDeliveries implements store.Store. It visits the whole outbox: the memory store is
// for tests.
func (s *Store) ClaimDeliveries(ctx context.Context, q store.ClaimQuery) ([]*store.Delivery, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if _, _, err := codec.CheckClaim(q); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	now := codec.Now()
	keyOf := func(k outKey) codec.ClaimKey {
		r := s.tasks[k.task]
		return codec.ClaimKey{Tenant: r.owner.Tenant, Principal: r.owner.Principal, Dest: r.dests[k.config]}
	}
	busy := map[codec.ClaimKey]int64{}
	var due []outKey
	for k, row := range s.outbox {
		switch {
		case row.lease.After(now):
			busy[keyOf(k)]++
		case !row.due.After(now):
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
	// As the SQL stores do: leave out what the counts fill, read a limited number of the rest.
	claimer := codec.NewClaimer(q, busy)
	fullKeys, fullOwners := claimer.Saturated()
	var cands []codec.Candidate[outKey]
	for _, k := range due {
		key := keyOf(k)
		if slices.Contains(fullKeys, key) || slices.Contains(fullOwners, s.tasks[k.task].owner) {
			continue
		}
		if cands = append(cands, codec.Candidate[outKey]{Key: key, Ref: k}); len(cands) == codec.CandidateLimit(q) {
			break
		}
	}
	out := []*store.Delivery{}
	for _, c := range codec.Pick(claimer, cands) {
		k := c.Ref
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
		row.lease, row.claim = now.Add(q.Lease), uuid.NewString()
		row.attempts++
		out = append(out, &store.Delivery{TaskID: k.task, ConfigID: k.config, Seq: k.seq, Owner: r.owner,
			Config: cfg, Destination: c.Key.Dest, Event: ev, Attempts: row.attempts, Claim: row.claim})
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
