package capnweb

// Memory budgets: the bytes a session holds for its peer (Limits.MaxHeldBytes), and the pools
// several sessions share (Pool).
//
// What is counted, estimated in bytes of Go memory (see the costs below): each entry of the
// import and export tables, and for each message the peer pushed, the message, until the peer
// releases what it pushed; each local call from its admission until its method returns; each
// local result and each value the peer resolved our promises with, until released; answers not
// yet written to the peer, and the whole answer of an HTTP batch. The charge is made where the
// memory is retained, and given back where it is let go.
//
// Concurrency model
//
//   - held and granted are atomics: charge and uncharge run on any goroutine, with or without
//     s.mu held, and take no lock while the session stays within what it was granted.
//   - poolShare.mu guards a pooled session's pool, reserved and ended: the slow path, which
//     reserves bytes from the pool or gives them back, and SetLimits. Lock order: s.mu, then
//     poolShare.mu (charges are made under s.mu); it is never held while taking s.mu or
//     calling anything else. A session without a pool has no poolShare and takes no lock.
//   - A Pool's count is an atomic; reserving walks the chain of pools with atomic adds, no lock.
//   - A charge over a budget aborts the session: at once when the caller can return the error
//     (the read loop), else from a goroutine of its own (shutdown takes s.mu).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// The fixed costs charged, in bytes: what the structures behind each weigh on a 64-bit Go
// (TestChargeCosts measures them).
const (
	// entryCost: an entry of the import or export table, with its map slot and its hook.
	entryCost = 160
	// callCost: a local call not yet finished: its promise, its place in the queue, its body.
	callCost = 256
	// valueCost: the holder of a settled value (valueHook), before the value itself.
	valueCost = 64
)

// A Pool is memory several sessions share: the bytes each session holds for its peer count
// toward its pool and toward every pool above it (parent), and a session whose charge would take
// one of them over its limit is aborted, as when it crosses its own Limits.MaxHeldBytes. A
// server keeps one pool for all its sessions, say, and under it one per principal, so that
// neither one principal nor all of them together can make it hold more than it can afford.
//
// A session reserves bytes from its pool in steps (a quarter of what it holds, from 4 KiB to
// 1 MiB), not per call: a pool counts up to about a quarter more than its sessions hold, plus
// up to 4 KiB for each session that holds anything. Sessions give their bytes back when they
// end. A Pool is safe for concurrent use.
type Pool struct {
	name   string
	limit  int64
	parent *Pool
	held   atomic.Int64
}

// NewPool returns a pool of limit bytes, inside parent (nil for none). A limit of zero or less
// bounds nothing itself: the pool only counts, and passes its bytes on to parent. name says
// which pool an abort message is about ("server", "principal alice", …): the peer sees it.
func NewPool(name string, limit int64, parent *Pool) *Pool {
	return &Pool{name: name, limit: limit, parent: parent}
}

// Held returns the bytes the pool's sessions hold (reserve) now.
func (p *Pool) Held() int64 { return p.held.Load() }

// Limit returns the pool's limit (zero or less: none).
func (p *Pool) Limit() int64 { return p.limit }

// take reserves n bytes in p and every pool above it, or in none: it returns the first pool that
// would go over its limit, or nil when the bytes are reserved. Two takes racing near a limit may
// both fail where one would have fit: a pool errs on the side of refusing.
func (p *Pool) take(n int64) *Pool {
	for q := p; q != nil; q = q.parent {
		if h := q.held.Add(n); q.limit > 0 && h > q.limit {
			for r := p; r != q.parent; r = r.parent {
				r.held.Add(-n)
			}
			return q
		}
	}
	return nil
}

// force reserves n bytes in p and every pool above it, whatever their limits (bytes a session
// already holds, moved to this pool).
func (p *Pool) force(n int64) {
	for q := p; q != nil; q = q.parent {
		q.held.Add(n)
	}
}

// give returns n bytes to p and every pool above it.
func (p *Pool) give(n int64) {
	for q := p; q != nil; q = q.parent {
		q.held.Add(-n)
	}
}

// budget is a session's count of what it holds for its peer.
type budget struct {
	held    atomic.Int64 // bytes held now
	granted atomic.Int64 // held may grow to this without the slow path
	share   atomic.Pointer[poolShare]
	failed  atomic.Bool // a charge failed: the session is being aborted
}

// poolShare is a session's reservation from its pool, made once the session has a pool (most
// sessions of a program that uses none never need it: an idle session's size matters).
type poolShare struct {
	mu       sync.Mutex
	pool     *Pool // nil once the session moved to no pool
	reserved int64 // bytes reserved from pool
	ended    bool  // the session ended: its reservation was given back
}

// reserveStep is how much more than it holds a session reserves from its pool, and how much
// more than that it keeps before giving some back: a quarter of what it holds, 4 KiB to 1 MiB.
func reserveStep(held int64) int64 {
	return min(max(held/4, 4<<10), 1<<20)
}

// budgetError is the abort of a session over a budget: its own, or a pool's. It is an
// *abortError (Unwrap), whose message goes on the wire.
type budgetError struct{ ae *abortError }

func (e *budgetError) Error() string { return e.ae.msg }
func (e *budgetError) Unwrap() error { return e.ae }

// overBudgetError says what budget a charge would exceed.
func overBudgetError(held, limit int64, pool *Pool) error {
	if pool != nil {
		return &budgetError{&abortError{name: "Error", msg: fmt.Sprintf(
			"capnweb: memory budget %q exhausted (limit %d bytes, shared with other sessions): the server will not hold more for this peer",
			pool.name, pool.limit)}}
	}
	return &budgetError{&abortError{name: "Error", msg: fmt.Sprintf(
		"capnweb: session memory budget exceeded: it would hold %d bytes for its peer, over its limit of %d (results not pulled or released, references not released, queued calls, unsent answers)",
		held, limit)}}
}

// isBudgetError reports whether err is the abort of a session over a budget.
func isBudgetError(err error) bool {
	var be *budgetError
	return errors.As(err, &be)
}

// heldLimit is MaxHeldBytes as a bound: no bound when negative.
func heldLimit(l *Limits) int64 {
	if l.MaxHeldBytes < 0 {
		return math.MaxInt64
	}
	return l.MaxHeldBytes
}

// charge counts n more bytes held for the peer. Over a budget, it counts nothing, aborts the
// session (from a goroutine of its own: the caller may hold s.mu) and returns why; the caller
// may stop early, and need not uncharge. What it counts never goes over what was granted (so
// over the limit): a charge that does not fit is not made, even for a moment.
func (s *Session) charge(n int64) error {
	b := &s.budget
	for {
		h := b.held.Load()
		if h+n > b.granted.Load() {
			return s.chargeSlow(n)
		}
		if b.held.CompareAndSwap(h, h+n) {
			return nil
		}
	}
}

// chargeSlow is charge beyond what was granted: within the limit, with more reserved from the
// pool when the session has one.
func (s *Session) chargeSlow(n int64) error {
	b := &s.budget
	limit := heldLimit(s.lim())
	ps := b.share.Load()
	if ps == nil {
		for {
			h := b.held.Load()
			if h+n > limit {
				return s.overBudget(overBudgetError(h+n, limit, nil))
			}
			if b.held.CompareAndSwap(h, h+n) {
				return nil
			}
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ended || ps.pool == nil {
		if !ps.ended && b.held.Load()+n > limit {
			return s.overBudget(overBudgetError(b.held.Load()+n, limit, nil))
		}
		b.held.Add(n)
		return nil
	}
	for {
		h := b.held.Load()
		if h+n > limit {
			return s.overBudget(overBudgetError(h+n, limit, nil))
		}
		if need := max(h+n, 0); need > ps.reserved {
			want := min(need+reserveStep(need), limit)
			refused := ps.pool.take(want - ps.reserved)
			if refused != nil { // not the step: what it needs, then
				want = need
				refused = ps.pool.take(want - ps.reserved)
			}
			if refused != nil {
				return s.overBudget(overBudgetError(need, limit, refused))
			}
			ps.reserved = want
			b.granted.Store(want)
		}
		if b.held.CompareAndSwap(h, h+n) {
			return nil
		}
	}
}

// uncharge counts n bytes fewer held for the peer.
func (s *Session) uncharge(n int64) {
	h := s.budget.held.Add(-n)
	if ps := s.budget.share.Load(); ps != nil && s.budget.granted.Load()-h > 2*reserveStep(h) {
		s.giveBack(ps)
	}
}

// giveBack returns to the pool what the session reserved beyond a step over what it holds.
func (s *Session) giveBack(ps *poolShare) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ended || ps.pool == nil {
		return
	}
	h := max(s.budget.held.Load(), 0)
	if keep := min(h+reserveStep(h), heldLimit(s.lim())); ps.reserved > keep {
		ps.pool.give(ps.reserved - keep)
		ps.reserved = keep
		s.budget.granted.Store(keep)
	}
}

// overBudget aborts the session with err, once, from a goroutine of its own, and returns err.
func (s *Session) overBudget(err error) error {
	if !s.budget.failed.Swap(true) {
		go s.shutdown(err, true)
	}
	return err
}

// setBudget applies new limits and, when setPool, moves the session's bytes to pool: the bytes
// it holds count toward pool from now on, whatever its limit (the next charge is held to it).
func (s *Session) setBudget(l *Limits, pool *Pool, setPool bool) {
	ps := s.budget.share.Load()
	if ps == nil {
		if !setPool || pool == nil {
			s.budget.granted.Store(heldLimit(l))
			return
		}
		// Only the session's own goroutines and SetLimits's caller set a pool: a race to make
		// the share loses nothing, as the loser's is not used.
		s.budget.share.CompareAndSwap(nil, &poolShare{})
		ps = s.budget.share.Load()
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ended {
		return
	}
	if setPool && pool != ps.pool {
		if ps.pool != nil {
			ps.pool.give(ps.reserved)
		}
		ps.pool, ps.reserved = pool, 0
		if pool != nil {
			ps.reserved = max(s.budget.held.Load(), 0)
			pool.force(ps.reserved)
		}
	}
	if ps.pool == nil {
		s.budget.granted.Store(heldLimit(l))
	} else {
		s.budget.granted.Store(min(ps.reserved, heldLimit(l)))
	}
}

// endBudget gives the session's reservation back to its pool: the session has ended, and what
// it still holds goes when its goroutines and its program let go of it.
func (s *Session) endBudget() {
	s.budget.granted.Store(math.MaxInt64)
	ps := s.budget.share.Load()
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.pool != nil {
		ps.pool.give(ps.reserved)
	}
	ps.reserved, ps.ended = 0, true
}

// Held returns the bytes the session holds for its peer now, as its budget counts them
// (Limits.MaxHeldBytes): an estimate of the Go memory behind its tables, unreleased results,
// unfinished calls and unsent answers.
func (s *Session) Held() int64 { return s.budget.held.Load() }

// SetLimits changes the limits of the session whose method call runs with ctx (the context the
// method received), and moves the bytes it holds to pool (nil: none): what it holds counts
// toward pool from now on, and later messages are held to l. Zero fields of l take
// DefaultLimits' values, as in Options. A method that identifies the peer calls it — a login,
// say, lifting the tight limits of a connection that had not authenticated and counting it
// toward its principal's pool from then on. It returns an error for a context that is not a
// method call's.
func SetLimits(ctx context.Context, l Limits, pool *Pool) error {
	r, ok := ctx.Value(execRunKey{}).(*execRun)
	if !ok {
		return errors.New("capnweb: SetLimits needs the context of a method call")
	}
	r.s.setLimits(l.withDefaults(), pool, true)
	return nil
}

// setLimits installs l (defaults applied) and, when setPool, pool.
func (s *Session) setLimits(l Limits, pool *Pool, setPool bool) {
	if t, ok := s.t.(*batchServerTransport); ok && t.capHeld != nil {
		l.MaxHeldBytes = t.capHeld(heldLimit(&l)) // a batch holds what its size allows
	}
	s.limits.Store(&l)
	if t, ok := s.t.(interface{ setMaxMessage(int) }); ok {
		t.setMaxMessage(l.MaxMessageSize)
	}
	s.setBudget(&l, pool, setPool)
}

// lim returns the session's limits now.
func (s *Session) lim() *Limits { return s.limits.Load() }

// holdValue makes h, a settled value the session keeps for its peer, count toward the budget
// until its last reference is released: size is what its value holds (heldSize, or the length
// of the message it came in), valueCost added. It returns h.
func (s *Session) holdValue(h *valueHook, size int64) *valueHook {
	if s == nil {
		return h
	}
	h.exec = s
	// Counted up to 2 GiB (the field fits where the struct had padding): a value that large is
	// over any budget but one without a bound.
	n := min(valueCost+size, math.MaxInt32)
	if s.charge(n) == nil { // else the session aborts, and the value goes with it
		h.charged = int32(n)
	}
	return h
}

// maxSizeDepth bounds heldSize's walk: deeper values are counted as a reference each.
const maxSizeDepth = 64

// maxSizeNodes bounds the values heldSize visits: a Go value whose parts are shared (or form a
// cycle) would otherwise be walked once per path to each part. A value this large cost its
// method far more to make than the walk costs.
const maxSizeNodes = 1 << 20

// heldSize estimates the bytes v holds, for the budget: strings and byte slices by their
// length, JSON (json.RawMessage, received JSON) by its length, trees by walking them, and Go
// values of other types through reflection; references (stubs, promises, targets, funcs,
// streams) as a reference each, since what they point at is counted where it is held.
func heldSize(v any) int64 {
	z := sizer{left: maxSizeNodes}
	return z.of(v, 0)
}

// sizer walks a value for heldSize, visiting at most left more values.
type sizer struct{ left int }

func (z *sizer) of(v any, depth int) int64 {
	if z.left--; depth >= maxSizeDepth || z.left < 0 {
		return 16
	}
	switch x := v.(type) {
	case nil, bool, float64, undefined, InvalidDate, int, int64, uint64, float32, int32, uint32:
		return 16
	case string:
		return 16 + int64(len(x))
	case []byte:
		return 24 + int64(len(x))
	case json.RawMessage:
		return 24 + int64(len(x))
	case receivedJSON:
		return 24 + int64(len(x))
	case []any:
		n := int64(24 + 16*len(x))
		for _, e := range x {
			n += z.of(e, depth+1)
		}
		return n
	case map[string]any:
		n := int64(48)
		for k, e := range x {
			n += 32 + int64(len(k)) + z.of(e, depth+1)
		}
		return n
	case Object:
		n := int64(24 + 32*len(x))
		for _, p := range x {
			n += int64(len(p.Key)) + z.of(p.Value, depth+1)
		}
		return n
	case *big.Int:
		return 32 + int64(len(x.Bits()))*8
	case time.Time:
		return 24
	case *Error:
		n := 64 + int64(len(x.Name)+len(x.Message)+len(x.Stack))
		for k, e := range x.Props {
			n += 32 + int64(len(k)) + z.of(e, depth+1)
		}
		return n
	case TypedBytes:
		return 40 + int64(len(x.Data))
	case Blob:
		return 40 + int64(len(x.Data)+len(x.Type))
	case http.Header:
		n := int64(48)
		for k, vs := range x {
			n += 56 + int64(len(k))
			for _, s := range vs {
				n += 16 + int64(len(s))
			}
		}
		return n
	case *url.URL:
		return 128 + int64(len(x.Path)+len(x.RawQuery)+len(x.Host))
	case *Stub, *Promise, *pending, *ReadableStream, *WritableStream, hook:
		return 32
	}
	if isTarget(v) || isCallable(v) {
		return 32
	}
	return z.reflect(reflect.ValueOf(v), depth)
}

// reflect is of for Go values of other types: a struct by its size and what its fields point
// at, containers by their elements.
func (z *sizer) reflect(rv reflect.Value, depth int) int64 {
	if z.left--; depth >= maxSizeDepth || z.left < 0 || !rv.IsValid() {
		return 16
	}
	switch rv.Kind() {
	case reflect.Interface:
		if rv.IsNil() || !rv.CanInterface() {
			return 16
		}
		return z.of(rv.Elem().Interface(), depth+1)
	case reflect.Pointer:
		if rv.IsNil() || !rv.Elem().CanInterface() {
			return 16
		}
		return 8 + z.of(rv.Elem().Interface(), depth+1)
	case reflect.String:
		return 16 + int64(rv.Len())
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return 24 + int64(rv.Len())
		}
		n := int64(24)
		for i := 0; i < rv.Len(); i++ {
			n += z.reflect(rv.Index(i), depth+1)
		}
		return n
	case reflect.Map:
		n := int64(48)
		for it := rv.MapRange(); it.Next(); {
			n += 16 + z.reflect(it.Key(), depth+1) + z.reflect(it.Value(), depth+1)
		}
		return n
	case reflect.Struct:
		n := int64(rv.Type().Size())
		for i := 0; i < rv.NumField(); i++ {
			switch f := rv.Field(i); f.Kind() {
			case reflect.String, reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Struct, reflect.Array:
				if f.CanInterface() {
					n += z.reflect(f, depth+1)
				}
			}
		}
		return n
	}
	return int64(rv.Type().Size())
}
