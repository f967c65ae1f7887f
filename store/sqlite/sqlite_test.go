package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
	"github.com/a2awebcap/a2awebcap/store/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	storetest.Main(m)
}

func openFile(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openTemp(t testing.TB) *sqlite.Store {
	return openFile(t, filepath.Join(t.TempDir(), "a2a.db"))
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

func TestListTies(t *testing.T) {
	storetest.RunTies(t, func(t *testing.T) store.Store { return openTemp(t) }, sqlite.SetUpdated)
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFile(t, ":memory:") })
}

func TestInMemoryStoresAreSeparate(t *testing.T) {
	a, b := openFile(t, ":memory:"), openFile(t, ":memory:")
	task := &store.Task{Task: &a2a.Task{ID: "t1", ContextID: "c"}}
	if err := a.Create(t.Context(), task, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), store.Owner{}, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a task of one in-memory store is in another: %v", err)
	}
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir with spaces?and#odd%chars", "a2a.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(t.Context(), path, &sqlite.Options{SynchronousFull: true, Readers: 2})
	if err != nil {
		t.Fatal(err)
	}
	task := &store.Task{Task: &a2a.Task{ID: "t1", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}
	ev := a2a.NewStatusUpdateEvent(task.Task, a2a.TaskStateWorking, nil)
	if err := s.Create(t.Context(), task, []a2a.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at the path given: %v", err)
	}
	s = openFile(t, path) // migrates nothing, finds everything
	got, err := s.Get(t.Context(), store.Owner{}, "t1")
	if err != nil || got.Version != 1 || got.LastSeq != 1 {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
	if evs, err := s.Events(t.Context(), store.Owner{}, "t1", 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("events after reopening: %v, %v", evs, err)
	}
}

// TestSchema checks the settings Open promises, from a connection of its own.
func TestSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2a.db")
	openFile(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil || version != sqlite.SchemaVersion {
		t.Errorf("schema_version %d, %v; want %d", version, err, sqlite.SchemaVersion)
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v; want wal", mode, err)
	}
	var plan string
	rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT id FROM tasks WHERE state NOT IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') ORDER BY created, id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan += detail + "\n"
	}
	rows.Close()
	if !strings.Contains(plan, "tasks_active") {
		t.Errorf("Active does not use the partial index:\n%s", plan)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2a.db")
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := sqlite.Open(t.Context(), path, nil); err == nil {
		s.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	} else if !strings.Contains(err.Error(), "99") {
		t.Errorf("error does not say the version: %v", err)
	}
}

// TestTwoProcessesShareAFile opens two stores on one file (as two processes would): writes of
// one are seen by the other, and their writers wait for each other instead of failing.
func TestTwoStoresShareAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2a.db")
	a, b := openFile(t, path), openFile(t, path)
	var wg sync.WaitGroup
	for i, s := range []*sqlite.Store{a, b} {
		wg.Go(func() {
			for j := range 50 {
				task := &store.Task{Task: &a2a.Task{ID: a2a.TaskID(fmt.Sprintf("s%d-%d", i, j)), ContextID: "c"}}
				if err := s.Create(t.Context(), task, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, s := range []*sqlite.Store{a, b} {
		res, err := s.List(t.Context(), store.Owner{}, store.ListQuery{PageSize: 1})
		if err != nil || res.TotalSize != 100 {
			t.Errorf("List: %v, %v; want 100 tasks", res, err)
		}
	}
}

// TestConcurrentReadersDuringWrites reads while a writer writes: reads never fail or block on
// the writer and always see a consistent task.
func TestConcurrentReadersDuringWrites(t *testing.T) {
	s := openTemp(t)
	task := &store.Task{Task: &a2a.Task{ID: "t", ContextID: "c"}}
	if err := s.Create(t.Context(), task, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				got, err := s.Get(t.Context(), store.Owner{}, "t")
				if err != nil {
					t.Error(err)
					return
				}
				evs, err := s.Events(t.Context(), store.Owner{}, "t", 0, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if int64(len(evs)) < got.LastSeq {
					t.Errorf("read LastSeq %d, then only %d events", got.LastSeq, len(evs))
					return
				}
			}
		})
	}
	for range 200 {
		if err := s.Update(t.Context(), task, []a2a.Event{a2a.NewStatusUpdateEvent(task.Task, a2a.TaskStateWorking, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
}

const crashChildEnv = "STORE_SQLITE_CRASH_CHILD"

// crashChild writes tasks and events to the database named by the environment, printing a line
// after each write returned, until it is killed.
func crashChild() {
	s, err := sqlite.Open(context.Background(), os.Getenv(crashChildEnv), nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		task := &store.Task{Task: &a2a.Task{ID: a2a.TaskID(fmt.Sprint("task-", i)), ContextID: "c"}}
		if err := s.Create(context.Background(), task, []a2a.Event{a2a.NewStatusUpdateEvent(task.Task, a2a.TaskStateSubmitted, nil)}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		task.Task.Status.State = a2a.TaskStateWorking
		if err := s.Update(context.Background(), task, []a2a.Event{a2a.NewStatusUpdateEvent(task.Task, a2a.TaskStateWorking, nil)}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ack", i)
	}
}

// TestCrashLosesNothing kills (SIGKILL) a process that writes, and checks that every write it
// acknowledged is there when the database is opened again.
func TestCrashLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := filepath.Join(t.TempDir(), "a2a.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := -1
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(20 * time.Second)
	for sc.Scan() {
		line := sc.Text()
		if _, err := fmt.Sscanf(line, "ack %d", &acked); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %s", line)
		}
		if acked >= 300 || time.Now().After(deadline) {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred function, no Close
		t.Fatal(err)
	}
	cmd.Wait()
	if acked < 0 {
		t.Fatal("the child acknowledged nothing")
	}
	s := openFile(t, path)
	for i := 0; i <= acked; i++ {
		got, err := s.Get(t.Context(), store.Owner{}, a2a.TaskID(fmt.Sprint("task-", i)))
		if err != nil || got.Version != 2 || got.LastSeq != 2 || got.Task.Status.State != a2a.TaskStateWorking {
			t.Fatalf("acknowledged write %d lost after SIGKILL: %+v, %v", i, got, err)
		}
	}
	t.Logf("%d acknowledged Create+Update pairs survived SIGKILL", acked+1)
}

func BenchmarkCreate(b *testing.B)           { storetest.BenchCreate(b, openTemp(b)) }
func BenchmarkUpdateAppend(b *testing.B)     { storetest.BenchUpdateAppend(b, openTemp(b)) }
func BenchmarkGet(b *testing.B)              { storetest.BenchGet(b, openTemp(b)) }
func BenchmarkList(b *testing.B)             { storetest.BenchList(b, openTemp(b)) }
func BenchmarkClaimSettle(b *testing.B)      { storetest.BenchClaimSettle(b, openTemp(b)) }
func BenchmarkClaimPastBacklog(b *testing.B) { storetest.BenchClaimPastBacklog(b, openTemp(b)) }

// TestQueuedWriterHonoursContext: while the write connection is busy, a writer waits in Go and
// gives up when its context ends; readers are not held up.
func TestQueuedWriterHonoursContext(t *testing.T) {
	s := openTemp(t)
	task := &store.Task{Task: &a2a.Task{ID: "t", ContextID: "c"}}
	if err := s.Create(t.Context(), task, nil); err != nil {
		t.Fatal(err)
	}
	release := sqlite.HoldWriter(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Update(ctx, task, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Update while the writer is busy: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Update gave up after %v", d)
	}
	if _, err := s.Get(t.Context(), store.Owner{}, "t"); err != nil {
		t.Errorf("Get while the writer is busy: %v", err)
	}
	release()
	if err := s.Update(t.Context(), task, nil); err != nil || task.Version != 2 {
		t.Errorf("Update after the writer is free: %v (version %d)", err, task.Version)
	}
}
