package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/postgres"
	"github.com/a2awebcap/a2awebcap/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// dsnEnv names the DSN of the server to test against; if it is not set, the local server is
// tried as postgres and as root (trust authentication).
const dsnEnv = "A2A_POSTGRES_DSN"

var candidates = []string{
	"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
	"postgres://root@127.0.0.1:5432/test?sslmode=disable",
}

var (
	dsnOnce sync.Once
	dsn     string
	dsnErrs []string
)

// server returns the DSN of a reachable server. Without one, the test is skipped, unless the
// environment variable CI is set: CI provides the server, so there its absence is a failure.
func server(t testing.TB) string {
	t.Helper()
	dsnOnce.Do(func() {
		try := candidates
		if env := os.Getenv(dsnEnv); env != "" {
			try = []string{env}
		}
		for _, d := range try {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			conn, err := pgx.Connect(ctx, d)
			if err == nil {
				err = conn.Ping(ctx)
				conn.Close(ctx)
			}
			cancel()
			if err == nil {
				dsn = d
				return
			}
			dsnErrs = append(dsnErrs, fmt.Sprintf("%s: %v", redact(d), err))
		}
	})
	if dsn == "" {
		msg := "no PostgreSQL server to test against (set " + dsnEnv + "):\n" + strings.Join(dsnErrs, "\n")
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn
}

func redact(d string) string {
	if cfg, err := pgx.ParseConfig(d); err == nil {
		return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	}
	return "(unparsable DSN)"
}

var schemaSeq atomic.Int64

// freshSchema returns the name of a schema no one else uses, dropped when t ends.
func freshSchema(t testing.TB) string {
	d := server(t)
	name := fmt.Sprintf("storetest_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, schemaSeq.Add(1))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// open opens a store in schema (registering its Close before the schema's drop runs).
func open(t testing.TB, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), server(t), &postgres.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openFresh(t testing.TB) *postgres.Store { return open(t, freshSchema(t)) }

func TestConformance(t *testing.T) {
	server(t) // skip (or fail in CI) once, not in every subtest
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
}

func TestListTies(t *testing.T) {
	server(t)
	storetest.RunTies(t, func(t *testing.T) store.Store { return openFresh(t) }, postgres.SetUpdated)
}

// TestReplicas runs two stores on one schema, as two replicas of the server: each sees the
// other's writes, and their racing Updates conflict as within one store.
func TestReplicas(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	var stores [2]*postgres.Store
	var wg sync.WaitGroup
	for i := range stores { // starting together: the schema is created once
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), server(t), &postgres.Options{Schema: schema})
			if err != nil {
				t.Error(err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	if t.Failed() {
		return
	}
	a, b := stores[0], stores[1]
	task := &store.Task{Task: &a2a.Task{ID: "t", ContextID: "c"}}
	if err := a.Create(t.Context(), task, nil); err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	for r := range rounds {
		ta, err := a.Get(t.Context(), store.Owner{}, "t")
		if err != nil {
			t.Fatal(err)
		}
		tb, err := b.Get(t.Context(), store.Owner{}, "t")
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 2)
		wg.Go(func() {
			errs[0] = a.Update(t.Context(), ta, []a2a.Event{a2a.NewStatusUpdateEvent(ta.Task, a2a.TaskStateWorking, nil)})
		})
		wg.Go(func() {
			errs[1] = b.Update(t.Context(), tb, []a2a.Event{a2a.NewStatusUpdateEvent(tb.Task, a2a.TaskStateWorking, nil)})
		})
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !(errors.Is(errs[0], store.ErrConflict) || errors.Is(errs[1], store.ErrConflict)) {
			t.Fatalf("round %d: replicas' Updates of one version gave %v and %v; want one success and one conflict", r, errs[0], errs[1])
		}
	}
	got, err := b.Get(t.Context(), store.Owner{}, "t")
	if err != nil || got.Version != rounds+1 || got.LastSeq != rounds {
		t.Fatalf("after %d rounds: %+v, %v", rounds, got, err)
	}
}

func TestReopenAndNewerSchema(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	s := open(t, schema)
	if err := s.Create(t.Context(), &store.Task{Task: &a2a.Task{ID: "t", ContextID: "c"}}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, schema)
	if _, err := s.Get(t.Context(), store.Owner{}, "t"); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	s.Close()

	conn, err := pgx.Connect(t.Context(), server(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `UPDATE `+pgx.Identifier{schema, "schema_version"}.Sanitize()+` SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if s, err := postgres.Open(t.Context(), server(t), &postgres.Options{Schema: schema}); err == nil {
		s.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	} else if !strings.Contains(err.Error(), "99") {
		t.Errorf("error does not say the version: %v", err)
	}
}

func BenchmarkCreate(b *testing.B)           { storetest.BenchCreate(b, openFresh(b)) }
func BenchmarkUpdateAppend(b *testing.B)     { storetest.BenchUpdateAppend(b, openFresh(b)) }
func BenchmarkGet(b *testing.B)              { storetest.BenchGet(b, openFresh(b)) }
func BenchmarkList(b *testing.B)             { storetest.BenchList(b, openFresh(b)) }
func BenchmarkClaimSettle(b *testing.B)      { storetest.BenchClaimSettle(b, openFresh(b)) }
func BenchmarkClaimPastBacklog(b *testing.B) { storetest.BenchClaimPastBacklog(b, openFresh(b)) }
