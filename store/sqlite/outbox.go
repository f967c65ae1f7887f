package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
		INSERT INTO outbox (task_id, config_id, seq, due, tenant, principal, dest)
		SELECT p.task_id, p.id, s.seq, ?, t.tenant, t.principal, p.dest
		FROM push_configs p JOIN tasks t ON t.id = p.task_id, s WHERE p.task_id = ?`

// enqueue adds, in the writer's transaction, a delivery of each event first..last of the task
// to each of its push configs.
func (s *Store) enqueue(ctx context.Context, tx *sql.Tx, id a2a.TaskID, first, last, now int64) error {
	_, err := tx.StmtContext(ctx, s.enqueueStmt).ExecContext(ctx, first, last, now, string(id))
	if err != nil {
		return fmt.Errorf("enqueue push deliveries: %w", err)
	}
	return nil
}

// ClaimDeliveries implements store.Store. It chooses on a reader (see pickDeliveries and
// codec.Claimer), so that reading past a backlog does not hold the single writer, and then
// claims what it chose with a compare-and-set on (due, lease) in a write transaction: a
// delivery another claim took meanwhile is left out. Claims of one process are sequential
// (a Deliverer's), so the bounds hold; two processes on one file claiming at the same instant
// may each fill a bound once.
func (s *Store) ClaimDeliveries(ctx context.Context, q store.ClaimQuery) ([]*store.Delivery, error) {
	if _, _, err := codec.CheckClaim(q); err != nil {
		return nil, err
	}
	rowids, err := pickDeliveries(ctx, s.r, q, codec.Now().UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim push deliveries: %w", err)
	}
	if len(rowids) == 0 { // polling an empty outbox does not take the writer
		return []*store.Delivery{}, nil
	}
	ids, _ := json.Marshal(rowids)
	claim := uuid.NewString()
	var out []*store.Delivery
	err = s.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see write: no cancellation inside a shared transaction
		out = []*store.Delivery{}
		now := codec.Now().UnixMicro()
		if _, err := tx.ExecContext(ctx, `
			UPDATE outbox SET lease = ?, claim = ?, attempts = attempts + 1
			WHERE rowid IN (SELECT value FROM json_each(?)) AND due <= ? AND lease <= ?`,
			now+q.Lease.Microseconds(), claim, string(ids), now, now); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `
			SELECT o.task_id, o.config_id, o.seq, o.attempts, o.tenant, o.principal, p.config, o.dest, e.event
			FROM outbox o
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
		return nil, fmt.Errorf("sqlite: claim push deliveries: %w", err)
	}
	return out, nil
}

// pickDeliveries chooses the deliveries (their rowids) a claim at now takes: it counts the
// deliveries under lease (outbox_leased), reads the due ones in due order from outbox_claim,
// leaving out the owners and destinations those counts fill (the index holds what the filter
// needs, so a backlog of theirs is passed over without reading its rows: about a microsecond
// each), and lets codec.Pick choose among the first codec.CandidateLimit. Both reads are one
// transaction, one snapshot.
func pickDeliveries(ctx context.Context, db *sql.DB, q store.ClaimQuery, now int64) ([]int64, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	busy := map[codec.ClaimKey]int64{}
	rows, err := tx.QueryContext(ctx, `SELECT tenant, principal, dest, count(*) FROM outbox INDEXED BY outbox_leased
		WHERE lease > 0 AND lease > ? GROUP BY tenant, principal, dest`, now)
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
	query := strings.Builder{}
	query.WriteString(`SELECT rowid, tenant, principal, dest FROM outbox INDEXED BY outbox_claim WHERE due <= ? AND lease <= ?`)
	args := []any{now, now}
	if len(fullKeys) > 0 {
		query.WriteString(` AND (tenant, principal, dest) NOT IN (VALUES `)
		for i, k := range fullKeys {
			if i > 0 {
				query.WriteString(", ")
			}
			query.WriteString("(?, ?, ?)")
			args = append(args, k.Tenant, k.Principal, k.Dest)
		}
		query.WriteString(")")
	}
	if len(fullOwners) > 0 {
		query.WriteString(` AND (tenant, principal) NOT IN (VALUES `)
		for i, o := range fullOwners {
			if i > 0 {
				query.WriteString(", ")
			}
			query.WriteString("(?, ?)")
			args = append(args, o.Tenant, o.Principal)
		}
		query.WriteString(")")
	}
	query.WriteString(` ORDER BY due, seq LIMIT ?`)
	args = append(args, codec.CandidateLimit(q))
	rows, err = tx.QueryContext(ctx, query.String(), args...)
	if err != nil {
		return nil, err
	}
	var cands []codec.Candidate[int64]
	for rows.Next() {
		var cd codec.Candidate[int64]
		if err := rows.Scan(&cd.Ref, &cd.Key.Tenant, &cd.Key.Principal, &cd.Key.Dest); err != nil {
			rows.Close()
			return nil, err
		}
		cands = append(cands, cd)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var ids []int64
	for _, cd := range codec.Pick(c, cands) {
		ids = append(ids, cd.Ref)
	}
	return ids, nil
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
