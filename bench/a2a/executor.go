package main

// The echo agent every server runs: one a2asrv.AgentExecutor, written once, so that the servers
// differ only in the request handler (and its store) around it.

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// echoExecutor answers by the first word of the message's text:
//
//   - "reply ...": a single *a2a.Message echoing the text (a direct reply: no task);
//   - "task ...": the task in state working, one artifact echoing the text, completed;
//   - "stream N": the task in state working, N artifact update events (the first creates the
//     artifact, the next N-1 append a small text part to it, as a token stream does), completed;
//   - "burst N": the same, but each update replaces the artifact with one small part instead of
//     appending to it, so that the task (which the stores write out whole on every event) stays
//     small however long the stream: its cost per event does not grow along the stream.
//
// a2a-go requires the first event of a new task to be the Task itself, so the working state
// travels in that Task (a2a.NewSubmittedTask with its state set to working) rather than in a
// separate status update; our engine accepts either. A follow-up message (StoredTask set) skips
// the Task.
type echoExecutor struct{}

var _ a2asrv.AgentExecutor = echoExecutor{}

// streamChunk is the text of each artifact update of "stream N".
const streamChunk = "tok "

func (echoExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := messageText(ec.Message)
		cmd, arg, _ := strings.Cut(text, " ")
		switch cmd {
		case "reply":
			yield(&a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleAgent, ContextID: ec.ContextID,
				Parts: a2a.ContentParts{a2a.NewTextPart(text)}}, nil)
		case "task":
			if !working(ec, yield) {
				return
			}
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(text)), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case "stream", "burst":
			n, err := strconv.Atoi(strings.TrimSpace(arg))
			if err != nil || n < 1 || n > 100000 {
				yield(nil, fmt.Errorf("%w: %s wants a count, got %q", a2a.ErrInvalidParams, cmd, arg))
				return
			}
			if !working(ec, yield) {
				return
			}
			first := a2a.NewArtifactEvent(ec, a2a.NewTextPart(streamChunk))
			if !yield(first, nil) {
				return
			}
			for i := 1; i < n; i++ {
				if ctx.Err() != nil {
					return
				}
				ev := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart(streamChunk))
				ev.Append = cmd == "stream"
				if !yield(ev, nil) {
					return
				}
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		default:
			yield(nil, fmt.Errorf("%w: unknown command %q (want reply, task, stream N or burst N)", a2a.ErrInvalidParams, cmd))
		}
	}
}

// working yields the task in state working: the Task itself for a new task, a status update
// for a resumed one.
func working(ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) bool {
	if ec.StoredTask != nil {
		return yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil)
	}
	t := a2a.NewSubmittedTask(ec, ec.Message)
	now := time.Now()
	t.Status = a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now}
	return yield(t, nil)
}

func (echoExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// messageText is the text of a message's first text part.
func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	for _, p := range m.Parts {
		if t, ok := p.Content.(a2a.Text); ok {
			return string(t)
		}
	}
	return ""
}
