package binding

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"

	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// Quotas: what each principal may hold at once, beside the request rate (ratelimit.go).
//
// Concurrency model. A quotaState counts the slots each principal holds, under its mutex; a
// slot is released exactly once (an atomic flag), whoever holds it last. Who holds a slot:
//   - A stream slot: the request that opened the stream (the binding takes it before a2a-go's
//     handler runs and releases it when the handler returns), or the iteration of the stream
//     (capnweb), or a push subscription for its whole life.
//   - A task slot: the binding takes it for a send; quotaHandler takes it over from the
//     context, and keeps it until the task's execution ends: until the send returns a task in a
//     terminal or interrupted state, or else a watcher goroutine (owned by the quotaHandler,
//     waited for by its close) has followed the task with SubscribeToTask to that point. A slot
//     quotaHandler did not take (the request failed before the send) the binding releases.

// Quotas bounds what each principal — each IP address, for anonymous callers — holds at once.
// Over a quota the request is refused before the RequestHandler runs, in the same error family
// as the rate limit but with reason QUOTA_EXCEEDED (the rate limit's is RATE_LIMITED): HTTP 429
// (JSON-RPC -32000; REST RESOURCE_EXHAUSTED), gRPC ResourceExhausted, capnweb a call error with
// code -32000. The error's metadata names the quota ("tasks", "streams", "capnwebCalls") and
// its limit.
//
// Slots are released when the task's execution ends, the stream closes, or the call settles —
// whether it ends normally, in an error, or because the client went away. Each value counts
// its own slots: give the same *Quotas to [Options] and [GRPCOptions] to count HTTP and gRPC
// together (serve does). Each replica counts its own, unless Shared counts them all together.
// A Quotas must not be copied after first use.
type Quotas struct {
	// Tasks bounds the tasks of one principal that run at once: a send that starts a task, or
	// resumes an interrupted one, holds a slot until the task is terminal (completed, failed,
	// canceled, rejected) or interrupted (input-required, auth-required): an interrupted task
	// runs nothing until the next message, which takes a slot again. Sends on every binding
	// count; a send that only gets a message back holds its slot for the call.
	// Zero: no limit.
	Tasks int

	// Streams bounds the open streams of one principal: SSE responses (JSON-RPC and HTTP+JSON
	// SendStreamingMessage and SubscribeToTask), gRPC server streams, capnweb streams (to an
	// observer, or a ReadableStream until it ends or is canceled) and capnweb push-callback
	// subscriptions (subscribeToPushNotifications, until the task ends or it is canceled).
	// Zero: no limit.
	Streams int

	// CapnwebCalls bounds the A2A calls of one capnweb session (a WebSocket connection, or an
	// HTTP batch) that have not settled; the authenticated and attenuated sessions made on a
	// connection share its count. A streaming call settles when it returns its stream (the
	// stream then counts against Streams) or, with an observer, when the stream is over.
	// Zero: no limit beyond capnweb's own Limits.MaxPendingCalls, which closes the connection.
	CapnwebCalls int

	// Shared counts the Tasks and Streams slots of several replicas together (package
	// cluster's Limits, in PostgreSQL): give every replica's Quotas one on the same database,
	// and a principal's limits hold across the cluster. A slot is then taken from it before the
	// request runs and given back to it at the same moments as above. When it fails (the
	// database is unreachable), the request is let through, counted by this replica alone.
	// Nil: each replica counts alone. (CapnwebCalls is per connection: always counted here.)
	Shared QuotaCounter

	once  sync.Once
	state *quotaState
}

// QuotaCounter counts quota slots for several replicas together (see Quotas.Shared). Its
// methods are called outside the binding's locks, and may block on the network.
type QuotaCounter interface {
	// Acquire takes a slot of quota ("tasks" or "streams") for key (a principal, or an IP
	// address) if fewer than limit are held, across every replica, and reports whether it did.
	Acquire(ctx context.Context, quota, key string, limit int) (bool, error)
	// Release gives back a slot Acquire took.
	Release(ctx context.Context, quota, key string) error
}

// Quota names, as the error metadata gives them.
const (
	quotaTasks        = "tasks"
	quotaStreams      = "streams"
	quotaCapnwebCalls = "capnwebCalls"
)

// check panics on a negative field.
func (q *Quotas) check() {
	if q == nil {
		return
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Tasks", q.Tasks}, {"Streams", q.Streams}, {"CapnwebCalls", q.CapnwebCalls}} {
		if f.v < 0 {
			panic(fmt.Sprintf("binding: Quotas.%s is negative (%d); zero means no limit", f.name, f.v))
		}
	}
}

// counts returns the shared counters, or nil when q limits neither tasks nor streams.
func (q *Quotas) counts() *quotaState {
	if q == nil || (q.Tasks == 0 && q.Streams == 0) {
		return nil
	}
	q.once.Do(func() {
		q.state = &quotaState{
			shared:  q.Shared,
			limits:  map[string]int{quotaTasks: q.Tasks, quotaStreams: q.Streams},
			held:    map[string]map[string]int{quotaTasks: {}, quotaStreams: {}},
			changed: make(chan struct{}),
		}
	})
	return q.state
}

// quotaState counts the slots held, per quota and principal key.
type quotaState struct {
	limits map[string]int // read-only
	shared QuotaCounter   // read-only; nil: counted here alone

	mu      sync.Mutex
	held    map[string]map[string]int // quota → key → slots
	changed chan struct{}             // closed and replaced at each release (tests wait on it)
}

// slot is one unit of a quota, held until release. A nil *slot is no slot (no limit).
type slot struct {
	st       *quotaState
	quota    string
	key      string
	taken    atomic.Bool // taken over by an owner other than the one that acquired it
	released atomic.Bool
	shared   bool // taken from quotaState.shared too: given back there
}

// acquire takes a slot of quota for key, or refuses with the wire error. A nil state, or a
// quota without limit, gives a nil slot. With a shared counter the slot is taken there first
// (the limit is the cluster's), and counted here too.
func (st *quotaState) acquire(ctx context.Context, quota, key string) (*slot, *requestError) {
	if st == nil || st.limits[quota] == 0 {
		return nil, nil
	}
	limit := st.limits[quota]
	sl := &slot{st: st, quota: quota, key: key}
	if st.shared != nil {
		ok, err := st.shared.Acquire(ctx, quota, key, limit)
		switch {
		case err != nil:
			// Unreachable: this replica counts alone until it is back.
		case !ok:
			return nil, errQuota(quota, limit)
		default:
			sl.shared = true
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !sl.shared && st.held[quota][key] >= limit {
		return nil, errQuota(quota, limit)
	}
	st.held[quota][key]++
	return sl, nil
}

// release gives the slot back; only the first call counts.
func (s *slot) release() {
	if s == nil || !s.released.CompareAndSwap(false, true) {
		return
	}
	st := s.st
	if s.shared {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = st.shared.Release(ctx, s.quota, s.key) // a slot lost here is reclaimed with its replica's
		cancel()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.held[s.quota][s.key]--; st.held[s.quota][s.key] <= 0 {
		delete(st.held[s.quota], s.key)
	}
	close(st.changed)
	st.changed = make(chan struct{})
}

// take transfers the slot to a new owner, once; it reports whether this call did.
func (s *slot) take() bool { return s != nil && s.taken.CompareAndSwap(false, true) }

// releaseUnlessTaken is the acquirer's release: a slot taken over is the new owner's to release.
func (s *slot) releaseUnlessTaken() {
	if s != nil && !s.taken.Load() {
		s.release()
	}
}

// inUse returns the slots of quota that key holds, and a channel closed at the next release.
func (st *quotaState) inUse(quota, key string) (int, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.held[quota][key], st.changed
}

func errQuota(quota string, limit int) *requestError {
	what := map[string]string{quotaTasks: "running tasks", quotaStreams: "open streams", quotaCapnwebCalls: "pending calls on this session"}[quota]
	return &requestError{
		reason:      "QUOTA_EXCEEDED",
		message:     fmt.Sprintf("too many %s (quota %d): wait for one to end", what, limit),
		meta:        map[string]string{"quota": quota, "limit": strconv.Itoa(limit)},
		jsonrpcCode: -32000,
		httpStatus:  http.StatusTooManyRequests,
		httpStatusT: "RESOURCE_EXHAUSTED",
		grpcCode:    codes.ResourceExhausted,
	}
}

// principalKey names whose quota (and rate) a request counts against: the authenticated
// principal in ctx, else the IP address of addr.
func principalKey(ctx context.Context, addr string) string {
	if u, ok := ctx.Value(userKey{}).(*a2asrv.User); ok && u != nil && u.Authenticated {
		return "user:" + u.Name
	}
	return "ip:" + hostOf(addr)
}

// quotaSlots are the slots a request acquired, carried in its context to quotaHandler.
type quotaSlots struct {
	task, stream *slot
}

type slotsKey struct{}

// reserve acquires the slots a request needs (a task slot for a send, a stream slot for a
// stream) and returns ctx carrying them, and the function that gives back those nobody took
// over; the caller calls it when the request is over.
func (st *quotaState) reserve(ctx context.Context, key string, send, stream bool) (context.Context, func(), *requestError) {
	if st == nil || (!send && !stream) {
		return ctx, func() {}, nil
	}
	var s quotaSlots
	var rerr *requestError
	if stream {
		if s.stream, rerr = st.acquire(ctx, quotaStreams, key); rerr != nil {
			return ctx, nil, rerr
		}
	}
	if send {
		if s.task, rerr = st.acquire(ctx, quotaTasks, key); rerr != nil {
			s.stream.release()
			return ctx, nil, rerr
		}
	}
	done := func() {
		s.task.releaseUnlessTaken()
		s.stream.releaseUnlessTaken()
	}
	return context.WithValue(ctx, slotsKey{}, &s), done, nil
}

// quotaHandler holds the task and stream slots of the calls it serves until their tasks and
// streams end. It takes over the slots a binding reserved in the call's context.
type quotaHandler struct {
	a2asrv.RequestHandler
	st *quotaState

	ctx    context.Context // watchers' base: canceled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newQuotaHandler(h a2asrv.RequestHandler, st *quotaState) *quotaHandler {
	ctx, cancel := context.WithCancel(context.Background())
	return &quotaHandler{RequestHandler: h, st: st, ctx: ctx, cancel: cancel}
}

// close stops the watchers (releasing their slots) and waits for them.
func (h *quotaHandler) close() {
	h.cancel()
	h.wg.Wait()
}

// slot takes over the reserved slot of quota from ctx, or acquires one. A slot an enclosing
// owner took already (a push subscription's stream) counts this call: it gets no slot of its
// own.
func (h *quotaHandler) slot(ctx context.Context, quota string) (*slot, error) {
	if s, ok := ctx.Value(slotsKey{}).(*quotaSlots); ok {
		sl := s.task
		if quota == quotaStreams {
			sl = s.stream
		}
		if sl != nil {
			if sl.take() {
				return sl, nil
			}
			return nil, nil
		}
	}
	// Every binding reserves; this is for a route none classified.
	sl, rerr := h.st.acquire(ctx, quota, principalKey(ctx, ""))
	if rerr != nil {
		return nil, rerr
	}
	return sl, nil
}

// running reports whether a task in state s still runs its executor.
func running(s a2a.TaskState) bool {
	return !s.Terminal() && s != a2a.TaskStateInputRequired && s != a2a.TaskStateAuthRequired
}

func (h *quotaHandler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	sl, err := h.slot(ctx, quotaTasks)
	if err != nil {
		return nil, err
	}
	res, err := h.RequestHandler.SendMessage(ctx, req)
	if task, ok := res.(*a2a.Task); err == nil && ok && running(task.Status.State) {
		h.watch(ctx, sl, task.ID, req.Tenant)
	} else {
		sl.release()
	}
	return res, err
}

func (h *quotaHandler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		ssl, err := h.slot(ctx, quotaStreams)
		if err != nil {
			yield(nil, err)
			return
		}
		defer ssl.release()
		tsl, err := h.slot(ctx, quotaTasks)
		if err != nil {
			yield(nil, err)
			return
		}
		var id a2a.TaskID
		live := false
		for ev, err := range h.RequestHandler.SendStreamingMessage(ctx, req) {
			if ev != nil {
				if tid := ev.TaskInfo().TaskID; tid != "" {
					id = tid
				}
				if st, ok := wire.StateOf(ev); ok {
					live = running(st)
				}
			}
			if !yield(ev, err) {
				break
			}
		}
		if id == "" || !live {
			tsl.release()
			return
		}
		// The stream ended with the task still running (the client went away, or the stream
		// failed): the task keeps its slot until it ends.
		h.watch(ctx, tsl, id, req.Tenant)
	}
}

func (h *quotaHandler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		sl, err := h.slot(ctx, quotaStreams)
		if err != nil {
			yield(nil, err)
			return
		}
		defer sl.release()
		for ev, err := range h.RequestHandler.SubscribeToTask(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// watch holds sl until task id stops running, following it with SubscribeToTask as the caller
// of ctx (whose values, the principal among them, it keeps; not its cancellation), until an
// event shows the task terminal or interrupted (the first may: the watch starts on its own
// goroutine, after the send returned); the subscription fails at once for a task that is
// terminal already. It is a subscription of its own, not the caller's: a Last-Event-ID the caller
// sent (a capnweb connection's applies to all its calls) would make it a resumed one, which
// runs on through interrupted states.
func (h *quotaHandler) watch(ctx context.Context, sl *slot, id a2a.TaskID, tenant string) {
	if sl == nil {
		return
	}
	base := context.WithoutCancel(ctx)
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		params := map[string][]string{}
		if sp := cc.ServiceParams(); sp != nil {
			for k, v := range sp.List() {
				if !strings.EqualFold(k, hdrLastEventID) {
					params[k] = v
				}
			}
		}
		var wcc *a2asrv.CallContext
		base, wcc = a2asrv.NewCallContext(base, a2asrv.NewServiceParams(params))
		wcc.User = cc.User
	}
	wctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(h.ctx, cancel)
	h.wg.Go(func() {
		defer sl.release()
		defer cancel()
		defer stop()
		for ev, err := range h.RequestHandler.SubscribeToTask(wctx, &a2a.SubscribeToTaskRequest{ID: id, Tenant: tenant}) {
			if err != nil {
				return
			}
			// The first event is the task as it is when the watch begins, which may be after it
			// stopped running: a subscription to a waiting task would wait on for its next
			// message.
			if st, ok := wire.StateOf(ev); ok && !running(st) {
				return
			}
		}
	})
}

// sendKind says whether a JSON-RPC method or a REST path (relative to the REST base) starts
// (or resumes) a task and whether it streams.
func jsonrpcKind(method string) (send, stream bool) {
	switch method {
	case "SendMessage", "message/send":
		return true, false
	case "SendStreamingMessage", "message/stream":
		return true, true
	}
	return false, streamingMethods[method]
}

func restKind(r *http.Request) (send, stream bool) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		return false, false
	}
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/message:send"):
		return true, false
	case strings.HasSuffix(p, "/message:stream"):
		return true, true
	case strings.HasSuffix(p, ":subscribe"):
		return false, true
	}
	return false, false
}

// grpcKind is the same for a gRPC method name (the part after the service).
func grpcKind(method string) (send, stream bool) {
	switch method {
	case "SendMessage":
		return true, false
	case "SendStreamingMessage":
		return true, true
	case "SubscribeToTask", "TaskSubscription":
		return false, true
	}
	return false, false
}
