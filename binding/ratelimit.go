package binding

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
)

// RateLimit bounds the requests of each principal: a token bucket of Burst requests, refilled
// at PerSecond. Anonymous callers are counted by their IP address. On every binding a request
// over the limit is refused before it reaches the RequestHandler: HTTP 429 with Retry-After
// (JSON-RPC -32000, reason RATE_LIMITED), gRPC ResourceExhausted, and on capnweb a call error
// with code -32000 and reason RATE_LIMITED.
type RateLimit struct {
	PerSecond float64
	Burst     int
	// Shared keeps the buckets of several replicas together (package cluster's Limits, in
	// PostgreSQL): give every replica a RateLimit with the same one, and a principal's rate is
	// counted across the cluster. When it fails (the database is unreachable), the request is
	// counted by this replica's own buckets. Nil: each process counts alone.
	Shared RateCounter
}

// RateCounter keeps token buckets for several replicas together (see RateLimit.Shared). Take
// is called outside the binding's locks, and may block on the network.
type RateCounter interface {
	// Take takes a token from key's bucket, of burst tokens refilled at perSecond, and reports
	// whether there was one; when there was none, wait is how long until there is.
	Take(ctx context.Context, key string, perSecond float64, burst int) (ok bool, wait time.Duration, err error)
}

// limiter holds one bucket per principal. Buckets idle long enough to be full are dropped.
type limiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	shared RateCounter // nil: the buckets below alone

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(l *RateLimit) *limiter {
	if l == nil || l.PerSecond <= 0 {
		return nil
	}
	burst := max(l.Burst, 1)
	return &limiter{rate: l.PerSecond, burst: float64(burst), now: time.Now, buckets: map[string]*bucket{}, shared: l.Shared}
}

// allow takes a token for key, or says how long until one is there.
func (l *limiter) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(now)
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// sweepLocked drops the buckets that have refilled completely, at most once a minute.
func (l *limiter) sweepLocked(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	full := time.Duration(l.burst / l.rate * float64(time.Second))
	for k, b := range l.buckets {
		if now.Sub(b.last) > full {
			delete(l.buckets, k)
		}
	}
}

// check applies the limit to the principal in ctx (or, anonymous, to addr's IP).
func (l *limiter) check(ctx context.Context, addr string) *requestError {
	if l == nil {
		return nil
	}
	key := principalKey(ctx, addr)
	if l.shared != nil {
		ok, wait, err := l.shared.Take(ctx, key, l.rate, int(l.burst))
		if err == nil {
			if ok {
				return nil
			}
			return rateLimited(wait)
		}
		// Unreachable: this replica's own buckets count until it is back.
	}
	return l.checkKey(key)
}

func (l *limiter) checkKey(key string) *requestError {
	ok, wait := l.allow(key)
	if ok {
		return nil
	}
	return rateLimited(wait)
}

// rateLimited is the wire error of a request over the rate limit, to retry after wait.
func rateLimited(wait time.Duration) *requestError {
	secs := int(math.Ceil(wait.Seconds()))
	return &requestError{
		reason:      "RATE_LIMITED",
		message:     fmt.Sprintf("too many requests: retry in %d s", secs),
		meta:        map[string]string{"retryAfterSeconds": strconv.Itoa(secs)},
		jsonrpcCode: -32000,
		httpStatus:  http.StatusTooManyRequests,
		httpStatusT: "RESOURCE_EXHAUSTED",
		grpcCode:    codes.ResourceExhausted,
	}
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// grpcPeerAddr is the remote address of a gRPC call.
func grpcPeerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}
