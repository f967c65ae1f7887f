// Package sqlitestore is the agent.Store in SQLite: every instance (agent, tenant, principal)
// with its observation log, beliefs, goals, policy versions, working state, reviews, turn
// records and session documents, in tables of their own (agent_*), so they can share the
// database file of the task store (store/sqlite). A commit is atomic: the commits waiting
// together (SQLite has one writer) share one transaction, each under a savepoint of its own.
//
// Concurrency: one goroutine, the committer (started by Open, stopped by Close), runs the
// commits; Commit hands it its batch and waits for the outcome. Reads go through database/sql's
// one connection, between the committer's transactions.
//
// A database written before instances were per principal (one agent's memory per name) is
// migrated in place: each agent's memory becomes its anonymous principal's instance.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/x402"
)

// migrations[i] takes the agent tables from version i to i+1; append only.
var migrations = []string{
	`
CREATE TABLE agent_observations (
	agent TEXT    NOT NULL,
	seq   INTEGER NOT NULL,
	id    TEXT    NOT NULL,
	obs   BLOB    NOT NULL,
	PRIMARY KEY (agent, seq),
	UNIQUE (agent, id)
) STRICT;
CREATE TABLE agent_beliefs (
	agent  TEXT    NOT NULL,
	id     TEXT    NOT NULL,
	ord    INTEGER NOT NULL,
	belief BLOB    NOT NULL,
	PRIMARY KEY (agent, id)
) STRICT;
`,
	// 2: policy versions (append-only) and the version in force.
	`
CREATE TABLE agent_policies (
	agent   TEXT    NOT NULL,
	version INTEGER NOT NULL,
	policy  BLOB    NOT NULL,
	PRIMARY KEY (agent, version)
) STRICT;
CREATE TABLE agent_policy_current (
	agent   TEXT    NOT NULL PRIMARY KEY,
	version INTEGER NOT NULL
) STRICT;
`,
	// 3: goals.
	`
CREATE TABLE agent_goals (
	agent TEXT    NOT NULL,
	id    TEXT    NOT NULL,
	ord   INTEGER NOT NULL,
	goal  BLOB    NOT NULL,
	PRIMARY KEY (agent, id)
) STRICT;
`,
	// 4: the working state (working memory, pending questions), replaced whole.
	`
CREATE TABLE agent_working (
	agent TEXT NOT NULL PRIMARY KEY,
	state BLOB NOT NULL
) STRICT;
`,
	// 5: proposals held for a human's approval, pending or decided.
	`
CREATE TABLE agent_reviews (
	agent  TEXT    NOT NULL,
	id     TEXT    NOT NULL,
	ord    INTEGER NOT NULL,
	review BLOB    NOT NULL,
	PRIMARY KEY (agent, id)
) STRICT;
`,
	// 6: instances per principal. Every table is keyed by the instance (agent_instances.id);
	// the memory of each agent of before becomes its anonymous principal's. Turn records and
	// session documents are new.
	`
CREATE TABLE agent_instances (
	id        INTEGER PRIMARY KEY,
	agent     TEXT    NOT NULL,
	tenant    TEXT    NOT NULL,
	principal TEXT    NOT NULL,
	policy    INTEGER NOT NULL DEFAULT 0,
	UNIQUE (agent, tenant, principal)
) STRICT;
INSERT INTO agent_instances (agent, tenant, principal)
	SELECT agent, '', '' FROM (
		SELECT agent FROM agent_observations UNION SELECT agent FROM agent_beliefs
		UNION SELECT agent FROM agent_policies UNION SELECT agent FROM agent_policy_current
		UNION SELECT agent FROM agent_goals UNION SELECT agent FROM agent_working
		UNION SELECT agent FROM agent_reviews)
	ORDER BY agent;
UPDATE agent_instances SET policy = coalesce((SELECT version FROM agent_policy_current c WHERE c.agent = agent_instances.agent), 0);
DROP TABLE agent_policy_current;

CREATE TABLE agent_observations_6 (
	inst INTEGER NOT NULL,
	seq  INTEGER NOT NULL,
	id   TEXT    NOT NULL,
	obs  BLOB    NOT NULL,
	PRIMARY KEY (inst, seq),
	UNIQUE (inst, id)
) STRICT;
INSERT INTO agent_observations_6 SELECT i.id, o.seq, o.id, o.obs FROM agent_observations o JOIN agent_instances i ON i.agent = o.agent;
DROP TABLE agent_observations;
ALTER TABLE agent_observations_6 RENAME TO agent_observations;

CREATE TABLE agent_beliefs_6 (
	inst   INTEGER NOT NULL,
	id     TEXT    NOT NULL,
	ord    INTEGER NOT NULL,
	belief BLOB    NOT NULL,
	PRIMARY KEY (inst, id)
) STRICT;
INSERT INTO agent_beliefs_6 SELECT i.id, b.id, b.ord, b.belief FROM agent_beliefs b JOIN agent_instances i ON i.agent = b.agent;
DROP TABLE agent_beliefs;
ALTER TABLE agent_beliefs_6 RENAME TO agent_beliefs;

CREATE TABLE agent_goals_6 (
	inst INTEGER NOT NULL,
	id   TEXT    NOT NULL,
	ord  INTEGER NOT NULL,
	goal BLOB    NOT NULL,
	PRIMARY KEY (inst, id)
) STRICT;
INSERT INTO agent_goals_6 SELECT i.id, g.id, g.ord, g.goal FROM agent_goals g JOIN agent_instances i ON i.agent = g.agent;
DROP TABLE agent_goals;
ALTER TABLE agent_goals_6 RENAME TO agent_goals;

CREATE TABLE agent_reviews_6 (
	inst   INTEGER NOT NULL,
	id     TEXT    NOT NULL,
	ord    INTEGER NOT NULL,
	review BLOB    NOT NULL,
	PRIMARY KEY (inst, id)
) STRICT;
INSERT INTO agent_reviews_6 SELECT i.id, r.id, r.ord, r.review FROM agent_reviews r JOIN agent_instances i ON i.agent = r.agent;
DROP TABLE agent_reviews;
ALTER TABLE agent_reviews_6 RENAME TO agent_reviews;

CREATE TABLE agent_policies_6 (
	inst    INTEGER NOT NULL,
	version INTEGER NOT NULL,
	policy  BLOB    NOT NULL,
	PRIMARY KEY (inst, version)
) STRICT;
INSERT INTO agent_policies_6 SELECT i.id, p.version, p.policy FROM agent_policies p JOIN agent_instances i ON i.agent = p.agent;
DROP TABLE agent_policies;
ALTER TABLE agent_policies_6 RENAME TO agent_policies;

CREATE TABLE agent_working_6 (
	inst  INTEGER NOT NULL PRIMARY KEY,
	state BLOB    NOT NULL
) STRICT;
INSERT INTO agent_working_6 SELECT i.id, w.state FROM agent_working w JOIN agent_instances i ON i.agent = w.agent;
DROP TABLE agent_working;
ALTER TABLE agent_working_6 RENAME TO agent_working;

CREATE TABLE agent_turns (
	seq     INTEGER PRIMARY KEY,
	inst    INTEGER NOT NULL,
	task    TEXT    NOT NULL,
	session TEXT    NOT NULL,
	number  INTEGER NOT NULL,
	turn    BLOB    NOT NULL
) STRICT;
CREATE INDEX agent_turns_session ON agent_turns (inst, session, number);
CREATE INDEX agent_turns_task ON agent_turns (task);

CREATE TABLE agent_sessions (
	inst INTEGER NOT NULL,
	id   TEXT    NOT NULL,
	doc  BLOB    NOT NULL,
	PRIMARY KEY (inst, id)
) STRICT;
`,
	`
CREATE TABLE agent_capabilities (
	inst  INTEGER NOT NULL PRIMARY KEY,
	state BLOB    NOT NULL
) STRICT;
`,
	// 8: the search index of the observation logs: one row per distinct term of an observation
	// (agent.SearchTerms), so that a resident instance need not hold its log. Existing
	// observations are indexed by backfillTerms.
	`
CREATE TABLE agent_terms (
	inst INTEGER NOT NULL,
	term TEXT    NOT NULL,
	seq  INTEGER NOT NULL,
	PRIMARY KEY (inst, term, seq)
) STRICT, WITHOUT ROWID;
`,
	// 9: the capability audit log (agent/capability records, per agent and principal).
	`
CREATE TABLE agent_audit (
	seq        INTEGER PRIMARY KEY,
	agent      TEXT    NOT NULL,
	principal  TEXT    NOT NULL,
	capability TEXT    NOT NULL,
	record     BLOB    NOT NULL
) STRICT;
CREATE INDEX agent_audit_principal ON agent_audit (agent, principal, seq);
`,
	// 10: what payers' budgets spent (x402.Spending), per agent, account (principal) and token,
	// as a decimal string (amounts of 256 bits do not fit an INTEGER).
	`
CREATE TABLE agent_spending (
	agent   TEXT NOT NULL,
	account TEXT NOT NULL,
	network TEXT NOT NULL,
	asset   TEXT NOT NULL,
	spent   TEXT NOT NULL,
	PRIMARY KEY (agent, account, network, asset)
) STRICT, WITHOUT ROWID;
`,
}

// Store is an agent.Store in SQLite. It is safe for concurrent use.
type Store struct {
	db *sql.DB
	// stmts are Commit's statements, prepared once on the connection (preparing one costs as
	// much as running it): Commit runs them in its transaction.
	stmts map[string]*sql.Stmt
	// ids are the instance IDs committed so far: an instance row, once committed, is never
	// deleted nor renumbered, so a commit need not look it up again.
	ids sync.Map // agent.Key → int64
	// Group commit: Commit hands its batch to the committer goroutine, which runs the batches
	// waiting together in one transaction, each under a savepoint of its own (see commitGroup).
	reqs      chan *commitReq
	quit      chan struct{}
	committer sync.WaitGroup
	closeOnce sync.Once
}

// commitReq is one Commit waiting for the committer.
type commitReq struct {
	key  agent.Key
	b    *agent.Batch
	done chan error
}

// maxGroup bounds the batches one transaction commits.
const maxGroup = 64

// Commit's statements.
const (
	sqlInsertInstance = `INSERT INTO agent_instances (agent, tenant, principal) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
	sqlInstance       = `SELECT id FROM agent_instances WHERE agent = ? AND tenant = ? AND principal = ?`
	sqlInsertObs      = `INSERT INTO agent_observations (inst, seq, id, obs) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqlInsertTerm     = `INSERT INTO agent_terms (inst, term, seq) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
	sqlWorking        = `INSERT INTO agent_working (inst, state) VALUES (?, ?)
			ON CONFLICT (inst) DO UPDATE SET state = excluded.state`
	sqlCapabilities = `INSERT INTO agent_capabilities (inst, state) VALUES (?, ?)
			ON CONFLICT (inst) DO UPDATE SET state = excluded.state`
	sqlInsertPolicy = `INSERT INTO agent_policies (inst, version, policy) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
	sqlCurrent      = `UPDATE agent_instances SET policy = ? WHERE id = ?`
	sqlInsertTurn   = `INSERT INTO agent_turns (inst, task, session, number, turn) VALUES (?, ?, ?, ?, ?)`
	sqlSession      = `INSERT INTO agent_sessions (inst, id, doc) VALUES (?, ?, ?)
			ON CONFLICT (inst, id) DO UPDATE SET doc = excluded.doc`
)

// upsertSQL is the statement of upsert for table, whose item is in column col.
func upsertSQL(table, col string) string {
	return `INSERT INTO ` + table + ` (inst, id, ord, ` + col + `)
		VALUES (?1, ?2, (SELECT coalesce(max(ord), 0) + 1 FROM ` + table + ` WHERE inst = ?1), ?3)
		ON CONFLICT (inst, id) DO UPDATE SET ` + col + ` = excluded.` + col
}

var (
	sqlBelief = upsertSQL("agent_beliefs", "belief")
	sqlGoal   = upsertSQL("agent_goals", "goal")
	sqlReview = upsertSQL("agent_reviews", "review")
)

// The savepoint each batch of a group commits under (commitGroup).
const (
	sqlSavepoint  = `SAVEPOINT batch`
	sqlRollbackTo = `ROLLBACK TO batch`
	sqlRelease    = `RELEASE batch`
)

var commitSQL = []string{sqlInsertInstance, sqlInstance, sqlInsertObs, sqlInsertTerm, sqlWorking, sqlCapabilities, sqlInsertPolicy,
	sqlCurrent, sqlInsertTurn, sqlSession, sqlBelief, sqlGoal, sqlReview, sqlSavepoint, sqlRollbackTo, sqlRelease}

var _ agent.Store = (*Store)(nil)

var memCount atomic.Int64

// Open opens (creating it if needed) the database at path and creates or updates the agent
// tables. path ":memory:" opens a private in-memory database, for tests.
func Open(ctx context.Context, path string) (*Store, error) {
	const pragmas = "_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	var dsn string
	if path == ":memory:" {
		dsn = fmt.Sprintf("file:a2awebcap-agent-%d?mode=memory&cache=shared&%s", memCount.Add(1), pragmas)
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
		dsn = "file:" + esc.Replace(filepath.ToSlash(abs)) + "?_pragma=journal_mode(WAL)&" + pragmas
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	// One connection: SQLite has one writer; database/sql queues the rest.
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s := &Store{db: db, stmts: map[string]*sql.Stmt{}}
	for _, q := range commitSQL {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
		s.stmts[q] = st
	}
	s.reqs, s.quit = make(chan *commitReq), make(chan struct{})
	s.committer.Add(1)
	go s.commitLoop()
	return s, nil
}

// commitLoop is the committer goroutine: it takes a batch, and those waiting behind it, and
// commits them together, until Close.
func (s *Store) commitLoop() {
	defer s.committer.Done()
	for {
		var group []*commitReq
		select {
		case r := <-s.reqs:
			group = append(group, r)
		case <-s.quit:
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case r := <-s.reqs:
				group = append(group, r)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// commitGroup commits the batches of group in one transaction. Each runs under a savepoint: a
// batch that fails (a duplicate observation, say) is rolled back alone and gets its error, the
// others commit. If the transaction itself fails, every batch gets the error and none is saved.
// Statements run without the callers' contexts, so that one caller's cancellation cannot take
// the others' batches down with it: a caller waits for its outcome (Commit).
func (s *Store) commitGroup(group []*commitReq) {
	ctx := context.Background()
	errs := make([]error, len(group))
	ids := make([]int64, len(group))
	fail := func(err error) {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	func() {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			fail(wrap("commit", err))
			return
		}
		defer tx.Rollback()
		exec := func(q string) error {
			_, err := tx.StmtContext(ctx, s.stmts[q]).ExecContext(ctx)
			return err
		}
		single := len(group) == 1
		for i, r := range group {
			if !single {
				if err := exec(sqlSavepoint); err != nil {
					fail(wrap("commit", err))
					return
				}
			}
			ids[i], errs[i] = s.commitBatch(ctx, tx, r.key, r.b)
			switch {
			case single && errs[i] != nil:
				return
			case single:
			case errs[i] != nil:
				// A statement's error may have ended the whole transaction (SQLite rolls it
				// back on some): then the savepoint is gone, and nothing else may run.
				if err := exec(sqlRollbackTo); err != nil {
					fail(wrap("commit", err))
					return
				}
				if err := exec(sqlRelease); err != nil {
					fail(wrap("commit", err))
					return
				}
			default:
				if err := exec(sqlRelease); err != nil {
					fail(wrap("commit", err))
					return
				}
			}
		}
		if err := tx.Commit(); err != nil {
			fail(wrap("commit", err))
			return
		}
		for i, r := range group {
			if errs[i] == nil {
				s.ids.Store(r.key, ids[i]) // committed: the row is there for good
			}
		}
	}()
	for i, r := range group {
		r.done <- errs[i]
	}
}

// exec runs Commit's statement q in tx.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	return tx.StmtContext(ctx, s.stmts[q]).ExecContext(ctx, args...)
}

func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS agent_schema_version (version INTEGER NOT NULL) STRICT`); err != nil {
		return err
	}
	var version int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM agent_schema_version`).Scan(&version); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("agent schema version %d is newer than this program's %d", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate to agent schema version %d: %w", v+1, err)
		}
		if v+1 == 8 {
			if err := backfillTerms(ctx, tx); err != nil {
				return fmt.Errorf("migrate to agent schema version 8: %w", err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE agent_schema_version SET version = ?`, len(migrations)); err != nil {
		return err
	}
	return tx.Commit()
}

// backfillTerms indexes the observations already in the log.
func backfillTerms(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT inst, seq, obs FROM agent_observations`)
	if err != nil {
		return err
	}
	type row struct {
		inst, seq int64
		text      string
	}
	var all []row
	for rows.Next() {
		var r row
		var data []byte
		if err := rows.Scan(&r.inst, &r.seq, &data); err != nil {
			rows.Close()
			return err
		}
		var o agent.Observation
		if err := json.Unmarshal(data, &o); err != nil {
			rows.Close()
			return err
		}
		r.text = o.Text
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range all {
		if err := indexTerms(ctx, tx.ExecContext, r.inst, r.seq, r.text); err != nil {
			return err
		}
	}
	return nil
}

// indexTerms adds the search terms of an observation's text.
func indexTerms(ctx context.Context, exec execer, inst, seq int64, text string) error {
	for _, t := range agent.SearchTerms(text) {
		if _, err := exec(ctx, sqlInsertTerm, inst, t, seq); err != nil {
			return err
		}
	}
	return nil
}

// execer runs a statement: tx.ExecContext, or Store.exec's statements prepared once.
type execer func(ctx context.Context, q string, args ...any) (sql.Result, error)

// Close stops the committer (after the group it is committing) and closes the database.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.quit != nil {
			close(s.quit)
		}
	})
	s.committer.Wait()
	for _, st := range s.stmts {
		st.Close()
	}
	return s.db.Close()
}

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// instance returns the ID of key's instance, 0 when it has none.
func instance(ctx context.Context, q querier, key agent.Key) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM agent_instances WHERE agent = ? AND tenant = ? AND principal = ?`,
		key.Agent, key.Principal.Tenant, key.Principal.Name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// Load implements agent.Store.
func (s *Store) Load(ctx context.Context, key agent.Key, tail int) (*agent.Snapshot, error) {
	// One read transaction, so that the snapshot is one commit's state.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: load: %w", err)
	}
	defer tx.Rollback()
	snap := &agent.Snapshot{}
	id, err := instance(ctx, tx, key)
	if err != nil || id == 0 {
		return snap, wrap("load", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT policy FROM agent_instances WHERE id = ?`, id).Scan(&snap.Current); err != nil {
		return nil, wrap("load", err)
	}
	if tail <= 0 {
		tail = -1 // no limit
	}
	if snap.Observations, err = query[agent.Observation](ctx, tx, `SELECT obs FROM (SELECT obs, seq FROM agent_observations
		WHERE inst = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`, id, tail); err != nil {
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM agent_observations WHERE inst = ?`, id).Scan(&snap.Count); err != nil {
		return nil, wrap("load", err)
	}
	if snap.Beliefs, err = query[agent.Belief](ctx, tx, `SELECT belief FROM agent_beliefs WHERE inst = ? ORDER BY ord`, id); err != nil {
		return nil, err
	}
	if snap.Goals, err = query[agent.Goal](ctx, tx, `SELECT goal FROM agent_goals WHERE inst = ? ORDER BY ord`, id); err != nil {
		return nil, err
	}
	if snap.Reviews, err = query[agent.Review](ctx, tx, `SELECT review FROM agent_reviews WHERE inst = ? ORDER BY ord`, id); err != nil {
		return nil, err
	}
	if snap.Policies, err = query[agent.PolicyVersion](ctx, tx, `SELECT policy FROM agent_policies WHERE inst = ? ORDER BY version`, id); err != nil {
		return nil, err
	}
	ws, err := query[agent.WorkingState](ctx, tx, `SELECT state FROM agent_working WHERE inst = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(ws) > 0 {
		snap.Working = ws[0]
	}
	caps, err := query[json.RawMessage](ctx, tx, `SELECT state FROM agent_capabilities WHERE inst = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(caps) > 0 {
		snap.Capabilities = caps[0]
	}
	return snap, nil
}

// Commit implements agent.Store. The batch commits in one transaction with the batches of
// other instances that wait with it (commitGroup); once handed over, Commit waits for its
// outcome whatever ctx does, so that an error always means nothing of the batch was saved.
func (s *Store) Commit(ctx context.Context, key agent.Key, b *agent.Batch) error {
	r := &commitReq{key: key, b: b, done: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.quit:
		return wrap("commit", errors.New("the store is closed"))
	case <-ctx.Done():
		return wrap("commit", ctx.Err())
	}
	return <-r.done
}

// commitBatch writes b in tx and returns its instance's ID.
func (s *Store) commitBatch(ctx context.Context, tx *sql.Tx, key agent.Key, b *agent.Batch) (int64, error) {
	exec := func(ctx context.Context, q string, args ...any) (sql.Result, error) {
		return tx.StmtContext(ctx, s.stmts[q]).ExecContext(ctx, args...)
	}
	var id int64
	if v, ok := s.ids.Load(key); ok {
		id = v.(int64)
	} else {
		if _, err := exec(ctx, sqlInsertInstance, key.Agent, key.Principal.Tenant, key.Principal.Name); err != nil {
			return 0, wrap("commit", err)
		}
		if err := tx.StmtContext(ctx, s.stmts[sqlInstance]).QueryRowContext(ctx, key.Agent, key.Principal.Tenant, key.Principal.Name).Scan(&id); err != nil {
			return 0, wrap("commit", err)
		}
	}
	for _, o := range b.Observations {
		res, err := exec(ctx, sqlInsertObs, id, o.Seq, o.ID, mustJSON(o))
		if err != nil {
			return 0, wrap("commit", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return 0, fmt.Errorf("%w: %s", agent.ErrDuplicateObservation, o.ID)
		}
		if err := indexTerms(ctx, exec, id, o.Seq, o.Text); err != nil {
			return 0, wrap("commit", err)
		}
	}
	for _, x := range b.Beliefs {
		if err := upsert(ctx, exec, sqlBelief, id, x.ID, x); err != nil {
			return 0, err
		}
	}
	for _, x := range b.Goals {
		if err := upsert(ctx, exec, sqlGoal, id, x.ID, x); err != nil {
			return 0, err
		}
	}
	for _, x := range b.Reviews {
		if err := upsert(ctx, exec, sqlReview, id, x.ID, x); err != nil {
			return 0, err
		}
	}
	if b.Working != nil {
		if _, err := exec(ctx, sqlWorking, id, mustJSON(b.Working)); err != nil {
			return 0, wrap("commit", err)
		}
	}
	if b.Capabilities != nil {
		if _, err := exec(ctx, sqlCapabilities, id, []byte(b.Capabilities)); err != nil {
			return 0, wrap("commit", err)
		}
	}
	for _, v := range b.Policies {
		res, err := exec(ctx, sqlInsertPolicy, id, v.Version, mustJSON(v))
		if err != nil {
			return 0, wrap("commit", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return 0, fmt.Errorf("%w: %d", agent.ErrDuplicatePolicy, v.Version)
		}
	}
	if b.Current > 0 {
		if _, err := exec(ctx, sqlCurrent, b.Current, id); err != nil {
			return 0, wrap("commit", err)
		}
	}
	if t := b.Turn; t != nil {
		if _, err := exec(ctx, sqlInsertTurn, id, t.Task, t.Session, t.Number, mustJSON(t)); err != nil {
			return 0, wrap("commit", err)
		}
	}
	for _, t := range b.Turns {
		if _, err := exec(ctx, sqlInsertTurn, id, t.Task, t.Session, t.Number, mustJSON(t)); err != nil {
			return 0, wrap("commit", err)
		}
	}
	for _, d := range b.Sessions {
		if _, err := exec(ctx, sqlSession, id, d.ID, []byte(d.Doc)); err != nil {
			return 0, wrap("commit", err)
		}
	}
	return id, nil
}

// upsert inserts or replaces item itemID of the instance with q (an upsertSQL), keeping its
// first order.
func upsert(ctx context.Context, exec execer, q string, inst int64, itemID string, v any) error {
	if _, err := exec(ctx, q, inst, itemID, mustJSON(v)); err != nil {
		return fmt.Errorf("sqlitestore: save %s: %w", itemID, err)
	}
	return nil
}

// SearchLog implements agent.Store.
func (s *Store) SearchLog(ctx context.Context, key agent.Key, q agent.LogQuery) ([]agent.Observation, error) {
	id, err := instance(ctx, s.db, key)
	if err != nil || id == 0 || q.Limit <= 0 {
		return nil, wrap("search", err)
	}
	if len(q.Terms) == 0 {
		return query[agent.Observation](ctx, s.db, `SELECT obs FROM agent_observations WHERE inst = ? ORDER BY seq DESC LIMIT ?`, id, q.Limit)
	}
	cited := map[string]int{}
	for seq, n := range q.Cited {
		cited[strconv.FormatInt(seq, 10)] = n
	}
	return query[agent.Observation](ctx, s.db, `
		WITH q(term) AS (SELECT value FROM json_each(?2)),
		m(seq, hits) AS (SELECT t.seq, count(*) FROM agent_terms t JOIN q ON t.term = q.term WHERE t.inst = ?1 GROUP BY t.seq),
		c(seq, n) AS (SELECT CAST(key AS INTEGER), value FROM json_each(?3))
		SELECT o.obs FROM m JOIN agent_observations o ON o.inst = ?1 AND o.seq = m.seq LEFT JOIN c ON c.seq = m.seq
		ORDER BY m.hits DESC, coalesce(c.n, 0) DESC, m.seq DESC LIMIT ?4`,
		id, string(mustJSON(q.Terms)), string(mustJSON(cited)), q.Limit)
}

// LastTurn implements agent.Store.
func (s *Store) LastTurn(ctx context.Context, key agent.Key, session string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(t.number), 0) FROM agent_turns t JOIN agent_instances i ON i.id = t.inst
		WHERE i.agent = ? AND i.tenant = ? AND i.principal = ? AND t.session = ?`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, session).Scan(&n)
	return n, wrap("last turn", err)
}

// Turns implements agent.Store.
func (s *Store) Turns(ctx context.Context, key agent.Key, session string) ([]agent.TurnRecord, error) {
	return query[agent.TurnRecord](ctx, s.db, `SELECT t.turn FROM agent_turns t JOIN agent_instances i ON i.id = t.inst
		WHERE i.agent = ? AND i.tenant = ? AND i.principal = ? AND t.session = ? ORDER BY t.number, t.seq`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, session)
}

// TurnByTask implements agent.Store.
func (s *Store) TurnByTask(ctx context.Context, agentName, task string) (*agent.TurnRecord, agent.Key, error) {
	var data []byte
	var key agent.Key
	err := s.db.QueryRowContext(ctx, `SELECT t.turn, i.agent, i.tenant, i.principal FROM agent_turns t JOIN agent_instances i ON i.id = t.inst
		WHERE t.task = ? AND i.agent = ? ORDER BY t.seq DESC LIMIT 1`, task, agentName).Scan(&data, &key.Agent, &key.Principal.Tenant, &key.Principal.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, agent.Key{}, nil
	}
	if err != nil {
		return nil, agent.Key{}, wrap("turn by task", err)
	}
	var rec agent.TurnRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, agent.Key{}, wrap("turn by task", err)
	}
	return &rec, key, nil
}

// Session implements agent.Store.
func (s *Store) Session(ctx context.Context, key agent.Key, id string) (json.RawMessage, error) {
	var doc []byte
	err := s.db.QueryRowContext(ctx, `SELECT s.doc FROM agent_sessions s JOIN agent_instances i ON i.id = s.inst
		WHERE i.agent = ? AND i.tenant = ? AND i.principal = ? AND s.id = ?`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return doc, wrap("session", err)
}

// Sessions implements agent.Store.
func (s *Store) Sessions(ctx context.Context, key agent.Key) ([]agent.SessionDoc, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT s.id, s.doc FROM agent_sessions s JOIN agent_instances i ON i.id = s.inst
		WHERE i.agent = ? AND i.tenant = ? AND i.principal = ? ORDER BY s.id`,
		key.Agent, key.Principal.Tenant, key.Principal.Name)
	if err != nil {
		return nil, wrap("sessions", err)
	}
	defer rows.Close()
	var out []agent.SessionDoc
	for rows.Next() {
		var d agent.SessionDoc
		var doc []byte
		if err := rows.Scan(&d.ID, &doc); err != nil {
			return nil, wrap("sessions", err)
		}
		d.Doc = doc
		out = append(out, d)
	}
	return out, wrap("sessions", rows.Err())
}

// Instances implements agent.Store.
func (s *Store) Instances(ctx context.Context, agentName string) ([]agent.Principal, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT tenant, principal FROM agent_instances WHERE agent = ? ORDER BY id`, agentName)
	if err != nil {
		return nil, wrap("instances", err)
	}
	defer rows.Close()
	var out []agent.Principal
	for rows.Next() {
		var p agent.Principal
		if err := rows.Scan(&p.Tenant, &p.Name); err != nil {
			return nil, wrap("instances", err)
		}
		out = append(out, p)
	}
	return out, wrap("instances", rows.Err())
}

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sqlitestore: encoding %T: %v", v, err)) // the agent's types always encode
	}
	return data
}

func query[T any](ctx context.Context, db querier, q string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var data []byte
		var v T
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("sqlitestore: %w", err)
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("sqlitestore: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	return out, nil
}

// Audit returns the capability audit log of the instances of the definition agentName, kept in
// the database (table agent_audit): what agent.Host uses when its definition names none.
func (s *Store) Audit(agentName string) capability.Audit { return &audit{db: s.db, agent: agentName} }

type audit struct {
	db    *sql.DB
	agent string
}

func (a *audit) Append(ctx context.Context, r capability.Record) error {
	r.Seq = 0
	_, err := a.db.ExecContext(ctx, `INSERT INTO agent_audit (agent, principal, capability, record) VALUES (?, ?, ?, ?)`,
		a.agent, r.Principal, r.Capability, mustJSON(r))
	return wrap("audit", err)
}

func (a *audit) Records(ctx context.Context, q capability.AuditQuery) ([]capability.Record, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := a.db.QueryContext(ctx, `SELECT seq, record FROM agent_audit
		WHERE agent = ? AND (? OR principal = ?) AND (? = '' OR capability = ?) AND seq > ?
		ORDER BY seq DESC LIMIT ?`, a.agent, q.All, q.Principal, q.Capability, q.Capability, q.After, limit)
	if err != nil {
		return nil, wrap("audit", err)
	}
	defer rows.Close()
	var out []capability.Record
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, wrap("audit", err)
		}
		var r capability.Record
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, wrap("audit", err)
		}
		r.Seq = seq
		out = append(out, r)
	}
	slices.Reverse(out)
	return out, wrap("audit", rows.Err())
}

// Spending returns what the payers of the definition agentName's instances spent, kept in the
// database (table agent_spending), so that a restart does not give a principal its budget
// anew: what agent/peer's payers take their budgets from (peer.Options.Spending). A take is one
// immediate (writing) transaction, so takes of processes sharing the file are serialized too.
func (s *Store) Spending(agentName string) x402.Spending {
	return &spending{db: s.db, agent: agentName}
}

type spending struct {
	db    *sql.DB
	agent string
}

const sqlSpent = `SELECT spent FROM agent_spending WHERE agent = ? AND account = ? AND network = ? AND asset = ?`

func (p *spending) Take(ctx context.Context, account, network, asset string, amount, limit *big.Int) (bool, error) {
	took := false
	err := p.update(ctx, account, network, asset, func(spent *big.Int) *big.Int {
		next := new(big.Int).Add(spent, amount)
		if next.Cmp(limit) > 0 {
			return nil
		}
		took = true
		return next
	})
	return took, err
}

func (p *spending) Give(ctx context.Context, account, network, asset string, amount *big.Int) error {
	return p.update(ctx, account, network, asset, func(spent *big.Int) *big.Int {
		if spent.Sign() == 0 {
			return nil // nothing to give back: write nothing
		}
		next := new(big.Int).Sub(spent, amount)
		if next.Sign() < 0 {
			next.SetInt64(0)
		}
		return next
	})
}

func (p *spending) Spent(ctx context.Context, account, network, asset string) (*big.Int, error) {
	var text string
	err := p.db.QueryRowContext(ctx, sqlSpent, p.agent, account, network, asset).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return new(big.Int), nil
	}
	if err != nil {
		return nil, wrap("spending", err)
	}
	return parseSpent(text)
}

// update reads what account spent of the token and writes what next makes of it (nil: write
// nothing), in one writing transaction.
func (p *spending) update(ctx context.Context, account, network, asset string, next func(spent *big.Int) *big.Int) error {
	tx, err := p.db.BeginTx(ctx, nil) // immediate: the write lock is taken now (Open's _txlock)
	if err != nil {
		return wrap("spending", err)
	}
	defer tx.Rollback()
	spent := new(big.Int)
	var text string
	switch err := tx.QueryRowContext(ctx, sqlSpent, p.agent, account, network, asset).Scan(&text); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return wrap("spending", err)
	default:
		if spent, err = parseSpent(text); err != nil {
			return err
		}
	}
	n := next(spent)
	if n == nil {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO agent_spending (agent, account, network, asset, spent) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (agent, account, network, asset) DO UPDATE SET spent = excluded.spent`, p.agent, account, network, asset, n.String()); err != nil {
		return wrap("spending", err)
	}
	return wrap("spending", tx.Commit())
}

func parseSpent(text string) (*big.Int, error) {
	n, ok := new(big.Int).SetString(text, 10)
	if !ok || n.Sign() < 0 {
		return nil, fmt.Errorf("sqlitestore: spending: %q is not an amount", text)
	}
	return n, nil
}
