package agent

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
)

// FuzzRule: any predicate and parameter either fails to compile or runs within the cost limit
// on any event, without panicking.
func FuzzRule(f *testing.F) {
	for _, r := range Notes().Rules {
		f.Add(r.When, r.Params[firstParam(r)], "remember the sky is blue")
	}
	f.Add(`[1,2,3].all(i, [1,2,3].all(j, text.size() > i + j))`, `text.repeat(1000)`, "x")
	f.Fuzz(func(t *testing.T, when, param, text string) {
		r := Rule{Name: "r", When: when, Action: Reply, Params: map[string]string{"text": param}}
		cp, err := compile(&Policy{Rules: []Rule{r}, Limits: Limits{CostLimit: 1000}})
		if err != nil {
			return
		}
		mem := newMemory()
		m := newMind("fuzz", newView(mem), cp, func() time.Time { return time.Unix(0, 0) })
		o := m.observe(UserText(text))
		var run Run
		_ = m.integrate(context.Background(), o, &run)
	})
}

func firstParam(r Rule) string {
	keys := slices.Sorted(maps.Keys(r.Params))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}
