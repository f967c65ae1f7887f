package pgutil_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/internal/clustertest"
	"github.com/a2awebcap/a2awebcap/internal/pgutil"
)

// Replicas starting together migrate once, each step once with what follows it; a later
// program with one more step adds it alone; an older program refuses a newer database.
func TestMigrationsApply(t *testing.T) {
	t.Parallel()
	dsn := clustertest.Postgres(t)
	const schema = "pgutil_test"
	pool, err := pgutil.Open(t.Context(), dsn, schema, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var (
		mu    sync.Mutex
		after []int
	)
	m := &pgutil.Migrations{Name: "test", Table: "test_version",
		Steps: []string{`CREATE TABLE t1 (n integer)`, `CREATE TABLE t2 (n integer)`},
		After: func(ctx context.Context, tx pgx.Tx, v int) error {
			mu.Lock()
			after = append(after, v)
			mu.Unlock()
			_, err := tx.Exec(ctx, `INSERT INTO t1 (n) VALUES ($1)`, v)
			return err
		}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := m.Apply(t.Context(), pool, schema); err != nil {
				t.Errorf("Apply: %v", err)
			}
		})
	}
	wg.Wait()
	if len(after) != 2 || after[0] != 1 || after[1] != 2 {
		t.Errorf("After ran for versions %v, want [1 2]", after)
	}
	count := func(q string) int {
		var n int
		if err := pool.QueryRow(t.Context(), q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	// The pool's search path is the schema: the tables are there.
	if n := count(`SELECT count(*) FROM t1`); n != 2 {
		t.Errorf("t1 has %d rows, want one per step", n)
	}
	m.Steps = append(m.Steps, `CREATE TABLE t3 (n integer)`)
	if err := m.Apply(t.Context(), pool, schema); err != nil {
		t.Fatal(err)
	}
	if v := count(`SELECT version FROM test_version`); v != 3 || len(after) != 3 {
		t.Errorf("version %d after a third step (After ran for %v), want 3", v, after)
	}
	old := &pgutil.Migrations{Name: "test", Table: "test_version", Steps: m.Steps[:2]}
	if err := old.Apply(t.Context(), pool, schema); err == nil || !strings.Contains(err.Error(), "test schema version 3, newer than this program's 2") {
		t.Errorf("an older program's Apply = %v, want the database refused as newer", err)
	}
}
