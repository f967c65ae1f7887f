package registry_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/registry"
)

// dsnEnv names the DSN of the PostgreSQL server to test against; if it is not set, the local
// server is tried as postgres and as root (trust authentication).
const dsnEnv = "A2A_POSTGRES_DSN"

var (
	dsnOnce sync.Once
	dsn     string
	dsnErrs []string
	seq     atomic.Int64
)

func pgServer(t *testing.T) string {
	t.Helper()
	dsnOnce.Do(func() {
		try := []string{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://root@127.0.0.1:5432/test?sslmode=disable"}
		if env := os.Getenv(dsnEnv); env != "" {
			try = []string{env}
		}
		for _, d := range try {
			db, err := sql.Open("pgx", d)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = db.PingContext(ctx)
				cancel()
				db.Close()
			}
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

// postgresStore opens a registry store in a schema of its own, dropped when the test ends.
func postgresStore(t *testing.T) *registry.Store {
	t.Helper()
	base := pgServer(t)
	schema := fmt.Sprintf("registry_test_%d_%d", os.Getpid(), seq.Add(1))
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
		admin.Close()
	})
	if _, err := admin.ExecContext(t.Context(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	st, err := registry.OpenPostgres(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
