package agent

import (
	"context"
	"iter"
	"maps"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// MetaKey is the metadata key under which the bridge puts a working-log entry on a status
// update: {"kind", "rule", "action", "params", "result", "text"} as in [Entry].
const MetaKey = "a2awebcap.agent/log"

// Executor makes a an a2asrv.AgentExecutor. Each message is an event from the user (its text
// parts joined); the run's working log becomes the task's events:
//
//	thought, call, step  → working TaskStatusUpdateEvent, the entry under MetaKey
//	result               → TaskArtifactUpdateEvent named "<action> result" (text and data parts)
//	output               → working status whose message is the output text
//	text (model stream)  → TaskArtifactUpdateEvent chunks of one artifact named "answer": the
//	                       first creates it, the rest have Append set
//	input-required       → input-required status asking the question (terminal for this run)
//	end                  → completed status with the reply; failed when the model did not answer
//	                       (the message is Run.Failure) or the agent could not save its memory
//	                       (a generic message)
//
// Events stream as the agent records the entries ([Agent.Stream]), so a slow tool call shows as
// a call before its result.
func Executor(a *Agent) a2asrv.AgentExecutor { return executor{a} }

type executor struct{ a *Agent }

func (x executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		turn := 1
		if ec.StoredTask != nil {
			turn = len(ec.StoredTask.History) + 1
		}
		ev := Event{Kind: "message", Source: Source{Kind: SourceUser}, Text: messageText(ec.Message),
			Context: Context{Task: string(ec.TaskID), Session: ec.ContextID, Turn: turn}}
		msg := func(text string) *a2a.Message {
			if text == "" {
				return nil
			}
			return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
		}
		opened := ec.StoredTask != nil
		var answer a2a.ArtifactID // the streamed answer's artifact, once started
		for e, err := range x.a.Stream(ctx, ev) {
			if err != nil {
				if !opened { // nothing is emitted yet, so the request fails and no task exists
					yield(nil, err)
				}
				return // after the end entry: it already reported the failure
			}
			if !opened {
				opened = true
				if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
					return
				}
			}
			var out a2a.Event
			switch e.Kind {
			case EntryThought, EntryCall, EntryStep:
				st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil)
				st.SetMeta(MetaKey, entryMeta(e))
				out = st
			case EntryResult:
				data := map[string]any{}
				for k, v := range e.Result {
					data[k] = v
				}
				ae := a2a.NewArtifactEvent(ec, a2a.NewTextPart(e.Rule+": "+string(e.Action)+" "+e.Result["status"]), a2a.NewDataPart(data))
				ae.Artifact.Name = string(e.Action) + " result"
				out = ae
			case EntryOutput:
				st := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg(e.Text))
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
				continue // the end reports it
			case EntryEnd:
				var st *a2a.TaskStatusUpdateEvent
				switch e.Result["status"] {
				case "input-required":
					st = a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg(e.Result["question"]))
				case "failed": // the cause stays in the server's hands
					st = a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg(cmpOr(e.Result["failure"], "I could not save my memory of this message.")))
				default:
					st = a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, msg(e.Result["reply"]))
				}
				st.SetMeta(MetaKey, map[string]any{"kind": string(EntryEnd), "observation": e.Result["observation"], "policy": e.Result["policy"]})
				out = st
			}
			if !yield(out, nil) {
				return
			}
		}
	}
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
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
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
