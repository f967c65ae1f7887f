package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/sqlitestore"
	"github.com/a2awebcap/a2awebcap/agent/storetest"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSuiteInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) agent.Store { return open(t, ":memory:") })
}

func TestSuiteOnFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) agent.Store { return open(t, filepath.Join(t.TempDir(), "db")) })
}

// The agent tables live beside the task store's in one file.
func TestSharesTheTaskDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2awebcap.db")
	tasks, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tasks.Close()
	s := open(t, path)
	if err := s.Append(t.Context(), "a", agent.Observation{ID: "o1", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s = open(t, path) // reopening migrates nothing and keeps the data
	if got, err := s.Observations(t.Context(), "a"); err != nil || len(got) != 1 {
		t.Errorf("Observations() = %v, %v, want one", got, err)
	}
}

// An agent's working memory and pending questions survive closing the agent and the database
// file, and reopening both.
func TestWorkingStateSurvivesReopeningTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a2awebcap.db")
	storetest.WorkingStateSurvivesARestart(t, func(t *testing.T) agent.Store {
		s, err := sqlitestore.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, func(s agent.Store) { _ = s.(*sqlitestore.Store).Close() })
}

// A proposal held for approval survives closing the agent and the database file; its approval
// after reopening survives another.
func TestPendingProposalSurvivesReopeningTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a2awebcap.db")
	storetest.PendingProposalSurvivesARestart(t, func(t *testing.T) agent.Store {
		s, err := sqlitestore.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, func(s agent.Store) { _ = s.(*sqlitestore.Store).Close() })
}
