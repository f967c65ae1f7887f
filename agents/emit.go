package agents

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/internal/mediatype"
)

// emitter is the small vocabulary both agents use to produce a2a events for one execution.
// Every method returns false once the consumer stopped reading (or the context ended, for
// sleep); callers return at the first false.
type emitter struct {
	ctx     context.Context
	ec      *a2asrv.ExecutorContext
	yield   func(a2a.Event, error) bool
	stopped bool
}

// run adapts body to the iterator an a2asrv.AgentExecutor returns.
func run(ctx context.Context, ec *a2asrv.ExecutorContext, body func(e *emitter)) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		body(&emitter{ctx: ctx, ec: ec, yield: yield})
	}
}

func (e *emitter) emit(ev a2a.Event) bool {
	if e.stopped {
		return false
	}
	if !e.yield(ev, nil) {
		e.stopped = true
		return false
	}
	return true
}

// fail reports err instead of an event. Executors do this only before the first event (the
// request is refused, no task exists); afterwards they move the task to a failed state.
func (e *emitter) fail(err error) {
	if !e.stopped {
		e.stopped = true
		e.yield(nil, err)
	}
}

// isNew reports whether this execution creates the task (no stored task yet).
func (e *emitter) isNew() bool { return e.ec.StoredTask == nil }

// open emits the submitted Task when the execution creates it; a follow-up message to an
// existing task emits nothing here (a2a-go and our engine both need the Task first, and only once).
func (e *emitter) open() bool {
	if !e.isNew() {
		return true
	}
	return e.emit(a2a.NewSubmittedTask(e.ec, e.ec.Message))
}

// agentMessage builds an agent message bound to the task and context of this execution.
func (e *emitter) agentMessage(parts ...*a2a.Part) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, e.ec, parts...)
}

// status emits a status update; text, when not empty, becomes the status message.
func (e *emitter) status(state a2a.TaskState, text string) bool {
	var msg *a2a.Message
	if text != "" {
		msg = e.agentMessage(a2a.NewTextPart(text))
	}
	return e.emit(a2a.NewStatusUpdateEvent(e.ec, state, msg))
}

// statusParts emits a status update whose message carries parts.
func (e *emitter) statusParts(state a2a.TaskState, parts ...*a2a.Part) bool {
	return e.emit(a2a.NewStatusUpdateEvent(e.ec, state, e.agentMessage(parts...)))
}

// artifact emits a whole new artifact and returns its ID.
func (e *emitter) artifact(name string, parts ...*a2a.Part) (a2a.ArtifactID, bool) {
	ev := a2a.NewArtifactEvent(e.ec, parts...)
	ev.Artifact.Name = name
	return ev.Artifact.ID, e.emit(ev)
}

// chunk emits one piece of a streamed artifact: the first chunk (id == "") creates the artifact
// and returns its ID, later ones append to it; last marks the final chunk.
func (e *emitter) chunk(id a2a.ArtifactID, name string, last bool, parts ...*a2a.Part) (a2a.ArtifactID, bool) {
	var ev *a2a.TaskArtifactUpdateEvent
	if id == "" {
		ev = a2a.NewArtifactEvent(e.ec, parts...)
		ev.Artifact.Name = name
	} else {
		ev = a2a.NewArtifactUpdateEvent(e.ec, id, parts...)
	}
	ev.LastChunk = last
	return ev.Artifact.ID, e.emit(ev)
}

// reply answers with a Message when the execution has no task (stateless commands), or, on a
// follow-up to an existing task, by completing that task with the same content: a2a forbids a
// Message event once a task exists.
func (e *emitter) reply(parts ...*a2a.Part) bool {
	if e.isNew() {
		msg := a2a.NewMessage(a2a.MessageRoleAgent, parts...)
		msg.ContextID = e.ec.ContextID
		return e.emit(msg)
	}
	return e.statusParts(a2a.TaskStateCompleted, parts...)
}

// sleep waits d, or less if the context ends; it reports whether the execution should go on.
func (e *emitter) sleep(d time.Duration) bool {
	if d <= 0 {
		return e.ctx.Err() == nil && !e.stopped
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return !e.stopped
	case <-e.ctx.Done():
		return false
	}
}

// cancelEvents is the Cancel implementation both agents share: the task moves to canceled,
// with text as its status message when not empty.
func cancelEvents(ec *a2asrv.ExecutorContext, text string) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var msg *a2a.Message
		if text != "" {
			msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, msg), nil)
	}
}

// MessageText is the text of m as the agents read it: its text parts joined by newlines ("" for
// nil).
func MessageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(string(t))
		}
	}
	return b.String()
}

// checkMediaTypes returns a2a.ErrUnsupportedContentType when a part of m declares a media type
// that accepted does not cover. Entries are exact types ("text/plain") or families ("text/*");
// parameters such as charset are ignored, and parts without a media type are always accepted.
func checkMediaTypes(m *a2a.Message, accepted []string) error {
	if m == nil {
		return nil
	}
	for i, p := range m.Parts {
		if p == nil || p.MediaType == "" {
			continue
		}
		mt, err := mediatype.Of(p)
		if err != nil {
			return fmt.Errorf("part %d: malformed media type %q: %w", i, p.MediaType, a2a.ErrUnsupportedContentType)
		}
		if !mediatype.Accepts(accepted, mt) {
			return fmt.Errorf("part %d: media type %q is not one of %s: %w", i, mt, strings.Join(accepted, ", "), a2a.ErrUnsupportedContentType)
		}
	}
	return nil
}
