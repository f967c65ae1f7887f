package agent_test

import (
	"context"
	"fmt"
	"strconv"
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

// BenchmarkRecall measures one recall (beliefs, observations, working memory) at 10k and 1M
// observations. Recall reads the inverted index, so its time should grow far slower than the log:
// each query's terms co-occur in 0.1% of the observations, and the newest matches are found
// without reading the rest. The setup loads the log through the memory store, as New reloads a
// persisted agent.
func BenchmarkRecall(b *testing.B) {
	for _, n := range []struct {
		name string
		n    int
	}{{"obs=10k", 10_000}, {"obs=1M", 1_000_000}} {
		b.Run(n.name, func(b *testing.B) {
			ctx := context.Background()
			st := agent.NewMemoryStore()
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var batch agent.Batch
			for i := range n.n {
				batch.Observations = append(batch.Observations, agent.Observation{ID: "o" + strconv.Itoa(i+1), Seq: int64(i + 1), Time: at, Kind: "message",
					Source: agent.Source{Kind: agent.SourceUser}, Text: "note " + strconv.Itoa(i) + " about topic" + strconv.Itoa(i%100) + " and word" + strconv.Itoa(i%1000)})
			}
			for i := range 1000 {
				batch.Beliefs = append(batch.Beliefs, agent.Belief{ID: fmt.Sprintf("b%d", i+1), Subject: fmt.Sprintf("topic%d", i), Value: "v",
					Confidence: 0.9, Status: agent.StatusActive, Provenance: agent.Provenance{Observations: []string{"o" + strconv.Itoa(i*7+1)}}})
			}
			if err := st.Commit(ctx, agent.Key{Agent: "bench"}, &batch); err != nil {
				b.Fatal(err)
			}
			a := benchAgent(b, &agent.Options{Store: st})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r, err := a.Recall(ctx, agent.Query{Text: fmt.Sprintf("topic%d word%d", i%100, i%1000)})
				if err != nil || len(r.Observations) != 10 {
					b.Fatal(err, len(r.Observations))
				}
				i++
			}
		})
	}
}
