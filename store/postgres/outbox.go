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

// ClaimDeliveries implements store.Store. Claims take turns (a transaction-scoped advisory
// lock, across replicas), so that each counts the leases of the ones before against the
// bounds; one claim is a few statements in one transaction, at one time (now()). See
// codec.Claimer for how it chooses.
func (s *Store) ClaimDeliveries(ctx context.Context, q store.ClaimQuery) ([]*store.Delivery, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if _, _, err := codec.CheckClaim(q); err != nil {
		return nil, err
	}
	claim := uuid.NewString()
	out := []*store.Delivery{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Polling an empty outbox takes no lock.
		var due bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE due <= now() AND lease <= now())`).Scan(&due); err != nil || !due {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('a2awebcap/claim'))`); err != nil {
			return err
		}
		picked, err := pickDeliveries(ctx, tx, q)
		if err != nil || len(picked) == 0 {
			return err
		}
		var tasks, configs []string
		var seqs []int64
		for _, p := range picked {
			tasks, configs, seqs = append(tasks, p.task), append(configs, p.config), append(seqs, p.seq)
		}
		rows, err := tx.Query(ctx, `
			WITH u AS (
				UPDATE outbox o SET lease = now() + $4::bigint * interval '1 microsecond', claim = $5, attempts = o.attempts + 1
				FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x (task_id, config_id, seq)
				WHERE o.task_id = x.task_id AND o.config_id = x.config_id AND o.seq = x.seq
					AND o.due <= now() AND o.lease <= now()
				RETURNING o.task_id, o.config_id, o.seq, o.attempts, o.due, o.tenant, o.principal, o.dest
			)
			SELECT u.task_id, u.config_id, u.seq, u.attempts, u.tenant, u.principal, p.config, u.dest, e.event
			FROM u
			JOIN push_configs p ON p.task_id = u.task_id AND p.id = u.config_id
			JOIN events e ON e.task_id = u.task_id AND e.seq = u.seq
			ORDER BY u.due, u.seq`, tasks, configs, seqs, q.Lease.Microseconds(), claim)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d := &store.Delivery{Claim: claim}
			var task string
			var cfg, ev []byte
			if err := rows.Scan(&task, &d.ConfigID, &d.Seq, &d.Attempts, &d.Owner.Tenant, &d.Owner.Principal, &cfg, &d.Destination, &ev); err != nil {
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
		return nil, fmt.Errorf("postgres: claim push deliveries: %w", err)
	}
	return out, nil
}

// outKey identifies a delivery.
type outKey struct {
	task, config string
	seq          int64
}

// pickDeliveries chooses the deliveries a claim takes: it counts the deliveries under lease
// (outbox_leased), reads the due ones in due order from outbox_claim, leaving out the owners
// and destinations those counts fill (the index holds what the filter needs, so a backlog of
// theirs is passed over without reading its rows), and lets codec.Pick choose among the first
// codec.CandidateLimit.
func pickDeliveries(ctx context.Context, tx pgx.Tx, q store.ClaimQuery) ([]outKey, error) {
	busy := map[codec.ClaimKey]int64{}
	rows, err := tx.Query(ctx, `SELECT tenant, principal, dest, count(*) FROM outbox
		WHERE lease > '-infinity' AND lease > now() GROUP BY tenant, principal, dest`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k codec.ClaimKey
		var n int64
		if err := rows.Scan(&k.Tenant, &k.Principal, &k.Dest, &n); err != nil {
			rows.Close()
			return nil, err
		}
		busy[k] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	c := codec.NewClaimer(q, busy)
	fullKeys, fullOwners := c.Saturated()
	var kt, kp, kd, ot, op []string
	for _, k := range fullKeys {
		kt, kp, kd = append(kt, k.Tenant), append(kp, k.Principal), append(kd, k.Dest)
	}
	for _, o := range fullOwners {
		ot, op = append(ot, o.Tenant), append(op, o.Principal)
	}
	rows, err = tx.Query(ctx, `
		SELECT task_id, config_id, seq, tenant, principal, dest FROM outbox
		WHERE due <= now() AND lease <= now()
			AND (tenant, principal, dest) NOT IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
			AND (tenant, principal) NOT IN (SELECT * FROM unnest($4::text[], $5::text[]))
		ORDER BY due, seq LIMIT $6`, kt, kp, kd, ot, op, codec.CandidateLimit(q))
	if err != nil {
		return nil, err
	}
	var cands []codec.Candidate[outKey]
	for rows.Next() {
		var cd codec.Candidate[outKey]
		if err := rows.Scan(&cd.Ref.task, &cd.Ref.config, &cd.Ref.seq, &cd.Key.Tenant, &cd.Key.Principal, &cd.Key.Dest); err != nil {
			rows.Close()
			return nil, err
		}
		cands = append(cands, cd)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []outKey
	for _, cd := range codec.Pick(c, cands) {
		out = append(out, cd.Ref)
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
