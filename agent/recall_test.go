package agent

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The index walk ranks exactly as counting every match would: terms matched, then salience,
// then recency.
func TestSearchLogMatchesFullCount(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"sky", "sea", "blue", "green", "red", "cat", "dog", "sun"}
	mem := newMemory()
	for i := range 2000 {
		var text []string
		for range 1 + rng.IntN(4) {
			text = append(text, words[rng.IntN(len(words))])
		}
		id := fmt.Sprintf("o%d", i+1)
		mem.append(Observation{ID: id, Seq: int64(i + 1), Text: strings.Join(text, " ")})
		if rng.IntN(20) == 0 {
			mem.cite(id, 1+rng.IntN(3))
			if rng.IntN(4) == 0 { // cited, then no longer
				mem.cite(id, -mem.cited[id])
			}
		}
	}
	for range 300 {
		var q []string
		for range 1 + rng.IntN(3) {
			q = append(q, words[rng.IntN(len(words))])
		}
		if rng.IntN(5) == 0 {
			q = append(q, "absent")
		}
		limit := 1 + rng.IntN(40)
		var lists [][]int
		for _, term := range slices.Compact(slices.Sorted(slices.Values(q))) {
			if l := mem.index[term]; len(l) > 0 {
				lists = append(lists, l)
			}
		}
		want := mem.countMatches(lists, limit)
		if diff := cmp.Diff(want, mem.searchLog(q, limit)); diff != "" {
			t.Fatalf("searchLog(%q, %d) (-full count +index walk):\n%s", q, limit, diff)
		}
	}
}

// Observations committed out of order (turns side by side) are indexed as if appended in
// order.
func TestInsertKeepsTheIndexes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"sky", "sea", "blue", "green"}
	var obs []Observation
	for i := range 300 {
		obs = append(obs, Observation{ID: fmt.Sprintf("o%d", i+1), Seq: int64(i + 1), Text: words[rng.IntN(4)] + " " + words[rng.IntN(4)]})
	}
	inOrder, shuffled := newMemory(), newMemory()
	for _, o := range obs {
		inOrder.append(o)
	}
	for i := 0; i < len(obs); i += 5 { // commit each group of five in a random order
		group := slices.Clone(obs[i:min(i+5, len(obs))])
		rng.Shuffle(len(group), func(a, b int) { group[a], group[b] = group[b], group[a] })
		for _, o := range group {
			shuffled.append(o)
			if rng.IntN(10) == 0 {
				shuffled.cite(o.ID, 1)
				inOrder.cite(o.ID, 1)
			}
		}
	}
	if diff := cmp.Diff(inOrder.byID, shuffled.byID); diff != "" {
		t.Errorf("byID (-in order +shuffled):\n%s", diff)
	}
	if diff := cmp.Diff(inOrder.index, shuffled.index); diff != "" {
		t.Errorf("index (-in order +shuffled):\n%s", diff)
	}
	for _, q := range [][]string{{"sky"}, {"sea", "blue"}, {"green", "sky", "sea"}} {
		if diff := cmp.Diff(inOrder.searchLog(q, 10), shuffled.searchLog(q, 10)); diff != "" {
			t.Errorf("searchLog(%q) (-in order +shuffled):\n%s", q, diff)
		}
	}
}
