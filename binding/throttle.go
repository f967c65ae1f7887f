package binding

// Failed authentications, throttled per source address and per claimed principal, before the
// Authenticator does any work (a bcrypt comparison, an introspection call).
//
// Concurrency model. A throttleState is shared by every request of the servers given the same
// *LoginThrottle. Its mutex guards the buckets and the table of known (principal, address)
// pairs; it is held for a few map operations, never while the Authenticator runs. An attempt
// admitted by admit holds a pending count on its buckets until finish: pending attempts count
// against the budget, so that many attempts at once from one address cannot all start before
// the first failure is counted.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"
)

// Defaults of a zero LoginThrottle field.
const (
	DefaultLoginPerAddress   = 10
	DefaultLoginPerPrincipal = 30
	DefaultLoginInterval     = 6 * time.Second
	DefaultLoginDelay        = time.Second
)

// ErrNoCredentials may be wrapped by an Authenticator's refusal of a request that carries no
// credentials at all (package auth's Any does): such a refusal is not a failed login, and the
// LoginThrottle does not count it.
var ErrNoCredentials = errors.New("binding: no credentials")

// LoginThrottle bounds failed authentications. Each source address (an IPv4 address, an IPv6
// /64) has a budget of PerAddress failures, refilled by one every Interval; each principal the
// credentials claim before they are checked (a Basic user name, a bearer JWT's subject: see
// Claimed) has one of PerPrincipal failures, refilled alike, spent by failures from any
// address. An attempt whose address or claimed principal has no budget left is refused before
// the Authenticator runs — no bcrypt comparison, no introspection call — with HTTP 429 and
// Retry-After (JSON-RPC -32000, REST RESOURCE_EXHAUSTED, gRPC ResourceExhausted, capnweb a call
// error with code -32000), reason LOGIN_THROTTLED. Attempts under way count against the budget
// until they end, so at most that many run at once for one address or principal. A success
// costs nothing; it marks its principal as known at that address, where the principal's budget
// then no longer applies (so a flood of guesses against alice from elsewhere does not lock
// alice out where she already logged in). A refusal for missing credentials
// (ErrNoCredentials) is not a failure.
//
// It applies to every binding: HTTP requests, gRPC calls, capnweb WebSocket upgrades and
// batches, and capnweb's authenticate(credentials). Give the same *LoginThrottle to [Options]
// and [GRPCOptions] to count both servers together. Counts are per process. Behind a proxy
// every request has the proxy's address. A LoginThrottle must not be copied after first use.
type LoginThrottle struct {
	// PerAddress is the failures one source address may make in a burst. Zero:
	// DefaultLoginPerAddress (10). Negative: addresses are not counted.
	PerAddress int
	// PerPrincipal is the failures the credentials of one claimed principal may meet in a
	// burst, from any address. Zero: DefaultLoginPerPrincipal (30). Negative: principals are
	// not counted.
	PerPrincipal int
	// Interval is how often each budget gains one failure back. Zero: DefaultLoginInterval
	// (6 s: 10 a minute).
	Interval time.Duration
	// Claimed names the principal the credentials in headers claim, unchecked, or "" (auth.Claimed
	// does for the schemes of package auth). Nil: only addresses are counted.
	Claimed func(headers http.Header) string
	// Delay is how long a refused attempt waits before it is answered (never past its
	// Retry-After): a client that guesses without pause then makes one attempt per Delay per
	// connection, instead of keeping the server's processors busy with refusals. At most
	// maxTarpit attempts wait at once; past that the refusal is immediate. Zero:
	// DefaultLoginDelay (1 s). Negative: no delay.
	Delay time.Duration

	once  sync.Once
	state *throttleState
}

// maxThrottleKeys bounds the buckets and known pairs a throttle keeps; past it, buckets that
// have refilled are dropped, then any.
const maxThrottleKeys = 1 << 16

// maxTarpit bounds the refused attempts that wait out LoginThrottle.Delay at once (each holds a
// goroutine meanwhile).
const maxTarpit = 1024

// knownFor is how long a principal stays known at an address after a success there.
const knownFor = 24 * time.Hour

type throttleState struct {
	perAddr, perPrincipal float64
	interval, delay       time.Duration
	claimed               func(http.Header) string
	tarpit                chan struct{} // a slot per refused attempt waiting out delay

	mu      sync.Mutex
	buckets map[string]*failBucket // "a:" address, "p:" principal
	known   map[string]time.Time   // principal + "\x00" + address → until
	swept   time.Time
}

// failBucket is one budget: tokens left at last (a float, refilled continuously), and the
// attempts under way that may still spend one.
type failBucket struct {
	tokens  float64
	last    time.Time
	pending int
}

func (t *LoginThrottle) counts() *throttleState {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		st := &throttleState{
			perAddr: float64(t.PerAddress), perPrincipal: float64(t.PerPrincipal), interval: t.Interval,
			claimed: t.Claimed, buckets: map[string]*failBucket{}, known: map[string]time.Time{},
		}
		if t.PerAddress == 0 {
			st.perAddr = DefaultLoginPerAddress
		}
		if t.PerPrincipal == 0 {
			st.perPrincipal = DefaultLoginPerPrincipal
		}
		if st.interval <= 0 {
			st.interval = DefaultLoginInterval
		}
		switch st.delay = t.Delay; {
		case st.delay == 0:
			st.delay = DefaultLoginDelay
		case st.delay < 0:
			st.delay = 0
		}
		st.tarpit = make(chan struct{}, maxTarpit)
		t.state = st
	})
	return t.state
}

// addrKey is the bucket key of a remote address: the IP, or its /64 for IPv6 (one subscriber
// usually has a whole /64).
func addrKey(addr string) string {
	ip, err := netip.ParseAddr(hostOf(addr))
	if err != nil {
		return "a:" + addr
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return "a:" + p.String()
	}
	return "a:" + ip.String()
}

// attempt is one admitted authentication, until finish.
type attempt struct {
	st              *throttleState
	addr, principal string // bucket keys; principal "" when not counted
	remote          string // the address as given, for the known table
}

// admit decides whether an authentication from remote with headers may run. It returns the
// attempt to finish, or the refusal.
func (st *throttleState) admit(remote string, headers http.Header) (*attempt, *throttled) {
	a := &attempt{st: st, addr: addrKey(remote), remote: addrKey(remote)}
	var claimed string
	if st.claimed != nil && st.perPrincipal > 0 {
		claimed = st.claimed(headers)
	}
	now := time.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweepLocked(now)
	var wait time.Duration
	if st.perAddr > 0 {
		wait = st.waitLocked(a.addr, st.perAddr, now)
	}
	if claimed != "" {
		if until, ok := st.known[claimed+"\x00"+a.remote]; !ok || now.After(until) {
			a.principal = "p:" + claimed
			wait = max(wait, st.waitLocked(a.principal, st.perPrincipal, now))
		}
	}
	if wait > 0 {
		return nil, &throttled{requestError: errLoginThrottled(wait), wait: wait}
	}
	if st.perAddr > 0 {
		st.buckets[a.addr].pending++
	}
	if a.principal != "" {
		st.buckets[a.principal].pending++
	}
	return a, nil
}

// waitLocked refills key's bucket to now and returns how long until it has a failure to spare
// beyond the attempts under way (0: now).
func (st *throttleState) waitLocked(key string, capacity float64, now time.Time) time.Duration {
	b := st.buckets[key]
	if b == nil {
		b = &failBucket{tokens: capacity, last: now}
		st.buckets[key] = b
	}
	b.tokens = math.Min(capacity, b.tokens+float64(now.Sub(b.last))/float64(st.interval))
	b.last = now
	if free := b.tokens - float64(b.pending); free < 1 {
		return time.Duration((1 - free) * float64(st.interval))
	}
	return 0
}

// finish ends an attempt: a failure spends from its budgets; a success of principal marks it
// known at the address.
func (a *attempt) finish(u *a2asrv.User, err error) {
	st := a.st
	failed := err != nil && errors.Is(err, a2a.ErrUnauthenticated) && !errors.Is(err, ErrNoCredentials)
	now := time.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, key := range []string{a.addr, a.principal} {
		b := st.buckets[key]
		if key == "" || b == nil {
			continue
		}
		b.pending--
		if failed {
			b.tokens--
		}
	}
	if err == nil && u != nil && u.Authenticated && u.Name != "" {
		if len(st.known) >= maxThrottleKeys {
			for k, until := range st.known {
				if now.After(until) || len(st.known) > maxThrottleKeys*7/8 {
					delete(st.known, k)
				}
			}
		}
		st.known[u.Name+"\x00"+a.remote] = now.Add(knownFor)
	}
}

// sweepLocked drops, at most once a minute or when the table is full, the buckets that have
// refilled and have nothing under way; then, if still full, any without attempts under way,
// down to seven eighths of the bound, so that a full table is not swept on every attempt.
func (st *throttleState) sweepLocked(now time.Time) {
	full := len(st.buckets) >= maxThrottleKeys
	if !full && now.Sub(st.swept) < time.Minute {
		return
	}
	st.swept = now
	for k, b := range st.buckets {
		capacity := st.perAddr
		if k[0] == 'p' {
			capacity = st.perPrincipal
		}
		if b.pending == 0 && b.tokens+float64(now.Sub(b.last))/float64(st.interval) >= capacity {
			delete(st.buckets, k)
		}
	}
	if len(st.buckets) < maxThrottleKeys {
		return
	}
	for k, b := range st.buckets {
		if len(st.buckets) <= maxThrottleKeys*7/8 {
			break
		}
		if b.pending == 0 {
			delete(st.buckets, k)
		}
	}
}

// run runs auth under the throttle; a refusal of the throttle is a *requestError.
func (st *throttleState) run(ctx context.Context, auth Authenticator, headers http.Header, remote string) (*a2asrv.User, error) {
	if st == nil {
		return auth(ctx, headers)
	}
	a, refused := st.admit(remote, headers)
	if refused != nil {
		st.slowDown(ctx, refused.wait)
		return nil, refused.requestError
	}
	u, err := auth(ctx, headers)
	a.finish(u, err)
	return u, err
}

// throttled is admit's refusal, with how long until the attempt would be admitted.
type throttled struct {
	*requestError
	wait time.Duration
}

// slowDown waits out the delay of a refused attempt (at most wait, and only while a tarpit
// slot is free), or until ctx ends.
func (st *throttleState) slowDown(ctx context.Context, wait time.Duration) {
	d := min(st.delay, wait)
	if d <= 0 {
		return
	}
	select {
	case st.tarpit <- struct{}{}:
	default:
		return // as many wait already
	}
	defer func() { <-st.tarpit }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// errLoginThrottled refuses an authentication attempt over the throttle's budget.
func errLoginThrottled(wait time.Duration) *requestError {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	return &requestError{
		reason:      "LOGIN_THROTTLED",
		message:     fmt.Sprintf("too many failed authentications: retry in %d s", secs),
		meta:        map[string]string{"retryAfterSeconds": strconv.Itoa(secs)},
		jsonrpcCode: -32000,
		httpStatus:  http.StatusTooManyRequests,
		httpStatusT: "RESOURCE_EXHAUSTED",
		grpcCode:    codes.ResourceExhausted,
	}
}
