package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

func TestClusterFlags(t *testing.T) {
	pg := "postgres://u@127.0.0.1:5432/a2a"
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c clusterConfig)
	}{
		{name: "single process by default", args: nil, check: func(t *testing.T, c clusterConfig) {
			if c.nats != "" || c.lease != 15*time.Second || c.poll != time.Second || c.stream != "A2AWEBCAP" {
				t.Errorf("defaults = %+v", c)
			}
		}},
		{name: "flags", args: []string{"-db", pg, "-cluster", "nats://n:4222", "-replica", "r-1.a_b", "-lease", "3s", "-cluster-poll", "200ms", "-cluster-stream", "MINE"},
			check: func(t *testing.T, c clusterConfig) {
				if c.nats != "nats://n:4222" || c.replica != "r-1.a_b" || c.lease != 3*time.Second || c.poll != 200*time.Millisecond || c.stream != "MINE" {
					t.Errorf("parsed %+v", c)
				}
			}},
		{name: "environment", env: map[string]string{"A2AWEBCAP_CLUSTER": "nats://e:4222", "A2AWEBCAP_DB": pg, "A2AWEBCAP_REPLICA": "env",
			"A2AWEBCAP_LEASE": "2s", "A2AWEBCAP_CLUSTER_POLL": "2s", "A2AWEBCAP_CLUSTER_STREAM": "ENV"},
			check: func(t *testing.T, c clusterConfig) {
				if c.nats != "nats://e:4222" || c.replica != "env" || c.lease != 2*time.Second || c.poll != 2*time.Second || c.stream != "ENV" {
					t.Errorf("parsed %+v", c)
				}
			}},
		{name: "a flag overrides a bad environment value", env: map[string]string{"A2AWEBCAP_LEASE": "soon"}, args: []string{"-lease", "2s"}},
		{name: "bad environment value", env: map[string]string{"A2AWEBCAP_LEASE": "soon"}, wantErr: "A2AWEBCAP_LEASE"},
		{name: "SQLite is not shared", args: []string{"-cluster", "nats://n:4222"}, wantErr: "needs a postgres:// -db"},
		{name: "memory is not shared", args: []string{"-db", "memory", "-cluster", "nats://n:4222"}, wantErr: "needs a postgres:// -db"},
		{name: "replica name", args: []string{"-db", pg, "-cluster", "nats://n:4222", "-replica", "a b"}, wantErr: "-replica"},
		{name: "lease too short", args: []string{"-db", pg, "-cluster", "nats://n:4222", "-lease", "10ms"}, wantErr: "too short"},
		{name: "lease not a duration", args: []string{"-lease", "0"}, wantErr: "-lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseServeCase(t, tc.args, tc.env, tc.wantErr)
			if ok && tc.check != nil {
				tc.check(t, c.cluster)
			}
		})
	}
}

// failingStore is a store whose reads fail, as one that cannot reach its database.
type failingStore struct{ store.Store }

func (failingStore) Get(context.Context, store.Owner, a2a.TaskID) (*store.Task, error) {
	return nil, errors.New("connection refused")
}

// downFanout is a fan-out whose NATS connection is down.
type downFanout struct{}

func (downFanout) Publish(*engine.Written) {}
func (downFanout) Listen(func(*engine.Incoming)) (func(), error) {
	return func() {}, nil
}
func (downFanout) Ready(context.Context) error { return errors.New("NATS connection RECONNECTING") }

// /readyz says what keeps a replica from taking work, for load balancers.
func TestReadyz(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name     string
		st       func() store.Store
		cluster  *engine.Cluster
		drain    bool
		status   int
		wantBody string
	}{
		{name: "single process", st: func() store.Store { return memory.New() }, status: http.StatusOK, wantBody: "ready"},
		{name: "replica", st: func() store.Store { return memory.New() }, cluster: &engine.Cluster{Replica: "r", LeaseTTL: time.Hour}, status: http.StatusOK, wantBody: "ready"},
		{name: "store down", st: func() store.Store { return failingStore{memory.New()} }, status: http.StatusServiceUnavailable, wantBody: "store unavailable"},
		{name: "NATS down", st: func() store.Store { return memory.New() }, cluster: &engine.Cluster{Replica: "r", LeaseTTL: time.Hour, Fanout: downFanout{}},
			status: http.StatusServiceUnavailable, wantBody: "NATS unavailable"},
		{name: "draining", st: func() store.Store { return memory.New() }, drain: true, status: http.StatusServiceUnavailable, wantBody: "draining"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := tc.st()
			eng := engine.New(&agents.Builtin{}, st, &engine.Options{Logger: quiet, Cluster: tc.cluster})
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				eng.Close(ctx)
				st.Close()
			})
			if tc.drain {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				if err := eng.Drain(ctx); err != nil {
					t.Fatal(err)
				}
			}
			rec := httptest.NewRecorder()
			readyz(eng)(rec, httptest.NewRequest("GET", "/readyz", nil))
			if got := strings.TrimSpace(rec.Body.String()); rec.Code != tc.status || got != tc.wantBody {
				t.Errorf("/readyz = %d %q, want %d %q", rec.Code, got, tc.status, tc.wantBody)
			}
		})
	}
}
