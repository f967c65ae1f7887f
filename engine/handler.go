package engine

// The eleven A2A operations.

import (
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/uuid"

	"github.com/a2awebcap/a2awebcap/store"
)

// begin starts (or resumes) the task a message is for and returns its live state and the
// sequence number its stream starts after. The caller must release ts.
func (e *Engine) begin(ctx context.Context, req *a2a.SendMessageRequest) (ts *taskState, owner store.Owner, after int64, err error) {
	if err := e.checkOpen(); err != nil {
		return nil, owner, 0, err
	}
	if err := e.enter(); err != nil {
		return nil, owner, 0, err
	}
	defer e.exit()
	if req == nil || req.Message == nil {
		return nil, owner, 0, fmt.Errorf("%w: message is required", a2a.ErrInvalidParams)
	}
	if req.Message.ID == "" {
		return nil, owner, 0, fmt.Errorf("%w: message.messageId is required", a2a.ErrInvalidParams)
	}
	if len(req.Message.Parts) == 0 {
		return nil, owner, 0, fmt.Errorf("%w: message.parts must not be empty", a2a.ErrInvalidParams)
	}
	if owner, err = callerOf(ctx, req.Tenant); err != nil {
		return nil, owner, 0, err
	}
	if err := checkSend(req); err != nil {
		return nil, owner, 0, err
	}
	if req.Config != nil && req.Config.PushConfig != nil {
		if err := e.checkPushConfig(ctx, req.Config.PushConfig); err != nil {
			return nil, owner, 0, err
		}
	}
	msg := *req.Message
	if msg.Role == "" {
		msg.Role = a2a.MessageRoleUser
	}
	execCtx := &a2asrv.ExecutorContext{Metadata: req.Metadata, Tenant: owner.Tenant}
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		execCtx.User = cc.User
		execCtx.ServiceParams = cc.ServiceParams()
	}

	if msg.TaskID == "" {
		if req.Config != nil && req.Config.PushConfig != nil {
			if err := e.checkPrincipalPushLimit(ctx, owner); err != nil {
				return nil, owner, 0, err
			}
		}
		id := a2a.NewTaskID()
		if msg.ContextID == "" {
			msg.ContextID = a2a.NewContextID()
		}
		msg.TaskID = id
		now := time.Now().UTC()
		initial := &a2a.Task{ID: id, ContextID: msg.ContextID,
			Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &now}, History: []*a2a.Message{&msg}}
		execCtx.Message, execCtx.TaskID, execCtx.ContextID = &msg, id, msg.ContextID
		ts = e.state(id)
		ts.mu.Lock()
		ts.owner = owner
		// An inline push config is stored with the task, so it gets the task's first events.
		e.startRunLocked(ts, execCtx, initial, nil, inlinePushConfig(req, id), trace.SpanContextFromContext(ctx))
		ts.mu.Unlock()
		return ts, owner, 0, nil
	}

	// A follow-up message: it resumes an interrupted task.
	rec, err := e.st.Get(ctx, owner, msg.TaskID)
	if err != nil {
		return nil, owner, 0, e.storeErr(err)
	}
	if store.IsTerminal(rec.Task.Status.State) {
		return nil, owner, 0, fmt.Errorf("%w: task %s is %s and accepts no more messages", a2a.ErrUnsupportedOperation, rec.Task.ID, rec.Task.Status.State)
	}
	if e.cl != nil && !store.IsInterrupted(rec.Task.Status.State) {
		// Running here or on another replica (or about to be taken over).
		ts := e.state(rec.Task.ID)
		ts.mu.Lock()
		r := ts.run
		ts.mu.Unlock()
		e.release(ts)
		return nil, owner, 0, busyErr(rec.Task.ID, r)
	}
	if msg.ContextID != "" && msg.ContextID != rec.Task.ContextID {
		return nil, owner, 0, fmt.Errorf("%w: message contextId does not match the task's", a2a.ErrInvalidParams)
	}
	msg.ContextID = rec.Task.ContextID
	execCtx.Message = &msg
	return e.proceed(ctx, req, owner, rec, execCtx)
}

// proceed resumes the interrupted task rec for execCtx: with its message (a follow-up, which it
// adds to the task's history; req's inline push config is stored first), or without one (Waker:
// the executor goes on by itself). It writes the task working, then starts the run. The caller
// must release ts.
func (e *Engine) proceed(ctx context.Context, req *a2a.SendMessageRequest, owner store.Owner, rec *store.Task, execCtx *a2asrv.ExecutorContext) (ts *taskState, _ store.Owner, after int64, err error) {
	ts = e.state(rec.Task.ID)
	ts.mu.Lock()
	if r := ts.run; r != nil {
		ts.mu.Unlock()
		e.release(ts)
		return nil, owner, 0, busyErr(rec.Task.ID, r)
	}
	ts.owner = rec.Owner
	// Reserve the task while its history is written: no second resume can start.
	reserve := &run{done: make(chan struct{}), woken: req == nil}
	ts.run = reserve
	ts.mu.Unlock()

	// An inline push config is stored before the message is, so it gets the resumed run's events.
	if cfg := inlinePushConfig(req, rec.Task.ID); cfg != nil {
		if err := e.st.PutPushConfig(ctx, owner, cfg[0], e.opts.PushConfigLimits); err != nil {
			ts.mu.Lock()
			ts.run = nil
			ts.mu.Unlock()
			e.release(ts)
			return nil, owner, 0, e.putErr(err)
		}
	}
	next := cloneRec(rec)
	// The user's message is always recorded, even when a client reuses a message ID.
	if execCtx.Message != nil {
		next.Task.History = append(next.Task.History, execCtx.Message)
	}
	// The executor sees the task as the message found it: its state says what it was waiting
	// for (executors written for a2a-go look for input-required there).
	stored := cloneTask(next.Task)
	// The message resumes the task: it is working again from now on, and its log records it
	// as it now stands. So the stream of a follow-up opens with a task no longer interrupted (a
	// client may end a stream at an interrupted state), and a subscriber that waited on the
	// interrupted task sees it resume as a status update (see streamEvent).
	now := time.Now().UTC()
	next.Task.Status = a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now}
	snapshot := cloneTask(next.Task)
	e.leaseFor(next)
	err = e.st.Update(ctx, next, []a2a.Event{snapshot})
	next.LeaseTTL = 0
	e.wakePush()
	if err == nil {
		e.announce(next, []a2a.Event{snapshot})
	}
	if err != nil {
		ts.mu.Lock()
		ts.run = nil
		ts.mu.Unlock()
		e.release(ts)
		if errors.Is(err, store.ErrConflict) {
			return nil, owner, 0, fmt.Errorf("%w: task %s changed meanwhile; retry", a2a.ErrUnsupportedOperation, rec.Task.ID)
		}
		return nil, owner, 0, e.storeErr(err)
	}
	execCtx.TaskID, execCtx.ContextID, execCtx.StoredTask = rec.Task.ID, rec.Task.ContextID, stored
	ts.mu.Lock()
	e.publishLocked(ts, cloneRec(next), []a2a.Event{snapshot})
	e.startRunLocked(ts, execCtx, nil, next, nil, trace.SpanContextFromContext(ctx))
	ts.run.woken = req == nil
	ts.unlock()
	return ts, owner, rec.LastSeq, nil
}

// inlinePushConfig returns the push config sent with a message (nil if none), for task id.
func inlinePushConfig(req *a2a.SendMessageRequest, id a2a.TaskID) []*a2a.PushConfig {
	if req == nil || req.Config == nil || req.Config.PushConfig == nil {
		return nil
	}
	cfg := *req.Config.PushConfig
	cfg.TaskID = id
	if cfg.ID == "" {
		cfg.ID = uuid.NewString()
	}
	return []*a2a.PushConfig{&cfg}
}

// SendMessage runs the agent on a message. By default it waits until the task is finished or
// interrupted; with returnImmediately it returns the task as soon as it exists.
func (e *Engine) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	ts, owner, after, err := e.begin(ctx, req)
	if ts != nil {
		defer e.release(ts)
	}
	if err != nil {
		return nil, err
	}
	return e.await(ctx, ts, owner, after, req)
}

// await waits for the outcome of the message req that began ts after sequence number after.
func (e *Engine) await(ctx context.Context, ts *taskState, owner store.Owner, after int64, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	immediate := req.Config != nil && req.Config.ReturnImmediately
	// Waiting for the outcome only, unless the first event will do.
	for ev, err := range e.watch(ctx, ts, owner, after, false, endsStream, !immediate) {
		if err != nil {
			return nil, err
		}
		if msg, ok := ev.Event.(*a2a.Message); ok && ev.Seq == 0 {
			return msg, nil
		}
		if immediate {
			break
		}
	}
	return e.sendResult(ctx, ts, owner, req)
}

// sendResult is what SendMessage returns once the watch of ts has ended without an error or a
// direct reply: the task as it stands.
func (e *Engine) sendResult(ctx context.Context, ts *taskState, owner store.Owner, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	ts.mu.Lock()
	rec, partial := ts.rec, ts.partial
	ts.mu.Unlock()
	if rec == nil {
		return nil, fmt.Errorf("%w: the agent produced no response", a2a.ErrInternalError)
	}
	if partial {
		// Another replica finished it: the store has it whole.
		var err error
		if rec, err = e.st.Get(ctx, owner, rec.Task.ID); err != nil {
			return nil, e.storeErr(err)
		}
	}
	var hl *int
	if req.Config != nil {
		hl = req.Config.HistoryLength
	}
	return shape(rec.Task, hl, true), nil
}

// SendMessageFunc is SendMessage for callers that would rather not wait: it returns at once,
// and calls done with what SendMessage would have returned once that is known. Until then no
// goroutine waits on the task's behalf: done runs on the goroutine that settles the task (its
// run, once the task is finished or interrupted), or on the caller's, before SendMessageFunc
// returns, when the outcome is known at once (a refused request, say). If ctx ends first, done
// gets its cause. done is called exactly once; it should not block, for the run that calls it
// goes on (and publishes the task's next events) only after it returns. (The capnweb binding
// uses it, so that a blocking send holds neither a goroutine nor the connection's read loop.)
//
// Unlike SendMessage, it may block only when the message continues an existing task (its
// record is read from the store) or carries a push configuration (which is checked): the
// caller, if it must not block, may use SendMessage on another goroutine for those.
func (e *Engine) SendMessageFunc(ctx context.Context, req *a2a.SendMessageRequest, done func(a2a.SendMessageResult, error)) {
	ts, owner, after, err := e.begin(ctx, req)
	if err != nil {
		if ts != nil {
			e.release(ts)
		}
		done(nil, err)
		return
	}
	if req.Config != nil && req.Config.ReturnImmediately {
		// The first event will do: it comes soon, and waiting for it is not worth a waker.
		go func() {
			defer e.release(ts)
			done(e.await(ctx, ts, owner, after, req))
		}()
		return
	}
	w := &sendWait{e: e, ctx: ctx, ts: ts, owner: owner, c: cursor{seq: after}, req: req, done: done}
	w.wake = w.check
	w.stop = context.AfterFunc(ctx, func() { w.finish(nil, context.Cause(ctx), false) })
	w.check()
}

// sendWait is a SendMessageFunc waiting for its outcome, as a waker of its task.
type sendWait struct {
	e     *Engine
	ctx   context.Context
	ts    *taskState
	owner store.Owner
	c     cursor
	req   *a2a.SendMessageRequest
	done  func(a2a.SendMessageResult, error)
	wake  func()      // check, made once
	stop  func() bool // stops the AfterFunc that finishes on ctx's end
	res   a2a.SendMessageResult
	err   error
	ended atomic.Bool
}

// check reads what the task published since the last check; once the outcome is known it
// finishes, else it waits again as a waker. Checks run one at a time: the first on the caller,
// each next one by the goroutine that fired the waker the last one armed.
func (w *sendWait) check() {
	if w.ended.Load() {
		return
	}
	if _, over := w.e.advance(w.ctx, w.ts, w.owner, &w.c, endsStream, true, w.wake, w.yield); !over {
		return
	}
	if w.res == nil && w.err == nil {
		w.res, w.err = w.e.sendResult(w.ctx, w.ts, w.owner, w.req)
	}
	w.finish(w.res, w.err, true)
}

// yield takes the watch's events as SendMessage's loop does: an error or a direct reply is the
// outcome.
func (w *sendWait) yield(ev store.Event, err error) bool {
	if err != nil {
		w.err = err
		return false
	}
	if msg, ok := ev.Event.(*a2a.Message); ok && ev.Seq == 0 {
		w.res = msg
		return false
	}
	return true
}

// finish ends the wait with its outcome. stop: not called by the AfterFunc itself (which may
// run before w.stop is set).
func (w *sendWait) finish(res a2a.SendMessageResult, err error, stop bool) {
	if w.ended.Swap(true) {
		return
	}
	if stop {
		w.stop()
	}
	w.e.release(w.ts)
	w.done(res, err)
}

// SendStreamingMessage runs the agent on a message and streams the task's events: the Task
// first (or a single Message), then its status and artifact updates, until it is finished or
// interrupted. A follow-up message's stream opens with the task it resumed: working, with the
// message in its history.
func (e *Engine) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if e.opts.NoStreaming {
			yield(nil, a2a.ErrUnsupportedOperation)
			return
		}
		ts, owner, after, err := e.begin(ctx, req)
		if ts != nil {
			defer e.release(ts)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		for ev, err := range e.watch(ctx, ts, owner, after, false, endsStream, false) {
			if !yield(withSeq(ev), err) || err != nil {
				return
			}
		}
	}
}

// GetTask returns a task, with historyLength applied.
func (e *Engine) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, fmt.Errorf("%w: historyLength must not be negative", a2a.ErrInvalidParams)
	}
	owner, err := callerOf(ctx, req.Tenant)
	if err == nil {
		err = checkID("id", string(req.ID))
	}
	if err != nil {
		return nil, err
	}
	rec, err := e.st.Get(ctx, owner, req.ID)
	if err != nil {
		return nil, e.storeErr(err)
	}
	return shape(rec.Task, req.HistoryLength, true), nil
}

// ListTasks lists the caller's tasks, newest first, with cursor pagination.
func (e *Engine) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	if req.PageSize < 0 || req.PageSize > 100 {
		return nil, fmt.Errorf("%w: pageSize must be between 1 and 100", a2a.ErrInvalidParams)
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, fmt.Errorf("%w: historyLength must not be negative", a2a.ErrInvalidParams)
	}
	if req.Status != "" && !knownStates[req.Status] {
		return nil, fmt.Errorf("%w: unknown task state %q", a2a.ErrInvalidParams, req.Status)
	}
	owner, err := callerOf(ctx, req.Tenant)
	if err == nil {
		err = checkID("contextId", req.ContextID)
	}
	if err != nil {
		return nil, err
	}
	q := store.ListQuery{ContextID: req.ContextID, State: req.Status, PageSize: req.PageSize, PageToken: req.PageToken}
	if req.StatusTimestampAfter != nil {
		q.UpdatedAfter = *req.StatusTimestampAfter
	}
	res, err := e.st.List(ctx, owner, q)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: invalid pageToken", a2a.ErrInvalidParams)
		}
		return nil, e.storeErr(err)
	}
	out := &a2a.ListTasksResponse{Tasks: make([]*a2a.Task, 0, len(res.Tasks)), TotalSize: res.TotalSize, NextPageToken: res.NextPageToken}
	for _, t := range res.Tasks {
		out.Tasks = append(out.Tasks, shape(t.Task, req.HistoryLength, req.IncludeArtifacts))
	}
	out.PageSize = req.PageSize
	if out.PageSize == 0 {
		out.PageSize = 50
	}
	return out, nil
}

// CancelTask cancels a task that is not finished, through the executor's Cancel.
func (e *Engine) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	owner, err := callerOf(ctx, req.Tenant)
	if err == nil {
		err = checkID("id", string(req.ID))
	}
	if err != nil {
		return nil, err
	}
	rec, err := e.st.Get(ctx, owner, req.ID)
	if err != nil {
		return nil, e.storeErr(err)
	}
	if store.IsTerminal(rec.Task.Status.State) {
		return nil, fmt.Errorf("%w: task %s is %s", a2a.ErrTaskNotCancelable, rec.Task.ID, rec.Task.Status.State)
	}
	ts := e.state(req.ID)
	defer e.release(ts)
	ts.mu.Lock()
	r := ts.run
	ts.mu.Unlock()
	execCtx := &a2asrv.ExecutorContext{TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, StoredTask: cloneTask(rec.Task), Metadata: req.Metadata, Tenant: owner.Tenant}
	if r != nil && r.execCtx != nil {
		execCtx.Message = r.execCtx.Message
		execCtx.User = r.execCtx.User
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var events []a2a.Event
	for ev, err := range e.exec.Cancel(cctx, execCtx) {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", a2a.ErrTaskNotCancelable, err)
		}
		if ev != nil {
			events = append(events, ev)
		}
	}
	for attempt := 0; attempt < 8; attempt++ {
		if attempt > 0 {
			if rec, err = e.st.Get(ctx, owner, req.ID); err != nil {
				return nil, e.storeErr(err)
			}
			if store.IsTerminal(rec.Task.Status.State) {
				if rec.Task.Status.State == a2a.TaskStateCanceled {
					return shape(rec.Task, nil, true), nil
				}
				return nil, fmt.Errorf("%w: task %s is %s", a2a.ErrTaskNotCancelable, rec.Task.ID, rec.Task.Status.State)
			}
		}
		next := cloneRec(rec)
		evs := append([]a2a.Event(nil), events...)
		for _, ev := range evs {
			if err := apply(next.Task, ev); err != nil {
				return nil, err
			}
		}
		if next.Task.Status.State != a2a.TaskStateCanceled {
			ev := statusEvent(next.Task, a2a.TaskStateCanceled, "")
			apply(next.Task, ev)
			evs = append(evs, ev)
		}
		err := e.st.Update(ctx, next, evs)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		e.wakePush()
		if err != nil {
			return nil, e.storeErr(err)
		}
		e.announce(next, evs)
		ts.mu.Lock()
		if ts.rec == nil || ts.rec.LastSeq == next.LastSeq-int64(len(evs)) {
			e.publishLocked(ts, cloneRec(next), evs)
		} else {
			e.learnLocked(ts, cloneRec(next))
		}
		if ts.run != nil && ts.run.cancel != nil {
			ts.run.cancel(errCanceled)
		}
		ts.unlock()
		return shape(next.Task, nil, true), nil
	}
	return nil, fmt.Errorf("%w: task %s keeps changing", a2a.ErrTaskNotCancelable, req.ID)
}

var errCanceled = errors.New("engine: task canceled")

var knownStates = map[a2a.TaskState]bool{
	a2a.TaskStateSubmitted: true, a2a.TaskStateWorking: true, a2a.TaskStateInputRequired: true,
	a2a.TaskStateAuthRequired: true, a2a.TaskStateCompleted: true, a2a.TaskStateFailed: true,
	a2a.TaskStateCanceled: true, a2a.TaskStateRejected: true,
}

// SubscribeToTask streams a task's events: the Task as it is now, then its status and artifact
// updates, until it reaches a terminal state, or an interrupted one after the first event (a
// subscription to an input-required task waits for the follow-up message and what it brings).
// With Last-Event-ID (below) it ends only at a terminal state.
//
// Resuming a stream: every streamed event carries its sequence number in the task's log under
// the metadata key SeqKey. A client that lost its stream subscribes again with the service
// parameter Last-Event-ID (an HTTP header; gRPC metadata last-event-id) set to the last number
// it received: it then gets every event after that one, from the log, before the live ones —
// also for a task that has finished meanwhile. Without it, the stream opens with the Task.
func (e *Engine) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if e.opts.NoStreaming {
			yield(nil, a2a.ErrUnsupportedOperation)
			return
		}
		owner, err := callerOf(ctx, req.Tenant)
		if err == nil {
			err = checkID("id", string(req.ID))
		}
		if err != nil {
			yield(nil, err)
			return
		}
		last, resuming, err := lastEventID(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		// Watch the task before reading it: an execution that ends between the read and the
		// watch would otherwise leave us with a stale record and nothing running to wake us.
		ts := e.state(req.ID)
		defer e.release(ts)
		rec, err := e.st.Get(ctx, owner, req.ID)
		if err != nil {
			yield(nil, e.storeErr(err))
			return
		}
		if store.IsTerminal(rec.Task.Status.State) && !(resuming && last < rec.LastSeq) {
			yield(nil, fmt.Errorf("%w: task %s is %s", a2a.ErrUnsupportedOperation, rec.Task.ID, rec.Task.Status.State))
			return
		}
		ts.mu.Lock()
		ts.owner = rec.Owner
		e.learnLocked(ts, cloneRec(rec))
		ts.unlock()
		after := rec.LastSeq
		if resuming {
			after = last
		} else {
			snapshot := shape(rec.Task, nil, true)
			setSeq(&snapshot.Metadata, rec.LastSeq)
			if !yield(snapshot, nil) {
				return
			}
		}
		stops := endsStream
		if resuming {
			stops = store.IsTerminal
		}
		// The stream has begun: with the snapshot above, or, resuming, before the client lost it.
		for ev, err := range e.watch(ctx, ts, owner, after, true, stops, false) {
			if !yield(withSeq(ev), err) || err != nil {
				return
			}
		}
	}
}

// SeqKey is the metadata key under which streamed events carry their sequence number in the
// task's event log (see SubscribeToTask).
const SeqKey = "a2awebcap.seq"

// lastEventID reads the Last-Event-ID service parameter.
func lastEventID(ctx context.Context) (int64, bool, error) {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok {
		return 0, false, nil
	}
	vals, ok := cc.ServiceParams().Get("Last-Event-ID")
	if !ok || len(vals) == 0 || vals[0] == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(vals[0]), 10, 64)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("%w: Last-Event-ID must be a sequence number from the %q metadata of an event", a2a.ErrInvalidParams, SeqKey)
	}
	return n, true, nil
}

// withSeq returns the event with its sequence number in its metadata (a copy: logged events
// are shared).
func withSeq(ev store.Event) a2a.Event {
	if ev.Seq == 0 {
		return ev.Event
	}
	switch x := ev.Event.(type) {
	case *a2a.Task:
		c := cloneTask(x)
		setSeq(&c.Metadata, ev.Seq)
		return c
	case *a2a.TaskStatusUpdateEvent:
		c := *x
		c.Metadata = cloneMeta(x.Metadata)
		setSeq(&c.Metadata, ev.Seq)
		return &c
	case *a2a.TaskArtifactUpdateEvent:
		c := *x
		c.Metadata = cloneMeta(x.Metadata)
		setSeq(&c.Metadata, ev.Seq)
		return &c
	case *a2a.Message:
		c := *x
		c.Metadata = cloneMeta(x.Metadata)
		setSeq(&c.Metadata, ev.Seq)
		return &c
	}
	return ev.Event
}

func cloneMeta(m map[string]any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

func setSeq(m *map[string]any, seq int64) {
	if *m == nil {
		*m = map[string]any{}
	}
	(*m)[SeqKey] = seq
}

// Events replays a task's log after a sequence number (for clients that reconnect), then
// follows it live like SubscribeToTask. Each event comes with its sequence number.
func (e *Engine) Events(ctx context.Context, tenant string, id a2a.TaskID, afterSeq int64) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		owner, err := callerOf(ctx, tenant)
		if err == nil {
			err = checkID("id", string(id))
		}
		if err != nil {
			yield(store.Event{}, err)
			return
		}
		ts := e.state(id) // before the read, as in SubscribeToTask
		defer e.release(ts)
		rec, err := e.st.Get(ctx, owner, id)
		if err != nil {
			yield(store.Event{}, e.storeErr(err))
			return
		}
		ts.mu.Lock()
		ts.owner = rec.Owner
		e.learnLocked(ts, cloneRec(rec))
		ts.unlock()
		for ev, err := range e.watch(ctx, ts, owner, afterSeq, afterSeq > 0, store.IsTerminal, false) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// ---- push notification configs ----

func (e *Engine) pushAllowed() error {
	if e.opts.NoPushNotifications {
		return a2a.ErrPushNotificationNotSupported
	}
	return nil
}

// checkPushConfig validates a push config a client sends: push is on, and the URL is one the
// server may send to.
func (e *Engine) checkPushConfig(ctx context.Context, cfg *a2a.PushConfig) error {
	if err := e.pushAllowed(); err != nil {
		return err
	}
	if cfg.URL == "" {
		return fmt.Errorf("%w: url is required", a2a.ErrInvalidParams)
	}
	if err := checkPushFields(cfg); err != nil {
		return err
	}
	if e.opts.Push != nil {
		if err := e.opts.Push.CheckURL(ctx, cfg.URL); err != nil {
			return fmt.Errorf("%w: push notification url refused: %w", a2a.ErrInvalidParams, err)
		}
	}
	return nil
}

func (e *Engine) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	if err := e.checkPushConfig(ctx, req); err != nil {
		return nil, err
	}
	owner, err := callerOf(ctx, req.Tenant)
	if err == nil {
		err = checkPushIDs(req.TaskID, req.ID)
	}
	if err != nil {
		return nil, err
	}
	cfg := *req
	if cfg.ID == "" {
		cfg.ID = uuid.NewString()
	}
	if err := e.st.PutPushConfig(ctx, owner, &cfg, e.opts.PushConfigLimits); err != nil {
		return nil, e.putErr(err)
	}
	return &cfg, nil
}

func (e *Engine) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	if err := e.pushAllowed(); err != nil {
		return nil, err
	}
	owner, err := callerOf(ctx, req.Tenant)
	if err == nil {
		err = checkPushIDs(req.TaskID, req.ID)
	}
	if err != nil {
		return nil, err
	}
	cfg, err := e.st.GetPushConfig(ctx, owner, req.TaskID, req.ID)
	if err != nil {
		return nil, e.storeErr(err)
	}
	return cfg, nil
}

func (e *Engine) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	if err := e.pushAllowed(); err != nil {
		return nil, err
	}
	owner, err := callerOf(ctx, req.Tenant)
	if err == nil {
		err = checkPushIDs(req.TaskID, "")
	}
	if err != nil {
		return nil, err
	}
	page, err := e.st.ListPushConfigs(ctx, owner, req.TaskID, store.PushConfigQuery{PageSize: req.PageSize, PageToken: req.PageToken})
	if err != nil {
		return nil, e.storeErr(err)
	}
	return &a2a.ListTaskPushConfigResponse{Configs: page.Configs, NextPageToken: page.NextPageToken}, nil
}

func (e *Engine) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	if err := e.pushAllowed(); err != nil {
		return err
	}
	owner, err := callerOf(ctx, req.Tenant)
	if err == nil {
		err = checkPushIDs(req.TaskID, req.ID)
	}
	if err != nil {
		return err
	}
	err = e.st.DeletePushConfig(ctx, owner, req.TaskID, req.ID)
	if errors.Is(err, store.ErrNotFound) {
		// Deleting is idempotent (A2A 1.0 §3.1.10): a config already gone is not an error,
		// as long as the task is the caller's.
		if _, gerr := e.st.Get(ctx, owner, req.TaskID); gerr == nil {
			return nil
		}
	}
	return e.storeErr(err)
}

// GetExtendedAgentCard serves the extended card to authenticated callers.
func (e *Engine) GetExtendedAgentCard(ctx context.Context, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	if e.opts.ExtendedCard == nil {
		return nil, a2a.ErrExtendedCardNotConfigured
	}
	if cc, ok := a2asrv.CallContextFrom(ctx); !ok || cc.User == nil || !cc.User.Authenticated {
		return nil, a2a.ErrUnauthenticated
	}
	return e.opts.ExtendedCard(ctx)
}
