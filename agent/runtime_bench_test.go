package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/sqlitestore"
)

// cpuTime is the CPU time the process has used (user and system, every goroutine and the GC):
// on a loaded machine it says what a turn costs where wall time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkSessions runs 1,000 sessions at once (10 each for 100 principals) against a model
// that answers in 50 ms, with at most 64 model calls at once: the bound's throughput is
// 64 / 0.05 s = 1,280 turns/s, and "of-bound" is the share of it reached. Each turn is a
// consult of the Assistant policy, committed to the store.
//
// The peer, measured in the same run, is the same 1,000 goroutines calling the same model
// through a bare semaphore of 64, with no runtime at all: on a loaded machine it shows what
// the bound allows there, and the runtime's share of it is its own overhead.
func BenchmarkSessions(b *testing.B) {
	b.Run("peer=semaphore", func(b *testing.B) {
		sem := make(chan struct{}, 64)
		model := sleeper(50 * time.Millisecond)
		var left atomic.Int64
		left.Store(int64(b.N))
		var wg sync.WaitGroup
		start, cpu := time.Now(), cpuTime()
		for range 1000 {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					sem <- struct{}{}
					_, _ = model.Complete(context.Background(), []agent.ChatMessage{{Role: "user", Content: "why?"}}, nil, nil)
					<-sem
				}
			})
		}
		wg.Wait()
		rate := float64(b.N) / time.Since(start).Seconds()
		reportCPU(b, cpu)
		b.ReportMetric(rate, "turns/s")
		b.ReportMetric(100*rate/1280, "%of-bound")
	})
	for _, st := range []string{"memory", "sqlite"} {
		b.Run("store="+st, func(b *testing.B) {
			var s agent.Store = agent.NewMemoryStore()
			if st == "sqlite" {
				ss, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "a.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer ss.Close()
				s = ss
			}
			h, err := agent.NewHost(&agent.Definition{Name: "bench", Policy: agent.Assistant(), Model: sleeper(50 * time.Millisecond)},
				&agent.HostOptions{Store: s, Limiter: agent.NewLimiter(64, 0)})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			const sessions, principals = 1000, 100
			agents := make([]*agent.Agent, principals)
			for i := range agents {
				if agents[i], err = h.Instance(context.Background(), agent.Principal{Name: fmt.Sprint("p", i)}); err != nil {
					b.Fatal(err)
				}
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime()
			for i := range sessions {
				wg.Go(func() {
					a := agents[i%principals]
					for left.Add(-1) >= 0 {
						ev := agent.UserText("why?")
						ev.Context.Session = fmt.Sprint("s", i)
						if _, err := a.Ask(context.Background(), ev); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			rate := float64(b.N) / time.Since(start).Seconds()
			reportCPU(b, cpu)
			b.ReportMetric(rate, "turns/s")
			b.ReportMetric(100*rate/1280, "%of-bound")
		})
	}
}

// BenchmarkTurn is the runtime's own cost of a turn, the model excluded: one consult turn of
// the Assistant policy with a model that answers at once, and one rule-only turn ("echo"), on the
// memory store, one at a time; and "session", the consult turn of BenchmarkSessions: a turn of a
// chat session (a new session every 20 turns, as BenchmarkSessions' 1,000 sessions have after
// 20,000 turns), on the memory store and on SQLite.
func BenchmarkTurn(b *testing.B) {
	for _, tc := range []struct {
		name, text      string
		session, sqlite bool
	}{{"consult", "why?", false, false}, {"rules", "echo hi", false, false}, {"session", "why?", true, false},
		{"session-sqlite", "why?", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var opts agent.HostOptions
			if tc.sqlite {
				ss, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "a.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer ss.Close()
				opts.Store = ss
			}
			h, err := agent.NewHost(&agent.Definition{Name: "bench", Policy: agent.Assistant(), Model: sleeper(0)}, &opts)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			a, _ := h.Instance(context.Background(), agent.Principal{Name: "p"})
			b.ReportAllocs()
			cpu := cpuTime()
			i := 0
			for b.Loop() {
				ev := agent.UserText(tc.text)
				if tc.session {
					ev.Context.Session = fmt.Sprint("s", i/20)
				}
				if _, err := a.Ask(context.Background(), ev); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkIdleMemory reports the heap an idle resident instance holds (after one committed
// turn), and an idle session of one instance (after one committed turn in it).
func BenchmarkIdleMemory(b *testing.B) {
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	b.Run("instance", func(b *testing.B) {
		for b.Loop() {
			h, _ := agent.NewHost(&agent.Definition{Name: "bench", Policy: agent.Notes()}, &agent.HostOptions{IdleTimeout: -1})
			const n = 1000
			before := heap()
			for i := range n {
				a, _ := h.Instance(context.Background(), agent.Principal{Name: fmt.Sprint("p", i)})
				_, _ = a.Ask(context.Background(), agent.UserText("remember the sky is blue"))
			}
			after := heap()
			b.ReportMetric(float64(after-before)/n, "bytes/instance")
			_ = h.Close()
		}
	})
	b.Run("session", func(b *testing.B) {
		for b.Loop() {
			h, _ := agent.NewHost(&agent.Definition{Name: "bench", Policy: agent.Notes()}, &agent.HostOptions{IdleTimeout: -1})
			a, _ := h.Instance(context.Background(), agent.Principal{Name: "p"})
			_, _ = a.Ask(context.Background(), agent.UserText("hello"))
			const n = 1000
			before := heap()
			for i := range n {
				ev := agent.UserText("hello")
				ev.Context.Session = fmt.Sprint("s", i)
				_, _ = a.Ask(context.Background(), ev)
			}
			after := heap()
			b.ReportMetric(float64(after-before)/n, "bytes/session")
			_ = h.Close()
		}
	})
}
