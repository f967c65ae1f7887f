package sqlitestore_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"sync"
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
	key := agent.Key{Agent: "a"}
	if err := s.Commit(t.Context(), key, &agent.Batch{Observations: []agent.Observation{{ID: "o1", Seq: 1}}}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s = open(t, path) // reopening migrates nothing and keeps the data
	if got, err := s.Load(t.Context(), key, 0); err != nil || len(got.Observations) != 1 {
		t.Errorf("Load() = %v, %v, want one observation", got, err)
	}
}

// A database of the layout before instances were per principal keeps working: each agent's
// memory becomes its anonymous principal's, and the agent goes on where it was.
func TestMigratesOneAgentPerName(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a2awebcap.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := append([]string{`CREATE TABLE agent_schema_version (version INTEGER NOT NULL) STRICT; INSERT INTO agent_schema_version VALUES (5)`},
		sqlitestore.OldMigrations...)
	o1 := `{"id":"o1","seq":1,"time":"2026-01-02T03:04:05Z","kind":"message","source":{"kind":"user"},"context":{"task":"t0"},"text":"remember the sky is blue"}`
	b1 := `{"id":"b1","subject":"the sky","value":"blue","confidence":0.9,"status":"active","uses":0,"provenance":{"source":{"kind":"user"},"observations":["o1"],"context":{"task":"t0"},"rule":"remember","reason":"the user told me"},"created":"2026-01-02T03:04:05Z","updated":"2026-01-02T03:04:05Z"}`
	pvData, _ := json.Marshal(agent.PolicyVersion{Version: 1, Rules: agent.Notes().Rules})
	pv := strings.ReplaceAll(string(pvData), "'", "''")
	stmts = append(stmts,
		`INSERT INTO agent_observations (agent, seq, id, obs) VALUES ('notes', 1, 'o1', CAST('`+o1+`' AS BLOB))`,
		`INSERT INTO agent_beliefs (agent, id, ord, belief) VALUES ('notes', 'b1', 1, CAST('`+b1+`' AS BLOB))`,
		`INSERT INTO agent_policies (agent, version, policy) VALUES ('notes', 1, CAST('`+pv+`' AS BLOB))`,
		`INSERT INTO agent_policy_current (agent, version) VALUES ('notes', 1)`,
		`INSERT INTO agent_working (agent, state) VALUES ('notes', CAST('{"pending":{"t9":"the sea"}}' AS BLOB))`)
	for _, q := range stmts {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_ = db.Close()

	s := open(t, path)
	a, err := agent.New(t.Context(), "notes", &agent.Options{Policy: agent.Notes(), Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, err := a.Recall(t.Context(), agent.Query{Text: "sky"})
	if err != nil || len(r.Beliefs) != 1 || r.Beliefs[0].Value != "blue" || len(r.Observations) != 1 {
		t.Fatalf("Recall(sky) after the migration = %+v, %v", r, err)
	}
	ev := agent.UserText("green")
	ev.Context.Task = "t9"
	if run, err := a.Ask(t.Context(), ev); err != nil || run.Reply != "Noted: the sea is green." {
		t.Errorf("the answer to the question pending before the migration = %+v, %v", run, err)
	}
	if ps, _ := s.Instances(t.Context(), "notes"); len(ps) != 1 || !ps[0].Anonymous() {
		t.Errorf("Instances(notes) = %v, want the anonymous principal", ps)
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

// Commits of many instances at once commit together, each batch alone in what it saves: the
// one that fails (a duplicate observation) saves nothing, the others everything.
func TestConcurrentCommitsAreEachAtomic(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"))
	ctx := t.Context()
	key := func(i int) agent.Key {
		return agent.Key{Agent: "a", Principal: agent.Principal{Name: fmt.Sprint("p", i)}}
	}
	obs := func(id string) agent.Observation {
		return agent.Observation{ID: id, Seq: 1, Kind: "message", Text: "hello " + id}
	}
	if err := s.Commit(ctx, key(0), &agent.Batch{Observations: []agent.Observation{obs("o1")}}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			b := &agent.Batch{Observations: []agent.Observation{obs(fmt.Sprint("o", i+1))},
				Beliefs: []agent.Belief{{ID: "b1", Subject: "s", Value: fmt.Sprint(i), Confidence: 0.9, Status: agent.StatusActive}}}
			k := key(i + 1)
			if i == n/2 { // a duplicate of instance 0's observation, with a belief that must not be saved
				k, b.Observations = key(0), []agent.Observation{obs("o1")}
			}
			errs[i] = s.Commit(ctx, k, b)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i == n/2 {
			if !errors.Is(err, agent.ErrDuplicateObservation) {
				t.Errorf("the duplicate: %v, want ErrDuplicateObservation", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		snap, err := s.Load(ctx, key(i+1), 10)
		if err != nil || len(snap.Observations) != 1 || len(snap.Beliefs) != 1 || snap.Beliefs[0].Value != fmt.Sprint(i) {
			t.Fatalf("instance %d: %+v, %v", i+1, snap, err)
		}
	}
	snap, err := s.Load(ctx, key(0), 10)
	if err != nil || len(snap.Observations) != 1 || len(snap.Beliefs) != 0 {
		t.Fatalf("instance 0 after the refused batch: %d observations, %d beliefs, %v", len(snap.Observations), len(snap.Beliefs), err)
	}
}

// What payers spent is kept in the file: two stores on it (two processes) share it, and their
// concurrent takes never pass a limit together.
func TestSpending(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a2awebcap.db")
	storetest.Spending(t, open(t, path).Spending("writer"), open(t, path).Spending("writer"))
}

// What was spent survives a restart (the store reopened on its file), per agent.
func TestSpendingSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a2awebcap.db")
	const network, asset = "base-sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	s, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Spending("writer").Take(t.Context(), "alice", network, asset, big.NewInt(7000), big.NewInt(10000)); !ok || err != nil {
		t.Fatalf("Take = %v, %v; want true", ok, err)
	}
	_ = s.Close()
	again := open(t, path)
	if got, err := again.Spending("writer").Spent(t.Context(), "alice", network, asset); err != nil || got.Int64() != 7000 {
		t.Errorf("Spent after reopening = %v, %v; want 7000", got, err)
	}
	if got, _ := again.Spending("editor").Spent(t.Context(), "alice", network, asset); got.Sign() != 0 {
		t.Errorf("Spent of another agent = %v, want 0", got)
	}
}
