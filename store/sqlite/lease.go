package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// Leases are two columns of tasks (lease_holder, lease_until: Unix µs, 0 for none), changed in
// write transactions, which SQLite runs one at a time, also across processes on the file: a
// claim is the compare-and-set "active and expired" of one UPDATE.

// leaseMicros is the stored form of a lease's expiry: 0 for none.
func leaseMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// leaseTime reads leaseMicros's form.
func leaseTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return codec.FromMicros(us)
}

// idList is ids as a JSON array, for json_each.
func idList(ids []a2a.TaskID) (string, error) {
	b, err := json.Marshal(ids)
	return string(b), err
}

// RenewLeases implements store.Store.
func (s *Store) RenewLeases(ctx context.Context, holder string, ids []a2a.TaskID, ttl time.Duration) ([]a2a.TaskID, error) {
	if err := codec.CheckRenew(ttl); err != nil {
		return nil, fmt.Errorf("sqlite: renew leases: %w", err)
	}
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	list, err := idList(ids)
	if err != nil {
		return nil, fmt.Errorf("sqlite: renew leases: %w", err)
	}
	renewed := map[a2a.TaskID]bool{}
	err = s.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx)
		clear(renewed)
		rows, err := tx.QueryContext(ctx, `UPDATE tasks SET lease_until = ?
			WHERE lease_holder = ? AND lease_holder != '' AND id IN (SELECT value FROM json_each(?))
				AND state NOT IN (`+inactiveStates+`)
			RETURNING id`, codec.LeaseEnd(codec.Now(), ttl).UnixMicro(), holder, list)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			renewed[a2a.TaskID(id)] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: renew leases: %w", err)
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
	if err := codec.CheckClaimExpired(holder, ttl, limit); err != nil {
		return nil, fmt.Errorf("sqlite: claim expired: %w", err)
	}
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	// Nothing expired (the usual answer of a periodic recovery) must not take the single
	// writer: look first, on a reader.
	var due bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tasks
		WHERE state NOT IN (`+inactiveStates+`) AND lease_until < ?)`, codec.Now().UnixMicro()).Scan(&due); err != nil {
		return nil, fmt.Errorf("sqlite: claim expired: %w", err)
	}
	if !due {
		return []*store.Task{}, nil
	}
	var out []*store.Task
	err := s.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx)
		out = []*store.Task{}
		now := codec.Now()
		rows, err := tx.QueryContext(ctx, `UPDATE tasks SET version = version + 1, lease_holder = ?, lease_until = ?
			WHERE id IN (SELECT id FROM tasks WHERE state NOT IN (`+inactiveStates+`) AND lease_until < ?
				ORDER BY created, id LIMIT ?)
			RETURNING `+taskColumns, holder, codec.LeaseEnd(now, ttl).UnixMicro(), now.UnixMicro(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanTask(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim expired: %w", err)
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
	list, err := idList(ids)
	if err != nil {
		return fmt.Errorf("sqlite: release leases: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(context.WithoutCancel(ctx), `UPDATE tasks SET lease_holder = '', lease_until = 0
			WHERE lease_holder = ? AND id IN (SELECT value FROM json_each(?))`, holder, list)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: release leases: %w", err)
	}
	return nil
}
