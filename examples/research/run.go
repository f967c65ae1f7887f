package main

// Talking to an agent of the system as any A2A client would: over capnweb, with package
// client, printing the task's events as they stream.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/x402"
)

// Converse sends text to the agent at url over capnweb (on task, when it continues one) and
// writes each event of its task to w as it arrives, one line each (see Describe). Its calls
// activate the x402 extension; when the task asks for payment and payer is not nil, it pays
// within payer's budget and goes on. It returns the events and the task as it ended (or
// waits: input-required).
func Converse(ctx context.Context, url, text string, task a2a.TaskID, payer *x402.Payer, w io.Writer) ([]a2a.Event, *a2a.Task, error) {
	c, err := client.New(ctx, url, &client.Options{Binding: client.BindingCapnweb,
		Header: http.Header{"A2A-Extensions": {x402.ExtensionURI}}})
	if err != nil {
		return nil, nil, err
	}
	defer c.Destroy()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	msg.TaskID = task
	var events []a2a.Event
	for {
		var id a2a.TaskID
		for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
			if err != nil {
				return events, nil, err
			}
			events = append(events, ev)
			if id == "" {
				id = ev.TaskInfo().TaskID
			}
			fmt.Fprintln(w, Describe(ev))
		}
		if id == "" {
			return events, nil, fmt.Errorf("%s answered without a task", url)
		}
		final, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		if err != nil {
			return events, nil, err
		}
		if _, asked, _ := x402.RequiredOf(final); !asked || payer == nil || final.Status.State != a2a.TaskStateInputRequired {
			if payer != nil {
				payer.Record(final)
			}
			return events, final, nil
		}
		var req *x402.Requirements
		if msg, req, err = payer.Respond(ctx, final); err != nil {
			return events, final, fmt.Errorf("paying for task %s: %w", id, err)
		}
		fmt.Fprintf(w, "paying %s of %s on %s to %s\n", req.MaxAmountRequired, req.Asset, req.Network, req.PayTo)
	}
}

// Relayed says, for an event an agent streamed into its task from another agent's (the a2a
// capability's relay, docs/multi-agent.md), where it came from: "agent <url>"; "" for the
// agent's own events.
func Relayed(ev a2a.Event) string {
	var meta map[string]any
	switch e := ev.(type) {
	case *a2a.TaskStatusUpdateEvent:
		meta = e.Metadata
	case *a2a.TaskArtifactUpdateEvent:
		if e.Artifact != nil {
			meta = e.Artifact.Metadata
		}
	}
	log, _ := meta[agent.MetaKey].(map[string]any)
	if log["kind"] != "relay" {
		return ""
	}
	src, _ := log["source"].(string)
	return src
}

// Describe is one line saying what ev is: its kind, the state, the text, and for a relayed
// event "from agent <url>".
func Describe(ev a2a.Event) string {
	var line string
	switch e := ev.(type) {
	case *a2a.Task:
		line = "task " + string(e.ID) + " " + state(e.Status.State)
	case *a2a.Message:
		line = "message: " + partsText(e.Parts)
	case *a2a.TaskStatusUpdateEvent:
		line = state(e.Status.State)
		if e.Status.Message != nil {
			if t := partsText(e.Status.Message.Parts); t != "" {
				line += ": " + t
			}
		}
		if log, ok := e.Metadata[agent.MetaKey].(map[string]any); ok && log["kind"] != "relay" && line == state(e.Status.State) {
			// A step of the agent's run: the rule that fired and what it did.
			for _, k := range []string{"kind", "rule", "action", "text"} {
				if v, _ := log[k].(string); v != "" {
					line += " " + k + "=" + strings.Join(strings.Fields(v), " ")
				}
			}
		}
	case *a2a.TaskArtifactUpdateEvent:
		line = "artifact"
		if e.Artifact != nil {
			line += " " + e.Artifact.Name + ": " + partsText(e.Artifact.Parts)
		}
	default:
		line = fmt.Sprintf("%T", ev)
	}
	if src := Relayed(ev); src != "" {
		line = "  from " + src + ": " + line
	}
	return line
}

func state(s a2a.TaskState) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(string(s), "TASK_STATE_"), "_", "-"))
}

// partsText is the text of parts, on one line.
func partsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.Content.(a2a.Text); ok {
			b.WriteString(string(t))
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
