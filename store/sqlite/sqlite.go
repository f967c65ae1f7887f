// Package sqlite is the embedded store.Store: one SQLite file, through the pure-Go driver
// modernc.org/sqlite (no cgo).
//
// # Concurrency
//
// SQLite has one writer at a time. The store writes through a pool of exactly one connection,
// each write in a BEGIN IMMEDIATE transaction, so writers of this process queue in Go (honouring
// their context) instead of failing with SQLITE_BUSY; busy_timeout covers another process that
// holds the lock. Reads go through a separate pool of read-only connections, which WAL lets run
// concurrently with each other and with the writer, each seeing the last committed state.
//
// # Durability
//
// The database is in WAL mode with synchronous=NORMAL (the default): a Create or Update has
// written its commit to the WAL file, through the operating system, before it returns, so a
// process killed right after (SIGKILL, a panic, an OOM kill) loses nothing; the next Open
// replays the WAL. What NORMAL can lose is the last commits before a power failure or kernel
// crash (never consistency: the file is not corrupted). Options.SynchronousFull makes every
// commit wait for fsync, which closes that gap at the cost of an fsync per write.
//
// # Schema
//
// Open creates the schema or migrates it to the current version (table schema_version) in one
// transaction; a database with a newer schema than this package knows is refused.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// Options tune Open. The zero value (or nil) is the default for each field.
type Options struct {
	// Readers is the number of connections that read concurrently. Default 4. Ignored for
	// ":memory:", which has a single connection for everything.
	Readers int
	// BusyTimeout is how long a statement waits for a lock held by another process (or, for
	// readers, by a checkpoint) before failing. Default 5s.
	BusyTimeout time.Duration
	// SynchronousFull sets synchronous=FULL: every commit is fsynced before it returns, so
	// not even a power failure loses an acknowledged write. Default NORMAL (see the package doc).
	SynchronousFull bool
}

// Store is the SQLite store. It is safe for concurrent use.
//
// Writes are group-committed: one goroutine (the committer, started by Open and stopped by
// Close) takes every write queued while the previous transaction committed and runs them in
// one transaction, each inside its own savepoint, so a write that fails is undone alone. A
// commit is what costs (the WAL append), so concurrent writers share it; a write still returns
// only after its transaction committed. A transaction carries about maxRows event rows at
// most, and the writes that create tasks go first: a new task's first event
// (what a client opening a stream waits for) is not queued behind other tasks' long batches.
type Store struct {
	w *sql.DB // exactly one connection: every write
	r *sql.DB // read-only connections; == w for ":memory:"

	// The statements of the hot writes, prepared once on w (a transaction uses them through
	// Tx.StmtContext, which reuses the prepared statement of its connection).
	insTask, updTask, insEvent, insEvents, enqueueStmt *sql.Stmt

	wq        chan *writeReq
	urgent    chan *writeReq // Create: committed before the writes queued on wq
	stop      chan struct{}  // closed by Close
	committer sync.WaitGroup
	closeOnce sync.Once
}

type writeReq struct {
	ctx    context.Context
	fn     func(tx *sql.Tx) error
	rows   int  // the event rows it writes: its share of a transaction's size
	urgent bool // queued on Store.urgent
	done   chan error
	state  atomic.Int32 // reqQueued, then reqStarted (by the committer) or reqAbandoned (by the writer)
}

const (
	reqQueued int32 = iota
	reqStarted
	reqAbandoned
)

// maxBatch bounds how many writes share one transaction, and maxRows how many event rows
// (writes are added while the transaction has fewer): a transaction's size is the latency of
// every write in it, and of the writes queued behind it. A transaction that creates tasks takes
// other writes only up to maxRowsUrgent rows: new streams wait for it.
const (
	maxBatch      = 64
	maxRows       = 64
	maxRowsUrgent = 16
)

var _ store.Store = (*Store)(nil)

// inactiveStates lists, as SQL, the states store.Store.Active leaves out. The partial index
// tasks_active and the query of Active must use this same expression.
const inactiveStates = `'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'`

func init() {
	// The SQL list above must say what the contract says.
	var quoted []string
	for _, s := range codec.InactiveStates {
		quoted = append(quoted, "'"+string(s)+"'")
	}
	if got := strings.Join(quoted, ", "); got != inactiveStates {
		panic("sqlite: inactiveStates is out of date: " + got)
	}
}

var memCount atomic.Int64

// Open opens (creating it if needed) the database file at path and brings its schema up to
// date. path ":memory:" opens a new private in-memory database, for tests.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	syncMode := "NORMAL"
	if o.SynchronousFull {
		syncMode = "FULL"
	}
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(%s)",
		o.BusyTimeout.Milliseconds(), syncMode)

	s := &Store{wq: make(chan *writeReq), urgent: make(chan *writeReq), stop: make(chan struct{})}
	if path == ":memory:" {
		// A uniquely named shared-cache memory database, so that stores opened in one process
		// are separate, on one connection that never closes (the database lives as long as it).
		name := fmt.Sprintf("file:a2awebcap-store-%d?mode=memory&cache=shared&_txlock=immediate&%s", memCount.Add(1), pragmas)
		db, err := sql.Open("sqlite", name)
		if err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		s.w, s.r = db, db
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		uri := "file:" + uriEscaper.Replace(filepath.ToSlash(abs))
		s.w, err = sql.Open("sqlite", uri+"?_txlock=immediate&_pragma=journal_mode(WAL)&"+pragmas)
		if err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		s.w.SetConnMaxIdleTime(0)
		s.r, err = sql.Open("sqlite", uri+"?_pragma=query_only(1)&"+pragmas)
		if err != nil {
			s.w.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		s.r.SetMaxOpenConns(o.Readers)
		s.r.SetMaxIdleConns(o.Readers)
	}
	if err := migrate(ctx, s.w); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if path != ":memory:" {
		var mode string
		if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
			s.Close()
			return nil, fmt.Errorf("sqlite: open %s: journal mode %q, not WAL: %v", path, mode, err)
		}
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.committer.Add(1)
	go s.commitLoop()
	return s, nil
}

// uriEscaper escapes what a file: URI gives a meaning to.
var uriEscaper = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// prepare prepares the statements of the hot writes on the write connection.
func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&s.insTask, `
			INSERT INTO tasks (id, tenant, principal, context_id, state, version, last_seq, created, updated, task, lease_holder, lease_until)
			VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`},
		{&s.updTask, `
			UPDATE tasks SET context_id = ?, state = ?, task = ?, version = version + 1,
				last_seq = last_seq + ?, updated = ?,
				lease_holder = coalesce(?, lease_holder), lease_until = coalesce(?, lease_until)
			WHERE id = ? AND tenant = ? AND principal = ? AND version = ?
			RETURNING last_seq, lease_holder, lease_until`},
		{&s.insEvent, `INSERT INTO events (task_id, seq, time, event) VALUES (?, ?, ?, ?)`},
		{&s.insEvents, `INSERT INTO events (task_id, seq, time, event) VALUES (?, ?, ?, ?)` +
			strings.Repeat(`, (?, ?, ?, ?)`, eventsPerInsert-1)},
		{&s.enqueueStmt, enqueueSQL},
	} {
		st, err := s.w.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*p.stmt = st
	}
	return nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	s.committer.Wait()
	for _, st := range []*sql.Stmt{s.insTask, s.updTask, s.insEvent, s.insEvents, s.enqueueStmt} {
		if st != nil {
			st.Close()
		}
	}
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	if err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// errClosed is returned by writes after Close.
var errClosed = errors.New("sqlite: store closed")

// write runs fn in a write transaction, shared with other writes queued meanwhile (see
// Store), and returns once that transaction committed. fn's effects are undone if it returns
// an error. fn runs on the committer goroutine, with ctx's values but not its cancellation
// (canceling a statement inside a shared transaction would undo the others' writes).
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.queueWrite(ctx, s.wq, 1, fn)
}

// queueWrite is write on a queue (s.wq, or s.urgent for Create), for a write of rows event rows.
func (s *Store) queueWrite(ctx context.Context, q chan<- *writeReq, rows int, fn func(tx *sql.Tx) error) error {
	if err := codec.Live(ctx); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, fn: fn, rows: rows, urgent: q == s.urgent, done: make(chan error, 1)}
	select {
	case q <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stop:
		return errClosed
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		// Give up only if the write has not started: once it has, it completes (without
		// cancellation) and its outcome must be reported, not guessed.
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		return <-req.done
	}
}

func (s *Store) commitLoop() {
	defer s.committer.Done()
	for {
		var first *writeReq
		select {
		case first = <-s.urgent:
		default:
			select {
			case first = <-s.urgent:
			case first = <-s.wq:
			case <-s.stop:
				return
			}
		}
		batch := []*writeReq{first}
		urgent := first.urgent
	creates:
		for len(batch) < maxBatch {
			select {
			case r := <-s.urgent:
				batch = append(batch, r)
				urgent = true
			default:
				break creates
			}
		}
		// A transaction that creates tasks takes few other rows: it is what new streams wait for.
		budget, rows := maxRows, 0
		if urgent {
			budget = maxRowsUrgent
		} else {
			rows = first.rows
		}
	more:
		for len(batch) < maxBatch && rows < budget {
			select {
			case r := <-s.wq:
				batch = append(batch, r)
				rows += r.rows
			default:
				break more
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch of writes in one transaction, each in a savepoint.
func (s *Store) commit(batch []*writeReq) {
	results := make([]error, len(batch))
	err := func() error {
		bg := context.Background()
		tx, err := s.w.BeginTx(bg, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		ran := false
		for i, r := range batch {
			if !r.state.CompareAndSwap(reqQueued, reqStarted) {
				results[i] = context.Canceled // abandoned: nobody waits for it
				continue
			}
			if err := r.ctx.Err(); err != nil {
				results[i] = err
				continue
			}
			if _, err := tx.ExecContext(bg, `SAVEPOINT w`); err != nil {
				return err
			}
			if err := r.fn(tx); err != nil {
				results[i] = err
				if _, rerr := tx.ExecContext(bg, `ROLLBACK TO w`); rerr != nil {
					return rerr
				}
			} else {
				ran = true
			}
			if _, err := tx.ExecContext(bg, `RELEASE w`); err != nil {
				return err
			}
		}
		if !ran {
			return nil
		}
		return tx.Commit()
	}()
	for i, r := range batch {
		if results[i] == nil {
			results[i] = err
		}
		r.done <- results[i]
	}
}

// owned reports whether the task exists and is the owner's.
func owned(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, owner store.Owner, id a2a.TaskID) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM tasks WHERE id = ? AND tenant = ? AND principal = ?`,
		string(id), owner.Tenant, owner.Principal).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// eventsPerInsert is how many events one statement of insertEvents inserts: a statement costs
// more than a row, so a long batch of events goes in statements of this many rows.
const eventsPerInsert = 16

func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, id a2a.TaskID, first int64, now int64, encoded [][]byte) error {
	var many, one *sql.Stmt
	args := make([]any, 0, 4*eventsPerInsert)
	for i := 0; i < len(encoded); {
		n, stmt := 1, &one
		if len(encoded)-i >= eventsPerInsert {
			n, stmt = eventsPerInsert, &many
		}
		if *stmt == nil {
			if n == 1 {
				*stmt = tx.StmtContext(ctx, s.insEvent)
			} else {
				*stmt = tx.StmtContext(ctx, s.insEvents)
			}
		}
		args = args[:0]
		for j := i; j < i+n; j++ {
			args = append(args, string(id), first+int64(j), now, encoded[j])
		}
		if _, err := (*stmt).ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("append events %d-%d: %w", first+int64(i), first+int64(i+n-1), err)
		}
		i += n
	}
	return nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, t *store.Task, events []a2a.Event) error {
	data, encoded, err := codec.Encode(t, events)
	if err != nil {
		return err
	}
	cfgIDs, cfgs, err := codec.EncodePushConfigs(t)
	if err != nil {
		return err
	}
	var (
		now   time.Time
		lease store.Lease
	)
	err = s.queueWrite(ctx, s.urgent, len(encoded), func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see write: no cancellation inside a shared transaction
		now = codec.Now()
		lease = store.Lease{}
		if codec.Leasing(t) {
			lease = store.Lease{Holder: t.Lease.Holder, Until: codec.LeaseEnd(now, t.LeaseTTL)}
		}
		res, err := tx.StmtContext(ctx, s.insTask).ExecContext(ctx,
			string(t.Task.ID), t.Owner.Tenant, t.Owner.Principal, t.Task.ContextID, string(t.Task.Status.State),
			len(encoded), now.UnixMicro(), now.UnixMicro(), data, lease.Holder, leaseMicros(lease.Until))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrExists
		}
		if err := s.insertEvents(ctx, tx, t.Task.ID, 1, now.UnixMicro(), encoded); err != nil {
			return err
		}
		for i, id := range cfgIDs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO push_configs (task_id, id, config, dest) VALUES (?, ?, ?, ?)
				ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config, dest = excluded.dest`,
				string(t.Task.ID), id, cfgs[i], codec.Destination(t.PushConfigs[i].URL)); err != nil {
				return fmt.Errorf("push config %s: %w", id, err)
			}
		}
		return s.enqueue(ctx, tx, t.Task.ID, 1, int64(len(encoded)), now.UnixMicro())
	})
	if err != nil {
		return fmt.Errorf("sqlite: create task %s: %w", t.Task.ID, err)
	}
	t.Version, t.LastSeq, t.Created, t.Updated, t.Lease = 1, int64(len(encoded)), now, now, lease
	return nil
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, t *store.Task, events []a2a.Event) error {
	data, encoded, err := codec.Encode(t, events)
	if err != nil {
		return err
	}
	var (
		now     time.Time
		lastSeq int64
		lease   store.Lease
	)
	err = s.queueWrite(ctx, s.wq, len(encoded), func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see write: no cancellation inside a shared transaction
		now = codec.Now()
		var holder, until any // NULL: the lease stays as it is
		if codec.Leasing(t) {
			holder, until = t.Lease.Holder, codec.LeaseEnd(now, t.LeaseTTL).UnixMicro()
		}
		var untilUS int64
		err := tx.StmtContext(ctx, s.updTask).QueryRowContext(ctx,
			t.Task.ContextID, string(t.Task.Status.State), data, len(encoded), now.UnixMicro(), holder, until,
			string(t.Task.ID), t.Owner.Tenant, t.Owner.Principal, t.Version).Scan(&lastSeq, &lease.Holder, &untilUS)
		lease.Until = leaseTime(untilUS)
		if errors.Is(err, sql.ErrNoRows) {
			if ok, err := owned(ctx, tx, t.Owner, t.Task.ID); err != nil {
				return err
			} else if !ok {
				return store.ErrNotFound
			}
			return fmt.Errorf("version %d is stale: %w", t.Version, store.ErrConflict)
		}
		if err != nil {
			return err
		}
		first := lastSeq - int64(len(encoded)) + 1
		if err := s.insertEvents(ctx, tx, t.Task.ID, first, now.UnixMicro(), encoded); err != nil {
			return err
		}
		return s.enqueue(ctx, tx, t.Task.ID, first, lastSeq, now.UnixMicro())
	})
	if err != nil {
		return fmt.Errorf("sqlite: update task %s: %w", t.Task.ID, err)
	}
	t.Version++
	t.LastSeq, t.Updated, t.Lease = lastSeq, now, lease
	return nil
}

const taskColumns = `id, tenant, principal, version, last_seq, created, updated, task, lease_holder, lease_until`

func scanTask(row interface{ Scan(...any) error }, extra ...any) (*store.Task, error) {
	var (
		t                store.Task
		id               string
		created, updated int64
		data             []byte
		until            int64
	)
	dest := append([]any{&id, &t.Owner.Tenant, &t.Owner.Principal, &t.Version, &t.LastSeq, &created, &updated, &data,
		&t.Lease.Holder, &until}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	task, err := codec.DecodeTask(data)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	t.Task, t.Created, t.Updated, t.Lease.Until = task, codec.FromMicros(created), codec.FromMicros(updated), leaseTime(until)
	return &t, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, owner store.Owner, id a2a.TaskID) (*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	t, err := scanTask(s.r.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = ? AND tenant = ? AND principal = ?`,
		string(id), owner.Tenant, owner.Principal))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get task %s: %w", id, err)
	}
	return t, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, owner store.Owner, q store.ListQuery) (*store.ListResult, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	size, err := codec.PageSize(q)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	cursor, err := codec.DecodeToken(q.PageToken)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	where := `tenant = ? AND principal = ?`
	args := []any{owner.Tenant, owner.Principal}
	if q.ContextID != "" {
		where += ` AND context_id = ?`
		args = append(args, q.ContextID)
	}
	if q.State != "" {
		where += ` AND state = ?`
		args = append(args, string(q.State))
	}
	if !q.UpdatedAfter.IsZero() {
		// Stored times are whole microseconds: after t means at or after the next one.
		where += ` AND updated >= ?`
		args = append(args, afterMicros(q.UpdatedAfter))
	}
	// One statement, one snapshot: the page and the total that goes with it.
	page, pageArgs := where, cloneArgs(args)
	if cursor != nil {
		page += ` AND (updated < ? OR (updated = ? AND id > ?))`
		us := cursor.Updated.UnixMicro()
		pageArgs = append(pageArgs, us, us, string(cursor.ID))
	}
	query := `SELECT ` + taskColumns + `, (SELECT count(*) FROM tasks WHERE ` + where + `)
		FROM tasks WHERE ` + page + ` ORDER BY updated DESC, id LIMIT ?`
	rows, err := s.r.QueryContext(ctx, query, append(append(args, pageArgs...), size+1)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	defer rows.Close()
	res := &store.ListResult{Tasks: make([]*store.Task, 0, size)}
	total := -1
	for rows.Next() {
		t, err := scanTask(rows, &total)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", err)
		}
		res.Tasks = append(res.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	rows.Close()
	if total < 0 { // an empty page: count on its own
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM tasks WHERE `+where, args...).Scan(&total); err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", err)
		}
	}
	res.TotalSize = total
	if len(res.Tasks) > size {
		res.Tasks = res.Tasks[:size]
		last := res.Tasks[size-1]
		res.NextPageToken = codec.EncodeToken(codec.Cursor{Updated: last.Updated, ID: last.Task.ID})
	}
	return res, nil
}

// afterMicros returns the first whole microsecond strictly after t.
func afterMicros(t time.Time) int64 {
	return t.Truncate(time.Microsecond).UnixMicro() + 1
}

func cloneArgs(a []any) []any { return append([]any(nil), a...) }

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, owner store.Owner, id a2a.TaskID, afterSeq int64, limit int) ([]store.Event, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	if err := codec.CheckLimit(limit); err != nil {
		return nil, fmt.Errorf("sqlite: events of task %s: %w", id, err)
	}
	lim := int64(limit)
	if limit == 0 {
		lim = -1 // no limit
	}
	rows, err := s.r.QueryContext(ctx, `
		SELECT e.seq, e.time, e.event FROM tasks t JOIN events e ON e.task_id = t.id
		WHERE t.id = ? AND t.tenant = ? AND t.principal = ? AND e.seq > ?
		ORDER BY e.seq LIMIT ?`,
		string(id), owner.Tenant, owner.Principal, afterSeq, lim)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of task %s: %w", id, err)
	}
	defer rows.Close()
	out := []store.Event{}
	for rows.Next() {
		var (
			e    = store.Event{TaskID: id}
			us   int64
			data []byte
		)
		if err := rows.Scan(&e.Seq, &us, &data); err != nil {
			return nil, fmt.Errorf("sqlite: events of task %s: %w", id, err)
		}
		if e.Event, err = codec.DecodeEvent(data); err != nil {
			return nil, fmt.Errorf("sqlite: event %d of task %s: %w", e.Seq, id, err)
		}
		e.Time = codec.FromMicros(us)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events of task %s: %w", id, err)
	}
	rows.Close()
	if len(out) == 0 { // no events, or no task? Tasks are never deleted, so asking now is safe.
		if ok, err := owned(ctx, s.r, owner, id); err != nil {
			return nil, fmt.Errorf("sqlite: events of task %s: %w", id, err)
		} else if !ok {
			return nil, fmt.Errorf("sqlite: events of task %s: %w", id, store.ErrNotFound)
		}
	}
	return out, nil
}

// Active implements store.Store.
func (s *Store) Active(ctx context.Context) ([]*store.Task, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks
		WHERE state NOT IN (`+inactiveStates+`) ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: active tasks: %w", err)
	}
	defer rows.Close()
	out := []*store.Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: active tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: active tasks: %w", err)
	}
	return out, nil
}

// PutPushConfig implements store.Store. The limits are checked in the write transaction,
// which SQLite runs one at a time, also across processes.
func (s *Store) PutPushConfig(ctx context.Context, owner store.Owner, cfg *a2a.PushConfig, lim store.PushLimits) error {
	if err := codec.CheckPushConfig(cfg); err != nil {
		return err
	}
	data, err := codec.EncodePushConfig(cfg)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see write: no cancellation inside a shared transaction
		if lim.PerTask > 0 || lim.PerOwner > 0 {
			var exists, perTask int
			err := tx.QueryRowContext(ctx, `
				SELECT count(*), coalesce(sum(p.id = ?), 0) FROM tasks t JOIN push_configs p ON p.task_id = t.id
				WHERE t.id = ? AND t.tenant = ? AND t.principal = ?`,
				cfg.ID, string(cfg.TaskID), owner.Tenant, owner.Principal).Scan(&perTask, &exists)
			if err != nil {
				return err
			}
			if exists == 0 {
				perOwner := 0
				if lim.PerOwner > 0 {
					if perOwner, err = countPushConfigs(ctx, tx, owner); err != nil {
						return err
					}
				}
				if err := codec.CheckPushLimits(lim, perTask, perOwner); err != nil {
					return err
				}
			}
		}
		res, err := tx.ExecContext(ctx, `
			INSERT INTO push_configs (task_id, id, config, dest)
			SELECT id, ?, ?, ? FROM tasks WHERE id = ? AND tenant = ? AND principal = ?
			ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config, dest = excluded.dest`,
			cfg.ID, data, codec.Destination(cfg.URL), string(cfg.TaskID), owner.Tenant, owner.Principal)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrNotFound
		}
		// A replaced config may send elsewhere: its pending deliveries count there now.
		_, err = tx.ExecContext(ctx, `UPDATE outbox SET dest = ? WHERE task_id = ? AND config_id = ? AND dest <> ?`,
			codec.Destination(cfg.URL), string(cfg.TaskID), cfg.ID, codec.Destination(cfg.URL))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: put push config %s of task %s: %w", cfg.ID, cfg.TaskID, err)
	}
	return nil
}

// liveStates lists, as SQL, codec.LiveStates: the states whose tasks' push configs
// PushLimits.PerOwner counts. An IN list lets the count seek the owner's live tasks in
// tasks_owner_state instead of reading all the owner's tasks.
var liveStates = codec.SQLList(codec.LiveStates)

// queryer is what countPushConfigs needs of a *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// countPushConfigs counts the push configs of the owner's live tasks.
func countPushConfigs(ctx context.Context, q queryer, owner store.Owner) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `
		SELECT count(*) FROM tasks t JOIN push_configs p ON p.task_id = t.id
		WHERE t.tenant = ? AND t.principal = ? AND t.state IN (`+liveStates+`)`,
		owner.Tenant, owner.Principal).Scan(&n)
	return n, err
}

// CountPushConfigs implements store.Store.
func (s *Store) CountPushConfigs(ctx context.Context, owner store.Owner) (int, error) {
	if err := codec.Live(ctx); err != nil {
		return 0, err
	}
	n, err := countPushConfigs(ctx, s.r, owner)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count push configs: %w", err)
	}
	return n, nil
}

// GetPushConfig implements store.Store.
func (s *Store) GetPushConfig(ctx context.Context, owner store.Owner, task a2a.TaskID, id string) (*a2a.PushConfig, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	var data []byte
	err := s.r.QueryRowContext(ctx, `
		SELECT p.config FROM tasks t JOIN push_configs p ON p.task_id = t.id
		WHERE t.id = ? AND t.tenant = ? AND t.principal = ? AND p.id = ?`,
		string(task), owner.Tenant, owner.Principal, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get push config %s of task %s: %w", id, task, err)
	}
	return codec.DecodePushConfig(data)
}

// ListPushConfigs implements store.Store.
func (s *Store) ListPushConfigs(ctx context.Context, owner store.Owner, task a2a.TaskID, q store.PushConfigQuery) (*store.PushConfigPage, error) {
	if err := codec.Live(ctx); err != nil {
		return nil, err
	}
	size, after, err := codec.PushPage(q)
	if err != nil {
		return nil, err
	}
	// The LEFT JOIN gives one row with a NULL config for an owned task without configs (after
	// the token), and no row for a task that is not the owner's.
	rows, err := s.r.QueryContext(ctx, `
		SELECT p.config FROM tasks t LEFT JOIN push_configs p ON p.task_id = t.id AND p.id > ?
		WHERE t.id = ? AND t.tenant = ? AND t.principal = ? ORDER BY p.id LIMIT ?`,
		after, string(task), owner.Tenant, owner.Principal, size+1)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list push configs of task %s: %w", task, err)
	}
	defer rows.Close()
	out, found := []*a2a.PushConfig{}, false
	for rows.Next() {
		found = true
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("sqlite: list push configs of task %s: %w", task, err)
		}
		if data == nil {
			continue
		}
		cfg, err := codec.DecodePushConfig(data)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list push configs of task %s: %w", task, err)
		}
		out = append(out, cfg)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list push configs of task %s: %w", task, err)
	}
	if !found {
		return nil, fmt.Errorf("sqlite: list push configs of task %s: %w", task, store.ErrNotFound)
	}
	return codec.PushPageOf(out, size), nil
}

// DeletePushConfig implements store.Store.
func (s *Store) DeletePushConfig(ctx context.Context, owner store.Owner, task a2a.TaskID, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see write: no cancellation inside a shared transaction
		res, err := tx.ExecContext(ctx, `
			DELETE FROM push_configs WHERE task_id = ? AND id = ?
			AND EXISTS (SELECT 1 FROM tasks WHERE id = ? AND tenant = ? AND principal = ?)`,
			string(task), id, string(task), owner.Tenant, owner.Principal)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete push config %s of task %s: %w", id, task, err)
	}
	return nil
}
