package sqlite

import (
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// SetUpdated sets the Updated time of tasks behind the store's back (storetest.RunTies).
func SetUpdated(t *testing.T, s store.Store, ids []a2a.TaskID, updated time.Time) {
	for _, id := range ids {
		if _, err := s.(*Store).w.ExecContext(t.Context(), `UPDATE tasks SET updated = ? WHERE id = ?`, updated.UnixMicro(), string(id)); err != nil {
			t.Fatal(err)
		}
	}
}

// HoldWriter takes the store's only write connection until release is called.
func HoldWriter(t *testing.T, s *Store) (release func()) {
	conn, err := s.w.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return func() { conn.Close() }
}

// Migrations are the schema's migrations, for a test that builds an older schema.
var Migrations = migrations
