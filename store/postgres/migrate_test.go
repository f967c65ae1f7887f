package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/postgres"
)

// TestMigrateDest: a schema of version 2, with a push config and a due delivery, opens at the
// current version with the config's destination filled in from its URL.
func TestMigrateDest(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	conn, err := pgx.Connect(t.Context(), server(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	ident := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range append([]string{`CREATE SCHEMA ` + ident, `SET search_path TO ` + ident}, append(postgres.Migrations[:2:2],
		`CREATE TABLE schema_version (version integer NOT NULL); INSERT INTO schema_version VALUES (2)`,
		`INSERT INTO tasks VALUES ('t1', '', '', 'c', 'TASK_STATE_WORKING', 1, 1, now(), now(), '{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}')`,
		`INSERT INTO events VALUES ('t1', 1, now(), '{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}')`,
		`INSERT INTO push_configs VALUES ('t1', 'p', '{"taskId":"t1","id":"p","url":"https://Hooks.Example/x"}')`,
		`INSERT INTO outbox (task_id, config_id, seq, due) VALUES ('t1', 'p', 1, now() - interval '1 second')`,
	)...) {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s := open(t, schema)
	ds, err := s.ClaimDeliveries(t.Context(), store.ClaimQuery{Limit: 10, Lease: time.Minute, PerDestination: 1})
	if err != nil || len(ds) != 1 || ds[0].Destination != "https://hooks.example:443" {
		t.Fatalf("ClaimDeliveries after migrating = %v, %v; want one delivery to https://hooks.example:443", ds, err)
	}
}
