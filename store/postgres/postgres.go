// Package postgres is the store.Store for several replicas of the server: PostgreSQL through
// pgx (github.com/jackc/pgx/v5, pgxpool).
//
// # Consistency
//
// Create and Update are each one SQL statement (data-modifying CTEs: the task row, its
// events and, for Update, the push deliveries they enqueue), which PostgreSQL runs as one transaction: both are written or neither. Update is
// optimistic: UPDATE … WHERE id = $1 AND version = $2; a replica that lost the race matches no
// row (under READ COMMITTED the second writer waits for the first's row lock, then re-checks
// the version) and gets store.ErrConflict, and its events are not written. Events are keyed
// (task_id, seq), so a gap or a duplicate cannot be committed.
//
// Created, Updated and event times come from the server's clock (statement_timestamp()), so
// that replicas agree on List order; they have microsecond precision.
//
// # Durability
//
// A write returns after COMMIT, which with PostgreSQL's default synchronous_commit=on means
// after the WAL was flushed to disk.
//
// # Schema
//
// Open creates the tables if missing, or migrates them (table schema_version), in one
// transaction under an advisory lock, so replicas starting together do it once. Options.Schema
// puts the tables in a schema of their own (created if missing).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2awebcap/a2awebcap/internal/pgutil"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// Options tune Open. The zero value (or nil) is the default for each field.
type Options struct {
	// Schema, if set, is the PostgreSQL schema of the store's tables: Open creates it if
	// missing, and it is the search_path of every connection. Default: the DSN's search_path
	// (normally public).
	Schema string
	// MaxConns is the size of the connection pool. Default: the DSN's pool_max_conns, else
	// pgxpool's default (the larger of 4 and the number of CPUs).
	MaxConns int32
}

// Store is the PostgreSQL store. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

// Open connects to the database of dsn (a postgres:// URL or key=value string, as pgx takes)
// and creates or migrates the schema.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	pool, err := pgutil.Open(ctx, dsn, o.Schema, o.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := schema.Apply(ctx, pool, o.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return &Store{pool: pool}, nil
}

// Close implements store.Store. It waits for the connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// owned reports whether the task exists and is the owner's.
func (s *Store) owned(ctx context.Context, owner store.Owner, id a2a.TaskID) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND tenant = $2 AND principal = $3)`,
		string(id), owner.Tenant, owner.Principal).Scan(&ok)
	return ok, err
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, t *store.Task, events []a2a.Event) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	data, encoded, err := codec.Encode(t, events)
	if err != nil {
		return err
	}
	cfgIDs, cfgs, err := codec.EncodePushConfigs(t)
	if err != nil {
		return err
	}
	dests := make([]string, len(cfgIDs))
	for i := range dests {
		dests[i] = codec.Destination(t.PushConfigs[i].URL)
	}
	holder, ttl := leaseArgs(t)
	// One statement, so one transaction: the task, its events, its push configs and their
	// deliveries, or nothing.
	var (
		created time.Time
		n       int
		until   *time.Time
	)
	err = s.pool.QueryRow(ctx, `
		WITH t AS (
			INSERT INTO tasks (id, tenant, principal, context_id, state, version, last_seq, created, updated, task,
				lease_holder, lease_until)
			VALUES ($1, $2, $3, $4, $5, 1, $6::bigint, statement_timestamp(), statement_timestamp(), $7,
				$12, CASE WHEN $13::bigint > 0 THEN statement_timestamp() + $13::bigint * interval '1 microsecond' END)
			ON CONFLICT (id) DO NOTHING
			RETURNING id, created, lease_until
		), e AS (
			INSERT INTO events (task_id, seq, time, event)
			SELECT t.id, x.ord, t.created, x.ev FROM t, unnest($8::json[]) WITH ORDINALITY AS x (ev, ord)
		), p AS (
			INSERT INTO push_configs (task_id, id, config, dest)
			SELECT DISTINCT ON (x.id) t.id, x.id, x.cfg, x.dest FROM t, unnest($9::text[], $10::json[], $11::text[]) WITH ORDINALITY AS x (id, cfg, dest, ord)
			ORDER BY x.id, x.ord DESC
			RETURNING task_id, id, dest
		), o AS (
			INSERT INTO outbox (task_id, config_id, seq, due, tenant, principal, dest)
			SELECT p.task_id, p.id, x.ord, t.created, $2, $3, p.dest FROM t JOIN p ON p.task_id = t.id, generate_series(1, $6::bigint) AS x (ord)
		)
		SELECT count(*), coalesce(max(created), statement_timestamp()), max(lease_until) FROM t`,
		string(t.Task.ID), t.Owner.Tenant, t.Owner.Principal, t.Task.ContextID, string(t.Task.Status.State),
		len(encoded), data, encoded, cfgIDs, cfgs, dests, holder, ttl).Scan(&n, &created, &until)
	if err != nil {
		return fmt.Errorf("postgres: create task %s: %w", t.Task.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: create task %s: %w", t.Task.ID, store.ErrExists)
	}
	created = created.UTC()
	t.Version, t.LastSeq, t.Created, t.Updated = 1, int64(len(encoded)), created, created
	t.Lease = leaseOf(holder, until)
	return nil
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, t *store.Task, events []a2a.Event) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	data, encoded, err := codec.Encode(t, events)
	if err != nil {
		return err
	}
	// One statement, so one transaction: the new task row and its events, or nothing. The
	// version in the WHERE clause is the optimistic lock.
	holder, ttl := leaseArgs(t)
	var (
		lastSeq int64
		updated time.Time
		until   *time.Time
	)
	err = s.pool.QueryRow(ctx, `
		WITH u AS (
			UPDATE tasks SET context_id = $4, state = $5, task = $6, version = version + 1,
				last_seq = last_seq + $7::bigint, updated = statement_timestamp(),
				lease_holder = CASE WHEN $11::bigint > 0 THEN $10 ELSE lease_holder END,
				lease_until = CASE WHEN $11::bigint > 0 THEN statement_timestamp() + $11::bigint * interval '1 microsecond' ELSE lease_until END
			WHERE id = $1 AND tenant = $2 AND principal = $3 AND version = $8
			RETURNING id, last_seq, updated, lease_holder, lease_until
		), e AS (
			INSERT INTO events (task_id, seq, time, event)
			SELECT u.id, u.last_seq - $7::bigint + x.ord, u.updated, x.ev
			FROM u, unnest($9::json[]) WITH ORDINALITY AS x (ev, ord)
		), o AS (
			INSERT INTO outbox (task_id, config_id, seq, due, tenant, principal, dest)
			SELECT p.task_id, p.id, u.last_seq - $7::bigint + x.ord, u.updated, $2, $3, p.dest
			FROM u JOIN push_configs p ON p.task_id = u.id, generate_series(1, $7::bigint) AS x (ord)
		)
		SELECT last_seq, updated, lease_holder, lease_until FROM u`,
		string(t.Task.ID), t.Owner.Tenant, t.Owner.Principal, t.Task.ContextID, string(t.Task.Status.State),
		data, len(encoded), t.Version, encoded, holder, ttl).Scan(&lastSeq, &updated, &holder, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		// Tasks are never deleted nor change owner, so this answer is still right.
		ok, err := s.owned(ctx, t.Owner, t.Task.ID)
		switch {
		case err != nil:
			return fmt.Errorf("postgres: update task %s: %w", t.Task.ID, err)
		case !ok:
			return fmt.Errorf("postgres: update task %s: %w", t.Task.ID, store.ErrNotFound)
		}
		return fmt.Errorf("postgres: update task %s at version %d: %w", t.Task.ID, t.Version, store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("postgres: update task %s: %w", t.Task.ID, err)
	}
	t.Version++
	t.LastSeq, t.Updated, t.Lease = lastSeq, updated.UTC(), leaseOf(holder, until)
	return nil
}

const taskColumns = `id, tenant, principal, version, last_seq, created, updated, task, lease_holder, lease_until`

func scanTask(row pgx.Row, extra ...any) (*store.Task, error) {
	var (
		t      store.Task
		id     string
		data   []byte
		holder string
		until  *time.Time
	)
	dest := append([]any{&id, &t.Owner.Tenant, &t.Owner.Principal, &t.Version, &t.LastSeq, &t.Created, &t.Updated, &data,
		&holder, &until}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	task, err := codec.DecodeTask(data)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	t.Task, t.Created, t.Updated, t.Lease = task, t.Created.UTC(), t.Updated.UTC(), leaseOf(holder, until)
	return &t, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, owner store.Owner, id a2a.TaskID) (*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = $1 AND tenant = $2 AND principal = $3`,
		string(id), owner.Tenant, owner.Principal))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get task %s: %w", id, err)
	}
	return t, nil
}

// args collects the parameters of a query built piece by piece.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, owner store.Owner, q store.ListQuery) (*store.ListResult, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	size, err := codec.PageSize(q)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	cursor, err := codec.DecodeToken(q.PageToken)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	var a args
	where := []string{"tenant = " + a.add(owner.Tenant), "principal = " + a.add(owner.Principal)}
	if q.ContextID != "" {
		where = append(where, "context_id = "+a.add(q.ContextID))
	}
	if q.State != "" {
		where = append(where, "state = "+a.add(string(q.State)))
	}
	if !q.UpdatedAfter.IsZero() {
		// Stored times are whole microseconds: after t means at or after the next one.
		next := time.UnixMicro(q.UpdatedAfter.Truncate(time.Microsecond).UnixMicro() + 1)
		where = append(where, "updated >= "+a.add(next))
	}
	filter := strings.Join(where, " AND ")
	page := filter
	if cursor != nil {
		u, id := a.add(cursor.Updated), a.add(string(cursor.ID))
		page += fmt.Sprintf(" AND (updated < %s OR (updated = %s AND id > %s))", u, u, id)
	}
	// One statement, one snapshot: the page and the total that goes with it.
	query := `SELECT ` + taskColumns + `, (SELECT count(*) FROM tasks WHERE ` + filter + `)
		FROM tasks WHERE ` + page + ` ORDER BY updated DESC, id LIMIT ` + a.add(size+1)
	rows, err := s.pool.Query(ctx, query, a...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	defer rows.Close()
	res := &store.ListResult{Tasks: make([]*store.Task, 0, size)}
	total := int64(-1)
	for rows.Next() {
		t, err := scanTask(rows, &total)
		if err != nil {
			return nil, fmt.Errorf("postgres: list: %w", err)
		}
		res.Tasks = append(res.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	if total < 0 { // an empty page: count on its own
		n := len(where) // the filter's parameters come first
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE `+filter, a[:n]...).Scan(&total); err != nil {
			return nil, fmt.Errorf("postgres: list: %w", err)
		}
	}
	res.TotalSize = int(total)
	if len(res.Tasks) > size {
		res.Tasks = res.Tasks[:size]
		last := res.Tasks[size-1]
		res.NextPageToken = codec.EncodeToken(codec.Cursor{Updated: last.Updated, ID: last.Task.ID})
	}
	return res, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, owner store.Owner, id a2a.TaskID, afterSeq int64, limit int) ([]store.Event, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckLimit(limit); err != nil {
		return nil, fmt.Errorf("postgres: events of task %s: %w", id, err)
	}
	var lim *int64 // NULL: no limit
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	rows, err := s.pool.Query(ctx, `
		SELECT e.seq, e.time, e.event FROM tasks t JOIN events e ON e.task_id = t.id
		WHERE t.id = $1 AND t.tenant = $2 AND t.principal = $3 AND e.seq > $4
		ORDER BY e.seq LIMIT $5`,
		string(id), owner.Tenant, owner.Principal, afterSeq, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: events of task %s: %w", id, err)
	}
	defer rows.Close()
	out := []store.Event{}
	for rows.Next() {
		var (
			e    = store.Event{TaskID: id}
			data []byte
		)
		if err := rows.Scan(&e.Seq, &e.Time, &data); err != nil {
			return nil, fmt.Errorf("postgres: events of task %s: %w", id, err)
		}
		if e.Event, err = codec.DecodeEvent(data); err != nil {
			return nil, fmt.Errorf("postgres: event %d of task %s: %w", e.Seq, id, err)
		}
		e.Time = e.Time.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: events of task %s: %w", id, err)
	}
	if len(out) == 0 { // no events, or no task? Tasks are never deleted, so asking now is safe.
		if ok, err := s.owned(ctx, owner, id); err != nil {
			return nil, fmt.Errorf("postgres: events of task %s: %w", id, err)
		} else if !ok {
			return nil, fmt.Errorf("postgres: events of task %s: %w", id, store.ErrNotFound)
		}
	}
	return out, nil
}

// Active implements store.Store.
func (s *Store) Active(ctx context.Context) ([]*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+taskColumns+` FROM tasks
		WHERE state NOT IN (`+inactiveStates+`) ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: active tasks: %w", err)
	}
	defer rows.Close()
	out := []*store.Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: active tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: active tasks: %w", err)
	}
	return out, nil
}

// PutPushConfig implements store.Store.
func (s *Store) PutPushConfig(ctx context.Context, owner store.Owner, cfg *a2a.PushConfig, lim store.PushLimits) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	if err := codec.CheckPushConfig(cfg); err != nil {
		return err
	}
	data, err := codec.EncodePushConfig(cfg)
	if err != nil {
		return err
	}
	// One transaction: the config, the destination of its pending deliveries (a replaced
	// config may send elsewhere), and, with limits, their check.
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if lim.PerTask > 0 || lim.PerOwner > 0 {
			// The owner's creations take turns (an advisory lock on the owner, for the
			// transaction), so that two of them, also on two replicas, cannot both see room
			// for one.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('a2awebcap/push-configs'), hashtext($1 || '/' || $2))`,
				owner.Tenant, owner.Principal); err != nil {
				return err
			}
			var perTask, exists int
			if err := tx.QueryRow(ctx, `
				SELECT count(*), count(*) FILTER (WHERE p.id = $4) FROM tasks t JOIN push_configs p ON p.task_id = t.id
				WHERE t.id = $1 AND t.tenant = $2 AND t.principal = $3`,
				string(cfg.TaskID), owner.Tenant, owner.Principal, cfg.ID).Scan(&perTask, &exists); err != nil {
				return err
			}
			if exists == 0 {
				perOwner := 0
				if lim.PerOwner > 0 {
					var err error
					if perOwner, err = countPushConfigs(ctx, tx, owner); err != nil {
						return err
					}
				}
				if err := codec.CheckPushLimits(lim, perTask, perOwner); err != nil {
					return err
				}
			}
		}
		dest := codec.Destination(cfg.URL)
		tag, err := tx.Exec(ctx, `
			INSERT INTO push_configs (task_id, id, config, dest)
			SELECT id, $2, $3, $6 FROM tasks WHERE id = $1 AND tenant = $4 AND principal = $5
			ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config, dest = excluded.dest`,
			string(cfg.TaskID), cfg.ID, data, owner.Tenant, owner.Principal, dest)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		_, err = tx.Exec(ctx, `UPDATE outbox SET dest = $3 WHERE task_id = $1 AND config_id = $2 AND dest <> $3`,
			string(cfg.TaskID), cfg.ID, dest)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: put push config %s of task %s: %w", cfg.ID, cfg.TaskID, err)
	}
	return nil
}

// liveStates lists, as SQL, codec.LiveStates: the states whose tasks' push configs
// PushLimits.PerOwner counts. An IN list lets the count seek the owner's live tasks in
// tasks_owner_state instead of reading all the owner's tasks.
var liveStates = codec.SQLList(codec.LiveStates)

// countPushConfigs counts the push configs of the owner's live tasks.
func countPushConfigs(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, owner store.Owner) (int, error) {
	var n int
	err := q.QueryRow(ctx, `
		SELECT count(*) FROM tasks t JOIN push_configs p ON p.task_id = t.id
		WHERE t.tenant = $1 AND t.principal = $2 AND t.state IN (`+liveStates+`)`,
		owner.Tenant, owner.Principal).Scan(&n)
	return n, err
}

// CountPushConfigs implements store.Store.
func (s *Store) CountPushConfigs(ctx context.Context, owner store.Owner) (int, error) {
	if err := codec.Live(ctx); err != nil {
		return 0, err
	}
	n, err := countPushConfigs(ctx, s.pool, owner)
	if err != nil {
		return 0, fmt.Errorf("postgres: count push configs: %w", err)
	}
	return n, nil
}

// GetPushConfig implements store.Store.
func (s *Store) GetPushConfig(ctx context.Context, owner store.Owner, task a2a.TaskID, id string) (*a2a.PushConfig, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	var data []byte
	err := s.pool.QueryRow(ctx, `
		SELECT p.config FROM tasks t JOIN push_configs p ON p.task_id = t.id
		WHERE t.id = $1 AND t.tenant = $2 AND t.principal = $3 AND p.id = $4`,
		string(task), owner.Tenant, owner.Principal, id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get push config %s of task %s: %w", id, task, err)
	}
	return codec.DecodePushConfig(data)
}

// ListPushConfigs implements store.Store.
func (s *Store) ListPushConfigs(ctx context.Context, owner store.Owner, task a2a.TaskID, q store.PushConfigQuery) (*store.PushConfigPage, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	size, after, err := codec.PushPage(q)
	if err != nil {
		return nil, err
	}
	// The LEFT JOIN gives one row with a NULL config for an owned task without configs (after
	// the token), and no row for a task that is not the owner's.
	rows, err := s.pool.Query(ctx, `
		SELECT p.config FROM tasks t LEFT JOIN push_configs p ON p.task_id = t.id AND p.id > $4
		WHERE t.id = $1 AND t.tenant = $2 AND t.principal = $3 ORDER BY p.id LIMIT $5`,
		string(task), owner.Tenant, owner.Principal, after, size+1)
	if err != nil {
		return nil, fmt.Errorf("postgres: list push configs of task %s: %w", task, err)
	}
	defer rows.Close()
	out, found := []*a2a.PushConfig{}, false
	for rows.Next() {
		found = true
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("postgres: list push configs of task %s: %w", task, err)
		}
		if data == nil {
			continue
		}
		cfg, err := codec.DecodePushConfig(data)
		if err != nil {
			return nil, fmt.Errorf("postgres: list push configs of task %s: %w", task, err)
		}
		out = append(out, cfg)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list push configs of task %s: %w", task, err)
	}
	if !found {
		return nil, fmt.Errorf("postgres: list push configs of task %s: %w", task, store.ErrNotFound)
	}
	return codec.PushPageOf(out, size), nil
}

// DeletePushConfig implements store.Store.
func (s *Store) DeletePushConfig(ctx context.Context, owner store.Owner, task a2a.TaskID, id string) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM push_configs p USING tasks t
		WHERE p.task_id = $1 AND p.id = $2 AND t.id = p.task_id AND t.tenant = $3 AND t.principal = $4`,
		string(task), id, owner.Tenant, owner.Principal)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: delete push config %s of task %s: %w", id, task, err)
	}
	return nil
}
