package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// inactiveStates lists, as SQL, the states store.Store.Active leaves out. The partial index
// tasks_active and the query of Active must use this same expression.
const inactiveStates = `'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'`

func init() {
	// The SQL list above must say what the contract says.
	var quoted []string
	for _, s := range codec.InactiveStates {
		quoted = append(quoted, "'"+string(s)+"'")
	}
	if got := strings.Join(quoted, ", "); got != inactiveStates {
		panic("postgres: inactiveStates is out of date: " + got)
	}
}

// migrations[i] takes the schema from version i to i+1. Append only: a released migration is
// never edited, since databases in the field have run it.
var migrations = []string{
	// 1: tasks, their event logs and push configs. IDs sort bytewise (COLLATE "C"), as the
	// contract's orders say. JSON is stored as json, not jsonb: json keeps any text that
	// encoding/json writes (jsonb refuses \u0000) and costs no conversion.
	`
CREATE TABLE tasks (
	id         text COLLATE "C" NOT NULL PRIMARY KEY,
	tenant     text        NOT NULL,
	principal  text        NOT NULL,
	context_id text        NOT NULL,
	state      text        NOT NULL,
	version    bigint      NOT NULL,
	last_seq   bigint      NOT NULL,
	created    timestamptz NOT NULL,
	updated    timestamptz NOT NULL,
	task       json        NOT NULL
);
CREATE INDEX tasks_owner_updated ON tasks (tenant, principal, updated DESC, id);
CREATE INDEX tasks_owner_context ON tasks (tenant, principal, context_id, updated DESC, id);
CREATE INDEX tasks_owner_state   ON tasks (tenant, principal, state, updated DESC, id);
CREATE INDEX tasks_active ON tasks (created, id) WHERE state NOT IN (` + inactiveStates + `);

CREATE TABLE events (
	task_id text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	seq     bigint      NOT NULL,
	time    timestamptz NOT NULL,
	event   json        NOT NULL,
	PRIMARY KEY (task_id, seq)
);

CREATE TABLE push_configs (
	task_id text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	id      text COLLATE "C" NOT NULL,
	config  json NOT NULL,
	PRIMARY KEY (task_id, id)
);
`,
	// 2: the push delivery outbox (one row per event and push config; lease is the end of the
	// current claim, -infinity when unclaimed) and the server's settings (its push signing key).
	`
CREATE TABLE outbox (
	task_id   text COLLATE "C" NOT NULL,
	config_id text COLLATE "C" NOT NULL,
	seq       bigint      NOT NULL,
	due       timestamptz NOT NULL,
	lease     timestamptz NOT NULL DEFAULT '-infinity',
	claim     text        NOT NULL DEFAULT '',
	attempts  integer     NOT NULL DEFAULT 0,
	PRIMARY KEY (task_id, config_id, seq),
	FOREIGN KEY (task_id, config_id) REFERENCES push_configs (task_id, id) ON DELETE CASCADE
);
CREATE INDEX outbox_due ON outbox (due, seq);

CREATE TABLE settings (
	name  text  NOT NULL PRIMARY KEY,
	value bytea NOT NULL
);
`,
}

// SchemaVersion is the version of the schema this package creates and reads.
var SchemaVersion = len(migrations)

// migrate brings the schema up to SchemaVersion in one transaction, under an advisory lock
// named after the schema so that replicas starting together migrate once.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "a2awebcap/store:"+schema); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if schema != "" {
			ident := pgx.Identifier{schema}.Sanitize()
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ident+`; SET LOCAL search_path TO `+ident); err != nil {
				return fmt.Errorf("migrate: schema %s: %w", schema, err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var version int
		err := tx.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&version)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		case err != nil:
			return fmt.Errorf("migrate: %w", err)
		}
		if version > SchemaVersion {
			return fmt.Errorf("migrate: the database has schema version %d, newer than this program's %d", version, SchemaVersion)
		}
		for v := version; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
			}
		}
		if version < SchemaVersion {
			if _, err := tx.Exec(ctx, `UPDATE schema_version SET version = $1`, SchemaVersion); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		}
		return nil
	})
}
