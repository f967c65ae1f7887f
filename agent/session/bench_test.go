package session

import (
	"fmt"
	"testing"
)

// long is a session of n turns of about 60 tokens, every third citing a fact.
func long(b *testing.B, strategy Strategy, n int) *Session {
	b.Helper()
	s, _ := New("ctx", Config{Strategy: strategy, Window: 8192})
	for i := 1; i <= n; i++ {
		var facts []Fact
		if i%3 == 0 {
			facts = []Fact{fact(fmt.Sprint("b", i%50), fmt.Sprint("the value of key ", i%50, " is ", i))}
		}
		chat(b, s, at(i), fmt.Sprintf("%-100s", fmt.Sprint("question ", i)), fmt.Sprintf("%-120s", fmt.Sprint("answer ", i)), facts...)
	}
	return s
}

// BenchmarkContext is the cost of computing a working context (what Prepare and the context
// affordance do, and End once more for ContextAfter) in a session of 1,000 turns.
func BenchmarkContext(b *testing.B) {
	for _, st := range []Strategy{Sliding, Forget, Summarize, Coherent} {
		b.Run(string(st), func(b *testing.B) {
			s := long(b, st, 1000)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Context(testSystem); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTurn is the session's own cost of one turn (Offer, Prepare, End) in a session of
// 1,000 turns: the runtime's per-turn overhead from this package, the model excluded.
func BenchmarkTurn(b *testing.B) {
	s := long(b, Coherent, 1000)
	b.ReportAllocs()
	for b.Loop() {
		chat(b, s, at(2000), "one more question", "one more answer")
	}
}
