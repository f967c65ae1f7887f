package auth

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"golang.org/x/crypto/bcrypt"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// BenchmarkLoginFlood: a caller with an API key (from 127.0.0.2) lists its tasks while eight
// clients (from 127.0.0.1) guess HTTP Basic passwords (bcrypt at the default cost) as fast as
// they can, with the login throttle and without. Each reports the caller's median latency
// during the flood (ns/op is its mean), the median before the flood, and their ratio
// (p50-ratio): issue 23 saw 1.4 ms become 77 ms without a throttle; the target is at most 2×.
//
//	go test -run - -bench LoginFlood -benchtime 400x ./auth
func BenchmarkLoginFlood(b *testing.B) {
	for _, throttle := range []bool{true, false} {
		name := map[bool]string{true: "throttled", false: "unthrottled"}[throttle]
		b.Run(name, func(b *testing.B) {
			keys, err := NewAPIKey("apiKey", a2a.APIKeySecurityScheme{Location: "header", Name: "X-API-Key"}, map[string]string{"k-carol": "carol"})
			if err != nil {
				b.Fatal(err)
			}
			hash, err := bcrypt.GenerateFromPassword([]byte("alice-pass"), bcrypt.DefaultCost)
			if err != nil {
				b.Fatal(err)
			}
			basic, err := NewBasic("basic", map[string]string{"alice": string(hash)})
			if err != nil {
				b.Fatal(err)
			}
			opts := &binding.Options{Authenticate: Any(keys, basic)}
			if throttle {
				opts.LoginThrottle = &binding.LoginThrottle{Claimed: Claimed}
			}
			srv := a2atest.Start(b, &a2atest.Options{HTTP: opts})
			ctx := b.Context()
			legit, err := client.New(ctx, srv.URL, &client.Options{Binding: client.BindingJSONRPC, Header: http.Header{"X-API-Key": {"k-carol"}}, HTTPClient: fromAddr("127.0.0.2")})
			if err != nil {
				b.Fatal(err)
			}
			defer legit.Destroy()
			call := func() time.Duration {
				start := time.Now()
				if _, err := legit.ListTasks(ctx, &a2a.ListTasksRequest{}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			var quiet []time.Duration
			for range 200 {
				quiet = append(quiet, call())
			}

			stop := make(chan struct{})
			done := make(chan struct{})
			for range 8 {
				go func() {
					defer func() { done <- struct{}{} }()
					c, err := client.New(ctx, srv.URL, &client.Options{Binding: client.BindingJSONRPC, Header: basicHeader("alice", "guess")})
					if err != nil {
						return
					}
					defer c.Destroy()
					for {
						select {
						case <-stop:
							return
						default:
						}
						_, _ = c.ListTasks(ctx, &a2a.ListTasksRequest{})
					}
				}()
			}
			time.Sleep(200 * time.Millisecond) // the guessers are under way
			var flood []time.Duration
			for b.Loop() {
				flood = append(flood, call())
			}
			close(stop)
			for range 8 {
				<-done
			}
			q, f := median(quiet), median(flood)
			b.ReportMetric(float64(q.Microseconds())/1000, "quiet-p50-ms")
			b.ReportMetric(float64(f.Microseconds())/1000, "flood-p50-ms")
			b.ReportMetric(float64(f)/float64(q), "p50-ratio")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
