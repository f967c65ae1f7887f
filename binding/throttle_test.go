package binding

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// passwords is an Authenticator of "Basic"-like headers "User: NAME" and "Password: WORD":
// the password is NAME+"-secret"; no User header is no credentials. It counts its calls, which
// stand for the costly work (a bcrypt comparison) the throttle must keep bounded.
type passwords struct{ calls atomic.Int64 }

func (p *passwords) auth(_ context.Context, h http.Header) (*a2asrv.User, error) {
	p.calls.Add(1)
	user := h.Get("User")
	switch {
	case user == "":
		return nil, fmt.Errorf("%w: %w", a2a.ErrUnauthenticated, ErrNoCredentials)
	case h.Get("Password") != user+"-secret":
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "wrong password")
	}
	return a2asrv.NewAuthenticatedUser(user, nil), nil
}

func creds(user, pass string) http.Header { return http.Header{"User": {user}, "Password": {pass}} }

func claimedUser(h http.Header) string { return h.Get("User") }

func try(st *throttleState, p *passwords, remote string, h http.Header) (reason string) {
	_, rerr := authenticate(context.Background(), st, p.auth, h, remote, nil)
	if rerr == nil {
		return "ok"
	}
	return rerr.reason
}

// An address gets PerAddress failures, then 429s that cost the Authenticator nothing, one more
// failure per Interval; successes and requests without credentials spend nothing.
func TestLoginThrottlePerAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := (&LoginThrottle{PerAddress: 3, Interval: 10 * time.Second, Delay: -1}).counts()
		p := &passwords{}
		attacker, other := "192.0.2.1:5000", "192.0.2.2:6000"
		for i := range 3 {
			if r := try(st, p, attacker, creds("alice", fmt.Sprint("guess", i))); r != "UNAUTHENTICATED" {
				t.Fatalf("guess %d: %s, want UNAUTHENTICATED", i, r)
			}
		}
		for i := range 300 {
			if r := try(st, p, attacker, creds("alice", fmt.Sprint("more", i))); r != "LOGIN_THROTTLED" {
				t.Fatalf("guess %d past the budget: %s, want LOGIN_THROTTLED", i+3, r)
			}
		}
		if n := p.calls.Load(); n != 3 {
			t.Errorf("the Authenticator ran %d times for 303 guesses, want 3", n)
		}
		// The refusal says when to retry: one failure comes back after Interval.
		_, rerr := authenticate(context.Background(), st, p.auth, creds("alice", "x"), attacker, nil)
		if got := rerr.meta["retryAfterSeconds"]; got != "10" {
			t.Errorf("Retry-After = %s s, want 10", got)
		}
		// Another address is not affected, nor requests without credentials.
		if r := try(st, p, other, creds("bob", "bob-secret")); r != "ok" {
			t.Errorf("another address: %s", r)
		}
		time.Sleep(10 * time.Second)
		if r := try(st, p, attacker, creds("alice", "late")); r != "UNAUTHENTICATED" {
			t.Errorf("after Interval: %s, want one more try", r)
		}
		if r := try(st, p, attacker, creds("alice", "later")); r != "LOGIN_THROTTLED" {
			t.Errorf("right after: %s, want LOGIN_THROTTLED", r)
		}
		for range 20 {
			try(st, p, other, http.Header{}) // no credentials: not failures
			try(st, p, other, creds("bob", "bob-secret"))
		}
		if r := try(st, p, other, creds("bob", "bob-secret")); r != "ok" {
			t.Errorf("after 20 requests without credentials and 20 logins: %s", r)
		}
	})
}

// Attempts under way count against the budget: many at once from one address do not all run
// before the first failure is counted.
func TestLoginThrottleConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := (&LoginThrottle{PerAddress: 5, Interval: time.Minute}).counts()
		release := make(chan struct{})
		var running, ran atomic.Int64
		slow := func(ctx context.Context, h http.Header) (*a2asrv.User, error) {
			running.Add(1)
			ran.Add(1)
			<-release // a bcrypt comparison that takes a while
			running.Add(-1)
			return nil, a2a.NewError(a2a.ErrUnauthenticated, "wrong password")
		}
		var wg sync.WaitGroup
		var throttled atomic.Int64
		for range 100 {
			wg.Go(func() {
				if _, rerr := authenticate(context.Background(), st, slow, creds("alice", "guess"), "192.0.2.1:1", nil); rerr != nil && rerr.reason == "LOGIN_THROTTLED" {
					throttled.Add(1)
				}
			})
		}
		synctest.Wait()
		if n := running.Load(); n != 5 {
			t.Errorf("%d attempts run at once, want the budget, 5", n)
		}
		close(release)
		wg.Wait()
		if ran.Load() != 5 || throttled.Load() != 95 {
			t.Errorf("%d ran and %d were throttled, want 5 and 95", ran.Load(), throttled.Load())
		}
	})
}

// A principal gets PerPrincipal failures from all addresses together; where it logged in
// before, its budget does not apply, so guesses from elsewhere do not lock it out there.
func TestLoginThrottlePerPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := (&LoginThrottle{PerAddress: 100, PerPrincipal: 4, Interval: time.Minute, Claimed: claimedUser, Delay: -1}).counts()
		p := &passwords{}
		home := "198.51.100.7:443"
		if r := try(st, p, home, creds("alice", "alice-secret")); r != "ok" {
			t.Fatalf("alice at home: %s", r)
		}
		for i := range 40 { // a botnet: a new address each time
			try(st, p, fmt.Sprintf("203.0.113.%d:1", i), creds("alice", "guess"))
		}
		if n := p.calls.Load(); n != 1+4 {
			t.Errorf("the Authenticator ran %d times, want 1 login + 4 guesses", n)
		}
		if r := try(st, p, "203.0.113.200:1", creds("alice", "alice-secret")); r != "LOGIN_THROTTLED" {
			t.Errorf("alice from a new address during the flood: %s, want LOGIN_THROTTLED", r)
		}
		if r := try(st, p, home, creds("alice", "alice-secret")); r != "ok" {
			t.Errorf("alice at home during the flood: %s, want ok", r)
		}
		if r := try(st, p, "203.0.113.201:1", creds("bob", "bob-secret")); r != "ok" {
			t.Errorf("bob during the flood on alice: %s", r)
		}
	})
}

// IPv6 addresses of one /64 share a budget; IPv4-mapped addresses are their IPv4 address.
func TestLoginThrottleAddressKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ a, b string }{
		{"[2001:db8:1:2::1]:443", "[2001:db8:1:2:ffff::9]:80"},
		{"[::ffff:192.0.2.1]:1", "192.0.2.1:2"},
		{"[fe80::1%eth0]:1", "[fe80::2%eth1]:1"},
	} {
		if addrKey(c.a) != addrKey(c.b) {
			t.Errorf("addrKey(%s) = %s, addrKey(%s) = %s: want one budget", c.a, addrKey(c.a), c.b, addrKey(c.b))
		}
	}
	if addrKey("[2001:db8:1:2::1]:1") == addrKey("[2001:db8:1:3::1]:1") {
		t.Error("two /64s share a budget")
	}
}

// The buckets a flood of addresses leaves are bounded.
func TestLoginThrottleBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := (&LoginThrottle{PerAddress: 1, Interval: time.Hour, Claimed: claimedUser}).counts()
		p := &passwords{}
		for i := range maxThrottleKeys + 1000 {
			try(st, p, fmt.Sprintf("10.%d.%d.%d:1", i>>16, (i>>8)&255, i&255), creds(fmt.Sprint("u", i), "guess"))
		}
		st.mu.Lock()
		n := len(st.buckets)
		st.mu.Unlock()
		if n > maxThrottleKeys {
			t.Errorf("%d buckets, want at most %d", n, maxThrottleKeys)
		}
	})
}

// The refusal is 429 with Retry-After on HTTP (JSON-RPC and HTTP+JSON), before Authenticate.
func TestLoginThrottleHTTP(t *testing.T) {
	t.Parallel()
	p := &passwords{}
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Authenticate: p.auth, LoginThrottle: &LoginThrottle{PerAddress: 2, Interval: time.Hour, Delay: time.Millisecond}}})
	for i := range 2 {
		r := do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("ListTasks", map[string]any{}), "User", "alice", "Password", fmt.Sprint(i))
		if r.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s", i, r.status, r.body)
		}
	}
	for _, r := range []rawResponse{
		do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("ListTasks", map[string]any{}), "User", "alice", "Password", "x"),
		do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks", nil, "User", "alice", "Password", "x"),
	} {
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "3600" || !strings.Contains(string(r.body), "LOGIN_THROTTLED") {
			t.Errorf("past the budget: %d Retry-After %q %s, want 429, 3600, LOGIN_THROTTLED", r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	if n := p.calls.Load(); n != 2 {
		t.Errorf("Authenticate ran %d times, want 2", n)
	}
}

// A refused attempt is answered after Delay (never past its Retry-After), so that a guesser
// that does not pause makes one attempt per Delay; when maxTarpit attempts already wait, the
// refusal is immediate.
func TestLoginThrottleDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := (&LoginThrottle{PerAddress: 1, Interval: time.Hour}).counts()
		p := &passwords{}
		try(st, p, "192.0.2.1:1", creds("alice", "guess"))
		start := time.Now()
		if r := try(st, p, "192.0.2.1:1", creds("alice", "guess")); r != "LOGIN_THROTTLED" {
			t.Fatalf("second guess: %s", r)
		}
		if d := time.Since(start); d != DefaultLoginDelay {
			t.Errorf("the refusal took %v, want DefaultLoginDelay (%v)", d, DefaultLoginDelay)
		}

		short := (&LoginThrottle{PerAddress: 1, Interval: 100 * time.Millisecond}).counts()
		try(short, p, "192.0.2.1:1", creds("alice", "guess"))
		start = time.Now()
		try(short, p, "192.0.2.1:1", creds("alice", "guess"))
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("the refusal took %v, want its Retry-After, 100ms", d)
		}

		// The tarpit is full: the next refusal does not wait.
		var wg sync.WaitGroup
		for range maxTarpit {
			wg.Go(func() { try(st, p, "192.0.2.1:1", creds("alice", "guess")) })
		}
		synctest.Wait()
		start = time.Now()
		try(st, p, "192.0.2.1:1", creds("alice", "guess"))
		if d := time.Since(start); d != 0 {
			t.Errorf("with the tarpit full the refusal took %v, want none", d)
		}
		wg.Wait()
	})
}
