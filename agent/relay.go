package agent

// Seams for capabilities that act for a turn as another agent's client (package agent/peer):
// what the message that started the turn carried (its A2A metadata), values that live as long
// as the turn, events of another agent's task streamed into the turn's task, a question asked
// on another agent's behalf, and the provenance of a call's result.
//
// Concurrency: a turn's metadata is set before it starts and never changes; its values and
// the provenance of the call in flight have their own mutex (turn.seamMu), since effects run
// on goroutines of their own. Relayed events go through the turn's output, which has its own.

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/trace"
)

// EntryRelay is a working-log entry carrying an event of another agent's task, streamed into
// the turn's task by an effect ([RelayEvent]). It is not part of Run.Log: it is what a callee
// said, not something the instance did.
const EntryRelay EntryKind = "relay"

// Relay is an event of another agent's task (the callee's) that an effect of a turn streams
// into the turn's task. Exactly one of Message and Artifact is used: a status update of the
// callee (its message, possibly nil) or an artifact of it.
type Relay struct {
	// Source is where it came from, "agent <url>".
	Source string
	// Agent is the callee's name, Task its task and State that task's state.
	Agent, Task, State string
	// Message is the callee's status message, for a status update.
	Message *a2a.Message
	// Artifact is the callee's artifact, for an artifact update, with Append and LastChunk as
	// the callee sent them.
	Artifact          *a2a.Artifact
	Append, LastChunk bool
}

// RelayEvent streams r into the task of the turn ctx belongs to, after what the turn streamed
// before it: a status update becomes a working status whose message is the callee's; an
// artifact, an artifact of the task whose ID is "<callee task>:<artifact ID>" (and a message,
// "<callee task>:<message ID>"). Each carries
// {"kind": "relay", "source", "agent", "task", "state"} under MetaKey (an artifact in its own
// metadata). Outside a turn it returns ErrNoTurn.
func RelayEvent(ctx context.Context, r Relay) error {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return ErrNoTurn
	}
	res := map[string]string{"source": r.Source, "agent": r.Agent, "task": r.Task, "state": r.State}
	var text string
	switch {
	case r.Artifact != nil:
		data, err := json.Marshal(r.Artifact)
		if err != nil {
			return err
		}
		res["artifact"] = string(data)
		if r.Append {
			res["append"] = "true"
		}
		if r.LastChunk {
			res["lastChunk"] = "true"
		}
	case r.Message != nil:
		data, err := json.Marshal(r.Message)
		if err != nil {
			return err
		}
		res["message"] = string(data)
		text = messageText(r.Message)
	}
	t.out.push(Entry{Kind: EntryRelay, Text: text, Result: res})
	return nil
}

// relayMeta is the provenance an entry of EntryRelay carries on the wire.
func relayMeta(e Entry) map[string]any {
	return map[string]any{"kind": "relay", "source": e.Result["source"], "agent": e.Result["agent"],
		"task": e.Result["task"], "state": e.Result["state"]}
}

// relayEvent is the event of the task ec an EntryRelay entry becomes, or nil if it carries
// nothing the bridge can read.
func relayEvent(ec a2a.TaskInfoProvider, e Entry) a2a.Event {
	meta := relayMeta(e)
	if raw := e.Result["artifact"]; raw != "" {
		var art a2a.Artifact
		if json.Unmarshal([]byte(raw), &art) != nil {
			return nil
		}
		ae := a2a.NewArtifactUpdateEvent(ec, a2a.ArtifactID(e.Result["task"]+":"+string(art.ID)), art.Parts...)
		ae.Artifact.Name, ae.Artifact.Description = art.Name, art.Description
		ae.Artifact.Metadata = map[string]any{MetaKey: meta}
		ae.Append, ae.LastChunk = e.Result["append"] == "true", e.Result["lastChunk"] == "true"
		return ae
	}
	var msg *a2a.Message
	if raw := e.Result["message"]; raw != "" {
		var m a2a.Message
		if json.Unmarshal([]byte(raw), &m) != nil {
			return nil
		}
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, m.Parts...)
		if m.ID != "" {
			// One relayed message per message of the callee's: a status repeating one it
			// said (its reply, then its final status) is one message of the caller's history.
			msg.ID = e.Result["task"] + ":" + m.ID
		}
		if len(m.Metadata) > 0 {
			msg.Metadata = maps.Clone(m.Metadata)
		}
		msg.SetMeta(MetaKey, meta)
	}
	st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg)
	st.SetMeta(MetaKey, meta)
	return st
}

// AskUserWith is AskUser whose question (the input-required status message) carries
// metadata: who really asks, say, when the question is another agent's.
func AskUserWith(ctx context.Context, question string, metadata map[string]any) (string, error) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return "", ErrNoTurn
	}
	var extra map[string]string
	if len(metadata) > 0 {
		data, err := json.Marshal(metadata)
		if err != nil {
			return "", err
		}
		extra = map[string]string{"metadata": string(data)}
	}
	return t.park(ctx, question, extra)
}

// TurnMetadata returns the A2A metadata of the message that started the turn ctx belongs to
// (nil when it had none, or outside a turn). Do not modify it.
func TurnMetadata(ctx context.Context) map[string]any {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return nil
	}
	return t.opts.meta
}

// TurnTraceContext returns the W3C trace context of the request that started the turn ctx
// belongs to: its traceparent and tracestate service parameters ("" when it had none, or
// outside a turn).
func TurnTraceContext(ctx context.Context) (traceparent, tracestate string) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return "", ""
	}
	return t.opts.trace[0], t.opts.trace[1]
}

// TurnSpan returns the span this process records for the request that started the turn ctx
// belongs to (the server span the engine ran the executor in), or the zero SpanContext when it
// records none (no tracer configured) or outside a turn. Calls the turn makes to other agents
// are its children, so that a tracing backend links them.
func TurnSpan(ctx context.Context) trace.SpanContext {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return trace.SpanContext{}
	}
	return t.opts.span
}

// TurnValue returns the value under key of the turn ctx belongs to, made by init the first
// time it is asked for: state that lives as long as the turn (what the calls one message
// causes may still spend, say). Outside a turn it returns init() each time.
func TurnValue(ctx context.Context, key any, init func() any) any {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return init()
	}
	t.seamMu.Lock()
	defer t.seamMu.Unlock()
	if v, ok := t.values[key]; ok {
		return v
	}
	if t.values == nil {
		t.values = map[any]any{}
	}
	v := init()
	t.values[key] = v
	return v
}

// ResultFrom says where the result of the capability call ctx belongs to came from, when not
// from the capability itself: the tool-result observation the runtime logs for it has source
// src (another agent, say), and data added to its data (keys the runtime sets itself — call,
// input, tool, model-call — are kept). Outside a call made for a turn it does nothing.
func ResultFrom(ctx context.Context, src Source, data map[string]string) {
	p, _ := ctx.Value(provenanceKey{}).(*provenance)
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src, p.data = src, maps.Clone(data)
}

type provenanceKey struct{}
