package peer_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/client"
)

// BenchmarkHop measures what an agent-to-agent hop adds: a user's call straight to the test
// agent ("direct") against the same call through a runtime agent that relays it with the a2a
// capability ("hop"), the two agents talking capnweb or JSON-RPC (the user always reaches the
// first agent over capnweb; the direct call uses the binding measured). ns/op is one whole call (throughput is its inverse); first-ns is
// the time to the callee's first status update; x-direct metrics are the hop's over the direct
// call's of the same binding, measured in the same run.
//
//	go test -run '^$' -bench Hop ./agent/peer
func BenchmarkHop(b *testing.B) {
	type measure struct{ whole, first float64 }
	direct := map[client.Binding]measure{}
	for _, bd := range []client.Binding{client.BindingCapnweb, client.BindingJSONRPC} {
		ce := startCallee(b, bd)
		srv, _ := startCaller(b, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}}, callerRules(ce.srv.URL))
		run := func(b *testing.B, url string, user client.Binding, text string, relayed bool) measure {
			c, err := client.New(b.Context(), url, &client.Options{Binding: user})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Destroy()
			var first time.Duration
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
				t0 := time.Now()
				seen := false
				for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}) {
					if err != nil {
						b.Fatal(err)
					}
					if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && !seen && (!relayed || relayMeta(st.Metadata) != nil) {
						first += time.Since(t0)
						seen = true
					}
				}
				cancel()
				if !seen {
					b.Fatal("no event from the callee")
				}
			}
			whole := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			m := measure{whole: whole, first: float64(first.Nanoseconds()) / float64(b.N)}
			b.ReportMetric(m.first, "first-ns")
			return m
		}
		b.Run("direct-"+string(bd), func(b *testing.B) { direct[bd] = run(b, ce.srv.URL, bd, "hello", false) })
		b.Run("hop-"+string(bd), func(b *testing.B) {
			m := run(b, srv.URL, client.BindingCapnweb, "ask hello", true)
			if d, ok := direct[bd]; ok && d.whole > 0 {
				b.ReportMetric(m.whole/d.whole, "x-direct")
				b.ReportMetric(m.first/d.first, "first-x-direct")
			}
		})
	}
	if c, j := direct[client.BindingCapnweb], direct[client.BindingJSONRPC]; c.whole > 0 && j.whole > 0 {
		b.Logf("direct call: capnweb %.0f µs, JSON-RPC %.0f µs", c.whole/1e3, j.whole/1e3)
	}
}
