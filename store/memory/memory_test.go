package memory_test

import (
	"testing"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func open(t testing.TB) *memory.Store {
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

func TestListTies(t *testing.T) {
	storetest.RunTies(t, func(t *testing.T) store.Store { return open(t) }, memory.SetUpdated)
}

func BenchmarkCreate(b *testing.B)           { storetest.BenchCreate(b, open(b)) }
func BenchmarkUpdateAppend(b *testing.B)     { storetest.BenchUpdateAppend(b, open(b)) }
func BenchmarkGet(b *testing.B)              { storetest.BenchGet(b, open(b)) }
func BenchmarkList(b *testing.B)             { storetest.BenchList(b, open(b)) }
func BenchmarkClaimSettle(b *testing.B)      { storetest.BenchClaimSettle(b, open(b)) }
func BenchmarkClaimPastBacklog(b *testing.B) { storetest.BenchClaimPastBacklog(b, open(b)) }
