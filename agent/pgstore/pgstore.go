// Package pgstore is the agent.Store in PostgreSQL, through pgx (github.com/jackc/pgx/v5,
// pgxpool): every instance (agent, tenant, principal) with its observation log, beliefs, goals,
// policy versions, working state, reviews, turn records and session documents, in tables of
// their own (agent_*), so they can share a database, and a schema, with the task store
// (store/postgres). A commit is one transaction; documents are stored as json.
//
// Open creates or migrates the tables (table agent_schema_version) in one transaction under an
// advisory lock, so replicas starting together migrate once. Options.Schema puts them in a
// schema of their own.
package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/internal/pgutil"
	"github.com/a2awebcap/a2awebcap/x402"
)

// migrations[i] takes the agent tables from version i to i+1. Append only.
var migrations = []string{
	`
CREATE TABLE agent_instances (
	id        bigserial PRIMARY KEY,
	agent     text   NOT NULL,
	tenant    text   NOT NULL,
	principal text   NOT NULL,
	policy    integer NOT NULL DEFAULT 0,
	UNIQUE (agent, tenant, principal)
);
CREATE TABLE agent_observations (
	inst bigint NOT NULL REFERENCES agent_instances (id),
	seq  bigint NOT NULL,
	id   text   NOT NULL,
	obs  json   NOT NULL,
	PRIMARY KEY (inst, seq),
	UNIQUE (inst, id)
);
CREATE TABLE agent_beliefs (
	inst   bigint NOT NULL REFERENCES agent_instances (id),
	id     text   NOT NULL,
	ord    bigint NOT NULL,
	belief json   NOT NULL,
	PRIMARY KEY (inst, id)
);
CREATE TABLE agent_goals (
	inst bigint NOT NULL REFERENCES agent_instances (id),
	id   text   NOT NULL,
	ord  bigint NOT NULL,
	goal json   NOT NULL,
	PRIMARY KEY (inst, id)
);
CREATE TABLE agent_reviews (
	inst   bigint NOT NULL REFERENCES agent_instances (id),
	id     text   NOT NULL,
	ord    bigint NOT NULL,
	review json   NOT NULL,
	PRIMARY KEY (inst, id)
);
CREATE TABLE agent_policies (
	inst    bigint  NOT NULL REFERENCES agent_instances (id),
	version integer NOT NULL,
	policy  json    NOT NULL,
	PRIMARY KEY (inst, version)
);
CREATE TABLE agent_working (
	inst  bigint NOT NULL PRIMARY KEY REFERENCES agent_instances (id),
	state json   NOT NULL
);
CREATE TABLE agent_turns (
	seq     bigserial PRIMARY KEY,
	inst    bigint  NOT NULL REFERENCES agent_instances (id),
	task    text    NOT NULL,
	session text    NOT NULL,
	number  integer NOT NULL,
	turn    json    NOT NULL
);
CREATE INDEX agent_turns_session ON agent_turns (inst, session, number);
CREATE INDEX agent_turns_task ON agent_turns (task);
CREATE TABLE agent_sessions (
	inst bigint NOT NULL REFERENCES agent_instances (id),
	id   text   NOT NULL,
	doc  json   NOT NULL,
	PRIMARY KEY (inst, id)
);
`,
	`
CREATE TABLE agent_capabilities (
	inst  bigint NOT NULL PRIMARY KEY REFERENCES agent_instances (id),
	state json   NOT NULL
);
`,
	// 3: the search index of the observation logs (one row per distinct term of an
	// observation), filled for the observations already there by backfillTerms.
	`
CREATE TABLE agent_terms (
	inst bigint NOT NULL REFERENCES agent_instances (id),
	term text   NOT NULL,
	seq  bigint NOT NULL,
	PRIMARY KEY (inst, term, seq)
);
`,
	// 4: the capability audit log (agent/capability records, per agent and principal).
	`
CREATE TABLE agent_audit (
	seq        bigserial PRIMARY KEY,
	agent      text NOT NULL,
	principal  text NOT NULL,
	capability text NOT NULL,
	record     json NOT NULL
);
CREATE INDEX agent_audit_principal ON agent_audit (agent, principal, seq);
`,
	// 5: what payers' budgets spent (x402.Spending), per agent, account (principal) and token.
	`
CREATE TABLE agent_spending (
	agent   text          NOT NULL,
	account text          NOT NULL,
	network text          NOT NULL,
	asset   text          NOT NULL,
	spent   numeric(78,0) NOT NULL CHECK (spent >= 0),
	PRIMARY KEY (agent, account, network, asset)
);
`,
}

// Options tune Open. The zero value (or nil) is the default for each field.
type Options struct {
	// Schema, if set, is the PostgreSQL schema of the tables: Open creates it if missing, and it
	// is the search_path of every connection. Default: the DSN's search_path (normally public).
	Schema string
	// MaxConns is the size of the connection pool. Default: the DSN's pool_max_conns, else
	// pgxpool's default.
	MaxConns int32
}

// Store is the agent.Store in PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
}

var _ agent.Store = (*Store)(nil)

// Open connects to the database of dsn (a postgres:// URL or key=value string, as pgx takes)
// and creates or migrates the agent tables.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	pool, err := pgutil.Open(ctx, dsn, o.Schema, o.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	if err := schema.Apply(ctx, pool, o.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	return &Store{pool: pool}, nil
}

// schema is the store's tables (agent_*).
var schema = &pgutil.Migrations{Name: "agent", Table: "agent_schema_version", Steps: migrations,
	After: func(ctx context.Context, tx pgx.Tx, v int) error {
		if v == 3 {
			return backfillTerms(ctx, tx)
		}
		return nil
	}}

// backfillTerms indexes the observations already in the logs.
func backfillTerms(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT inst, seq, obs FROM agent_observations`)
	if err != nil {
		return err
	}
	type row struct {
		inst, seq int64
		text      string
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		var data []byte
		if err := r.Scan(&x.inst, &x.seq, &data); err != nil {
			return x, err
		}
		var o agent.Observation
		err := json.Unmarshal(data, &o)
		x.text = o.Text
		return x, err
	})
	if err != nil {
		return err
	}
	for _, r := range all {
		if err := indexTerms(ctx, tx, r.inst, r.seq, r.text); err != nil {
			return err
		}
	}
	return nil
}

// indexTerms adds the search terms of an observation's text.
func indexTerms(ctx context.Context, tx pgx.Tx, inst, seq int64, text string) error {
	t := agent.SearchTerms(text)
	if len(t) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO agent_terms (inst, term, seq) SELECT $1, unnest($2::text[]), $3 ON CONFLICT DO NOTHING`, inst, t, seq)
	return err
}

// Close closes the pool, waiting for the connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

const instanceID = `SELECT id FROM agent_instances WHERE agent = $1 AND tenant = $2 AND principal = $3`

// Load implements agent.Store.
func (s *Store) Load(ctx context.Context, key agent.Key, tail int) (*agent.Snapshot, error) {
	snap := &agent.Snapshot{}
	// REPEATABLE READ: every query sees the same commit.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `SELECT id, policy FROM agent_instances WHERE agent = $1 AND tenant = $2 AND principal = $3`,
			key.Agent, key.Principal.Tenant, key.Principal.Name).Scan(&id, &snap.Current)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var limit any // NULL: no limit
		if tail > 0 {
			limit = tail
		}
		if snap.Observations, err = query[agent.Observation](ctx, tx, `SELECT obs FROM (SELECT obs, seq FROM agent_observations
			WHERE inst = $1 ORDER BY seq DESC LIMIT $2) AS t ORDER BY seq`, id, limit); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM agent_observations WHERE inst = $1`, id).Scan(&snap.Count); err != nil {
			return err
		}
		if snap.Beliefs, err = query[agent.Belief](ctx, tx, `SELECT belief FROM agent_beliefs WHERE inst = $1 ORDER BY ord`, id); err != nil {
			return err
		}
		if snap.Goals, err = query[agent.Goal](ctx, tx, `SELECT goal FROM agent_goals WHERE inst = $1 ORDER BY ord`, id); err != nil {
			return err
		}
		if snap.Reviews, err = query[agent.Review](ctx, tx, `SELECT review FROM agent_reviews WHERE inst = $1 ORDER BY ord`, id); err != nil {
			return err
		}
		if snap.Policies, err = query[agent.PolicyVersion](ctx, tx, `SELECT policy FROM agent_policies WHERE inst = $1 ORDER BY version`, id); err != nil {
			return err
		}
		ws, err := query[agent.WorkingState](ctx, tx, `SELECT state FROM agent_working WHERE inst = $1`, id)
		if err != nil {
			return err
		}
		if len(ws) > 0 {
			snap.Working = ws[0]
		}
		caps, err := query[json.RawMessage](ctx, tx, `SELECT state FROM agent_capabilities WHERE inst = $1`, id)
		if len(caps) > 0 {
			snap.Capabilities = caps[0]
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: load: %w", err)
	}
	return snap, nil
}

// errRefused carries an agent sentinel out of a transaction.
type errRefused struct{ err error }

func (e errRefused) Error() string { return e.err.Error() }
func (e errRefused) Unwrap() error { return e.err }

// Commit implements agent.Store.
func (s *Store) Commit(ctx context.Context, key agent.Key, b *agent.Batch) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO agent_instances (agent, tenant, principal) VALUES ($1, $2, $3)
			ON CONFLICT (agent, tenant, principal) DO UPDATE SET agent = excluded.agent RETURNING id`,
			key.Agent, key.Principal.Tenant, key.Principal.Name).Scan(&id)
		if err != nil {
			return err
		}
		for _, o := range b.Observations {
			tag, err := tx.Exec(ctx, `INSERT INTO agent_observations (inst, seq, id, obs) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
				id, o.Seq, o.ID, jsonOf(o))
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errRefused{fmt.Errorf("%w: %s", agent.ErrDuplicateObservation, o.ID)}
			}
			if err := indexTerms(ctx, tx, id, o.Seq, o.Text); err != nil {
				return err
			}
		}
		for _, x := range b.Beliefs {
			if err := upsert(ctx, tx, "agent_beliefs", "belief", id, x.ID, x); err != nil {
				return err
			}
		}
		for _, x := range b.Goals {
			if err := upsert(ctx, tx, "agent_goals", "goal", id, x.ID, x); err != nil {
				return err
			}
		}
		for _, x := range b.Reviews {
			if err := upsert(ctx, tx, "agent_reviews", "review", id, x.ID, x); err != nil {
				return err
			}
		}
		if b.Capabilities != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO agent_capabilities (inst, state) VALUES ($1, $2)
				ON CONFLICT (inst) DO UPDATE SET state = excluded.state`, id, string(b.Capabilities)); err != nil {
				return err
			}
		}
		if b.Working != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO agent_working (inst, state) VALUES ($1, $2)
				ON CONFLICT (inst) DO UPDATE SET state = excluded.state`, id, jsonOf(b.Working)); err != nil {
				return err
			}
		}
		for _, v := range b.Policies {
			tag, err := tx.Exec(ctx, `INSERT INTO agent_policies (inst, version, policy) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
				id, v.Version, jsonOf(v))
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errRefused{fmt.Errorf("%w: %d", agent.ErrDuplicatePolicy, v.Version)}
			}
		}
		if b.Current > 0 {
			if _, err := tx.Exec(ctx, `UPDATE agent_instances SET policy = $1 WHERE id = $2`, b.Current, id); err != nil {
				return err
			}
		}
		if t := b.Turn; t != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO agent_turns (inst, task, session, number, turn) VALUES ($1, $2, $3, $4, $5)`,
				id, t.Task, t.Session, t.Number, jsonOf(t)); err != nil {
				return err
			}
		}
		for _, t := range b.Turns {
			if _, err := tx.Exec(ctx, `INSERT INTO agent_turns (inst, task, session, number, turn) VALUES ($1, $2, $3, $4, $5)`,
				id, t.Task, t.Session, t.Number, jsonOf(t)); err != nil {
				return err
			}
		}
		for _, d := range b.Sessions {
			if _, err := tx.Exec(ctx, `INSERT INTO agent_sessions (inst, id, doc) VALUES ($1, $2, $3)
				ON CONFLICT (inst, id) DO UPDATE SET doc = excluded.doc`, id, d.ID, string(d.Doc)); err != nil {
				return err
			}
		}
		return nil
	})
	var refused errRefused
	if errors.As(err, &refused) {
		return refused.err
	}
	if err != nil {
		return fmt.Errorf("pgstore: commit: %w", err)
	}
	return nil
}

// upsert inserts or replaces item itemID of the instance in table, keeping its first order.
// Commits of one instance are serialized by the instance, so max(ord)+1 is not raced.
func upsert(ctx context.Context, tx pgx.Tx, table, col string, inst int64, itemID string, v any) error {
	q := `INSERT INTO ` + table + ` (inst, id, ord, ` + col + `)
		VALUES ($1, $2, (SELECT coalesce(max(ord), 0) + 1 FROM ` + table + ` WHERE inst = $1), $3)
		ON CONFLICT (inst, id) DO UPDATE SET ` + col + ` = excluded.` + col
	if _, err := tx.Exec(ctx, q, inst, itemID, jsonOf(v)); err != nil {
		return fmt.Errorf("save %s: %w", itemID, err)
	}
	return nil
}

// SearchLog implements agent.Store.
func (s *Store) SearchLog(ctx context.Context, key agent.Key, q agent.LogQuery) ([]agent.Observation, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	if len(q.Terms) == 0 {
		return query[agent.Observation](ctx, s.pool, `SELECT obs FROM agent_observations WHERE inst = (`+instanceID+`) ORDER BY seq DESC LIMIT $4`,
			key.Agent, key.Principal.Tenant, key.Principal.Name, q.Limit)
	}
	seqs, counts := make([]int64, 0, len(q.Cited)), make([]int32, 0, len(q.Cited))
	for seq, n := range q.Cited {
		seqs, counts = append(seqs, seq), append(counts, int32(n))
	}
	return query[agent.Observation](ctx, s.pool, `
		WITH i AS (`+instanceID+`),
		m AS (SELECT t.seq, count(*) AS hits FROM agent_terms t, i WHERE t.inst = i.id AND t.term = ANY($4) GROUP BY t.seq),
		c AS (SELECT * FROM unnest($5::bigint[], $6::int[]) AS c (seq, n))
		SELECT o.obs FROM m JOIN i ON true JOIN agent_observations o ON o.inst = i.id AND o.seq = m.seq LEFT JOIN c ON c.seq = m.seq
		ORDER BY m.hits DESC, coalesce(c.n, 0) DESC, m.seq DESC LIMIT $7`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, q.Terms, seqs, counts, q.Limit)
}

// LastTurn implements agent.Store.
func (s *Store) LastTurn(ctx context.Context, key agent.Key, session string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(t.number), 0) FROM agent_turns t WHERE t.inst = (`+instanceID+`) AND t.session = $4`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, session).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pgstore: last turn: %w", err)
	}
	return n, nil
}

// Turns implements agent.Store.
func (s *Store) Turns(ctx context.Context, key agent.Key, session string) ([]agent.TurnRecord, error) {
	return query[agent.TurnRecord](ctx, s.pool, `SELECT turn FROM agent_turns WHERE inst = (`+instanceID+`) AND session = $4 ORDER BY number, seq`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, session)
}

// TurnByTask implements agent.Store.
func (s *Store) TurnByTask(ctx context.Context, agentName, task string) (*agent.TurnRecord, agent.Key, error) {
	var data []byte
	var key agent.Key
	err := s.pool.QueryRow(ctx, `SELECT t.turn, i.agent, i.tenant, i.principal FROM agent_turns t JOIN agent_instances i ON i.id = t.inst
		WHERE t.task = $1 AND i.agent = $2 ORDER BY t.seq DESC LIMIT 1`, task, agentName).Scan(&data, &key.Agent, &key.Principal.Tenant, &key.Principal.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, agent.Key{}, nil
	}
	if err != nil {
		return nil, agent.Key{}, fmt.Errorf("pgstore: turn by task: %w", err)
	}
	var rec agent.TurnRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, agent.Key{}, fmt.Errorf("pgstore: turn by task: %w", err)
	}
	return &rec, key, nil
}

// Session implements agent.Store.
func (s *Store) Session(ctx context.Context, key agent.Key, id string) (json.RawMessage, error) {
	var doc []byte
	err := s.pool.QueryRow(ctx, `SELECT doc FROM agent_sessions WHERE inst = (`+instanceID+`) AND id = $4`,
		key.Agent, key.Principal.Tenant, key.Principal.Name, id).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: session: %w", err)
	}
	return doc, nil
}

// Sessions implements agent.Store.
func (s *Store) Sessions(ctx context.Context, key agent.Key) ([]agent.SessionDoc, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, doc FROM agent_sessions WHERE inst = (`+instanceID+`) ORDER BY id`,
		key.Agent, key.Principal.Tenant, key.Principal.Name)
	if err != nil {
		return nil, fmt.Errorf("pgstore: sessions: %w", err)
	}
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (agent.SessionDoc, error) {
		var d agent.SessionDoc
		var doc []byte
		err := r.Scan(&d.ID, &doc)
		d.Doc = doc
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: sessions: %w", err)
	}
	if len(docs) == 0 {
		return nil, nil
	}
	return docs, nil
}

// Instances implements agent.Store.
func (s *Store) Instances(ctx context.Context, agentName string) ([]agent.Principal, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant, principal FROM agent_instances WHERE agent = $1 ORDER BY id`, agentName)
	if err != nil {
		return nil, fmt.Errorf("pgstore: instances: %w", err)
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (agent.Principal, error) {
		var p agent.Principal
		err := r.Scan(&p.Tenant, &p.Name)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: instances: %w", err)
	}
	return ps, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func query[T any](ctx context.Context, q querier, sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) {
		var data []byte
		var v T
		if err := r.Scan(&data); err != nil {
			return v, err
		}
		return v, json.Unmarshal(data, &v)
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// jsonOf encodes v for a json column, as text (pgx sends a string as the column's text).
func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("pgstore: encoding %T: %v", v, err)) // the agent's types always encode
	}
	return string(data)
}

// Audit returns the capability audit log of the instances of the definition agentName, kept in
// the database (table agent_audit): what agent.Host uses when its definition names none.
func (s *Store) Audit(agentName string) capability.Audit {
	return &audit{pool: s.pool, agent: agentName}
}

type audit struct {
	pool  *pgxpool.Pool
	agent string
}

func (a *audit) Append(ctx context.Context, r capability.Record) error {
	r.Seq = 0
	if _, err := a.pool.Exec(ctx, `INSERT INTO agent_audit (agent, principal, capability, record) VALUES ($1, $2, $3, $4)`,
		a.agent, r.Principal, r.Capability, jsonOf(r)); err != nil {
		return fmt.Errorf("pgstore: audit: %w", err)
	}
	return nil
}

func (a *audit) Records(ctx context.Context, q capability.AuditQuery) ([]capability.Record, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := a.pool.Query(ctx, `SELECT seq, record FROM agent_audit
		WHERE agent = $1 AND ($2 OR principal = $3) AND ($4 = '' OR capability = $4) AND seq > $5
		ORDER BY seq DESC LIMIT $6`, a.agent, q.All, q.Principal, q.Capability, q.After, limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: audit: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (capability.Record, error) {
		var seq int64
		var data []byte
		if err := row.Scan(&seq, &data); err != nil {
			return capability.Record{}, err
		}
		var r capability.Record
		err := json.Unmarshal(data, &r)
		r.Seq = seq
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: audit: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// Spending returns what the payers of the definition agentName's instances spent, kept in the
// database (table agent_spending), shared by every replica: what agent/peer's payers take their
// budgets from (peer.Options.Spending). A take is one statement, which locks the account's row
// and re-checks the limit against its newest version, so replicas taking at once never pass it.
func (s *Store) Spending(agentName string) x402.Spending {
	return &spending{pool: s.pool, agent: agentName}
}

type spending struct {
	pool  *pgxpool.Pool
	agent string
}

func (p *spending) Take(ctx context.Context, account, network, asset string, amount, limit *big.Int) (bool, error) {
	rows, err := p.pool.Query(ctx, `
		INSERT INTO agent_spending AS s (agent, account, network, asset, spent)
		SELECT $1, $2, $3, $4, $5::text::numeric WHERE $5::text::numeric <= $6::text::numeric
		ON CONFLICT (agent, account, network, asset) DO UPDATE SET spent = s.spent + excluded.spent
		WHERE s.spent + excluded.spent <= $6::text::numeric
		RETURNING 1`, p.agent, account, network, asset, amount.String(), limit.String())
	if err != nil {
		return false, fmt.Errorf("pgstore: spending: %w", err)
	}
	n, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return false, fmt.Errorf("pgstore: spending: %w", err)
	}
	return len(n) == 1, nil
}

func (p *spending) Give(ctx context.Context, account, network, asset string, amount *big.Int) error {
	_, err := p.pool.Exec(ctx, `UPDATE agent_spending SET spent = greatest(spent - $5::text::numeric, 0)
		WHERE agent = $1 AND account = $2 AND network = $3 AND asset = $4`, p.agent, account, network, asset, amount.String())
	if err != nil {
		return fmt.Errorf("pgstore: spending: %w", err)
	}
	return nil
}

func (p *spending) Spent(ctx context.Context, account, network, asset string) (*big.Int, error) {
	var text string
	err := p.pool.QueryRow(ctx, `SELECT spent::text FROM agent_spending WHERE agent = $1 AND account = $2 AND network = $3 AND asset = $4`,
		p.agent, account, network, asset).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return new(big.Int), nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: spending: %w", err)
	}
	n, ok := new(big.Int).SetString(text, 10)
	if !ok {
		return nil, fmt.Errorf("pgstore: spending: %q is not an amount", text)
	}
	return n, nil
}
