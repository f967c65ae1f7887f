package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// enqueueSQL adds a delivery of each event first..last (arguments 1, 2) of a task (4) to each
// of its push configs, due at 3.
const enqueueSQL = `
		WITH RECURSIVE s (seq) AS (SELECT ? UNION ALL SELECT seq + 1 FROM s WHERE seq < ?)
		INSERT INTO outbox (task_id, config_id, seq, due)
		SELECT p.task_id, p.id, s.seq, ? FROM push_configs p, s WHERE p.task_id = ?`

// enqueue adds, in the writer's transaction, a delivery of each event first..last of the task
// to each of its push configs.
func (s *Store) enqueue(ctx context.Context, tx *sql.Tx, id a2a.TaskID, first, last, now int64) error {
	_, err := tx.StmtContext(ctx, s.enqueueStmt).ExecContext(ctx, first, last, now, string(id))
	if err != nil {
		return fmt.Errorf("enqueue push deliveries: %w", err)
	}
	return nil
}

// ClaimDeliveries implements store.Store. The claim is a compare-and-set on (due, lease) in a
// write transaction, which SQLite runs one at a time, also across processes (BEGIN IMMEDIATE).
func (s *Store) ClaimDeliveries(ctx context.Context, limit int, lease time.Duration) ([]*store.Delivery, error) {
	if err := codec.CheckClaim(limit); err != nil {
		return nil, err
	}
	// Polling an empty outbox must not take the single writer: look first, on a reader.
	var one int
	now := codec.Now().UnixMicro()
	switch err := s.r.QueryRowContext(ctx, `SELECT 1 FROM outbox WHERE due <= ? AND lease <= ? LIMIT 1`, now, now).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return []*store.Delivery{}, nil
	case err != nil:
		return nil, fmt.Errorf("sqlite: claim push deliveries: %w", err)
	}
	claim := uuid.NewString()
	var out []*store.Delivery
	err := s.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see write: no cancellation inside a shared transaction
		out = []*store.Delivery{}
		now := codec.Now()
		if _, err := tx.ExecContext(ctx, `
			UPDATE outbox SET lease = ?, claim = ?, attempts = attempts + 1
			WHERE rowid IN (SELECT rowid FROM outbox WHERE due <= ? AND lease <= ? ORDER BY due, seq LIMIT ?)`,
			now.Add(lease).UnixMicro(), claim, now.UnixMicro(), now.UnixMicro(), limit); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `
			SELECT o.task_id, o.config_id, o.seq, o.attempts, t.tenant, t.principal, p.config, e.event
			FROM outbox o
			JOIN tasks t ON t.id = o.task_id
			JOIN push_configs p ON p.task_id = o.task_id AND p.id = o.config_id
			JOIN events e ON e.task_id = o.task_id AND e.seq = o.seq
			WHERE o.claim = ? ORDER BY o.due, o.seq`, claim)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d := &store.Delivery{Claim: claim}
			var task string
			var cfg, ev []byte
			if err := rows.Scan(&task, &d.ConfigID, &d.Seq, &d.Attempts, &d.Owner.Tenant, &d.Owner.Principal, &cfg, &ev); err != nil {
				return err
			}
			d.TaskID = a2a.TaskID(task)
			if d.Config, err = codec.DecodePushConfig(cfg); err != nil {
				return err
			}
			if d.Event, err = codec.DecodeEvent(ev); err != nil {
				return fmt.Errorf("task %s seq %d: %w", task, d.Seq, err)
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim push deliveries: %w", err)
	}
	return out, nil
}

// settle runs stmt (with the delivery's key and claim as its last arguments) on a claimed
// delivery: ErrConflict if the claim no longer holds.
func (s *Store) settle(ctx context.Context, what string, d *store.Delivery, stmt string, args ...any) error {
	args = append(args, string(d.TaskID), d.ConfigID, d.Seq, d.Claim)
	err := s.write(ctx, func(tx *sql.Tx) error {
		if d.Claim == "" {
			return fmt.Errorf("not claimed: %w", store.ErrConflict)
		}
		res, err := tx.ExecContext(context.WithoutCancel(ctx), stmt, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("claim lost: %w", store.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: %s delivery of task %s seq %d to %s: %w", what, d.TaskID, d.Seq, d.ConfigID, err)
	}
	return nil
}

// CompleteDelivery implements store.Store.
func (s *Store) CompleteDelivery(ctx context.Context, d *store.Delivery) error {
	return s.settle(ctx, "complete", d, `DELETE FROM outbox WHERE task_id = ? AND config_id = ? AND seq = ? AND claim = ?`)
}

// RetryDelivery implements store.Store.
func (s *Store) RetryDelivery(ctx context.Context, d *store.Delivery, delay time.Duration) error {
	return s.settle(ctx, "retry", d, `UPDATE outbox SET due = ?, lease = 0, claim = ''
		WHERE task_id = ? AND config_id = ? AND seq = ? AND claim = ?`, codec.Now().Add(delay).UnixMicro())
}

// LoadOrStore implements store.Store.
func (s *Store) LoadOrStore(ctx context.Context, name string, value []byte) ([]byte, error) {
	var got []byte
	err := s.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see write: no cancellation inside a shared transaction
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, value); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("setting %s vanished", name)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: setting %s: %w", name, err)
	}
	return got, nil
}
