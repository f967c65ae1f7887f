package memory

import (
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

// SetUpdated sets the Updated time of tasks behind the store's back (storetest.RunTies).
func SetUpdated(t *testing.T, s store.Store, ids []a2a.TaskID, updated time.Time) {
	m := s.(*Store)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		m.tasks[id].updated = updated
	}
}
