package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/internal/pgutil"
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
	// 3: where each push config sends (codec.Destination of its URL), and each delivery's
	// owner and destination, which a claim counts by (store.ClaimQuery); filled for existing
	// rows by backfillDest. outbox_claim lets a claim pass over the due deliveries of full
	// owners and destinations without reading their rows; outbox_leased finds those under
	// lease.
	`
ALTER TABLE push_configs ADD COLUMN dest text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN principal text NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN dest text COLLATE "C" NOT NULL DEFAULT '';
UPDATE outbox o SET tenant = t.tenant, principal = t.principal FROM tasks t WHERE t.id = o.task_id;
DROP INDEX outbox_due;
CREATE INDEX outbox_claim ON outbox (due, seq) INCLUDE (lease, tenant, principal, dest);
CREATE INDEX outbox_leased ON outbox (lease) INCLUDE (tenant, principal, dest) WHERE lease > '-infinity';
`,
	// 4: task leases, for replicas: the replica running a task and when its lease expires
	// (NULL with no lease). ClaimExpired scans the active tasks (index tasks_active).
	`
ALTER TABLE tasks ADD COLUMN lease_holder text NOT NULL DEFAULT '', ADD COLUMN lease_until timestamptz;
`,
}

// backfills[v], if set, runs in the migration's transaction right after migrations[v-1]:
// what SQL alone cannot compute.
var backfills = map[int]func(ctx context.Context, tx pgx.Tx) error{3: backfillDest}

// backfillDest sets the destination of the push configs, and of their deliveries, stored
// before schema version 3.
func backfillDest(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT task_id, id, config FROM push_configs WHERE dest = ''`)
	if err != nil {
		return err
	}
	var tasks, ids, dests []string
	for rows.Next() {
		var task, id string
		var data []byte
		if err := rows.Scan(&task, &id, &data); err != nil {
			rows.Close()
			return err
		}
		cfg, err := codec.DecodePushConfig(data)
		if err != nil {
			rows.Close()
			return err
		}
		tasks, ids, dests = append(tasks, task), append(ids, id), append(dests, codec.Destination(cfg.URL))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err = tx.Exec(ctx, `
		UPDATE push_configs p SET dest = x.dest FROM unnest($1::text[], $2::text[], $3::text[]) AS x (task_id, id, dest)
		WHERE p.task_id = x.task_id AND p.id = x.id`, tasks, ids, dests); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE outbox o SET dest = p.dest FROM push_configs p WHERE p.task_id = o.task_id AND p.id = o.config_id`)
	return err
}

// SchemaVersion is the version of the schema this package creates and reads.
var SchemaVersion = len(migrations)

// schema is the store's tables: migrated in one transaction, under an advisory lock named after
// the schema, so that replicas starting together migrate once.
var schema = &pgutil.Migrations{Table: "schema_version", Steps: migrations,
	After: func(ctx context.Context, tx pgx.Tx, v int) error {
		if fill := backfills[v]; fill != nil {
			return fill(ctx, tx)
		}
		return nil
	}}
