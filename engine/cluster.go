package engine

// Cluster mode: the engine as one replica of several sharing a store (docs/cluster.md).
//
// Concurrency model
//
//   - The maintenance goroutine (maintain), started by New and waited for by Close, renews the
//     leases of the tasks this replica runs (every third of the lease time), takes over tasks
//     whose lease expired (every half lease time: recoverExpired) and reads from the store the
//     tasks that streams of this replica follow while another replica runs them (every Poll:
//     refresh). It holds no lock while it calls the store: it collects what to do under
//     Engine.mu and taskState.mu (in that order), then acts, then takes taskState.mu again to
//     apply what it found.
//   - The Fanout calls receive on its own goroutine, for every write another replica published.
//     receive decodes outside any lock, then applies the events to the task's live state under
//     taskState.mu, exactly as a local write does (publishLocked's ring and wake-ups).
//   - A task's log is the store's: a write another replica made is only ever news, which
//     receive and refresh apply when it is newer than what the live state knows (by sequence
//     number and version), so a late, lost or repeated message changes nothing.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/store"
)

// Cluster makes an engine one replica of several sharing one store (PostgreSQL): see
// docs/cluster.md. The zero value is usable: a random replica name, 15 s leases, no fan-out.
type Cluster struct {
	// Replica names this replica in the leases of the tasks it runs. Live replicas must have
	// different names. Empty: the host name, the process ID and a random suffix.
	Replica string
	// LeaseTTL is how long a lease lasts unless renewed; it is renewed every third of it. A
	// task whose replica died is taken over within 1.5 × LeaseTTL. Zero: DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Fanout carries the events each replica writes to the streams of the others (package
	// cluster's NATS JetStream fan-out). Nil: streams of a task another replica runs see its
	// events only at each Poll.
	Fanout Fanout
	// Poll is how often the engine reads from the store the tasks its streams follow while
	// another replica runs them: what catches up on events the fan-out lost. Zero: 1 s.
	Poll time.Duration
}

// DefaultLeaseTTL is Cluster.LeaseTTL's default.
const DefaultLeaseTTL = 15 * time.Second

// Fanout carries task events from the replica that writes them to the other replicas. Only
// news travels this way: a message lost or repeated changes nothing, the store stays the
// truth (see Cluster).
type Fanout interface {
	// Publish announces the events one write stored. It must not block for long (queue, or
	// drop): it is called by the task's run after each write.
	Publish(w *Written)
	// Listen starts delivering every write published by any replica (this one's too, which
	// the engine ignores) to deliver, in publication order for each task, until stop is
	// called. deliver must not block for long. Writes may be lost or delivered twice.
	Listen(deliver func(*Incoming)) (stop func(), err error)
	// Ready reports whether the fan-out can publish and deliver now, for readiness checks.
	Ready(ctx context.Context) error
}

// Written is what one write of a task stored: the events with sequence numbers Seq …
// Seq+len(Events)-1, after which the task's version is Version. A Written too large to
// carry may come without its Events, with Last the sequence number of the last one: the
// receiver reads them from the store.
type Written struct {
	Replica string
	Task    a2a.TaskID
	Version int64
	Seq     int64
	Last    int64
	Events  []a2a.Event
}

// Incoming is a write a Fanout delivers: who published it, for which task, and how to decode
// the rest (called only for tasks that someone here follows).
type Incoming struct {
	Replica string
	Task    a2a.TaskID
	Decode  func() (*Written, error)
}

// clusterState is the engine's part in a cluster.
type clusterState struct {
	replica string
	ttl     time.Duration
	poll    time.Duration
	fanout  Fanout
	stop    func()        // stops the fan-out's delivery
	done    chan struct{} // closed when the maintenance goroutine returns
}

func newCluster(c *Cluster) *clusterState {
	cs := &clusterState{replica: c.Replica, ttl: c.LeaseTTL, poll: c.Poll, fanout: c.Fanout, done: make(chan struct{})}
	if cs.replica == "" {
		cs.replica = ReplicaName()
	}
	if cs.ttl <= 0 {
		cs.ttl = DefaultLeaseTTL
	}
	if cs.poll <= 0 {
		cs.poll = time.Second
	}
	return cs
}

// ReplicaName returns a name for a replica that is unique in practice: the host name, the
// process ID and a random suffix.
func ReplicaName() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "replica"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:6])
}

// Replica is this engine's name in task leases: Cluster.Replica, or the name it made up; ""
// for an engine that is not in a cluster.
func (e *Engine) Replica() string {
	if e.cl == nil {
		return ""
	}
	return e.cl.replica
}

// Sentinels of cluster mode, the causes of runs stopped without writing anything.
var (
	// errHandOver: Close in cluster mode: the task's lease is released for a peer to resume it.
	errHandOver = errors.New("engine: handed over to another replica")
	// errLeaseLost: the task is no longer this replica's to run: another took it over (its
	// lease had expired), or finished it (a cancel).
	errLeaseLost = errors.New("engine: the task's lease was lost")
	// errSuperseded: another replica wrote the task (a cancel, a takeover).
	errSuperseded = errors.New("engine: another replica wrote the task")
)

// quiet reports whether a run stopped for cause must write nothing more: another replica has
// the task, or is about to.
func quiet(cause error) bool {
	return errors.Is(cause, errHandOver) || errors.Is(cause, errLeaseLost) || errors.Is(cause, errSuperseded) ||
		errors.Is(cause, store.ErrConflict)
}

// leaseFor sets t's lease to this replica's, for the write that starts or resumes its run.
func (e *Engine) leaseFor(t *store.Task) {
	if e.cl != nil {
		t.Lease, t.LeaseTTL = store.Lease{Holder: e.cl.replica}, e.cl.ttl
	}
}

// start begins the cluster's work: the fan-out's delivery and the maintenance goroutine.
func (e *Engine) startCluster() {
	if f := e.cl.fanout; f != nil {
		stop, err := f.Listen(e.receive)
		if err != nil {
			// Streams still work, at the pace of the polls; readiness reports the fan-out.
			e.log.Error("engine: cannot follow the cluster's fan-out; streams of other replicas' tasks will poll the store", "err", err)
		} else {
			e.cl.stop = stop
		}
	}
	go e.maintain()
}

// stopCluster ends the delivery and the maintenance goroutine, and waits for the latter. e.ctx
// is canceled already.
func (e *Engine) stopCluster() {
	if e.cl.stop != nil {
		e.cl.stop()
	}
	<-e.cl.done
}

// maintain renews leases, takes over expired tasks and refreshes followed tasks until Close.
func (e *Engine) maintain() {
	defer close(e.cl.done)
	renew := time.NewTicker(e.cl.ttl / 3)
	defer renew.Stop()
	recover := time.NewTicker(e.cl.ttl / 2)
	defer recover.Stop()
	poll := time.NewTicker(e.cl.poll)
	defer poll.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-renew.C:
			e.renewLeases(e.ctx)
		case <-recover.C:
			if _, err := e.recoverExpired(e.ctx); err != nil && e.ctx.Err() == nil {
				e.log.Error("engine: cannot take over expired tasks", "err", err)
			}
		case <-poll.C:
			e.refresh(e.ctx)
		}
	}
}

// held is a run whose lease is renewed: the task's live state and the run found there.
type held struct {
	ts *taskState
	r  *run
}

// renewLeases renews the leases of the tasks this replica runs, and stops the runs of those
// another replica took over or finished.
func (e *Engine) renewLeases(ctx context.Context) {
	runs := map[a2a.TaskID]held{}
	var ids []a2a.TaskID
	e.mu.Lock()
	for id, ts := range e.tasks {
		ts.mu.Lock()
		if ts.run != nil && ts.rec != nil {
			runs[id] = held{ts, ts.run}
			ids = append(ids, id)
		}
		ts.mu.Unlock()
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	lost, err := e.st.RenewLeases(ctx, e.cl.replica, ids, e.cl.ttl)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("engine: cannot renew leases", "tasks", len(ids), "err", err)
		}
		return
	}
	for _, id := range lost {
		h := runs[id]
		h.ts.mu.Lock()
		stopped := h.ts.run == h.r && h.r.cancel != nil
		if stopped {
			h.r.cancel(errLeaseLost)
		}
		owner := h.ts.owner
		h.ts.mu.Unlock()
		if !stopped {
			continue
		}
		e.log.Warn("engine: a task this replica ran was taken over, or finished, by another", "task", id)
		// What the other replica wrote (a cancel, say) reaches the watchers here.
		if rec, err := e.st.Get(ctx, owner, id); err == nil {
			h.ts.mu.Lock()
			e.learnLocked(h.ts, rec)
			h.ts.unlock()
		}
	}
}

// claimBatch is how many expired tasks one ClaimExpired takes.
const claimBatch = 64

// recoverExpired takes over the tasks whose lease expired and settles or resumes each. It
// returns how many it took.
func (e *Engine) recoverExpired(ctx context.Context) (int, error) {
	n := 0
	for !e.draining.Load() && ctx.Err() == nil {
		claimed, err := e.st.ClaimExpired(ctx, e.cl.replica, e.cl.ttl, claimBatch)
		if err != nil {
			return n, err
		}
		for _, rec := range claimed {
			e.log.Warn("engine: taking over a task whose lease expired", "task", rec.Task.ID)
			if err := e.recoverTask(ctx, rec); err != nil && !errors.Is(err, store.ErrConflict) {
				e.log.Error("engine: cannot recover a task", "task", rec.Task.ID, "err", err)
			}
			n++
		}
		if len(claimed) < claimBatch {
			break
		}
	}
	return n, nil
}

// refresh reads from the store the tasks that watchers here follow and no run here writes,
// and publishes what changed: the safety net under the fan-out.
func (e *Engine) refresh(ctx context.Context) {
	var follow []*taskState
	e.mu.Lock()
	for _, ts := range e.tasks {
		ts.mu.Lock()
		if ts.watches > 0 && ts.run == nil && ts.rec != nil && !store.IsTerminal(ts.rec.Task.Status.State) {
			follow = append(follow, ts)
		}
		ts.mu.Unlock()
	}
	e.mu.Unlock()
	for _, ts := range follow {
		ts.mu.Lock()
		owner := ts.owner
		ts.mu.Unlock()
		rec, err := e.st.Get(ctx, owner, ts.id)
		if err != nil {
			continue // gone, or the store is down: the next poll tries again
		}
		ts.mu.Lock()
		e.learnLocked(ts, rec)
		ts.unlock()
	}
}

// learnLocked makes rec, read from the store, ts's record if it is newer, and wakes the
// watchers. Caller holds ts.mu.
func (e *Engine) learnLocked(ts *taskState, rec *store.Task) {
	if old := ts.rec; old != nil {
		if rec.LastSeq < old.LastSeq || (rec.LastSeq == old.LastSeq && rec.Version <= old.Version && !ts.partial) {
			return // not newer than what we know
		}
	}
	ts.rec, ts.partial = rec, false
	ts.wakeLocked(endsStream(rec.Task.Status.State))
}

// receive applies a write another replica published to the live state of its task, if
// anyone here follows it.
func (e *Engine) receive(in *Incoming) {
	if in.Replica == e.cl.replica {
		return // our own: published locally already
	}
	e.mu.Lock()
	ts := e.tasks[in.Task]
	e.mu.Unlock()
	if ts == nil {
		return
	}
	ts.mu.Lock()
	known := ts.rec != nil
	ts.mu.Unlock()
	if !known {
		return // nobody reads this task yet: what they read will come from the store
	}
	w, err := in.Decode()
	if err != nil {
		e.log.Warn("engine: undecodable fan-out message", "task", in.Task, "err", err)
		return
	}
	ts.mu.Lock()
	e.applyRemoteLocked(ts, w)
	ts.unlock()
}

// applyRemoteLocked applies the news of another replica's write w to ts. Caller holds ts.mu.
func (e *Engine) applyRemoteLocked(ts *taskState, w *Written) {
	rec := ts.rec
	if rec == nil {
		return
	}
	last := w.Seq + int64(len(w.Events)) - 1
	if len(w.Events) == 0 {
		last = w.Last
	}
	if last <= rec.LastSeq {
		return // seen already
	}
	if ts.run != nil && ts.run.cancel != nil {
		// Another replica wrote a task we run: it canceled it, or took it over. Our next
		// write would fail; stop the executor now.
		ts.run.cancel(errSuperseded)
	}
	next := *rec
	t := *rec.Task
	next.Task, next.LastSeq, next.Version = &t, last, max(rec.Version, w.Version)
	if len(w.Events) == 0 {
		// The events were too large to carry: watchers read them from the store.
		ts.ring = ts.ring[:0]
		ts.rec, ts.partial = &next, true
		ts.wakeLocked(true)
		return
	}
	if len(ts.ring) > 0 && ts.ring[len(ts.ring)-1].Seq != w.Seq-1 {
		ts.ring = ts.ring[:0] // a gap: watchers read it from the store
	}
	final := false
	for i, ev := range w.Events {
		seq := w.Seq + int64(i)
		if seq <= rec.LastSeq {
			continue
		}
		if st, ok := stateAfter(ev); ok {
			t.Status.State = st
			if x, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
				t.Status = x.Status
			}
			final = final || endsStream(st)
		}
		ts.ring = append(ts.ring, store.Event{TaskID: ts.id, Seq: seq, Event: ev, Time: time.Now().UTC()})
	}
	if over := len(ts.ring) - e.opts.RingSize; over > 0 {
		ts.ring = append(ts.ring[:0:0], ts.ring[over:]...)
	}
	// The record is the task's state, not its content (history, artifacts): a reader that
	// needs the task whole reads it from the store (partial).
	ts.rec, ts.partial = &next, true
	ts.wakeLocked(final)
}

// announce publishes a write of this replica to the others. rec is the task after the write
// of events.
func (e *Engine) announce(rec *store.Task, events []a2a.Event) {
	if e.cl == nil || e.cl.fanout == nil || len(events) == 0 {
		return
	}
	e.cl.fanout.Publish(&Written{Replica: e.cl.replica, Task: rec.Task.ID, Version: rec.Version,
		Seq: rec.LastSeq - int64(len(events)) + 1, Last: rec.LastSeq, Events: events})
}

// written tells everyone what a write that no run of ts made (a recovery, a cancel) stored:
// the push deliverer, the other replicas, and the watchers here.
func (e *Engine) written(rec *store.Task, events []a2a.Event) {
	e.wakePush()
	e.announce(rec, events)
	e.mu.Lock()
	ts := e.tasks[rec.Task.ID]
	e.mu.Unlock()
	if ts == nil {
		return
	}
	ts.mu.Lock()
	if ts.rec == nil || ts.rec.LastSeq == rec.LastSeq-int64(len(events)) {
		e.publishLocked(ts, cloneRec(rec), events)
	} else {
		e.learnLocked(ts, cloneRec(rec))
	}
	ts.unlock()
}

// userOf is the caller a resumed run acts for: the task's owner.
func userOf(o store.Owner) *a2asrv.User {
	if o.Principal == "" {
		return nil
	}
	return &a2asrv.User{Name: o.Principal, Authenticated: true}
}

// Ready reports whether the engine takes work: it is not draining or closed, its store
// answers, and in a cluster its fan-out is connected. For readiness checks (/readyz).
func (e *Engine) Ready(ctx context.Context) error {
	if e.draining.Load() {
		return ErrDraining
	}
	if err := e.checkOpen(); err != nil {
		return ErrClosed
	}
	if _, err := e.st.Get(ctx, store.Owner{}, "a2awebcap-readiness-probe"); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("engine: store: %w", err)
	}
	if e.cl != nil && e.cl.fanout != nil {
		if err := e.cl.fanout.Ready(ctx); err != nil {
			return fmt.Errorf("engine: fan-out: %w", err)
		}
	}
	return nil
}
