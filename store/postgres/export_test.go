package postgres

import (
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// SetUpdated sets the Updated time of tasks behind the store's back (storetest.RunTies).
func SetUpdated(t *testing.T, s store.Store, ids []a2a.TaskID, updated time.Time) {
	for _, id := range ids {
		if _, err := s.(*Store).pool.Exec(t.Context(), `UPDATE tasks SET updated = $1 WHERE id = $2`, updated, string(id)); err != nil {
			t.Fatal(err)
		}
	}
}

// Migrations are the schema's migrations, for a test that builds an older schema.
var Migrations = migrations
