package binding

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/postgres"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// replicaStore is a store for one replica; the replicas of a test share what it stores.
type replicaStore interface {
	store.Store
	store.SettingReader
}

// startReplica serves the engine on st with the capnweb binding keeping capabilities in st, as
// one replica of several sharing that store; it returns the base URL.
func startReplica(t *testing.T, st replicaStore) string {
	t.Helper()
	eng := engine.New(newEchoExecutor(), st, &engine.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Close(ctx)
	})
	h := NewHTTPHandler(eng, testCard(), &Options{Authenticate: nameAuth, Capabilities: st})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(func() { _ = h.(interface{ Close() error }).Close() })
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); _ = h.(interface{ Close() error }).Close() })
	return "http://" + ln.Addr().String()
}

func dialReplica(t *testing.T, base, who string) *capnweb.Stub {
	t.Helper()
	url := "ws" + strings.TrimPrefix(base, "http") + DefaultCapnwebPath
	var h http.Header
	if who != "" {
		h = http.Header{"Authorization": {"Bearer " + who}}
	}
	s, err := capnweb.Dial(t.Context(), url, nil, &capnweb.DialOptions{Header: h})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.Main()
}

// Two replicas over one store: a session attenuated and saved on one is restored on the other;
// revoked on the first, its next call on the second fails with UNAUTHORIZED, and so do its
// descendants and any later restore.
func runRevocationAcrossReplicas(t *testing.T, a, b replicaStore) {
	ctx := t.Context()
	replicaA, replicaB := startReplica(t, a), startReplica(t, b)
	alice := dialReplica(t, replicaA, "alice")
	reasonOf := func(p *capnweb.Promise) string { t.Helper(); return callReason(t, p) }

	if _, err := alice.Call("sendMessage", userMessageWire("hello")).Await(ctx); err != nil {
		t.Fatal(err)
	}
	view := alice.Call("attenuate", map[string]any{"readOnly": true})
	narrower := view.Call("attenuate", map[string]any{"expiresIn": 3600})
	tokens := map[string]string{}
	for name, session := range map[string]*capnweb.Promise{"view": view, "narrower": narrower} {
		v, err := session.Call("save").Await(ctx)
		tok, ok := v.(string)
		if err != nil || !ok || len(tok) < 40 {
			t.Fatalf("%s.save() = %v, %v; want a token", name, v, err)
		}
		tokens[name] = tok
	}
	if got := reasonOf(alice.Call("save")); got != "UNAUTHORIZED" {
		t.Errorf("saving a session not made by attenuate: %s, want UNAUTHORIZED", got)
	}

	// A third party, anonymous on the other replica, restores the views.
	third := dialReplica(t, replicaB, "")
	restored := third.Call("restore", tokens["view"])
	restoredNarrower := third.Call("restore", tokens["narrower"])
	var list struct {
		Tasks []any `json:"tasks"`
	}
	if err := awaitInto(ctx, restored.Call("listTasks", map[string]any{}), &list); err != nil || len(list.Tasks) != 1 {
		t.Fatalf("restored view on replica B lists %v, %v; want alice's task", list.Tasks, err)
	}
	if got := reasonOf(restored.Call("sendMessage", userMessageWire("write"))); got != "UNAUTHORIZED" {
		t.Errorf("restored read-only view writing: %s, want UNAUTHORIZED", got)
	}
	if got := reasonOf(restoredNarrower.Call("listTasks", map[string]any{})); got != "ok" {
		t.Errorf("restored narrower view before the revocation: %s", got)
	}
	if got := reasonOf(third.Call("restore", "not-a-token")); got != "UNAUTHENTICATED" {
		t.Errorf("restore of an unknown token: %s, want UNAUTHENTICATED", got)
	}

	// Revoked on replica A, by the session it was attenuated from.
	if _, err := alice.Call("revoke", view).Await(ctx); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	for name, p := range map[string]*capnweb.Promise{
		"the view on replica B":                     restored.Call("listTasks", map[string]any{}),
		"its descendant on replica B":               restoredNarrower.Call("listTasks", map[string]any{}),
		"a new restore on replica B":                third.Call("restore", tokens["view"]),
		"the view on replica A":                     view.Call("listTasks", map[string]any{}),
		"a descendant restored on a new connection": dialReplica(t, replicaB, "").Call("restore", tokens["narrower"]),
	} {
		if got := reasonOf(p); got != "UNAUTHORIZED" {
			t.Errorf("%s after the revocation: %s, want UNAUTHORIZED", name, got)
		}
	}
	if got := reasonOf(alice.Call("listTasks", map[string]any{})); got != "ok" {
		t.Errorf("the revoking session itself: %s", got)
	}
}

func TestRevocationAcrossReplicasSQLite(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a2a.db")
	open := func() replicaStore {
		st, err := sqlite.Open(context.Background(), file, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	runRevocationAcrossReplicas(t, open(), open())
}

func TestRevocationAcrossReplicasPostgres(t *testing.T) {
	t.Parallel()
	dsn, schema := postgresDSN(t), freshSchema(t)
	open := func() replicaStore {
		st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a := open() // creates the schema
	runRevocationAcrossReplicas(t, a, open())
}

// freshSchema names a PostgreSQL schema of its own for tb, dropped when tb ends.
func freshSchema(tb testing.TB) string {
	dsn := postgresDSN(tb)
	schema := fmt.Sprintf("binding_test_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	return schema
}

// postgresDSN is the test server's DSN (A2A_POSTGRES_DSN, else the local server with trust
// authentication); the test is skipped without one, unless CI is set.
func postgresDSN(t testing.TB) string {
	t.Helper()
	try := []string{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://root@127.0.0.1:5432/test?sslmode=disable"}
	if env := os.Getenv("A2A_POSTGRES_DSN"); env != "" {
		try = []string{env}
	}
	var errs []string
	for _, d := range try {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		conn, err := pgx.Connect(ctx, d)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return d
		}
		errs = append(errs, err.Error())
	}
	msg := "no PostgreSQL server: " + strings.Join(errs, "; ")
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Without a shared store, save and restore are not offered; revocation stays in the process.
func TestSaveWithoutStore(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	main := ts.dialCapnweb(t, "", nil).Main()
	_, err := main.Call("attenuate", map[string]any{}).Call("save").Await(t.Context())
	if _, reason := a2aErr(t, err); reason != "UNSUPPORTED_OPERATION" {
		t.Errorf("save without Options.Capabilities: %v", err)
	}
}
