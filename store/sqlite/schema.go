package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// migrations[i] takes the schema from version i to i+1. Append only: a released migration is
// never edited, since databases in the field have run it.
var migrations = []string{
	// 1: tasks, their event logs and push configs. Times are Unix microseconds (UTC); the task,
	// each event and each push config are their JSON.
	`
CREATE TABLE tasks (
	id         TEXT    NOT NULL PRIMARY KEY,
	tenant     TEXT    NOT NULL,
	principal  TEXT    NOT NULL,
	context_id TEXT    NOT NULL,
	state      TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	last_seq   INTEGER NOT NULL,
	created    INTEGER NOT NULL,
	updated    INTEGER NOT NULL,
	task       BLOB    NOT NULL
) STRICT;
CREATE INDEX tasks_owner_updated ON tasks (tenant, principal, updated DESC, id);
CREATE INDEX tasks_owner_context ON tasks (tenant, principal, context_id, updated DESC, id);
CREATE INDEX tasks_owner_state   ON tasks (tenant, principal, state, updated DESC, id);
CREATE INDEX tasks_active ON tasks (created, id) WHERE state NOT IN (` + inactiveStates + `);

CREATE TABLE events (
	task_id TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,
	time    INTEGER NOT NULL,
	event   BLOB    NOT NULL,
	PRIMARY KEY (task_id, seq)
) STRICT;

CREATE TABLE push_configs (
	task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	id      TEXT NOT NULL,
	config  BLOB NOT NULL,
	PRIMARY KEY (task_id, id)
) STRICT;
`,
	// 2: the push delivery outbox (one row per event and push config; due and lease are Unix
	// microseconds, lease 0 when unclaimed) and the server's settings (its push signing key).
	`
CREATE TABLE outbox (
	task_id   TEXT    NOT NULL,
	config_id TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	due       INTEGER NOT NULL,
	lease     INTEGER NOT NULL DEFAULT 0,
	claim     TEXT    NOT NULL DEFAULT '',
	attempts  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (task_id, config_id, seq),
	FOREIGN KEY (task_id, config_id) REFERENCES push_configs (task_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX outbox_due ON outbox (due, seq);

CREATE TABLE settings (
	name  TEXT NOT NULL PRIMARY KEY,
	value BLOB NOT NULL
) STRICT;
`,
	// 3: where each push config sends (codec.Destination of its URL), and each delivery's
	// owner and destination, which a claim counts by (store.ClaimQuery); filled for existing
	// rows by backfillDest. outbox_claim lets a claim pass over the due deliveries of full
	// owners and destinations without reading their rows; outbox_leased finds those under
	// lease.
	`
ALTER TABLE push_configs ADD COLUMN dest TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN principal TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN dest TEXT NOT NULL DEFAULT '';
UPDATE outbox SET tenant = t.tenant, principal = t.principal FROM tasks t WHERE t.id = outbox.task_id;
DROP INDEX outbox_due;
CREATE INDEX outbox_claim ON outbox (due, seq, lease, tenant, principal, dest);
CREATE INDEX outbox_leased ON outbox (lease, tenant, principal, dest) WHERE lease > 0;
`,
	// 4: task leases, for replicas sharing the file: the replica running a task and when its
	// lease expires (Unix microseconds; 0 with no lease). ClaimExpired looks for active tasks
	// by expiry.
	`
ALTER TABLE tasks ADD COLUMN lease_holder TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_active_lease ON tasks (lease_until, created, id) WHERE state NOT IN (` + inactiveStates + `);
`,
}

// backfills[v], if set, runs in the migration's transaction right after migrations[v-1]:
// what SQL alone cannot compute.
var backfills = map[int]func(ctx context.Context, tx *sql.Tx) error{3: backfillDest}

// backfillDest sets the destination of the push configs, and of their deliveries, stored
// before schema version 3.
func backfillDest(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT task_id, id, config FROM push_configs WHERE dest = ''`)
	if err != nil {
		return err
	}
	type key struct{ task, id, dest string }
	var todo []key
	for rows.Next() {
		var k key
		var data []byte
		if err := rows.Scan(&k.task, &k.id, &data); err != nil {
			rows.Close()
			return err
		}
		cfg, err := codec.DecodePushConfig(data)
		if err != nil {
			rows.Close()
			return err
		}
		k.dest = codec.Destination(cfg.URL)
		todo = append(todo, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range todo {
		if _, err := tx.ExecContext(ctx, `UPDATE push_configs SET dest = ? WHERE task_id = ? AND id = ?`, k.dest, k.task, k.id); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE outbox SET dest = p.dest FROM push_configs p WHERE p.task_id = outbox.task_id AND p.id = outbox.config_id`)
	return err
}

// SchemaVersion is the version of the schema this package creates and reads.
var SchemaVersion = len(migrations)

// migrate brings the schema up to SchemaVersion in one transaction on the write connection.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock): one migrator at a time
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var version int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version); err {
	case nil:
	case sql.ErrNoRows:
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	default:
		return fmt.Errorf("migrate: %w", err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("migrate: the database has schema version %d, newer than this program's %d", version, SchemaVersion)
	}
	for v := version; v < SchemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
		}
		if fill := backfills[v+1]; fill != nil {
			if err := fill(ctx, tx); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
			}
		}
	}
	if version < SchemaVersion {
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, SchemaVersion); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
