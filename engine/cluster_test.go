package engine_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// Lease times in these tests are short so that takeovers happen quickly; the tests never
// assert that something happens within a time, only that it happens (within generous
// deadlines) or that it has not happened while a live lease stands. The TTL leaves room for
// a renewal late by a few hundred milliseconds, as one under -race on a loaded 2-core CI
// machine can be; a takeover it still lets happen is harmless (see stepper.Execute).
const (
	testTTL  = 600 * time.Millisecond
	testPoll = 20 * time.Millisecond
)

// stepper is an executor driven by gates: "steps N KEY" yields working, then a status update
// "step i" (i = 1…N) each time the test calls step(KEY), then completed. It resumes
// (engine.ErrResume) after the last step the stored task reports, and records every run.
type stepper struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	runs    map[a2a.TaskID]int
	active  int  // executions under way
	noResum bool // answer RecoverTask with nothing: the engine fails the task
}

func newStepper() *stepper {
	return &stepper{gates: map[string]chan struct{}{}, runs: map[a2a.TaskID]int{}}
}

func (s *stepper) gate(key string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gates[key] == nil {
		s.gates[key] = make(chan struct{}, 64)
	}
	return s.gates[key]
}

// step lets the run of key take one step.
func (s *stepper) step(key string) { s.gate(key) <- struct{}{} }

func (s *stepper) runCount(id a2a.TaskID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

// running returns how many executions are under way, once those that are stopping stopped.
func (s *stepper) running() int {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		n := s.active
		s.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *stepper) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s.mu.Lock()
		s.runs[ec.TaskID]++
		s.active++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.active--
			s.mu.Unlock()
		}()
		var n int
		var key string
		fmt.Sscanf(text(ec.Message), "steps %d %s", &n, &key)
		from := 1
		if st := ec.StoredTask; st != nil && st.Status.State == a2a.TaskStateWorking {
			var done int
			fmt.Sscanf(text(st.Status.Message), "step %d", &done)
			from = done + 1
		} else if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		for i := from; i <= n; i++ {
			select {
			case <-s.gate(key):
			case <-ctx.Done():
				return
			}
			m := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(fmt.Sprint("step ", i)))
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, m), nil) {
				// The step was not recorded (the run lost its lease, say): the run that
				// resumes the task takes it instead, or it would wait for a step forever.
				s.step(key)
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (s *stepper) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func (s *stepper) RecoverTask(context.Context, *a2a.Task) ([]a2a.Event, error) {
	if s.noResum {
		return nil, nil
	}
	return nil, engine.ErrResume
}

// mortal is a store as one replica sees it: once killed, every call fails, as they would for
// a process that is gone.
type mortal struct {
	store.Store
	dead      atomic.Bool
	noRenewal atomic.Bool // RenewLeases fails: a replica cut off from the store for a while
}

var errDead = errors.New("replica is dead")

func (m *mortal) Create(ctx context.Context, t *store.Task, events []a2a.Event) error {
	if m.dead.Load() {
		return errDead
	}
	return m.Store.Create(ctx, t, events)
}

func (m *mortal) Update(ctx context.Context, t *store.Task, events []a2a.Event) error {
	if m.dead.Load() {
		return errDead
	}
	return m.Store.Update(ctx, t, events)
}

func (m *mortal) Get(ctx context.Context, owner store.Owner, id a2a.TaskID) (*store.Task, error) {
	if m.dead.Load() {
		return nil, errDead
	}
	return m.Store.Get(ctx, owner, id)
}

func (m *mortal) RenewLeases(ctx context.Context, holder string, ids []a2a.TaskID, ttl time.Duration) ([]a2a.TaskID, error) {
	if m.dead.Load() || m.noRenewal.Load() {
		return nil, errDead
	}
	return m.Store.RenewLeases(ctx, holder, ids, ttl)
}

func (m *mortal) ClaimExpired(ctx context.Context, holder string, ttl time.Duration, limit int) ([]*store.Task, error) {
	if m.dead.Load() {
		return nil, errDead
	}
	return m.Store.ClaimExpired(ctx, holder, ttl, limit)
}

func (m *mortal) ReleaseLeases(ctx context.Context, holder string, ids []a2a.TaskID) error {
	if m.dead.Load() {
		return errDead
	}
	return m.Store.ReleaseLeases(ctx, holder, ids)
}

// replica starts an engine named name on st in cluster mode, closed at the end of the test.
func replica(t *testing.T, exec a2asrv.AgentExecutor, st store.Store, name string, c *engine.Cluster) *engine.Engine {
	t.Helper()
	cl := engine.Cluster{Replica: name, LeaseTTL: testTTL, Poll: testPoll}
	if c != nil {
		cl = *c
		cl.Replica = name
	}
	e := engine.New(exec, st, &engine.Options{Cluster: &cl, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.Close(ctx)
	})
	return e
}

// startSteps starts "steps n key" on e without waiting, and returns the task once it works.
func startSteps(t *testing.T, e *engine.Engine, ctx context.Context, n int, key string) *a2a.Task {
	t.Helper()
	req := msg(fmt.Sprintf("steps %d %s", n, key))
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	task := send(t, e, ctx, req)
	return waitState(t, e, ctx, task.ID, a2a.TaskStateWorking)
}

// lease returns the task's lease as the store has it.
func lease(t *testing.T, st store.Store, owner store.Owner, id a2a.TaskID) store.Lease {
	t.Helper()
	rec, err := st.Get(t.Context(), owner, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Lease
}

// statusTexts are the texts of the status messages of a stream, with the states they come
// with: what a client following the task sees.
func statusTexts(evs []a2a.Event) []string {
	var out []string
	for _, ev := range evs {
		if x, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			out = append(out, strings.TrimSpace(string(x.Status.State)+" "+text(x.Status.Message)))
		}
	}
	return out
}

// seqs checks that a stream's events carry consecutive sequence numbers after after, and
// returns the last.
func checkSeqs(t *testing.T, evs []a2a.Event, after int64) int64 {
	t.Helper()
	for i, ev := range evs {
		if got := seqOf(t, ev); got != after+1 {
			t.Fatalf("event %d has sequence number %d, want %d (no gap, no repeat)", i, got, after+1)
		}
		after++
	}
	return after
}

// A replica that starts while a peer runs a task leaves the task alone: its recovery, at start
// and periodically, takes only expired leases, and the peer's are renewed.
func TestClusterLeavesLivePeersTasksAlone(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := newStepper()
	ctx := as(t.Context(), "alice")
	// Two-second leases: a's renewals (every 667 ms) may be a second late on a loaded machine
	// without a takeover, and the wait below still outlasts a lease, so it is the renewals
	// that keep the task a's.
	const ttl = 2 * time.Second
	c := &engine.Cluster{LeaseTTL: ttl, Poll: testPoll}
	a := replica(t, ex, st, "a", c)
	task := startSteps(t, a, ctx, 2, "live")
	if l := lease(t, st, store.Owner{Principal: "alice"}, task.ID); l.Holder != "a" {
		t.Fatalf("lease of a task a runs = %+v, want a's", l)
	}
	b := replica(t, ex, st, "b", c)
	if n, err := b.Recover(ctx); err != nil || n != 0 {
		t.Fatalf("Recover on the new replica = %d, %v; want nothing taken", n, err)
	}
	// More than a lease time passes: a renews, b's periodic recovery finds nothing to take.
	time.Sleep(3 * ttl / 2)
	if l := lease(t, st, store.Owner{Principal: "alice"}, task.ID); l.Holder != "a" {
		t.Fatalf("lease after %v = %+v, want still a's", 3*ttl/2, l)
	}
	if n := ex.runCount(task.ID); n != 1 {
		t.Fatalf("the task ran %d times, want once", n)
	}
	ex.step("live")
	ex.step("live")
	got := waitState(t, b, ctx, task.ID, a2a.TaskStateCompleted)
	if want := []string{"step 1", "step 2"}; !hasSteps(got, want) {
		t.Errorf("history of the task %v, want the steps %v", historyTexts(got), want)
	}
}

func historyTexts(task *a2a.Task) []string {
	var out []string
	for _, m := range task.History {
		out = append(out, text(m))
	}
	return out
}

func hasSteps(task *a2a.Task, want []string) bool {
	var got []string
	for _, s := range historyTexts(task) {
		if strings.HasPrefix(s, "step ") {
			got = append(got, s)
		}
	}
	return cmp.Equal(want, got)
}

// A replica that dies mid-task: once its lease expires a peer takes the task over and the
// agent resumes it where its log stands; a stream opened on the peer with the last event id
// the client had sees every event once, in order. The dead replica writes nothing more.
func TestClusterTakesOverADeadReplicasTask(t *testing.T) {
	t.Parallel()
	for _, resumable := range []bool{true, false} {
		t.Run(fmt.Sprint("resumable=", resumable), func(t *testing.T) {
			t.Parallel()
			st := memory.New()
			defer st.Close()
			exA, exB := newStepper(), newStepper() // each replica's own executor
			exB.noResum = !resumable
			ctx := as(t.Context(), "alice")
			doomed := &mortal{Store: st}
			a := replica(t, exA, doomed, "a", nil)
			b := replica(t, exB, st, "b", nil)

			// The client streams from a, and has seen the first step.
			sctx, stopStream := context.WithTimeout(ctx, time.Minute)
			var seen []a2a.Event
			next, stop := iter.Pull2(a.SendStreamingMessage(sctx, msg("steps 3 dies")))
			for len(statusTexts(seen)) < 2 {
				if len(statusTexts(seen)) == 1 {
					exA.step("dies")
				}
				ev, err, ok := next()
				if err != nil || !ok {
					t.Fatalf("stream from a: %v, %v", err, ok)
				}
				seen = append(seen, ev)
			}
			task := seen[0].(*a2a.Task)
			last := checkSeqs(t, seen, 0)

			// a dies: its store calls fail from now on (so it neither writes nor renews nor
			// releases), and its executor stops.
			doomed.dead.Store(true)
			stop()
			stopStream()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			a.Close(cctx)

			// The client reconnects to b with its last event id.
			rctx := withLastEventID(ctx, last)
			done := make(chan []a2a.Event, 1)
			go func() { done <- gather(t, b.SubscribeToTask(rctx, &a2a.SubscribeToTaskRequest{ID: task.ID})) }()
			if resumable {
				// b takes over once the lease expired (within a lease time and a recovery
				// period) and the agent runs again there; its steps go on.
				deadline := time.Now().Add(30 * time.Second)
				for exB.runCount(task.ID) < 1 {
					if time.Now().After(deadline) {
						t.Fatal("the task was not resumed")
					}
					time.Sleep(5 * time.Millisecond)
				}
				exB.step("dies")
				exB.step("dies")
			}
			rest := within(t, done)
			checkSeqs(t, rest, last)
			want := []string{"TASK_STATE_WORKING step 2", "TASK_STATE_WORKING step 3", "TASK_STATE_COMPLETED"}
			if !resumable {
				want = []string{"TASK_STATE_FAILED The replica running this task stopped, and the agent cannot resume it."}
			}
			if diff := cmp.Diff(want, statusTexts(rest)); diff != "" {
				t.Errorf("events after the reconnection (-want +got):\n%s", diff)
			}
			if l := lease(t, st, store.Owner{Principal: "alice"}, task.ID); l.Holder != "b" {
				t.Errorf("lease after the takeover = %+v, want b's", l)
			}
		})
	}
}

func withLastEventID(ctx context.Context, seq int64) context.Context {
	ctx, _ = a2asrv.NewCallContext(ctx, a2asrv.NewServiceParams(map[string][]string{"Last-Event-ID": {fmt.Sprint(seq)}}))
	cc, _ := a2asrv.CallContextFrom(ctx)
	cc.User = &a2asrv.User{Name: "alice", Authenticated: true}
	return ctx
}

// A stream on one replica of a task running on another sees every event, in order, to the
// end — here with no fan-out at all, from the store's polls.
func TestClusterStreamsOtherReplicasTasks(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := newStepper()
	ctx := as(t.Context(), "alice")
	a := replica(t, ex, st, "a", nil)
	b := replica(t, ex, st, "b", nil)
	task := startSteps(t, a, ctx, 5, "far")
	// The subscription is open (it has the task) before the first step: a task that finished
	// first could not be subscribed to.
	sctx, cancelSub := context.WithTimeout(ctx, time.Minute)
	defer cancelSub()
	next, stop := iter.Pull2(b.SubscribeToTask(sctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
	defer stop()
	ev, err, ok := next()
	if err != nil || !ok {
		t.Fatalf("subscription on b: %v, %v", err, ok)
	}
	done := make(chan []a2a.Event, 1)
	go func() {
		got := []a2a.Event{ev}
		for {
			ev, err, ok := next()
			if err != nil {
				t.Errorf("subscription on b: %v", err)
			}
			if err != nil || !ok {
				break
			}
			got = append(got, ev)
		}
		done <- got
	}()
	for range 5 {
		ex.step("far")
	}
	got := within(t, done)
	if _, ok := got[0].(*a2a.Task); !ok {
		t.Fatalf("first event %T, want the Task", got[0])
	}
	checkSeqs(t, got[1:], seqOf(t, got[0]))
	if last := statusTexts(got); last[len(last)-1] != "TASK_STATE_COMPLETED" {
		t.Errorf("stream on b ends with %q, want completed", last[len(last)-1])
	}
	// A blocking send on b's side of things: a follow-up is refused while a runs the task.
	if _, err := b.SendMessage(ctx, follow(task, "more")); err == nil {
		t.Error("a follow-up to a task another replica runs was accepted")
	}
}

// Close on a replica hands its running tasks over: it writes nothing to them and releases
// their leases, so a peer takes them at its next recovery, without waiting for the lease to
// expire, and resumes them.
func TestClusterCloseHandsOver(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := newStepper()
	ctx := as(t.Context(), "alice")
	long := &engine.Cluster{LeaseTTL: time.Hour, Poll: testPoll}
	a := replica(t, ex, st, "a", long)
	task := startSteps(t, a, ctx, 2, "handover")
	ex.step("handover")
	waitText(t, a, ctx, task.ID, "step 1")
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, store.Owner{Principal: "alice"}, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task.Status.State != a2a.TaskStateWorking || rec.Lease.Holder != "" {
		t.Fatalf("after a's Close: %s, lease %+v; want working, no lease", rec.Task.Status.State, rec.Lease)
	}
	// With hour-long leases, only the release lets b take it now.
	b := replica(t, ex, st, "b", long)
	if n, err := b.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("Recover on b = %d, %v; want the handed-over task", n, err)
	}
	ex.step("handover")
	got := waitState(t, b, ctx, task.ID, a2a.TaskStateCompleted)
	if !hasSteps(got, []string{"step 1", "step 2"}) {
		t.Errorf("history %v, want step 1 then step 2", historyTexts(got))
	}
}

func waitText(t *testing.T, e *engine.Engine, ctx context.Context, id a2a.TaskID, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		if err == nil && text(got.Status.Message) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never said %q", id, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A cancel on another replica than the one running the task: the running replica's executor
// stops and writes nothing more; every replica's streams end with canceled.
func TestClusterCancelFromAnotherReplica(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := newStepper()
	ctx := as(t.Context(), "alice")
	a := replica(t, ex, st, "a", nil)
	b := replica(t, ex, st, "b", nil)
	task := startSteps(t, a, ctx, 3, "cancel")
	sctx, cancelSub := context.WithTimeout(ctx, time.Minute) // a stream that never ends fails
	defer cancelSub()
	next, stop := iter.Pull2(a.SubscribeToTask(sctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
	defer stop()
	if ev, err, _ := next(); err != nil {
		t.Fatalf("subscription on a: %v, %v", ev, err)
	}
	canceled, err := b.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask on b = %v, %v", canceled, err)
	}
	var evs []a2a.Event
	for {
		ev, err, ok := next()
		if err != nil {
			t.Fatalf("subscription on a: %v", err)
		}
		if !ok {
			break
		}
		evs = append(evs, ev)
	}
	if got := statusTexts(evs); len(got) == 0 || got[len(got)-1] != "TASK_STATE_CANCELED" {
		t.Errorf("stream on a ends with %v, want canceled", got)
	}
	if ex.running() != 0 {
		t.Error("a's executor still runs the canceled task")
	}
	rec, err := st.Get(ctx, store.Owner{Principal: "alice"}, task.ID)
	if err != nil || rec.Task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("task after the cancel: %v, %v; want canceled", rec, err)
	}
	logged, _ := st.Events(ctx, store.Owner{Principal: "alice"}, task.ID, 0, 0)
	if x, ok := logged[len(logged)-1].Event.(*a2a.TaskStatusUpdateEvent); !ok || x.Status.State != a2a.TaskStateCanceled {
		t.Errorf("last event in the log: %#v, want the cancel (a wrote after it)", logged[len(logged)-1].Event)
	}
}

// A task waiting for input continues on whichever replica receives the follow-up, and a
// resumed subscription on another replica follows it there.
func TestClusterFollowUpOnAnotherReplica(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := &scripted{}
	ctx := as(t.Context(), "alice")
	a := replica(t, ex, st, "a", nil)
	b := replica(t, ex, st, "b", nil)
	task := send(t, a, ctx, msg("ask"))
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state %s, want input-required", task.Status.State)
	}
	rec, _ := st.Get(ctx, store.Owner{Principal: "alice"}, task.ID)
	onA := make(chan []a2a.Event, 1)
	go func() {
		onA <- gather(t, a.SubscribeToTask(withLastEventID(ctx, rec.LastSeq), &a2a.SubscribeToTaskRequest{ID: task.ID}))
	}()
	done := send(t, b, ctx, follow(task, "Ada"))
	if done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("follow-up on b: %s, want completed", done.Status.State)
	}
	evs := within(t, onA)
	checkSeqs(t, evs, rec.LastSeq)
	if diff := cmp.Diff([]string{"status:TASK_STATE_WORKING", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}, kinds(evs)); diff != "" {
		t.Errorf("subscription on a (-want +got):\n%s", diff)
	}
	if l := lease(t, st, store.Owner{Principal: "alice"}, task.ID); l.Holder != "b" {
		t.Errorf("lease after the follow-up on b = %+v, want b's", l)
	}
}

// A replica that cannot renew its leases (cut off from the store longer than a lease) loses its
// tasks to a peer: its run stops without writing, the peer resumes the task.
func TestClusterLostLeaseStopsTheRun(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	exA, exB := newStepper(), newStepper()
	ctx := as(t.Context(), "alice")
	cut := &mortal{Store: st}
	a := replica(t, exA, cut, "a", nil)
	task := startSteps(t, a, ctx, 2, "cut")
	cut.noRenewal.Store(true)
	b := replica(t, exB, st, "b", nil)
	deadline := time.Now().Add(30 * time.Second)
	for exB.runCount(task.ID) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("b did not take the task over")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// a's executor, still running, takes a step: its write is refused, the run stops.
	exA.step("cut")
	exB.step("cut")
	exB.step("cut")
	got := waitState(t, b, ctx, task.ID, a2a.TaskStateCompleted)
	if !hasSteps(got, []string{"step 1", "step 2"}) {
		t.Errorf("history %v: a step was written twice or lost", historyTexts(got))
	}
	if exA.running() != 0 {
		t.Error("a's executor still runs a task b took over")
	}
}

// Drain lets running tasks finish and refuses new ones; on a single process too.
func TestDrainLetsRunningTasksFinish(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		t.Run(fmt.Sprint("cluster=", cluster), func(t *testing.T) {
			t.Parallel()
			st := memory.New()
			defer st.Close()
			ex := newStepper()
			opts := &engine.Options{Logger: slog.New(slog.DiscardHandler)}
			if cluster {
				opts.Cluster = &engine.Cluster{Replica: "a", LeaseTTL: testTTL, Poll: testPoll}
			}
			e := engine.New(ex, st, opts)
			ctx := as(t.Context(), "alice")
			task := startSteps(t, e, ctx, 1, "drain")
			drained := make(chan error, 1)
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			go func() { drained <- e.Drain(dctx) }()
			waitDraining(t, e)
			if _, err := e.SendMessage(ctx, msg("late")); !errors.Is(err, engine.ErrDraining) {
				t.Errorf("SendMessage while draining = %v, want ErrDraining", err)
			}
			select {
			case err := <-drained:
				t.Fatalf("Drain returned %v while a task ran", err)
			default:
			}
			ex.step("drain")
			if err := <-drained; err != nil {
				t.Fatalf("Drain() = %v", err)
			}
			if got, _ := e.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); got.Status.State != a2a.TaskStateCompleted {
				t.Errorf("task after the drain: %s, want completed", got.Status.State)
			}
			if err := e.Close(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitDraining waits until e reports that it drains.
func waitDraining(t *testing.T, e *engine.Engine) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !errors.Is(e.Ready(t.Context()), engine.ErrDraining) {
		if time.Now().After(deadline) {
			t.Fatal("the engine never said it drains")
		}
		time.Sleep(time.Millisecond)
	}
}

// A drain that runs out of time leaves Close to stop what still runs: on a single process the
// task is failed with the reason.
func TestDrainTimesOut(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := newStepper()
	e := engine.New(ex, st, &engine.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx := as(t.Context(), "alice")
	task := startSteps(t, e, ctx, 1, "never")
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := e.Drain(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain() = %v, want the deadline", err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rec, _ := st.Get(ctx, store.Owner{Principal: "alice"}, task.ID)
	if rec.Task.Status.State != a2a.TaskStateFailed || !strings.Contains(text(rec.Task.Status.Message), "shut down") {
		t.Errorf("task after Close: %s %q, want failed, saying the server shut down", rec.Task.Status.State, text(rec.Task.Status.Message))
	}
}

// On a single process, Recover at start resumes a task whose agent can resume, and fails the
// others with a reason.
func TestRecoverResumesOnASingleProcess(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := newStepper()
	ctx := as(t.Context(), "alice")
	doomed := &mortal{Store: st}
	a := engine.New(ex, doomed, &engine.Options{Logger: slog.New(slog.DiscardHandler)})
	task := startSteps(t, a, ctx, 2, "restart")
	ex.step("restart")
	waitText(t, a, ctx, task.ID, "step 1")
	doomed.dead.Store(true) // the process dies
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	a.Close(cctx)

	b := engine.New(ex, st, &engine.Options{Logger: slog.New(slog.DiscardHandler)})
	defer b.Close(context.Background())
	if n, err := b.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("Recover() = %d, %v", n, err)
	}
	ex.step("restart")
	got := waitState(t, b, ctx, task.ID, a2a.TaskStateCompleted)
	if !hasSteps(got, []string{"step 1", "step 2"}) {
		t.Errorf("history %v, want step 1 then step 2", historyTexts(got))
	}
}

// hub is a Fanout in memory for the engines of one test: it delivers every write to every
// listener, in order, on a goroutine of its own, twice each, except those drop says to lose.
type hub struct {
	mu        sync.Mutex
	listeners []func(*engine.Incoming)
	n         int
	drop      func(n int) bool
	queue     chan *engine.Written
	once      sync.Once
}

func (h *hub) start() {
	h.once.Do(func() {
		h.queue = make(chan *engine.Written, 1024)
		go func() {
			for w := range h.queue {
				h.mu.Lock()
				ls := slices.Clone(h.listeners)
				h.mu.Unlock()
				for range 2 { // every message twice
					for _, l := range ls {
						l(&engine.Incoming{Replica: w.Replica, Task: w.Task, Decode: func() (*engine.Written, error) { return w, nil }})
					}
				}
			}
		}()
	})
}

func (h *hub) Publish(w *engine.Written) {
	h.start()
	h.mu.Lock()
	h.n++
	lost := h.drop != nil && h.drop(h.n)
	h.mu.Unlock()
	if !lost {
		h.queue <- w
	}
}

func (h *hub) Listen(deliver func(*engine.Incoming)) (func(), error) {
	h.start()
	h.mu.Lock()
	h.listeners = append(h.listeners, deliver)
	h.mu.Unlock()
	return func() {}, nil
}

func (h *hub) Ready(context.Context) error { return nil }

// Through the fan-out alone (no polls), a stream on another replica sees every event once, in
// order, although messages come twice and some are lost: a gap is read from the store.
func TestClusterFanoutGapsAndRepeats(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	ex := newStepper()
	h := &hub{drop: func(n int) bool { return n == 3 || n == 5 || n == 6 }}
	c := &engine.Cluster{LeaseTTL: time.Hour, Poll: time.Hour, Fanout: h}
	a := replica(t, ex, st, "a", c)
	b := replica(t, ex, st, "b", c)
	ctx := as(t.Context(), "alice")
	task := startSteps(t, a, ctx, 8, "hub")
	sctx, cancelSub := context.WithTimeout(ctx, time.Minute) // a stream that never ends fails
	defer cancelSub()
	next, stop := iter.Pull2(b.SubscribeToTask(sctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
	defer stop()
	ev, err, _ := next()
	if err != nil {
		t.Fatal(err)
	}
	evs := []a2a.Event{ev}
	for i := range 8 {
		ex.step("hub")
		if i < 7 {
			waitText(t, a, ctx, task.ID, fmt.Sprint("step ", i+1)) // one write per step
		}
	}
	for {
		ev, err, ok := next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		evs = append(evs, ev)
	}
	checkSeqs(t, evs[1:], seqOf(t, evs[0]))
	got := statusTexts(evs)
	want := []string{}
	for i := range 8 {
		want = append(want, fmt.Sprint("TASK_STATE_WORKING step ", i+1))
	}
	want = append(want, "TASK_STATE_COMPLETED")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream on b (-want +got):\n%s", diff)
	}
}

// within returns what c delivers, failing the test if nothing comes in a minute: a stream
// that never ends fails its test, not the whole package at go test's timeout.
func within[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(time.Minute):
		t.Fatal("nothing came in a minute")
		panic("unreachable")
	}
}

// gather is collect for a goroutine of the test: a stream error fails the test without
// stopping the goroutine, so the events so far still reach the test, which then fails.
func gather(t *testing.T, seq iter.Seq2[a2a.Event, error]) []a2a.Event {
	var out []a2a.Event
	for ev, err := range seq {
		if err != nil {
			t.Errorf("stream error = %v", err)
			break
		}
		out = append(out, ev)
	}
	return out
}
