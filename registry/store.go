package registry

// The registry's state in SQL: SQLite (the default, in the task store's file) or PostgreSQL
// (shared by replicas), through database/sql with one set of statements ($n placeholders,
// which both read).

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
	_ "modernc.org/sqlite"             // the database/sql driver "sqlite"
)

// Store keeps registrations and the agents they list. Open one with OpenSQLite or
// OpenPostgres; it is safe for concurrent use.
type Store struct {
	db       *sql.DB
	postgres bool
}

const schema = `
CREATE TABLE IF NOT EXISTS registry_agents (
	id            TEXT   NOT NULL PRIMARY KEY,
	url           TEXT   NOT NULL,
	card          TEXT   NOT NULL,
	name          TEXT   NOT NULL,
	state         TEXT   NOT NULL,
	signature     TEXT   NOT NULL,
	last_error    TEXT   NOT NULL,
	failures      BIGINT NOT NULL,
	registered    BIGINT NOT NULL,
	checked       BIGINT NOT NULL,
	reachable     BIGINT NOT NULL,
	next_check    BIGINT NOT NULL,
	claimed_until BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS registry_agents_name ON registry_agents (name, id);
CREATE INDEX IF NOT EXISTS registry_agents_due ON registry_agents (next_check);
CREATE TABLE IF NOT EXISTS registry_terms (
	id   TEXT NOT NULL,
	kind TEXT NOT NULL,
	term TEXT NOT NULL,
	PRIMARY KEY (id, kind, term)
);
CREATE TABLE IF NOT EXISTS registry_registrations (
	id        TEXT   NOT NULL,
	tenant    TEXT   NOT NULL,
	principal TEXT   NOT NULL,
	created   BIGINT NOT NULL,
	PRIMARY KEY (id, tenant, principal)
);
CREATE INDEX IF NOT EXISTS registry_registrations_owner ON registry_registrations (tenant, principal);
`

var memCount atomic.Int64

// OpenSQLite opens (creating it if needed) the registry's tables in the SQLite database file at
// path — the task store's file will do: the tables are registry_*. ":memory:" is a private
// in-memory database.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	const pragmas = "_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	var dsn string
	if path == ":memory:" {
		dsn = fmt.Sprintf("file:a2awebcap-registry-%d?mode=memory&cache=shared&%s", memCount.Add(1), pragmas)
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("registry: open %s: %w", path, err)
		}
		esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
		dsn = "file:" + esc.Replace(filepath.ToSlash(abs)) + "?_pragma=journal_mode(WAL)&" + pragmas
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("registry: open %s: %w", path, err)
	}
	// One connection: SQLite has one writer; database/sql queues the rest (and an in-memory
	// database lives as long as its connection).
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return open(ctx, db, false)
}

// OpenPostgres opens the registry's tables in the PostgreSQL database dsn names (creating them
// if needed), in the schema its search_path names.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("registry: open PostgreSQL: %w", err)
	}
	db.SetMaxOpenConns(8)
	return open(ctx, db, true)
}

func open(ctx context.Context, db *sql.DB, postgres bool) (*Store, error) {
	s := &Store{db: db, postgres: postgres}
	for stmt := range strings.SplitSeq(schema, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("registry: creating tables: %w", err)
		}
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// row is an agent as stored.
type row struct {
	id, url, card, name, state, signature, lastError string
	failures                                         int
	registered, checked, reachable                   int64
}

const agentCols = `a.id, a.url, a.card, a.name, a.state, a.signature, a.last_error, a.failures, a.registered, a.checked, a.reachable`

func scanRow(sc interface{ Scan(...any) error }, extra ...any) (*row, error) {
	var r row
	dst := append([]any{&r.id, &r.url, &r.card, &r.name, &r.state, &r.signature, &r.lastError, &r.failures, &r.registered, &r.checked, &r.reachable}, extra...)
	if err := sc.Scan(dst...); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *row) entry(registrations int, mine bool) (*Entry, error) {
	var card a2a.AgentCard
	if err := json.Unmarshal([]byte(r.card), &card); err != nil {
		return nil, fmt.Errorf("registry: stored card of %s: %w", r.id, err)
	}
	return &Entry{
		ID: r.id, URL: r.url, Card: &card, State: State(r.state), Signature: Signature(r.signature),
		RegisteredAt: ms(r.registered), CheckedAt: ms(r.checked), ReachableAt: ms(r.reachable),
		Failures: r.failures, LastError: r.lastError, Registrations: registrations, Mine: mine,
	}, nil
}

func ms(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// terms are the searchable words of a card: its skills' IDs and names ("s"), and their tags
// ("t"), lower case.
func terms(card *a2a.AgentCard) map[[2]string]bool {
	out := map[[2]string]bool{}
	for _, sk := range card.Skills {
		for _, s := range []string{sk.ID, sk.Name} {
			if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
				out[[2]string{"s", s}] = true
			}
		}
		for _, tag := range sk.Tags {
			if tag = strings.ToLower(strings.TrimSpace(tag)); tag != "" {
				out[[2]string{"t", tag}] = true
			}
		}
	}
	return out
}

// errFull is register's refusal for a cap.
type errFull struct{ why string }

func (e errFull) Error() string { return e.why }

// register records owner's registration of the agent a fetched card describes: it adds the
// agent (or refreshes its card), and the registration unless owner has it already (created
// false). Caps are checked in the same transaction.
func (s *Store) register(ctx context.Context, owner Owner, a *checkedAgent, now time.Time, next time.Time, maxPerOwner, maxAgents int) (created bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var exists, mine int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM registry_agents WHERE id = $1`, a.id).Scan(&exists); err != nil {
		return false, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM registry_registrations WHERE id = $1 AND tenant = $2 AND principal = $3`, a.id, owner.Tenant, owner.Name).Scan(&mine); err != nil {
		return false, err
	}
	if mine == 0 {
		var owned int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM registry_registrations WHERE tenant = $1 AND principal = $2`, owner.Tenant, owner.Name).Scan(&owned); err != nil {
			return false, err
		}
		if owned >= maxPerOwner {
			return false, errFull{fmt.Sprintf("you have %d registrations, the most one principal may have", owned)}
		}
	}
	if exists == 0 {
		var total int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM registry_agents`).Scan(&total); err != nil {
			return false, err
		}
		if total >= maxAgents {
			return false, errFull{fmt.Sprintf("the registry lists %d agents, its most", total)}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO registry_agents (id, url, card, name, state, signature, last_error, failures, registered, checked, reachable, next_check, claimed_until)
			VALUES ($1, $2, $3, $4, $5, $6, '', 0, $7, $7, $7, $8, 0)`,
			a.id, a.url, string(a.cardJSON), strings.ToLower(a.card.Name), string(StateReachable), string(a.signature), now.UnixMilli(), next.UnixMilli()); err != nil {
			return false, err
		}
	} else if err := s.setGood(ctx, tx, a, now, next); err != nil {
		return false, err
	}
	if err := s.setTerms(ctx, tx, a); err != nil {
		return false, err
	}
	if mine == 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO registry_registrations (id, tenant, principal, created) VALUES ($1, $2, $3, $4)`,
			a.id, owner.Tenant, owner.Name, now.UnixMilli()); err != nil {
			return false, err
		}
	}
	return mine == 0, tx.Commit()
}

// setGood records a good check of an agent: its card, reachable.
func (s *Store) setGood(ctx context.Context, tx *sql.Tx, a *checkedAgent, now, next time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE registry_agents SET card = $2, name = $3, state = $4, signature = $5, last_error = '', failures = 0,
		checked = $6, reachable = $6, next_check = $7, claimed_until = 0 WHERE id = $1`,
		a.id, string(a.cardJSON), strings.ToLower(a.card.Name), string(StateReachable), string(a.signature), now.UnixMilli(), next.UnixMilli())
	return err
}

func (s *Store) setTerms(ctx context.Context, tx *sql.Tx, a *checkedAgent) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM registry_terms WHERE id = $1`, a.id); err != nil {
		return err
	}
	for k := range terms(a.card) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO registry_terms (id, kind, term) VALUES ($1, $2, $3)`, a.id, k[0], k[1]); err != nil {
			return err
		}
	}
	return nil
}

// checkedGood records a good periodic check.
func (s *Store) checkedGood(ctx context.Context, a *checkedAgent, now, next time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.setGood(ctx, tx, a, now, next); err != nil {
		return err
	}
	if err := s.setTerms(ctx, tx, a); err != nil {
		return err
	}
	return tx.Commit()
}

// checkedBad records a failed periodic check: the state and why, the card kept.
func (s *Store) checkedBad(ctx context.Context, id string, state State, why string, now, next time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE registry_agents SET state = $2, last_error = $3, failures = failures + 1, checked = $4, next_check = $5, claimed_until = 0 WHERE id = $1`,
		id, string(state), why, now.UnixMilli(), next.UnixMilli())
	return err
}

// unregister removes owner's registration of id, and the agent with it when it was the last.
func (s *Store) unregister(ctx context.Context, owner Owner, id string) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM registry_registrations WHERE id = $1 AND tenant = $2 AND principal = $3`, id, owner.Tenant, owner.Name)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	var left int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM registry_registrations WHERE id = $1`, id).Scan(&left); err != nil {
		return false, err
	}
	if left == 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM registry_terms WHERE id = $1`, id); err != nil {
			return false, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM registry_agents WHERE id = $1`, id); err != nil {
			return false, err
		}
	}
	return true, tx.Commit()
}

// countCols are the registrations of an agent and whether owner ($1, $2) has one.
const countCols = `(SELECT count(*) FROM registry_registrations r WHERE r.id = a.id),
	(SELECT count(*) FROM registry_registrations r WHERE r.id = a.id AND r.tenant = $1 AND r.principal = $2)`

// get returns the agent id, as owner sees it; nil when there is none.
func (s *Store) get(ctx context.Context, owner Owner, id string) (*Entry, error) {
	var n, mine int
	r, err := scanRow(s.db.QueryRowContext(ctx, `SELECT `+agentCols+`, `+countCols+` FROM registry_agents a WHERE a.id = $3`, owner.Tenant, owner.Name, id), &n, &mine)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.entry(n, mine > 0)
}

// likeArg is s as a LIKE pattern matching any string that contains it.
func likeArg(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// search returns one page of the agents q matches, as owner sees them.
func (s *Store) search(ctx context.Context, owner Owner, q Query, size int) ([]*Entry, string, error) {
	where := []string{"1 = 1"}
	args := []any{owner.Tenant, owner.Name}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Skill != "" {
		where = append(where, `EXISTS (SELECT 1 FROM registry_terms t WHERE t.id = a.id AND t.kind = 's' AND t.term LIKE `+arg(likeArg(q.Skill))+` ESCAPE '\')`)
	}
	if q.Tag != "" {
		where = append(where, `EXISTS (SELECT 1 FROM registry_terms t WHERE t.id = a.id AND t.kind = 't' AND t.term = `+arg(strings.ToLower(q.Tag))+`)`)
	}
	if q.Name != "" {
		where = append(where, `a.name LIKE `+arg(likeArg(q.Name))+` ESCAPE '\'`)
	}
	if q.State != "" {
		where = append(where, `a.state = `+arg(string(q.State)))
	}
	if q.Mine {
		where = append(where, `EXISTS (SELECT 1 FROM registry_registrations r WHERE r.id = a.id AND r.tenant = $1 AND r.principal = $2)`)
	}
	if q.PageToken != "" {
		name, id, ok := parseToken(q.PageToken)
		if !ok {
			return nil, "", ErrInvalidArgument("pageToken is not one this registry gave")
		}
		pn, pi := arg(name), arg(id)
		where = append(where, `(a.name > `+pn+` OR (a.name = `+pn+` AND a.id > `+pi+`))`)
	}
	query := `SELECT ` + agentCols + `, ` + countCols + ` FROM registry_agents a WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY a.name, a.id LIMIT ` + arg(size+1)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []*Entry
	var last *row
	for rows.Next() {
		var n, mine int
		r, err := scanRow(rows, &n, &mine)
		if err != nil {
			return nil, "", err
		}
		if len(out) == size {
			return out, token(last.name, last.id), rows.Err()
		}
		e, err := r.entry(n, mine > 0)
		if err != nil {
			return nil, "", err
		}
		out, last = append(out, e), r
	}
	return out, "", rows.Err()
}

func token(name, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(name + "\x00" + id))
}

func parseToken(t string) (name, id string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", "", false
	}
	name, id, ok = strings.Cut(string(b), "\x00")
	return name, id, ok && len(id) == idLen
}

// due is an agent claimed for a check.
type due struct {
	id, url   string
	signature Signature
	card      string
}

// claimDue claims up to n agents whose check is due, until lease: replicas sharing the
// database check each agent once.
func (s *Store) claimDue(ctx context.Context, now time.Time, lease time.Duration, n int) ([]due, error) {
	lock := ""
	if s.postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	rows, err := s.db.QueryContext(ctx, `UPDATE registry_agents SET claimed_until = $1 WHERE id IN (
		SELECT id FROM registry_agents WHERE next_check <= $2 AND claimed_until <= $2 ORDER BY next_check LIMIT $3`+lock+`)
		RETURNING id, url, signature, card`, now.Add(lease).UnixMilli(), now.UnixMilli(), n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []due
	for rows.Next() {
		var d due
		var sig string
		if err := rows.Scan(&d.id, &d.url, &sig, &d.card); err != nil {
			return nil, err
		}
		d.signature = Signature(sig)
		out = append(out, d)
	}
	return out, rows.Err()
}
