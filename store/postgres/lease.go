package postgres

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

// Leases are two columns of tasks: lease_holder, and lease_until (NULL for none), both by the
// server's clock (statement_timestamp()), so that replicas whose clocks differ agree on expiry.
// A claim is one UPDATE of rows its subquery locked FOR UPDATE SKIP LOCKED: a row another
// replica is claiming (or writing) is skipped, and under READ COMMITTED a row renewed after the
// statement's snapshot is re-checked once locked, and skipped if its lease is live again.

// leaseArgs are the lease parameters of Create and Update: the holder, and the lease time in
// microseconds (0: no lease, or leave it as it is).
func leaseArgs(t *store.Task) (string, int64) {
	if !codec.Leasing(t) {
		return "", 0
	}
	return t.Lease.Holder, max(t.LeaseTTL.Microseconds(), 1)
}

func leaseOf(holder string, until *time.Time) store.Lease {
	l := store.Lease{Holder: holder}
	if until != nil {
		l.Until = until.UTC()
	}
	return l
}

func taskIDs(ids []a2a.TaskID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// RenewLeases implements store.Store.
func (s *Store) RenewLeases(ctx context.Context, holder string, ids []a2a.TaskID, ttl time.Duration) ([]a2a.TaskID, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckRenew(ttl); err != nil {
		return nil, fmt.Errorf("postgres: renew leases: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE tasks SET lease_until = statement_timestamp() + $3::bigint * interval '1 microsecond'
		WHERE lease_holder = $1 AND lease_holder != '' AND id = ANY ($2::text[]) AND state NOT IN (`+inactiveStates+`)
		RETURNING id`, holder, taskIDs(ids), max(ttl.Microseconds(), 1))
	if err != nil {
		return nil, fmt.Errorf("postgres: renew leases: %w", err)
	}
	defer rows.Close()
	renewed := map[a2a.TaskID]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: renew leases: %w", err)
		}
		renewed[a2a.TaskID(id)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: renew leases: %w", err)
	}
	var lost []a2a.TaskID
	for _, id := range ids {
		if !renewed[id] {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// ClaimExpired implements store.Store.
func (s *Store) ClaimExpired(ctx context.Context, holder string, ttl time.Duration, limit int) ([]*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckClaimExpired(holder, ttl, limit); err != nil {
		return nil, fmt.Errorf("postgres: claim expired: %w", err)
	}
	rows, err := s.pool.Query(ctx, `
		UPDATE tasks SET version = version + 1, lease_holder = $1,
			lease_until = statement_timestamp() + $2::bigint * interval '1 microsecond'
		WHERE id IN (
			SELECT id FROM tasks
			WHERE state NOT IN (`+inactiveStates+`) AND (lease_until IS NULL OR lease_until < statement_timestamp())
			ORDER BY created, id LIMIT $3
			FOR UPDATE SKIP LOCKED)
		RETURNING `+taskColumns, holder, max(ttl.Microseconds(), 1), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim expired: %w", err)
	}
	defer rows.Close()
	out := []*store.Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: claim expired: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim expired: %w", err)
	}
	slices.SortFunc(out, func(a, b *store.Task) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Task.ID, b.Task.ID)
	})
	return out, nil
}

// ReleaseLeases implements store.Store.
func (s *Store) ReleaseLeases(ctx context.Context, holder string, ids []a2a.TaskID) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	if len(ids) == 0 || holder == "" {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE tasks SET lease_holder = '', lease_until = NULL
		WHERE lease_holder = $1 AND id = ANY ($2::text[])`, holder, taskIDs(ids)); err != nil {
		return fmt.Errorf("postgres: release leases: %w", err)
	}
	return nil
}
