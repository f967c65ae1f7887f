package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/pgstore"
	"github.com/a2awebcap/a2awebcap/agent/storetest"
)

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

// server returns the DSN of a reachable server. Without one the test is skipped, unless CI is
// set: CI provides the server, so there its absence is a failure.
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
			dsnErrs = append(dsnErrs, err.Error())
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

var schemaSeq atomic.Int64

// schema is a fresh schema name for one test, dropped at its end.
func schema(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("agent_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
	d := server(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, d); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	return name
}

func open(t *testing.T, schemaName string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), server(t), &pgstore.Options{Schema: schemaName, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) agent.Store { return open(t, schema(t)) })
}

// An agent's working memory, pending questions and held proposals survive closing the agent
// and the pool, and reopening both.
func TestStateSurvivesReopening(t *testing.T) {
	t.Parallel()
	t.Run("working", func(t *testing.T) {
		t.Parallel()
		name := schema(t)
		storetest.WorkingStateSurvivesARestart(t, func(t *testing.T) agent.Store { return open(t, name) },
			func(s agent.Store) { _ = s.(*pgstore.Store).Close() })
	})
	t.Run("proposal", func(t *testing.T) {
		t.Parallel()
		name := schema(t)
		storetest.PendingProposalSurvivesARestart(t, func(t *testing.T) agent.Store { return open(t, name) },
			func(s agent.Store) { _ = s.(*pgstore.Store).Close() })
	})
}

// What payers spent is shared by two replicas (two stores on one database): their concurrent
// takes never pass a limit together, and it survives both closing.
func TestSpending(t *testing.T) {
	t.Parallel()
	name := schema(t)
	storetest.Spending(t, open(t, name).Spending("writer"), open(t, name).Spending("writer"))
	s, err := pgstore.Open(t.Context(), server(t), &pgstore.Options{Schema: name})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Spending("writer").Spent(t.Context(), "dave@"+t.Name()+"/ConcurrentTakesNeverPassTheLimit", "base-sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e")
	if err != nil || got.Int64() != 5000 {
		t.Errorf("Spent on a third connection = %v, %v; want 5000", got, err)
	}
}
