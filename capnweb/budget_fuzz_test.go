package capnweb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Limits of the session FuzzSessionBudget drives: small, so that inputs cross them.
const (
	fuzzHeldLimit    = 32 << 10
	fuzzMessageLimit = 16 << 10
)

// budgetSeeds are inputs that fill a budget: values pushed and kept, results never pulled, a
// map over a long array, a login that moves the session to another pool mid-way.
var budgetSeeds = []string{
	strings.Repeat(`["push","`+strings.Repeat("x", 4000)+`"]`+"\n", 12),
	strings.Repeat(`["push",["pipeline",0,["blob"],[3000]]]`+"\n", 16),
	`["push",["pipeline",0,["range"],[1000]]]` + "\n" + `["push",["remap",1,[],[["import",0]],[["pipeline",-1,["double"],[["pipeline",0]]]]]]` + "\n" + `["pull",2]`,
	`["push",["pipeline",0,["login"],[]]]` + "\n" + strings.Repeat(`["push",["pipeline",0,["blob"],[3000]]]`+"\n", 12),
	strings.Repeat(`["push",["pipeline",0,["blob"],[3000]]]`+"\n"+`["pull",1]`+"\n", 4) + `["release",1,1]`,
	`["push",["pipeline",0,["echo"],[["export",-1]]]]` + "\n" + strings.Repeat(`["push",["pipeline",0,["echo"],[["export",-1]]]]`+"\n", 40),
	`["push",["pipeline",0,["delay"],[1e9]]]` + "\n" + `["push",["pipeline",1,["x"],["` + strings.Repeat("y", 8000) + `"]]]`,
}

// FuzzSessionBudget is FuzzSession for a session under a memory budget (a 32 KiB session limit,
// in a pool inside another, and a login that moves it to a third): the session must handle
// every frame or abort, never count more held than its limit allows (checked each time it sends),
// never count less than nothing, and, once it has ended, leave every pool it drew on at zero.
func FuzzSessionBudget(f *testing.F) {
	frames, scripts := goldenFrames(f)
	for _, s := range scripts {
		f.Add([]byte(s))
	}
	for _, s := range append(append(frames, handSeeds...), budgetSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := bytes.FieldsFunc(data, func(r rune) bool { return r == '\n' })
		if len(msgs) > fuzzMaxFrames {
			msgs = msgs[:fuzzMaxFrames]
		}
		server := capnweb.NewPool("server", 96<<10, nil)
		anon := capnweb.NewPool("anonymous", 48<<10, server)
		users := capnweb.NewPool("users", 64<<10, server)
		base := runtime.NumGoroutine()
		var over atomic.Int64 // Held seen over the limit
		var badFrame atomic.Pointer[[]byte]
		var stalled bool
		var srv *capnweb.Session
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx := context.Background()
			client, st := capnweb.Pipe()
			api := newBudgetAPI()
			api.pool = users
			srv = capnweb.NewSession(st, api, &capnweb.Options{Pool: anon,
				Limits: capnweb.Limits{MaxHeldBytes: fuzzHeldLimit, MaxMessageSize: fuzzMessageLimit}})
			drained, answered := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(drained)
				seen := false
				for {
					m, err := client.Receive(ctx)
					if err != nil {
						return
					}
					// Before login the session's limit bounds it, after it the users' pool.
					if h := srv.Held(); h > users.Limit() && srv.Err() == nil {
						over.Store(h)
					}
					if !json.Valid(m) {
						badFrame.CompareAndSwap(nil, &m)
					}
					if !seen && bytes.Contains(m, []byte(sentinelToken)) {
						seen = true
						close(answered)
					}
				}
			}()
			for _, m := range msgs {
				if client.Send(ctx, m) != nil {
					break
				}
			}
			client.Send(ctx, []byte(`["stream",["pipeline",0,["echo"],["`+sentinelToken+`"]]]`))
			select {
			case <-answered:
			case <-srv.Done():
			case <-time.After(fuzzTimeout / 2):
				stalled = true
			}
			srv.Close()
			<-srv.Done() // after an abort, the goroutine ending the session may still be at it
			api.Wait()
			<-drained
		}()
		select {
		case <-done:
		case <-time.After(fuzzTimeout):
			t.Fatalf("session on %q did not close in %v; goroutines:\n%s", data, fuzzTimeout, stacks())
		}
		if b := badFrame.Load(); b != nil {
			t.Fatalf("session on %q sent a frame that is not JSON: %s", data, *b)
		}
		if stalled {
			t.Fatalf("session on %q neither handled every frame nor ended in %v", data, fuzzTimeout/2)
		}
		if h := over.Load(); h != 0 {
			t.Fatalf("session on %q counted %d bytes held, over its bound of %d", data, h, users.Limit())
		}
		// What the session still holds is let go of by its goroutines, which have ended, and by
		// values still referenced: a count below zero is a charge given back twice.
		if h := srv.Held(); h < 0 {
			t.Fatalf("session on %q ended holding %d bytes: more was given back than charged", data, h)
		}
		for _, p := range []*capnweb.Pool{anon, users, server} {
			if h := p.Held(); h != 0 {
				t.Fatalf("session on %q ended; a pool (limit %d) still counts %d bytes", data, p.Limit(), h)
			}
		}
		if n, ok := waitGoroutines(base + fuzzGoroutineSlack); !ok {
			t.Fatalf("session on %q left %d goroutines running (%d before); goroutines:\n%s", data, n, base, stacks())
		}
	})
}
