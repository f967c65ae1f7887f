package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/store/postgres"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// countingAgent is a2atest's agent, counting the runs it starts.
type countingAgent struct {
	*a2atest.Agent
	runs atomic.Int64
}

func (a *countingAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	a.runs.Add(1)
	return a.Agent.Execute(ctx, ec)
}

// Input no store can hold — a NUL character, an identifier too long for an index — is
// INVALID_PARAMS on every binding and every store, before the agent runs; and no answer carries
// the database's own text. (PostgreSQL used to answer a NUL with -32603 / HTTP 500 quoting its
// error, and for a context ID only after the agent had run.)
func TestUnstorableInput(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) store.Store{
		"memory": func(*testing.T) store.Store { return memory.New() },
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "tasks.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"postgres": openPostgres,
	}
	nul := "ab\x00cd"
	long := strings.Repeat("x", 600)
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			agent := &countingAgent{Agent: a2atest.NewAgent()}
			srv := a2atest.Start(t, &a2atest.Options{Executor: agent, Store: open(t)})
			for _, b := range allBindings {
				// One binding at a time: the agent's run count tells whether a refused call ran.
				t.Run(string(b), func(t *testing.T) {
					c := connect(t, srv, b, nil)
					ctx := t.Context()
					task := mustTask(t, c, userMessage("hello")) // a real task, for the calls that name one
					sendWith := func(edit func(*a2a.SendMessageRequest)) error {
						req := userMessage("must not run")
						edit(req)
						_, err := c.SendMessage(ctx, req)
						return err
					}
					streamWith := func(edit func(*a2a.SendMessageRequest)) error {
						req := userMessage("must not run")
						edit(req)
						for _, err := range c.SendStreamingMessage(ctx, req) {
							if err != nil {
								return err
							}
						}
						return nil
					}
					firstErr := func(seq iter.Seq2[a2a.Event, error]) error {
						for _, err := range seq {
							if err != nil {
								return err
							}
						}
						return nil
					}
					cases := []struct {
						name string
						call func() error
					}{
						{"send contextId NUL", func() error { return sendWith(func(r *a2a.SendMessageRequest) { r.Message.ContextID = nul }) }},
						{"send contextId long", func() error { return sendWith(func(r *a2a.SendMessageRequest) { r.Message.ContextID = long }) }},
						{"send messageId NUL", func() error { return sendWith(func(r *a2a.SendMessageRequest) { r.Message.ID = nul }) }},
						{"send taskId NUL", func() error { return sendWith(func(r *a2a.SendMessageRequest) { r.Message.TaskID = a2a.TaskID(nul) }) }},
						{"send referenceTaskIds NUL", func() error {
							return sendWith(func(r *a2a.SendMessageRequest) { r.Message.ReferenceTasks = []a2a.TaskID{task.ID, a2a.TaskID(nul)} })
						}},
						{"send tenant NUL", func() error { return sendWith(func(r *a2a.SendMessageRequest) { r.Tenant = nul }) }},
						{"stream contextId NUL", func() error { return streamWith(func(r *a2a.SendMessageRequest) { r.Message.ContextID = nul }) }},
						{"get id NUL", func() error { _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(nul)}); return err }},
						{"get tenant NUL", func() error {
							_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, Tenant: nul})
							return err
						}},
						{"list contextId NUL", func() error { _, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: nul}); return err }},
						{"cancel id NUL", func() error { _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(nul)}); return err }},
						{"subscribe id NUL", func() error {
							return firstErr(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(nul)}))
						}},
						{"create push config id NUL", func() error {
							_, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: nul, URL: "https://example.com/hook"})
							return err
						}},
						{"get push config id NUL", func() error {
							_, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: nul})
							return err
						}},
						{"list push configs taskId NUL", func() error {
							_, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(nul)})
							return err
						}},
						{"delete push config id NUL", func() error {
							return c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: nul})
						}},
					}
					for _, tc := range cases {
						if inRESTPath[tc.name] && b == client.BindingREST {
							continue // a2a-go's REST client cannot put a NUL in a URL: see restPathCases
						}
						before := agent.runs.Load()
						err := tc.call()
						if !errors.Is(err, a2a.ErrInvalidParams) {
							t.Errorf("%s: error = %v, want INVALID_PARAMS", tc.name, err)
						}
						if err != nil && leaksStoreText(err.Error()) {
							t.Errorf("%s: error carries the database's text: %v", tc.name, err)
						}
						if n := agent.runs.Load() - before; n != 0 {
							t.Errorf("%s: the agent ran %d times, want 0", tc.name, n)
						}
					}
				})
			}
			t.Run("rest path", func(t *testing.T) { restPathCases(t, srv, agent) })
		})
	}
}

// restPathCases sends, over HTTP+JSON, the identifiers a REST URL carries with a NUL
// percent-encoded in the path: a request a2a-go's client cannot make, but anyone can.
func restPathCases(t *testing.T, srv *a2atest.Server, agent *countingAgent) {
	c := connect(t, srv, client.BindingREST, nil)
	task := mustTask(t, c, userMessage("hello"))
	base := srv.URL + binding.DefaultRESTPath
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/tasks/ab%00cd", ""},
		{"POST", "/tasks/ab%00cd:cancel", "{}"},
		{"POST", "/tasks/ab%00cd:subscribe", "{}"},
		{"GET", "/tasks/" + string(task.ID) + "/pushNotificationConfigs/ab%00cd", ""},
		{"GET", "/tasks/ab%00cd/pushNotificationConfigs", ""},
		{"DELETE", "/tasks/" + string(task.ID) + "/pushNotificationConfigs/ab%00cd", ""},
		{"GET", "/ab%00cd/tasks/" + string(task.ID), ""}, // a tenant
		{"POST", "/ab%00cd/message:send", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"must not run"}]}}`},
	} {
		before := agent.runs.Load()
		req, err := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "INVALID_ARGUMENT") {
			t.Errorf("%s %s = %d %s, want 400 INVALID_ARGUMENT", tc.method, tc.path, resp.StatusCode, body)
		}
		if leaksStoreText(string(body)) {
			t.Errorf("%s %s: the answer carries the database's text: %s", tc.method, tc.path, body)
		}
		if n := agent.runs.Load() - before; n != 0 {
			t.Errorf("%s %s: the agent ran %d times, want 0", tc.method, tc.path, n)
		}
	}
}

// inRESTPath names the cases whose value travels in the URL path over HTTP+JSON.
var inRESTPath = map[string]bool{
	"get id NUL": true, "cancel id NUL": true, "subscribe id NUL": true,
	"get push config id NUL": true, "list push configs taskId NUL": true, "delete push config id NUL": true,
}

// leaksStoreText reports whether an error's text looks like a database's.
func leaksStoreText(s string) bool {
	for _, tell := range []string{"SQLSTATE", "ERROR:", "invalid byte sequence", "pq:", "pgx", "sqlite", "constraint"} {
		if strings.Contains(s, tell) {
			return true
		}
	}
	return false
}

// openPostgres opens a store in a PostgreSQL schema of its own, dropped when t ends; without a
// server the test is skipped (failed with CI set).
func openPostgres(t *testing.T) store.Store {
	dsn := os.Getenv("A2A_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no PostgreSQL server: %v", err)
		}
		t.Skipf("no PostgreSQL server: %v", err)
	}
	conn.Close(ctx)
	schema := fmt.Sprintf("client_test_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	st, err := postgres.Open(t.Context(), dsn, &postgres.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
