package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// TestMigrateDest: a database of schema version 2, with a push config and a due delivery,
// opens at the current version with the config's destination filled in from its URL.
func TestMigrateDest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a2a.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range append(sqlite.Migrations[:2:2],
		`CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (2)`,
		`INSERT INTO tasks VALUES ('t1', '', '', 'c', 'TASK_STATE_WORKING', 1, 1, 0, 0, CAST('{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}' AS BLOB))`,
		`INSERT INTO events VALUES ('t1', 1, 0, CAST('{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}' AS BLOB))`,
		`INSERT INTO push_configs VALUES ('t1', 'p', CAST('{"taskId":"t1","id":"p","url":"https://Hooks.Example/x"}' AS BLOB))`,
		`INSERT INTO outbox (task_id, config_id, seq, due) VALUES ('t1', 'p', 1, 0)`,
	) {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	s := openFile(t, path)
	ds, err := s.ClaimDeliveries(t.Context(), store.ClaimQuery{Limit: 10, Lease: time.Minute, PerDestination: 1})
	if err != nil || len(ds) != 1 || ds[0].Destination != "https://hooks.example:443" {
		t.Fatalf("ClaimDeliveries after migrating = %v, %v; want one delivery to https://hooks.example:443", ds, err)
	}
}
