package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
)

func benchAgent(b *testing.B, opts *agent.Options) *agent.Agent {
	a, err := agent.New(context.Background(), "bench", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close() })
	return a
}

// BenchmarkIntegrate measures events integrated per second by one notes agent (every event
// fires rules and writes memory).
func BenchmarkIntegrate(b *testing.B) {
	ctx := context.Background()
	a := benchAgent(b, &agent.Options{Policy: agent.Notes()})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := a.Ask(ctx, agent.UserText(fmt.Sprintf("remember item %d is value %d", i%1000, i))); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSend is integration through Send (the mailbox without waiting), ended by one Ask.
func BenchmarkSend(b *testing.B) {
	ctx := context.Background()
	a := benchAgent(b, &agent.Options{Policy: agent.Notes(), Mailbox: 1024})
	i := 0
	for b.Loop() {
		_ = a.Send(ctx, agent.UserText(fmt.Sprintf("remember item %d is value %d", i%1000, i)))
		i++
	}
	_, _ = a.Ask(ctx, agent.UserText("hello"))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkRecall(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("observations=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st := agent.NewMemoryStore()
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range n {
				o := agent.Observation{ID: fmt.Sprintf("o%d", i+1), Seq: int64(i + 1), Time: at, Kind: "message",
					Source: agent.Source{Kind: agent.SourceUser}, Text: fmt.Sprintf("note %d about topic%d and word%d", i, i%100, i%1000)}
				if err := st.Append(ctx, "bench", o); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 1000 {
				_ = st.SaveBelief(ctx, "bench", agent.Belief{ID: fmt.Sprintf("b%d", i+1), Subject: fmt.Sprintf("topic%d", i), Value: "v",
					Confidence: 0.9, Status: agent.StatusActive})
			}
			a := benchAgent(b, &agent.Options{Store: st})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r, err := a.Recall(ctx, agent.Query{Text: fmt.Sprintf("topic%d word%d", i%100, i%1000)})
				if err != nil || len(r.Observations) == 0 {
					b.Fatal(err, r)
				}
				i++
			}
		})
	}
}
