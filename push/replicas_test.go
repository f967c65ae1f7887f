package push_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/push"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/postgres"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

const pgDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// openTwice returns two handles on one database, as two server processes would have.
type openTwice func(t *testing.T) (a, b store.Store)

func sqliteTwice(t *testing.T) (store.Store, store.Store) {
	path := filepath.Join(t.TempDir(), "a2a.db")
	open := func() store.Store {
		s, err := sqlite.Open(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open(), open()
}

func postgresTwice(t *testing.T) (store.Store, store.Store) {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, pgDSN)
	if err != nil {
		t.Skipf("no PostgreSQL at %s: %v", pgDSN, err)
	}
	schema := fmt.Sprintf("push_test_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		conn.Close(context.Background())
	})
	open := func() store.Store {
		s, err := postgres.Open(ctx, pgDSN, &postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open(), open()
}

// TestReplicas: two deliverers on one database (two processes) deliver every event, and, as
// nothing fails, each exactly once: a claim keeps the other away.
func TestReplicas(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]openTwice{"sqlite": sqliteTwice, "postgres": postgresTwice} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := open(t)
			key := newKey(t, a)
			if kb := newKey(t, b); kb.KeyID() != key.KeyID() {
				t.Fatalf("replicas have keys %s and %s, want one", key.KeyID(), kb.KeyID())
			}
			r := newReceiver(t, serveJWKS(t, key))
			task := &store.Task{Task: &a2a.Task{ID: a2a.NewTaskID(), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}
			if err := a.Create(t.Context(), task, nil); err != nil {
				t.Fatal(err)
			}
			if err := a.PutPushConfig(t.Context(), store.Owner{}, &a2a.PushConfig{TaskID: task.Task.ID, ID: "c", URL: r.url()}, store.PushLimits{}); err != nil {
				t.Fatal(err)
			}
			var ds []*push.Deliverer
			for _, st := range []store.Store{a, b} {
				d := push.New(st, key, &push.Options{Allow: loopback, PollInterval: 5 * time.Millisecond, Workers: 2})
				t.Cleanup(func() { d.Close() })
				ds = append(ds, d)
			}
			const n = 30
			for i := range n {
				ev := a2a.NewStatusUpdateEvent(task.Task, a2a.TaskStateWorking, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(fmt.Sprint(i))))
				if err := a.Update(t.Context(), task, []a2a.Event{ev}); err != nil {
					t.Fatal(err)
				}
				ds[i%2].Wake()
			}
			waitFor(t, "every event", func() bool { got, _, _ := r.snapshot(); return len(got) == n })
			time.Sleep(50 * time.Millisecond)
			got, hits, bad := r.snapshot()
			if hits != n || bad != 0 {
				t.Errorf("%d requests (%d failing verification) for %d events: %v", hits, bad, n, got)
			}
		})
	}
}

// TestRestartDelivers: deliveries left in the outbox by a deliverer that stopped (a process
// that went down) are sent by the next one on the same file.
func TestRestartDelivers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a2a.db")
	st, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t, st)
	r := newReceiver(t, serveJWKS(t, key))
	task := &store.Task{Task: &a2a.Task{ID: a2a.NewTaskID(), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}},
		PushConfigs: []*a2a.PushConfig{{ID: "c", URL: r.url()}}}
	evs := []a2a.Event{task.Task}
	for i := range 9 {
		evs = append(evs, a2a.NewStatusUpdateEvent(task.Task, a2a.TaskStateWorking, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(fmt.Sprint(i)))))
	}
	if err := st.Create(t.Context(), task, evs); err != nil {
		t.Fatal(err)
	}
	st.Close() // the process goes down before delivering anything

	st, err = sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if again := newKey(t, st); again.KeyID() != key.KeyID() {
		t.Errorf("the key changed across a restart: %s, then %s", key.KeyID(), again.KeyID())
	}
	d := push.New(st, key, &push.Options{Allow: loopback, PollInterval: 5 * time.Millisecond})
	t.Cleanup(func() { d.Close() })
	waitFor(t, "every event after the restart", func() bool { got, _, _ := r.snapshot(); return len(got) == len(evs) })
	if _, _, bad := r.snapshot(); bad != 0 {
		t.Errorf("%d deliveries failed verification", bad)
	}
}

// TestReplicasShareBounds: two deliverers on one database (two processes) count each other's
// deliveries in flight: a tarpit holds no more than PerDestination connections of one
// principal on PostgreSQL, whose claims take turns; on SQLite two processes claiming at the
// same instant may each fill the bound once.
func TestReplicasShareBounds(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		open openTwice
		most int
	}{"sqlite": {sqliteTwice, 8}, "postgres": {postgresTwice, 4}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := tc.open(t)
			key := newKey(t, a)
			tp := newTarpit(t)
			var urls []string
			for i := range 20 {
				urls = append(urls, fmt.Sprintf("http://%s/hook/%d", tp.ln.Addr(), i))
			}
			task := principalTask(t, a, "alice", urls...)
			var ds []*push.Deliverer
			for _, st := range []store.Store{a, b} {
				d := push.New(st, key, &push.Options{Allow: loopback, PollInterval: 5 * time.Millisecond})
				t.Cleanup(func() { d.Close() })
				ds = append(ds, d)
			}
			for i := range 3 {
				emitOne(t, a, ds[i%2], task, fmt.Sprint(i))
				ds[(i+1)%2].Wake()
			}
			waitFor(t, "the tarpit to hold deliveries", func() bool { _, open, _ := tp.stats(); return open >= 4 })
			time.Sleep(200 * time.Millisecond) // both deliverers poll every 5 ms meanwhile
			if _, _, maxOpen := tp.stats(); maxOpen > tc.most {
				t.Errorf("the tarpit held %d connections at once from two replicas, want at most %d", maxOpen, tc.most)
			}
		})
	}
}
