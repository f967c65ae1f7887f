package main

// In-process microbenchmarks of the request handlers, without HTTP:
//
//	go test -run '^$' -bench . -benchmem ./bench/a2a/
//
// SendTask/{memory,sqlite,a2ago}: a blocking SendMessage "task ..." (the echo executor's
// completed task: the Task in state working, one artifact, completed) through engine.New on
// store/memory, on store/sqlite (a file in b.TempDir(), the durable default; in a directory
// under $A2A_BENCH_SQLITE_DIR when set, e.g. /dev/shm), and through a2a-go's
// a2asrv.NewHandler for scale. SendTaskParallel: the same with b.RunParallel (GOMAXPROCS
// goroutines, ×16 with -cpu). SendReply: a direct message reply (no task, no store). Stream100:
// SendStreamingMessage "stream 100", draining its 102 events.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// handlers returns the request handlers to compare, by name; each is closed at the end of b.
func handlers(b *testing.B) []struct {
	name string
	make func(b *testing.B) a2asrv.RequestHandler
} {
	ours := func(open func(b *testing.B) store.Store) func(b *testing.B) a2asrv.RequestHandler {
		return func(b *testing.B) a2asrv.RequestHandler {
			st := open(b)
			eng := engine.New(echoExecutor{}, st, &engine.Options{NoPushNotifications: true})
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				eng.Close(ctx)
				st.Close()
			})
			return eng
		}
	}
	return []struct {
		name string
		make func(b *testing.B) a2asrv.RequestHandler
	}{
		{"memory", ours(func(b *testing.B) store.Store { return memory.New() })},
		{"sqlite", ours(func(b *testing.B) store.Store {
			dir := b.TempDir()
			if d := os.Getenv("A2A_BENCH_SQLITE_DIR"); d != "" {
				// e.g. /dev/shm, to tell the file system's share of the SQLite cost from the rest
				var err error
				if dir, err = os.MkdirTemp(d, "a2a-bench-"); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.RemoveAll(dir) })
			}
			st, err := sqlite.Open(context.Background(), filepath.Join(dir, "a2a.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		})},
		{"a2ago", func(b *testing.B) a2asrv.RequestHandler {
			ts := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
				Authenticator: func(context.Context) (string, error) { return benchUser, nil },
			})
			return a2asrv.NewHandler(echoExecutor{}, a2asrv.WithTaskStore(ts))
		}},
	}
}

func sendReq(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

func sendTask(ctx context.Context, h a2asrv.RequestHandler) error {
	res, err := h.SendMessage(ctx, sendReq(taskText))
	if err != nil {
		return err
	}
	t, ok := res.(*a2a.Task)
	if !ok || t.Status.State != a2a.TaskStateCompleted || len(t.Artifacts) != 1 {
		return fmt.Errorf("want a completed task with one artifact, got %#v", res)
	}
	return nil
}

func BenchmarkSendTask(b *testing.B) {
	for _, hc := range handlers(b) {
		b.Run(hc.name, func(b *testing.B) {
			h := hc.make(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := sendTask(ctx, h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSendTaskParallel(b *testing.B) {
	for _, hc := range handlers(b) {
		b.Run(hc.name, func(b *testing.B) {
			h := hc.make(b)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(8) // 16 in flight on 2 cores, as in the harness's send-task/c16
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := sendTask(ctx, h); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkSendReply(b *testing.B) {
	for _, hc := range handlers(b) {
		if hc.name == "sqlite" {
			continue // a direct reply never reaches the store
		}
		b.Run(hc.name, func(b *testing.B) {
			h := hc.make(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := h.SendMessage(ctx, sendReq(replyText))
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := res.(*a2a.Message); !ok {
					b.Fatalf("want a message, got %T", res)
				}
			}
		})
	}
}

func BenchmarkStream100(b *testing.B) {
	for _, hc := range handlers(b) {
		b.Run(hc.name, func(b *testing.B) {
			h := hc.make(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for _, err := range h.SendStreamingMessage(ctx, sendReq("stream 100")) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != 102 {
					b.Fatalf("%d events, want 102", n)
				}
			}
			b.ReportMetric(float64(b.N*102)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
