package engine

// Applying executor events to a task, and shaping tasks for responses.

import (
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// cloneTask copies a task for the engine's own use. Messages and artifacts are treated as
// immutable once recorded (apply replaces an artifact instead of changing it), so the copy
// shares them and copies only the slices and maps that change: cheap enough to copy per event.
func cloneTask(t *a2a.Task) *a2a.Task {
	if t == nil {
		return nil
	}
	c := *t
	c.History = append([]*a2a.Message(nil), t.History...)
	c.Artifacts = append([]*a2a.Artifact(nil), t.Artifacts...)
	if t.Metadata != nil {
		c.Metadata = make(map[string]any, len(t.Metadata))
		for k, v := range t.Metadata {
			c.Metadata[k] = v
		}
	}
	return &c
}

// apply changes t by one executor event. It rejects events for another task.
func apply(t *a2a.Task, ev a2a.Event) error {
	switch x := ev.(type) {
	case *a2a.Task:
		if x.ID != t.ID {
			return fmt.Errorf("%w: event for task %q in task %q", a2a.ErrInvalidAgentResponse, x.ID, t.ID)
		}
		*t = *cloneTask(x)
		if t.ContextID == "" {
			return fmt.Errorf("%w: task without a context ID", a2a.ErrInvalidAgentResponse)
		}
	case *a2a.TaskStatusUpdateEvent:
		if x.TaskID != "" && x.TaskID != t.ID {
			return fmt.Errorf("%w: status update for task %q in task %q", a2a.ErrInvalidAgentResponse, x.TaskID, t.ID)
		}
		st := x.Status
		if st.Timestamp == nil {
			now := time.Now().UTC()
			st.Timestamp = &now
		}
		if st.Message != nil {
			t.History = appendMessage(t.History, st.Message)
		}
		t.Status = st
	case *a2a.TaskArtifactUpdateEvent:
		if x.TaskID != "" && x.TaskID != t.ID {
			return fmt.Errorf("%w: artifact update for task %q in task %q", a2a.ErrInvalidAgentResponse, x.TaskID, t.ID)
		}
		if x.Artifact == nil {
			return fmt.Errorf("%w: artifact update without an artifact", a2a.ErrInvalidAgentResponse)
		}
		applyArtifact(t, x)
	case *a2a.Message:
		t.History = appendMessage(t.History, x)
	default:
		return fmt.Errorf("%w: unknown event %T", a2a.ErrInvalidAgentResponse, ev)
	}
	return nil
}

func applyArtifact(t *a2a.Task, x *a2a.TaskArtifactUpdateEvent) {
	art := *x.Artifact
	for i, a := range t.Artifacts {
		if a.ID != art.ID {
			continue
		}
		if x.Append {
			merged := *a
			merged.Parts = append(append(a2a.ContentParts(nil), a.Parts...), art.Parts...)
			t.Artifacts[i] = &merged
		} else {
			t.Artifacts[i] = &art
		}
		return
	}
	t.Artifacts = append(t.Artifacts, &art)
}

func appendMessage(h []*a2a.Message, m *a2a.Message) []*a2a.Message {
	for _, x := range h {
		if x.ID != "" && x.ID == m.ID {
			return h
		}
	}
	return append(h, m)
}

// shape returns a copy of t as a response carries it: the last historyLength messages (nil:
// all; 0: none), and no artifacts when withArtifacts is false.
func shape(t *a2a.Task, historyLength *int, withArtifacts bool) *a2a.Task {
	c := cloneTask(t)
	if historyLength != nil {
		n := *historyLength
		switch {
		case n <= 0:
			c.History = nil
		case len(c.History) > n:
			c.History = c.History[len(c.History)-n:]
		}
	}
	if !withArtifacts {
		c.Artifacts = nil
	}
	return c
}

// eventTaskID returns the task an event belongs to ("" for a message without one).
func eventTaskID(ev a2a.Event) a2a.TaskID {
	switch x := ev.(type) {
	case *a2a.Task:
		return x.ID
	case *a2a.TaskStatusUpdateEvent:
		return x.TaskID
	case *a2a.TaskArtifactUpdateEvent:
		return x.TaskID
	case *a2a.Message:
		return x.TaskID
	}
	return ""
}
