package agent

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/trace"
)

// MetaKey is the metadata key under which the bridge puts a working-log entry on a status
// update: {"kind", "rule", "action", "params", "result", "text"} as in [Entry].
const MetaKey = "a2awebcap.agent/log"

// ApprovalKey is the metadata key under which the question of a capability's pending approval
// (an input-required status message) carries the approval itself: the capability.Pending as
// JSON, for clients to show as buttons rather than prose (docs/capabilities.md).
const ApprovalKey = "a2awebcap.agent/approval"

// Executor makes h an a2asrv.AgentExecutor: each caller (the principal of the A2A call, see
// [PrincipalOf]) talks to its own instance. Each message is a turn of its instance, in the
// message's context (its session); its text parts joined are an event from the user. The turn's
// working log becomes the task's events:
//
//	thought, call, step  → working TaskStatusUpdateEvent, the entry under MetaKey
//	queued               → working status saying what the turn waits for (the model, or the
//	                       previous turn of its session) and how many wait before it
//	result               → TaskArtifactUpdateEvent named "<action> result" (text and data parts),
//	                       the entry under MetaKey in the artifact's metadata
//	output               → working status whose message is the output text
//	text (model stream)  → TaskArtifactUpdateEvent chunks of one artifact named "answer": the
//	                       first creates it, the rest have Append set
//	input-required       → input-required status asking the question: at the end of a turn
//	                       (the rules asked), or in its middle (an effect called AskUser: the
//	                       turn waits, and the task's next message is the answer)
//	relay                → an event of another agent's task an effect streams in (RelayEvent):
//	                       a working status with the callee's message, or an artifact whose
//	                       ID is "<callee task>:<artifact ID>", with provenance under MetaKey
//	end                  → completed status with the reply, once the turn is committed; failed
//	                       when the model did not answer (the message is Run.Failure) or the
//	                       turn could not be saved (a generic message)
//
// A turn that stops waiting for an answer without one (no answer within ParkTimeout, or a
// capability's approval decided another way) has the engine run its task again without a
// message (engine.Waker: SetWake), and that run reports the rest of the turn, so the task
// leaves input-required.
//
// Canceling the task cancels its turn at once (a model call in flight is aborted); the turn
// then commits nothing. The executor also implements engine.Recoverer (RecoverTask): a task
// whose turn committed before the process died is settled from its turn record.
func Executor(h *Host) a2asrv.AgentExecutor { return executor{h} }

type executor struct{ h *Host }

func (x executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a := &Agent{name: x.h.def.name, h: x.h, p: PrincipalOf(ec)}
		ev := Event{Kind: "message", Source: Source{Kind: SourceUser}, Text: messageText(ec.Message),
			Context: Context{Task: string(ec.TaskID), Session: ec.ContextID}}
		var msgID string
		var meta map[string]any
		if ec.Message != nil {
			msgID, meta = ec.Message.ID, ec.Message.Metadata
		}
		if ec.Message == nil && ec.StoredTask != nil { // woken (engine.Waker): its turn goes on
			t, from := x.h.takeWoken(a.p, string(ec.TaskID))
			if t == nil {
				yield(endEvent(ec, map[string]string{"status": "failed", "failure": "This task's turn is no longer running."}), nil)
				return
			}
			x.relay(ctx, ec, t, from, yield)
			return
		}
		tenant, user, task := ec.Tenant, ec.User, ec.TaskID
		wake := func(ctx context.Context) error {
			w := x.h.wake.Load()
			if w == nil {
				return errNoWaker
			}
			return (*w)(ctx, tenant, user, task)
		}
		t, from, err := a.start(ctx, ev, turnOptions{bound: true, message: msgID, meta: meta, trace: traceContext(ec.ServiceParams),
			span: recordedSpan(ctx), wake: wake})
		if err != nil {
			yield(nil, err) // nothing is emitted yet, so the request fails
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			t.cancel(ErrCanceled)
			return
		}
		x.relay(ctx, ec, t, from, yield)
	}
}

// errNoWaker: the executor runs in no engine that can wake its tasks.
var errNoWaker = errors.New("agent: no engine wakes this task")

// SetWake implements engine.Waker: a turn that stops waiting for the user's answer without one
// (no answer within HostOptions.ParkTimeout, or a capability's approval decided another way)
// has its task, input-required, run again without a message, and that run reports the rest of
// the turn.
func (x executor) SetWake(wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error) {
	x.h.wake.Store(&wake)
}

// relay yields the events of t's working log from index from, as the task's.
func (x executor) relay(ctx context.Context, ec *a2asrv.ExecutorContext, t *turn, from int, yield func(a2a.Event, error) bool) {
	// A turn that parks outlives this run: the engine's end of the run must not cancel it.
	stop := context.AfterFunc(ctx, func() { t.cancel(context.Cause(ctx)) })
	defer stop()
	msg := func(text string) *a2a.Message {
		if text == "" {
			return nil
		}
		return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
	}
	var answer a2a.ArtifactID // the streamed answer's artifact, once started
	var said *a2a.Message     // the last reply said while working (EntryOutput)
	for i := from; ; i++ {
		e, err := t.out.wait(ctx, i)
		if err != nil {
			return // the run is over (canceled): its turn is canceled with it
		}
		var out a2a.Event
		switch e.Kind {
		case EntryThought, EntryCall, EntryStep:
			if e.Result["restart"] == "true" {
				answer = "" // the turn starts again: its answer is a new artifact
			}
			st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil)
			st.SetMeta(MetaKey, entryMeta(e))
			out = st
		case EntrySession: // a budget running low, the session's end: said to the user
			st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg(e.Text))
			m := entryMeta(e)
			m["session"] = e.Rule
			st.SetMeta(MetaKey, m)
			out = st
		case EntryQueued:
			st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg(queuedText(e)))
			m := entryMeta(e)
			for k, v := range e.Result {
				m[k] = v
			}
			st.SetMeta(MetaKey, m)
			out = st
		case EntryResult:
			data := map[string]any{}
			for k, v := range e.Result {
				data[k] = v
			}
			ae := a2a.NewArtifactEvent(ec, a2a.NewTextPart(e.Rule+": "+string(e.Action)+" "+e.Result["status"]), a2a.NewDataPart(data))
			ae.Artifact.Name = string(e.Action) + " result"
			ae.Artifact.Metadata = map[string]any{MetaKey: entryMeta(e)} // the working log: clients may show it apart
			out = ae
		case EntryOutput:
			said = msg(e.Text)
			st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, said)
			st.SetMeta(MetaKey, entryMeta(e))
			out = st
		case EntryText:
			if answer == "" {
				ae := a2a.NewArtifactEvent(ec, a2a.NewTextPart(e.Text))
				ae.Artifact.Name = "answer"
				answer = ae.Artifact.ID
				out = ae
			} else {
				ae := a2a.NewArtifactUpdateEvent(ec, answer, a2a.NewTextPart(e.Text))
				ae.Artifact.Name = "answer"
				out = ae
			}
		case EntryInput:
			if !parkedEntry(e) {
				continue // the end reports it
			}
			stop() // the turn waits for the next message, beyond this run
			q := msg(e.Text)
			var approval map[string]any // a capability's pending approval, as data (askApproval)
			if q != nil && json.Unmarshal([]byte(e.Result["approval"]), &approval) == nil {
				q.Metadata = map[string]any{ApprovalKey: approval}
			}
			var qmeta map[string]any // who asks, when an effect asks for another (AskUserWith)
			if q != nil && json.Unmarshal([]byte(e.Result["metadata"]), &qmeta) == nil {
				for k, v := range qmeta {
					q.SetMeta(k, v)
				}
			}
			st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, q)
			st.SetMeta(MetaKey, map[string]any{"kind": string(EntryInput), "parked": true})
			yield(st, nil)
			return
		case EntryRelay:
			if out = relayEvent(ec, e); out == nil {
				continue
			}
		case EntryEnd:
			end := endEvent(ec, e.Result)
			if m := end.Status.Message; m != nil && said != nil && messageText(m) == messageText(said) {
				// The reply said already: the same message, so the history holds it once.
				m.ID = said.ID
			}
			out = end
		}
		if !yield(out, nil) {
			t.cancel(ErrCanceled)
			return
		}
		if e.Kind == EntryEnd {
			return
		}
	}
}

// recordedSpan is the span of ctx when this process records it (serve's server span of the
// request, which the engine runs the executor in), else the zero SpanContext: a remote span
// context (the caller's, when no tracer runs here) is not one to make children of.
func recordedSpan(ctx context.Context) trace.SpanContext {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || sc.IsRemote() {
		return trace.SpanContext{}
	}
	return sc
}

// traceContext is the W3C trace context (traceparent, tracestate) of a request, as its service
// parameters carry it: an HTTP header, gRPC metadata, a capnweb call's params.
func traceContext(sp *a2asrv.ServiceParams) [2]string {
	if sp == nil {
		return [2]string{}
	}
	var tc [2]string
	for i, k := range []string{"traceparent", "tracestate"} {
		if v, ok := sp.Get(k); ok && len(v) > 0 && len(v[0]) <= 512 {
			tc[i] = v[0]
		}
	}
	return tc
}

// endEvent is the final status of a turn that ended with res.
func endEvent(t a2a.TaskInfoProvider, res map[string]string) *a2a.TaskStatusUpdateEvent {
	msg := func(text string) *a2a.Message {
		if text == "" {
			return nil
		}
		return a2a.NewMessageForTask(a2a.MessageRoleAgent, t, a2a.NewTextPart(text))
	}
	var st *a2a.TaskStatusUpdateEvent
	switch res["status"] {
	case "input-required":
		st = a2a.NewStatusUpdateEvent(t, a2a.TaskStateInputRequired, msg(res["question"]))
	case "canceled": // with why, when a newer message interrupted it
		st = a2a.NewStatusUpdateEvent(t, a2a.TaskStateCanceled, msg(res["failure"]))
	case "failed": // the cause stays in the server's hands
		st = a2a.NewStatusUpdateEvent(t, a2a.TaskStateFailed, msg(cmpOr(res["failure"], "I could not save my memory of this message.")))
	default:
		st = a2a.NewStatusUpdateEvent(t, a2a.TaskStateCompleted, msg(res["reply"]))
	}
	meta := map[string]any{"kind": string(EntryEnd), "observation": res["observation"], "policy": res["policy"]}
	for _, k := range []string{"warning", "collapse"} { // the session's notes, repeated
		if res[k] != "" {
			meta[k] = res[k]
		}
	}
	st.SetMeta(MetaKey, meta)
	return st
}

func queuedText(e Entry) string {
	if e.Result["scope"] == "session" {
		return "Waiting for the previous message of this conversation to be answered."
	}
	return "Waiting for the model: " + e.Result["ahead"] + " ahead."
}

func entryMeta(e Entry) map[string]any {
	m := map[string]any{"kind": string(e.Kind)}
	if e.Rule != "" {
		m["rule"] = e.Rule
	}
	if e.Action != "" {
		m["action"] = string(e.Action)
	}
	if e.Text != "" {
		m["text"] = e.Text
	}
	if len(e.Params) > 0 {
		p := map[string]any{}
		for k, v := range maps.All(e.Params) {
			p[k] = v
		}
		m["params"] = p
	}
	return m
}

func (x executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		x.h.cancelTask(PrincipalOf(ec), string(ec.TaskID), ErrCanceled)
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// RecoverTask implements engine.Recoverer: the events that settle task from the last turn
// committed for it, when that turn integrated the task's last message; nil otherwise (the turn
// that ran never committed, and the engine fails the task).
func (x executor) RecoverTask(ctx context.Context, task *a2a.Task) ([]a2a.Event, error) {
	rec, _, err := x.h.store.TurnByTask(ctx, x.h.def.name, string(task.ID))
	if err != nil || rec == nil {
		return nil, err
	}
	var last *a2a.Message
	for _, m := range task.History {
		if m != nil && m.Role == a2a.MessageRoleUser {
			last = m
		}
	}
	if last != nil && rec.Message != "" && last.ID != rec.Message {
		return nil, nil // a later message's turn was running: it never committed
	}
	return []a2a.Event{endEvent(task, map[string]string{"status": string(rec.Status), "reply": rec.Reply,
		"question": rec.Question, "observation": rec.Observation, "policy": strconv.Itoa(rec.Policy)})}, nil
}

// messageText joins the text parts of m with newlines.
func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var s string
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			s = joinLine(s, string(t))
		}
	}
	return s
}
