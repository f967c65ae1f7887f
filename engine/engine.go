package engine

// Concurrency model
//
//   - Engine.mu guards the map of live task states and the closed flag.
//   - taskState.mu guards one task's live state: its latest stored record, its active run, the
//     ring of recent events, and the broadcast channel. Lock order: Engine.mu, then taskState.mu.
//     Neither is held while calling the executor, the store or a subscriber.
//   - Each run (one execution of the executor for a task) runs on a goroutine owned by the
//     Engine (a worker, workers.go); it alone writes its task, in event order, so the store sees
//     one writer per task. The executor itself runs on a second worker, the run's puller, which
//     the run starts and waits for: it queues the executor's events (at most maxBatch) while
//     the run writes the previous ones, and the run writes all that queued up in one store
//     write.
//   - Subscribers never block the run: they are woken by closing taskState.changed (or, if they
//     wait only for the outcome, taskState.settled) and read new events from the ring, or from
//     the store's log when they fell behind.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"iter"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/internal/backlog"
	"github.com/a2awebcap/a2awebcap/internal/gopool"
	"github.com/a2awebcap/a2awebcap/store"
)

// Options configure an Engine. Nil means the documented defaults.
type Options struct {
	// ExtendedCard returns the card GetExtendedAgentCard serves to authenticated callers
	// (package binding gives a card without supportedInterfaces the public card's). Nil means
	// the operation answers ExtendedCardNotConfigured.
	ExtendedCard func(ctx context.Context) (*a2a.AgentCard, error)
	// NoStreaming makes SendStreamingMessage and SubscribeToTask answer UnsupportedOperation,
	// for agents whose card does not declare streaming.
	NoStreaming bool
	// NoPushNotifications makes the push config operations answer PushNotificationNotSupported.
	NoPushNotifications bool
	// Push delivers push notifications (package push's Deliverer is one): the engine checks
	// every push config's URL with it and wakes it after each write (the store enqueues the
	// deliveries with the events). Nil: configs are stored and their deliveries enqueued, but
	// nothing here sends them.
	Push Pusher
	// PushConfigLimits bound the push configs a task, and a principal's unfinished tasks
	// together, may have (see pushlimits.go). Zero fields mean the defaults,
	// DefaultPushConfigsPerTask and DefaultPushConfigsPerPrincipal; a negative field means
	// no limit.
	PushConfigLimits store.PushLimits
	// RingSize is how many recent events of a task are kept in memory for subscribers; older
	// ones are read from the store. Zero means 256.
	RingSize int
	// Logger receives engine events. Nil means slog.Default().
	Logger *slog.Logger
	// Cluster makes the engine one replica of several sharing the store (cluster.go,
	// docs/cluster.md): it holds a lease on each task it runs, recovers only tasks whose lease
	// expired, hands its tasks over on Close, and streams the events of tasks other replicas
	// run. Nil: a single process, the only one on its store.
	Cluster *Cluster
}

// Pusher is what the engine needs of a push notification deliverer.
type Pusher interface {
	// CheckURL validates a push config's URL (scheme, and an address the server may reach).
	// Its error's text is returned to the client, so it must not reveal more than the URL.
	CheckURL(ctx context.Context, rawURL string) error
	// Wake tells the deliverer that deliveries may have been enqueued. It must not block.
	Wake()
}

// Engine implements a2asrv.RequestHandler on a store.
type Engine struct {
	exec  a2asrv.AgentExecutor
	st    store.Store
	batch int // events one write carries at most (maxBatch, or the store's WriteBatch)
	opts  Options
	log   *slog.Logger

	ctx     context.Context // runs derive from it; canceled by Close
	cancel  context.CancelCauseFunc
	wg      sync.WaitGroup // the runs and pullers handed to workers (workers.go)
	workers *gopool.Pool
	queues  sync.Pool // of chan pulled with capacity batch: the runs' queues, reused

	cl *clusterState // nil: a single process

	// Draining (Drain): active counts the begins in progress and the runs; idle is closed
	// once draining with none.
	draining atomic.Bool
	active   atomic.Int64
	running  atomic.Int64 // runs under way: the executor runs
	idle     chan struct{}
	idleOnce sync.Once

	mu         sync.Mutex
	tasks      map[a2a.TaskID]*taskState
	closed     bool
	handedOver []a2a.TaskID // cluster: tasks whose runs Close stopped, to release
}

var _ a2asrv.RequestHandler = (*Engine)(nil)

// ErrClosed is returned by operations on a closed Engine.
var ErrClosed = errors.New("engine: closed")

// New returns an engine running exec on st. Call Recover once at startup to settle the tasks a
// previous process left running, and Close to stop.
func New(exec a2asrv.AgentExecutor, st store.Store, opts *Options) *Engine {
	e := &Engine{exec: exec, st: st, tasks: map[a2a.TaskID]*taskState{}, batch: maxBatch, workers: gopool.New(workerIdle),
		idle: make(chan struct{})}
	if opts != nil {
		e.opts = *opts
	}
	if wb, ok := st.(store.WriteBatcher); ok {
		e.batch = cmp.Or(max(wb.WriteBatch(), 0), maxBatch)
	}
	e.queues.New = func() any { return make(chan pulled, e.batch) }
	if e.opts.RingSize <= 0 {
		e.opts.RingSize = 256
	}
	e.opts.PushConfigLimits = pushLimits(e.opts.PushConfigLimits)
	e.log = e.opts.Logger
	if e.log == nil {
		e.log = slog.Default()
	}
	e.ctx, e.cancel = context.WithCancelCause(context.Background())
	if e.opts.Cluster != nil {
		e.cl = newCluster(e.opts.Cluster)
		e.startCluster()
	}
	if w, ok := exec.(Waker); ok {
		w.SetWake(e.wake)
	}
	return e
}

// errInterrupted is the cause of runs canceled by Close.
var errInterrupted = errors.New("engine: server shutting down")

// Close stops accepting work, stops the executions still running and waits for them, or for
// ctx. On a single process their tasks are marked failed, so a client is never left waiting on
// a task nobody runs; in a cluster they are handed over: stopped without writing anything, and
// their leases released, so that another replica resumes them (or fails them with a reason).
// Drain first to let them finish.
func (e *Engine) Close(ctx context.Context) error {
	cause := errInterrupted
	if e.cl != nil {
		cause = errHandOver
	}
	e.mu.Lock()
	e.closed = true
	e.cancel(cause) // before the runs are visited: see startRunLocked
	for _, ts := range e.tasks {
		ts.mu.Lock()
		if ts.run != nil && ts.run.cancel != nil {
			ts.run.cancel(cause)
		}
		ts.mu.Unlock()
	}
	e.mu.Unlock()
	if e.cl != nil {
		e.stopCluster()
	}
	e.workers.Close()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if e.cl != nil {
		// Runs that ended are handed over; one still running keeps its lease until it
		// expires (nobody renews it now), and its writes fail once a peer took the task.
		e.mu.Lock()
		ids := e.handedOver
		e.handedOver = nil
		e.mu.Unlock()
		if len(ids) > 0 {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if rerr := e.st.ReleaseLeases(rctx, e.cl.replica, ids); rerr != nil {
				e.log.Error("engine: cannot release leases; peers take the tasks over when they expire", "tasks", len(ids), "err", rerr)
			} else {
				e.log.Info("engine: tasks handed over to the other replicas", "tasks", len(ids))
			}
			cancel()
		}
	}
	return err
}

// ErrDraining is the error of a message sent to an engine that is draining (Drain): it runs
// no new task. Wrapped in a2a.ErrServerError.
var ErrDraining = errors.New("engine: draining: the server is shutting down")

// Running is the number of tasks whose executor runs in this engine now.
func (e *Engine) Running() int { return int(e.running.Load()) }

// Drain stops taking new tasks (a message that would start or resume one is refused with
// ErrDraining) and waits until the running tasks have finished, or were interrupted (waiting
// for input), or ctx ends (its cause is returned). Everything else still works: GetTask,
// subscriptions and streams of the running tasks, cancel. Call Close next: it stops what is
// still running. In a cluster, a draining engine takes over no expired task.
func (e *Engine) Drain(ctx context.Context) error {
	e.draining.Store(true)
	if e.active.Load() == 0 {
		e.idleOnce.Do(func() { close(e.idle) })
	}
	select {
	case <-e.idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// enter counts a begin in progress, or refuses it when draining. The caller calls exit once
// done; a run it started counts on its own.
func (e *Engine) enter() error {
	e.active.Add(1)
	if e.draining.Load() {
		e.exit()
		return fmt.Errorf("%w: %w", a2a.ErrServerError, ErrDraining)
	}
	return nil
}

func (e *Engine) exit() {
	if e.active.Add(-1) == 0 && e.draining.Load() {
		e.idleOnce.Do(func() { close(e.idle) })
	}
}

// Recover takes over the tasks a previous process left running: their executor is gone. An
// executor that implements [Recoverer] settles a task with what it had committed, or resumes
// it ([ErrResume]: it runs again, here); any other task is marked failed. It returns how many
// tasks it took over.
//
// On a single process it takes every unfinished task in the store, and is called once at
// startup. In a cluster (Options.Cluster) it takes only tasks whose lease has expired, never
// a live peer's; the engine also calls it periodically by itself.
func (e *Engine) Recover(ctx context.Context) (int, error) {
	if e.cl != nil {
		return e.recoverExpired(ctx)
	}
	active, err := e.st.Active(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range active {
		if err := e.recoverTask(ctx, rec); err != nil && !errors.Is(err, store.ErrConflict) {
			return n, err
		}
		n++
	}
	return n, nil
}

// wakePush tells the deliverer that a write may have enqueued deliveries.
func (e *Engine) wakePush() {
	if e.opts.Push != nil {
		e.opts.Push.Wake()
	}
}

func statusEvent(t *a2a.Task, state a2a.TaskState, text string) *a2a.TaskStatusUpdateEvent {
	var msg *a2a.Message
	if text != "" {
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, t, a2a.NewTextPart(text))
	}
	return a2a.NewStatusUpdateEvent(t, state, msg)
}

// ownerOf returns who is calling: the tenant and the authenticated principal.
func ownerOf(ctx context.Context, tenant string) store.Owner {
	o := store.Owner{Tenant: tenant}
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		if cc.Tenant() != "" {
			o.Tenant = cc.Tenant()
		}
		if cc.User != nil && cc.User.Authenticated {
			o.Principal = cc.User.Name
		}
	}
	return o
}

// ---- live task state ----

type taskState struct {
	id    a2a.TaskID
	mu    sync.Mutex
	rec   *store.Task   // latest stored record; nil before the task is created
	owner store.Owner   // who owns it (known before creation)
	run   *run          // active execution, or nil
	ring  []store.Event // the newest events, in order
	// changed is closed on every new event, and when a run ends; settled only on events that
	// leave the task in a state that ends a stream (terminal or interrupted), and when a run
	// ends. Each is made when a watcher first waits on it (waitLocked), and set to nil when
	// closed (wakeLocked): a publish nobody waits for makes no channel.
	changed chan struct{}
	settled chan struct{}
	// wakers are called where settled is closed, by the goroutine that closes it, once it has
	// released mu (unlock runs fire): the sends waiting without a goroutine (SendMessageFunc).
	wakers  []func()
	fire    []func()
	watches int
	reply   *a2a.Message // a direct message reply (the task was never created)
	refusal error        // an A2A error the executor answered with before creating the task
	// partial: rec holds the state of the task as another replica's write left it, but not
	// all of its content (history, artifacts): read the task from the store for those.
	partial bool
}

type run struct {
	cancel  context.CancelCauseFunc
	done    chan struct{}
	execCtx *a2asrv.ExecutorContext
	push    []*a2a.PushConfig // for a new task: the configs its creation stores
	woken   bool              // run again without a message (Waker): no answer is awaited
}

// busyErr refuses a message on task id while r (nil: a run on another replica) runs it. A run
// woken by its executor (Waker) means the task's question was withdrawn — unanswered in time, or
// decided another way — so the message is told that no answer is awaited any more, rather than
// to send it later.
func busyErr(id a2a.TaskID, r *run) error {
	if r != nil && r.woken {
		return fmt.Errorf("%w: task %s waits for no answer any more: its question was withdrawn (no answer came in time, or it was decided another way) and the task is finishing its turn", a2a.ErrUnsupportedOperation, id)
	}
	return fmt.Errorf("%w: task %s is still running; send the next message when it asks for input", a2a.ErrUnsupportedOperation, id)
}

// state returns the live state of a task, creating it. release must be called when done.
func (e *Engine) state(id a2a.TaskID) *taskState {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := e.tasks[id]
	if ts == nil {
		ts = &taskState{id: id}
		e.tasks[id] = ts
	}
	ts.mu.Lock()
	ts.watches++
	ts.mu.Unlock()
	return ts
}

func (e *Engine) release(ts *taskState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts.mu.Lock()
	ts.watches--
	idle := ts.watches == 0 && ts.run == nil
	ts.mu.Unlock()
	if idle && e.tasks[ts.id] == ts {
		delete(e.tasks, ts.id)
	}
}

// publish records events written to the store and wakes subscribers. Caller holds ts.mu.
func (e *Engine) publishLocked(ts *taskState, rec *store.Task, events []a2a.Event) {
	first := rec.LastSeq - int64(len(events)) + 1
	if ts.ring == nil {
		ts.ring = make([]store.Event, 0, max(len(events), 4)) // a task's first events at once
	} else if len(ts.ring) > 0 && ts.ring[len(ts.ring)-1].Seq != first-1 {
		ts.ring = ts.ring[:0] // the ring is kept without gaps: what it lacks is read from the store
	}
	final := false
	for i, ev := range events {
		ts.ring = append(ts.ring, store.Event{TaskID: ts.id, Seq: first + int64(i), Event: ev, Time: rec.Updated})
		if st, ok := stateAfter(ev); ok && endsStream(st) {
			final = true
		}
	}
	if over := len(ts.ring) - e.opts.RingSize; over > 0 {
		ts.ring = append(ts.ring[:0:0], ts.ring[over:]...)
	}
	ts.rec, ts.partial = rec, false
	ts.wakeLocked(final)
}

// wakeLocked wakes the watchers waiting for any change and, if final (an event left the task in
// a state that ends a stream, or a run ended), those waiting for the end. Caller holds ts.mu.
func (ts *taskState) wakeLocked(final bool) {
	if ts.changed != nil {
		close(ts.changed)
		ts.changed = nil
	}
	if final && ts.settled != nil {
		close(ts.settled)
		ts.settled = nil
	}
	if final && len(ts.wakers) > 0 {
		ts.fire = append(ts.fire, ts.wakers...)
		ts.wakers = nil
	}
}

// unlock releases mu, then calls the wakers wakeLocked made due.
func (ts *taskState) unlock() {
	fire := ts.fire
	ts.fire = nil
	ts.mu.Unlock()
	for _, f := range fire {
		f()
	}
}

// waitLocked returns the channel wakeLocked closes next: at any change, or, if finalOnly, at
// the next state that ends a stream or the end of a run. Caller holds ts.mu.
func (ts *taskState) waitLocked(finalOnly bool) <-chan struct{} {
	ch := &ts.changed
	if finalOnly {
		ch = &ts.settled
	}
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

// ---- runs ----

// startRun starts the executor on a task. rec is nil for a new task (created when the first
// event arrives, with the push configs push), with initial its first state. Caller holds ts.mu.
//
// The run's context is not derived from the engine's: deriving it registered every run with
// the engine's context, a lock and a map update shared by all runs, twice per task. Close
// cancels the runs it finds in the task map instead, and a run that starts once Close began
// starts canceled.
//
// The run continues the trace of the call that started it (span, when valid): what the
// executor does, a call to another agent included, belongs to that trace.
func (e *Engine) startRunLocked(ts *taskState, execCtx *a2asrv.ExecutorContext, initial *a2a.Task, rec *store.Task, push []*a2a.PushConfig, span trace.SpanContext) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(e.ctx))
	if span.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, span)
	}
	r := &run{cancel: cancel, done: make(chan struct{}), execCtx: execCtx, push: push}
	ts.run = r
	if e.ctx.Err() != nil {
		cancel(context.Cause(e.ctx)) // Close has begun, and may have visited ts already
	}
	e.active.Add(1)
	e.running.Add(1)
	e.goWork(func() {
		defer e.running.Add(-1)
		defer e.exit()
		defer close(r.done)
		defer cancel(errRunEnded)
		e.execute(ctx, ts, r, initial, rec)
	})
}

// errRunEnded is the cause of a run's context once the run is over.
var errRunEnded = errors.New("engine: run ended")

// maxBatch is the default bound (a store may set its own, see store.WriteBatcher) on how many
// executor events wait to be written, and so how many one write carries: the executor runs at
// most this far ahead of the store. Larger batches cost less per
// event, but a run then publishes its events in larger bursts, and with several fast streams on
// SQLite (one commit serving one stream's whole batch) new streams' first events wait longer:
// measured with bench/a2a (16 streams of 100 events), a batch of 4 keeps the median time to
// first event under 5 ms at five to six times a2a-go's events/s, and one of 64 doubles the
// events/s but takes the median time to first event to 6-8 ms.
const maxBatch = 4

// pulled is one item the executor yielded.
type pulled struct {
	ev  a2a.Event
	err error
}

// pull runs the executor on its own goroutine (the puller) and queues what it yields, so that
// it produces the next events while the previous ones are written (group commit: the events
// queued during one write go to the store in the next). The puller returns, and closes done,
// when the executor returns, after an error, after an event that ends the run (a terminal or
// interrupted state, or a direct reply), or once stop is closed, which also makes the
// executor's yield return false. Read q with next and tryRecv; once done is closed and the
// events queued before are read, give q back with recycle.
//
// The queue is not closed but recycled: with the capacity a store may ask for (64 for the
// memory store), a new one per run was a quarter of the bytes a send-task allocated.
func (e *Engine) pull(ctx context.Context, r *run, newTask bool, stop <-chan struct{}) (q chan pulled, done <-chan struct{}) {
	ch, fin := e.queues.Get().(chan pulled), make(chan struct{})
	e.goWork(func() {
		defer close(fin)
		first := true
		for ev, err := range e.exec.Execute(ctx, r.execCtx) {
			select {
			case ch <- pulled{ev, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
			if _, isMsg := ev.(*a2a.Message); isMsg && first && newTask {
				return // a direct reply: nothing follows
			}
			if st, ok := stateAfter(ev); ok && endsStream(st) {
				return
			}
			if ev != nil {
				first = false
			}
		}
	})
	return ch, fin
}

// execute consumes the executor's events, applying and storing them with the events
// themselves. Events that queued up while the previous write ran are written together, in one
// store write (the first event of a new task is written alone, so that it is not delayed,
// unless the run already ended: then everything is written at once).
func (e *Engine) execute(ctx context.Context, ts *taskState, r *run, initial *a2a.Task, rec *store.Task) {
	defer func() {
		ts.mu.Lock()
		if ts.run == r {
			ts.run = nil
		}
		ts.wakeLocked(true)
		ts.unlock()
		e.mu.Lock()
		ts.mu.Lock()
		idle := ts.watches == 0 && ts.run == nil
		ts.mu.Unlock()
		if idle && e.tasks[ts.id] == ts {
			delete(e.tasks, ts.id)
		}
		e.mu.Unlock()
	}()
	stop := make(chan struct{})
	q, pullerDone := e.pull(ctx, r, rec == nil, stop)
	// The executor has returned (or will, its yield answering false) before the run ends.
	defer func() {
		close(stop)
		<-pullerDone
		e.recycle(q)
	}()

	settled := false
	// Writes outlive a cancel: a canceled run still records how it ended.
	wctx := context.WithoutCancel(ctx)
	// write applies evs to a copy of the task and stores them. If an event is invalid, the ones
	// before it are still written, and the error is returned. A record, once stored, is never
	// changed (the next write copies it), so it is published as it is, not copied again.
	var write func(evs []a2a.Event) error
	write = func(evs []a2a.Event) error {
		base := initial
		if rec != nil {
			base = rec.Task
		}
		t := cloneTask(base)
		for i, ev := range evs {
			if err := apply(t, ev); err != nil {
				if i > 0 {
					if werr := write(evs[:i]); werr != nil {
						return werr
					}
				}
				return err
			}
		}
		if rec == nil {
			// The log opens with the task: the executor's own, or the task as it stood
			// before the first event.
			logged := evs
			if _, isTask := evs[0].(*a2a.Task); !isTask {
				logged = append([]a2a.Event{cloneTask(initial)}, evs...)
			}
			nr := &store.Task{Task: t, Owner: ts.owner, PushConfigs: r.push}
			e.leaseFor(nr)
			if err := e.st.Create(wctx, nr, logged); err != nil {
				return err
			}
			nr.PushConfigs, nr.LeaseTTL = nil, 0
			e.wakePush()
			e.announce(nr, logged)
			rec = nr
			ts.mu.Lock()
			e.publishLocked(ts, rec, logged)
			settleLocked(ts, r, rec)
			ts.unlock()
			return nil
		}
		next := *rec
		next.Task = t
		if err := e.st.Update(wctx, &next, evs); err != nil {
			return err
		}
		e.wakePush()
		e.announce(&next, evs)
		rec = &next
		ts.mu.Lock()
		e.publishLocked(ts, rec, evs)
		settleLocked(ts, r, rec)
		ts.unlock()
		return nil
	}
	fail := func(text string) {
		if settled {
			return
		}
		t := initial
		if rec != nil {
			t = rec.Task
		}
		if err := write([]a2a.Event{statusEvent(t, a2a.TaskStateFailed, text)}); err != nil && !errors.Is(err, store.ErrConflict) {
			// (A conflict means another writer — a cancel, a recovery — settled the task.)
			e.log.Error("engine: cannot mark task failed", "task", ts.id, "err", err)
		}
		settled = true
	}
	// flush writes the pending events; false when the run is over.
	flush := func(pending []a2a.Event) bool {
		if len(pending) == 0 {
			return true
		}
		if err := write(pending); err != nil {
			if errors.Is(err, a2a.ErrInvalidAgentResponse) {
				e.log.Warn("engine: invalid event", "task", ts.id, "err", err)
				fail("The agent sent an invalid event.")
				return false
			}
			if errors.Is(err, store.ErrConflict) {
				// Someone else (a cancel) wrote the task: it is no longer ours to run.
				r.cancel(err)
				settled = true
				return false
			}
			e.log.Error("engine: cannot store event", "task", ts.id, "err", err)
			r.cancel(err)
			return false
		}
		if s := rec.Task.Status.State; store.IsTerminal(s) || store.IsInterrupted(s) {
			settled = true
			return false
		}
		return true
	}

	var batch, held []pulled
events:
	for {
		if len(held) > 0 {
			batch = append(batch[:0], held...)
			held = held[:0]
		} else {
			it, ok := next(q, pullerDone)
			if !ok {
				break
			}
			batch = append(batch[:0], it)
		}
		// Take what else is queued: the events that arrived during the last write.
		for len(batch) < e.batch {
			more, ok := tryRecv(q)
			if !ok {
				break
			}
			batch = append(batch, more)
		}
		if quiet(context.Cause(ctx)) {
			break events // another replica has the task: write nothing more
		}
		if rec == nil {
			// (What is held frees room in the queue: before a new task's first write the
			// executor may run up to twice the batch ahead of the store.)
			n := firstWrite(batch)
			held = append(held, batch[n:]...)
			batch = batch[:n]
		}
		var pending []a2a.Event
		for _, it := range batch {
			ev, err := it.ev, it.err
			if err != nil {
				if !flush(pending) {
					return
				}
				pending = nil
				if ctx.Err() != nil {
					break events
				}
				if rec == nil && isProtocolError(err) {
					// The agent refused the request (unsupported content, invalid params, …)
					// before creating the task: the caller gets that error, and no task exists.
					ts.mu.Lock()
					ts.refusal = err
					ts.mu.Unlock()
					settled = true
					return
				}
				e.log.Warn("engine: executor failed", "task", ts.id, "err", err)
				fail("The agent failed.")
				return
			}
			if ev == nil {
				continue
			}
			if msg, ok := ev.(*a2a.Message); ok && rec == nil && len(pending) == 0 {
				// A direct reply: no task is created.
				ts.mu.Lock()
				ts.reply = msg
				ts.mu.Unlock()
				settled = true
				return
			}
			if id := eventTaskID(ev); id != "" && id != ts.id {
				if !flush(pending) {
					return
				}
				e.log.Warn("engine: executor sent an event for another task", "task", ts.id, "event_task", id)
				fail("The agent sent an invalid event.")
				return
			}
			pending = append(pending, ev)
		}
		if !flush(pending) {
			return
		}
		// Let the other runs and streams have the processor: see watchYield.
		runtime.Gosched()
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errInterrupted):
		fail("The server shut down while this task was running.")
	case errors.Is(cause, errHandOver) && !settled:
		if rec != nil && !endsStream(rec.Task.Status.State) {
			e.mu.Lock()
			e.handedOver = append(e.handedOver, ts.id)
			e.mu.Unlock()
		}
	case settled, cause != nil:
	case rec == nil:
		fail("The agent ended without a response.")
	default:
		fail("The agent ended without a final state.")
	}
}

// firstWrite returns how many of the items a new task's run took from its queue its first
// write carries: the first event alone, so that it is not delayed by the ones behind it, or,
// when the run already ended within batch, all of them (one write for a quick task).
func firstWrite(batch []pulled) int {
	if endsRun(batch) {
		return len(batch)
	}
	return min(len(batch), 1)
}

// endsRun reports whether the run ends within batch: an executor error, or an event leaving
// the task in a state that ends it.
func endsRun(batch []pulled) bool {
	for _, it := range batch {
		if it.err != nil {
			return true
		}
		if st, ok := stateAfter(it.ev); ok && endsStream(st) {
			return true
		}
	}
	return false
}

// tryRecv takes an item from q if one is ready.
func tryRecv(q <-chan pulled) (pulled, bool) {
	select {
	case it := <-q:
		return it, true
	default:
		return pulled{}, false
	}
}

// next waits for the next item of q; false once the puller has returned (done) and every item
// it queued was taken.
func next(q <-chan pulled, done <-chan struct{}) (pulled, bool) {
	select {
	case it := <-q:
		return it, true
	case <-done:
		return tryRecv(q) // what it queued before returning
	}
}

// recycle empties a run's queue, whose puller has returned, and keeps it for another run.
func (e *Engine) recycle(q chan pulled) {
	for {
		if _, ok := tryRecv(q); !ok {
			break
		}
	}
	e.queues.Put(q)
}

// settleLocked ends the task's claim on its run as soon as the task is finished or waits for
// input, in the same critical section that publishes the event: a client that saw the event
// may send the follow-up message at once, and must not find the task "still running". Caller
// holds ts.mu.
func settleLocked(ts *taskState, r *run, rec *store.Task) {
	if s := rec.Task.Status.State; (store.IsTerminal(s) || store.IsInterrupted(s)) && ts.run == r {
		ts.run = nil
	}
}

func cloneRec(r *store.Task) *store.Task {
	c := *r
	c.Task = cloneTask(r.Task)
	return &c
}

// ---- watching a task's events ----

// watchYield is how many events a subscriber takes from a batch before it yields the
// processor. Under load, Go's scheduler looks at newly readied goroutines (such as the one that
// reads a new request off the network) only every 61 scheduling rounds, so goroutines that run
// long without blocking delay every new stream's first event: measured with bench/a2a, 16
// streams of 100 events, the first event's median wait fell from about 20 ms to 5 ms with the
// subscribers and the runs yielding this often.
const watchYield = 4

// watch follows a task's events from afterSeq: it yields each stored event in order and stops
// when the task reaches a state that ends a stream (see stops), or ctx ends. With finalOnly it
// wakes only when a state that ends a stream is published or a run ends, and yields the events
// before in one go then: for callers that want the outcome, not the progress (a blocking
// SendMessage), and whose stops are among the states that end a stream.
//
// opened says whether the caller's stream has already begun (with a Task it made itself, or as
// the continuation of an earlier stream, for Last-Event-ID): then no event it yields opens the
// stream, and a Task the log holds is yielded as a status update (see streamEvent).
func (e *Engine) watch(ctx context.Context, ts *taskState, owner store.Owner, afterSeq int64, opened bool, stops func(a2a.TaskState) bool, finalOnly bool) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		c := cursor{seq: afterSeq, opened: opened}
		for {
			wait, over := e.advance(ctx, ts, owner, &c, stops, finalOnly, nil, yield)
			if over {
				return
			}
			select {
			case <-wait:
			case <-ctx.Done():
				yield(store.Event{}, context.Cause(ctx))
				return
			}
		}
	}
}

// cursor is where a watch of a task's events stands: the last event it yielded, and whether
// its stream has begun (a first event was yielded, or the stream was begun before the watch).
type cursor struct {
	seq    int64
	opened bool
}

// advance yields the events after c.seq that are at hand, in order, moving c on, and reports
// whether the watch is over: the task reached a state in stops, nothing more can come, the
// agent refused or answered directly, reading failed (yielded as an error), or yield returned
// false. When it is not over, advance has armed the wake-up, in the same critical section that
// found nothing new: wait is the channel to wait on, or, when wake is set (only with finalOnly),
// wake will be called by the goroutine that publishes the next state that ends a stream, or ends
// the run.
func (e *Engine) advance(ctx context.Context, ts *taskState, owner store.Owner, c *cursor, stops func(a2a.TaskState) bool, finalOnly bool, wake func(), yield func(store.Event, error) bool) (wait <-chan struct{}, over bool) {
	hint := backlog.From(ctx) // told, before each event, whether another follows at once
	if hint != nil {
		hint.More.Store(false) // for the answers and refusals yielded below
	}
	for {
		ts.mu.Lock()
		var buf [4]store.Event // room for a run's usual events: no allocation
		batch := buf[:0]
		var known int64 // the newest event we know was stored
		if ts.rec != nil {
			known = ts.rec.LastSeq
		}
		// The ring holds the newest events, without gaps; older ones are read back from the
		// log, and so are newer ones it lacks (another replica's, refresh learned of).
		fromStore := c.seq < known && (len(ts.ring) == 0 || ts.ring[0].Seq > c.seq+1 || ts.ring[len(ts.ring)-1].Seq <= c.seq)
		if !fromStore {
			for _, ev := range ts.ring {
				if ev.Seq > c.seq {
					batch = append(batch, ev)
				}
			}
		}
		running := ts.run != nil
		// Only an interrupted task is worth waiting on once its run is over: a follow-up
		// message resumes it.
		mayRun := ts.rec != nil && store.IsInterrupted(ts.rec.Task.Status.State)
		if e.cl != nil && ts.rec != nil && !store.IsTerminal(ts.rec.Task.Status.State) {
			// In a cluster an unfinished task no run here writes runs elsewhere, or will
			// once a replica takes it over.
			mayRun = true
		}
		reply, refusal := ts.reply, ts.refusal
		answered := c.seq == 0 && (reply != nil || refusal != nil)
		if !fromStore && len(batch) == 0 && !answered && (running || mayRun) {
			if wake != nil {
				ts.wakers = append(ts.wakers, wake)
			} else {
				wait = ts.waitLocked(finalOnly)
			}
			ts.mu.Unlock()
			return wait, false
		}
		ts.mu.Unlock()
		if fromStore {
			evs, err := e.st.Events(ctx, owner, ts.id, c.seq, 0)
			if err != nil {
				yield(store.Event{}, e.storeErr(err))
				return nil, true
			}
			batch = evs
		}
		if refusal != nil && c.seq == 0 && len(batch) == 0 {
			yield(store.Event{}, refusal)
			return nil, true
		}
		if reply != nil && c.seq == 0 && len(batch) == 0 {
			yield(store.Event{TaskID: ts.id, Event: reply}, nil)
			return nil, true
		}
		for i, ev := range batch {
			c.seq = ev.Seq
			if i > 0 && i%watchYield == 0 {
				runtime.Gosched()
			}
			if c.opened {
				ev.Event = streamEvent(ev.Event)
			}
			c.opened = true
			st, ok := stateAfter(ev.Event)
			last := ok && stops(st)
			if hint != nil {
				hint.More.Store(!last && i < len(batch)-1)
			}
			if !yield(ev, nil) || last {
				return nil, true
			}
		}
		if len(batch) == 0 {
			return nil, true // the run is over, and the task cannot run again
		}
	}
}

// stateAfter returns the task state an event leaves the task in, when it says.
func stateAfter(ev a2a.Event) (a2a.TaskState, bool) {
	switch x := ev.(type) {
	case *a2a.Task:
		return x.Status.State, true
	case *a2a.TaskStatusUpdateEvent:
		return x.Status.State, true
	}
	return "", false
}

// streamEvent returns ev as a stream carries it once the stream has begun. A2A's stream shape
// is a Task (or a single Message) first, then only status and artifact updates, so a Task the
// log holds past a stream's first event — the task as a follow-up message resumed it, or a
// Task an executor yielded mid-run — goes out as the status update it amounts to: its state,
// with its status message, if any. (Its other changes, such as the follow-up message added to
// the history, are the task's, for GetTask.)
func streamEvent(ev a2a.Event) a2a.Event {
	t, ok := ev.(*a2a.Task)
	if !ok {
		return ev
	}
	return &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}
}

func endsStream(s a2a.TaskState) bool { return store.IsTerminal(s) || store.IsInterrupted(s) }

// ---- errors ----

// isProtocolError reports whether err is one of the A2A errors a client can act on (not an
// internal failure of the agent).
func isProtocolError(err error) bool {
	for _, s := range []error{a2a.ErrUnsupportedContentType, a2a.ErrInvalidParams, a2a.ErrInvalidRequest,
		a2a.ErrUnsupportedOperation, a2a.ErrUnauthenticated, a2a.ErrUnauthorized, a2a.ErrExtensionSupportRequired} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func (e *Engine) checkOpen() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("%w: %w", a2a.ErrServerError, ErrClosed)
	}
	return nil
}
