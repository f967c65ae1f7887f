package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// ClaimDeliveries implements store.Store. Replicas claim concurrently without waiting on each
// other: FOR UPDATE SKIP LOCKED passes over the rows another claim is taking.
func (s *Store) ClaimDeliveries(ctx context.Context, limit int, lease time.Duration) ([]*store.Delivery, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckClaim(limit); err != nil {
		return nil, err
	}
	claim := uuid.NewString()
	rows, err := s.pool.Query(ctx, `
		WITH c AS (
			SELECT task_id, config_id, seq FROM outbox
			WHERE due <= statement_timestamp() AND lease <= statement_timestamp()
			ORDER BY due, seq LIMIT $1
			FOR UPDATE SKIP LOCKED
		), u AS (
			UPDATE outbox o SET lease = statement_timestamp() + $2::bigint * interval '1 microsecond',
				claim = $3, attempts = o.attempts + 1
			FROM c WHERE o.task_id = c.task_id AND o.config_id = c.config_id AND o.seq = c.seq
			RETURNING o.task_id, o.config_id, o.seq, o.attempts, o.due
		)
		SELECT u.task_id, u.config_id, u.seq, u.attempts, t.tenant, t.principal, p.config, e.event
		FROM u
		JOIN tasks t ON t.id = u.task_id
		JOIN push_configs p ON p.task_id = u.task_id AND p.id = u.config_id
		JOIN events e ON e.task_id = u.task_id AND e.seq = u.seq
		ORDER BY u.due, u.seq`, limit, lease.Microseconds(), claim)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim push deliveries: %w", err)
	}
	defer rows.Close()
	out := []*store.Delivery{}
	for rows.Next() {
		d := &store.Delivery{Claim: claim}
		var task string
		var cfg, ev []byte
		if err := rows.Scan(&task, &d.ConfigID, &d.Seq, &d.Attempts, &d.Owner.Tenant, &d.Owner.Principal, &cfg, &ev); err != nil {
			return nil, fmt.Errorf("postgres: claim push deliveries: %w", err)
		}
		d.TaskID = a2a.TaskID(task)
		if d.Config, err = codec.DecodePushConfig(cfg); err != nil {
			return nil, fmt.Errorf("postgres: claim push deliveries: %w", err)
		}
		if d.Event, err = codec.DecodeEvent(ev); err != nil {
			return nil, fmt.Errorf("postgres: claim push deliveries: task %s seq %d: %w", task, d.Seq, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim push deliveries: %w", err)
	}
	return out, nil
}

// settle runs stmt (with the delivery's key and claim as $1..$4) on a claimed delivery:
// ErrConflict if the claim no longer holds.
func (s *Store) settle(ctx context.Context, what string, d *store.Delivery, stmt string, args ...any) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	err := fmt.Errorf("not claimed: %w", store.ErrConflict)
	if d.Claim != "" {
		args = append([]any{string(d.TaskID), d.ConfigID, d.Seq, d.Claim}, args...)
		tag, xerr := s.pool.Exec(ctx, stmt, args...)
		switch {
		case xerr != nil:
			err = xerr
		case tag.RowsAffected() == 0:
			err = fmt.Errorf("claim lost: %w", store.ErrConflict)
		default:
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("postgres: %s delivery of task %s seq %d to %s: %w", what, d.TaskID, d.Seq, d.ConfigID, err)
	}
	return nil
}

// CompleteDelivery implements store.Store.
func (s *Store) CompleteDelivery(ctx context.Context, d *store.Delivery) error {
	return s.settle(ctx, "complete", d, `DELETE FROM outbox WHERE task_id = $1 AND config_id = $2 AND seq = $3 AND claim = $4`)
}

// RetryDelivery implements store.Store.
func (s *Store) RetryDelivery(ctx context.Context, d *store.Delivery, delay time.Duration) error {
	return s.settle(ctx, "retry", d, `UPDATE outbox
		SET due = statement_timestamp() + $5::bigint * interval '1 microsecond', lease = '-infinity', claim = ''
		WHERE task_id = $1 AND config_id = $2 AND seq = $3 AND claim = $4`, delay.Microseconds())
}

// LoadOrStore implements store.Store.
func (s *Store) LoadOrStore(ctx context.Context, name string, value []byte) ([]byte, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	// The INSERT either stores value or, on a conflict, returns nothing; a second statement
	// then reads what the winner stored.
	var got []byte
	err := s.pool.QueryRow(ctx, `INSERT INTO settings (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING RETURNING value`, name, value).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE name = $1`, name).Scan(&got)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: setting %s: %w", name, err)
	}
	return got, nil
}
