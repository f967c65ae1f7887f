// Package sqlitestore keeps agents' observation logs, beliefs, goals, policy versions, working
// state (working memory, pending questions) and reviews (proposals held for approval) in SQLite, in tables of their own (agent_*), so they
// can share the database file of the task store (store/sqlite).
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/a2awebcap/a2awebcap/agent"
)

// migrations[i] takes the agent tables from version i to i+1; append only.
var migrations = []string{
	`
CREATE TABLE agent_observations (
	agent TEXT    NOT NULL,
	seq   INTEGER NOT NULL,
	id    TEXT    NOT NULL,
	obs   BLOB    NOT NULL,
	PRIMARY KEY (agent, seq),
	UNIQUE (agent, id)
) STRICT;
CREATE TABLE agent_beliefs (
	agent  TEXT    NOT NULL,
	id     TEXT    NOT NULL,
	ord    INTEGER NOT NULL,
	belief BLOB    NOT NULL,
	PRIMARY KEY (agent, id)
) STRICT;
`,
	// 2: policy versions (append-only) and the version in force.
	`
CREATE TABLE agent_policies (
	agent   TEXT    NOT NULL,
	version INTEGER NOT NULL,
	policy  BLOB    NOT NULL,
	PRIMARY KEY (agent, version)
) STRICT;
CREATE TABLE agent_policy_current (
	agent   TEXT    NOT NULL PRIMARY KEY,
	version INTEGER NOT NULL
) STRICT;
`,
	// 3: goals.
	`
CREATE TABLE agent_goals (
	agent TEXT    NOT NULL,
	id    TEXT    NOT NULL,
	ord   INTEGER NOT NULL,
	goal  BLOB    NOT NULL,
	PRIMARY KEY (agent, id)
) STRICT;
`,
	// 4: the working state (working memory, pending questions), replaced whole.
	`
CREATE TABLE agent_working (
	agent TEXT NOT NULL PRIMARY KEY,
	state BLOB NOT NULL
) STRICT;
`,
	// 5: proposals held for a human's approval, pending or decided.
	`
CREATE TABLE agent_reviews (
	agent  TEXT    NOT NULL,
	id     TEXT    NOT NULL,
	ord    INTEGER NOT NULL,
	review BLOB    NOT NULL,
	PRIMARY KEY (agent, id)
) STRICT;
`,
}

// Store is an agent.Store in SQLite. It is safe for concurrent use.
type Store struct {
	db *sql.DB
}

var _ agent.Store = (*Store)(nil)

var memCount atomic.Int64

// Open opens (creating it if needed) the database at path and creates or updates the agent
// tables. path ":memory:" opens a private in-memory database, for tests.
func Open(ctx context.Context, path string) (*Store, error) {
	const pragmas = "_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	var dsn string
	if path == ":memory:" {
		dsn = fmt.Sprintf("file:a2awebcap-agent-%d?mode=memory&cache=shared&%s", memCount.Add(1), pragmas)
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
		dsn = "file:" + esc.Replace(filepath.ToSlash(abs)) + "?_pragma=journal_mode(WAL)&" + pragmas
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	// One connection: SQLite has one writer, and the agent runtime writes from each agent's
	// goroutine; database/sql queues the rest.
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS agent_schema_version (version INTEGER NOT NULL) STRICT`); err != nil {
		return err
	}
	var version int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM agent_schema_version`).Scan(&version); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("agent schema version %d is newer than this program's %d", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate to agent schema version %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE agent_schema_version SET version = ?`, len(migrations)); err != nil {
		return err
	}
	return tx.Commit()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Append implements agent.Store.
func (s *Store) Append(ctx context.Context, name string, o agent.Observation) error {
	data, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM agent_observations WHERE agent = ? AND id = ?`, name, o.ID).Scan(&n); err != nil {
		return fmt.Errorf("sqlitestore: append: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%w: %s", agent.ErrDuplicateObservation, o.ID)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO agent_observations (agent, seq, id, obs)
		VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM agent_observations WHERE agent = ?), ?, ?)`, name, name, o.ID, data)
	if err != nil {
		return fmt.Errorf("sqlitestore: append: %w", err)
	}
	return nil
}

// Observations implements agent.Store.
func (s *Store) Observations(ctx context.Context, name string) ([]agent.Observation, error) {
	return query[agent.Observation](ctx, s.db, `SELECT obs FROM agent_observations WHERE agent = ? ORDER BY seq`, name)
}

// SaveBelief implements agent.Store.
func (s *Store) SaveBelief(ctx context.Context, name string, b agent.Belief) error {
	return s.upsert(ctx, `INSERT INTO agent_beliefs (agent, id, ord, belief)
		VALUES (?1, ?2, (SELECT coalesce(max(ord), 0) + 1 FROM agent_beliefs WHERE agent = ?1), ?3)
		ON CONFLICT (agent, id) DO UPDATE SET belief = excluded.belief`, name, b.ID, b)
}

// SaveGoal implements agent.Store.
func (s *Store) SaveGoal(ctx context.Context, name string, g agent.Goal) error {
	return s.upsert(ctx, `INSERT INTO agent_goals (agent, id, ord, goal)
		VALUES (?1, ?2, (SELECT coalesce(max(ord), 0) + 1 FROM agent_goals WHERE agent = ?1), ?3)
		ON CONFLICT (agent, id) DO UPDATE SET goal = excluded.goal`, name, g.ID, g)
}

// Goals implements agent.Store.
func (s *Store) Goals(ctx context.Context, name string) ([]agent.Goal, error) {
	return query[agent.Goal](ctx, s.db, `SELECT goal FROM agent_goals WHERE agent = ? ORDER BY ord`, name)
}

// SaveReview implements agent.Store.
func (s *Store) SaveReview(ctx context.Context, name string, r agent.Review) error {
	return s.upsert(ctx, `INSERT INTO agent_reviews (agent, id, ord, review)
		VALUES (?1, ?2, (SELECT coalesce(max(ord), 0) + 1 FROM agent_reviews WHERE agent = ?1), ?3)
		ON CONFLICT (agent, id) DO UPDATE SET review = excluded.review`, name, r.ID, r)
}

// Reviews implements agent.Store.
func (s *Store) Reviews(ctx context.Context, name string) ([]agent.Review, error) {
	return query[agent.Review](ctx, s.db, `SELECT review FROM agent_reviews WHERE agent = ? ORDER BY ord`, name)
}

// upsert runs q with the agent's name, an ID and v as JSON.
func (s *Store) upsert(ctx context.Context, q, name, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, q, name, id, data); err != nil {
		return fmt.Errorf("sqlitestore: save %s: %w", id, err)
	}
	return nil
}

// Beliefs implements agent.Store.
func (s *Store) Beliefs(ctx context.Context, name string) ([]agent.Belief, error) {
	return query[agent.Belief](ctx, s.db, `SELECT belief FROM agent_beliefs WHERE agent = ? ORDER BY ord`, name)
}

// SaveWorking implements agent.Store.
func (s *Store) SaveWorking(ctx context.Context, name string, w agent.WorkingState) error {
	data, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO agent_working (agent, state) VALUES (?, ?)
		ON CONFLICT (agent) DO UPDATE SET state = excluded.state`, name, data)
	if err != nil {
		return fmt.Errorf("sqlitestore: save working state: %w", err)
	}
	return nil
}

// Working implements agent.Store.
func (s *Store) Working(ctx context.Context, name string) (agent.WorkingState, error) {
	ws, err := query[agent.WorkingState](ctx, s.db, `SELECT state FROM agent_working WHERE agent = ?`, name)
	if err != nil || len(ws) == 0 {
		return agent.WorkingState{}, err
	}
	return ws[0], nil
}

// AddPolicy implements agent.Store.
func (s *Store) AddPolicy(ctx context.Context, name string, v agent.PolicyVersion) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO agent_policies (agent, version, policy) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, name, v.Version, data)
	if err != nil {
		return fmt.Errorf("sqlitestore: add policy: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("%w: %d", agent.ErrDuplicatePolicy, v.Version)
	}
	return nil
}

// SetPolicy implements agent.Store.
func (s *Store) SetPolicy(ctx context.Context, name string, version int) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO agent_policy_current (agent, version) VALUES (?, ?)
		ON CONFLICT (agent) DO UPDATE SET version = excluded.version`, name, version)
	if err != nil {
		return fmt.Errorf("sqlitestore: set policy: %w", err)
	}
	return nil
}

// Policies implements agent.Store.
func (s *Store) Policies(ctx context.Context, name string) ([]agent.PolicyVersion, int, error) {
	vs, err := query[agent.PolicyVersion](ctx, s.db, `SELECT policy FROM agent_policies WHERE agent = ? ORDER BY version`, name)
	if err != nil {
		return nil, 0, err
	}
	var cur int
	switch err := s.db.QueryRowContext(ctx, `SELECT version FROM agent_policy_current WHERE agent = ?`, name).Scan(&cur); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, 0, fmt.Errorf("sqlitestore: %w", err)
	}
	return vs, cur, nil
}

func query[T any](ctx context.Context, db *sql.DB, q, name string) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, name)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var data []byte
		var v T
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("sqlitestore: %w", err)
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("sqlitestore: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	return out, nil
}
