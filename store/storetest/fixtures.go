package storetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/a2awebcap/a2awebcap/store"
)

// Owners used by the suite: alice and bob share a tenant, aliceT2 is another tenant's alice,
// anon is the zero Owner.
var (
	alice   = store.Owner{Tenant: "t1", Principal: "alice"}
	bob     = store.Owner{Tenant: "t1", Principal: "bob"}
	aliceT2 = store.Owner{Tenant: "t2", Principal: "alice"}
	anon    = store.Owner{}
)

// cmpOpts compare values that went through JSON: nil and empty slices and maps are the same.
// time.Time is compared with its Equal method (cmp's default). Raw bytes are compared whole,
// which is much faster than cmp's element by element on a large artifact.
var cmpOpts = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.FilterValues(func(x, y a2a.Raw) bool { return len(x) > 0 || len(y) > 0 },
		cmp.Comparer(func(x, y a2a.Raw) bool { return bytes.Equal(x, y) })),
}

var idSeq atomic.Int64

// newID returns a task ID unique in this process, with a prefix that sorts like n.
func newID(prefix string) a2a.TaskID {
	return a2a.TaskID(fmt.Sprintf("%s-%06d", prefix, idSeq.Add(1)))
}

var stamp = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// newTask returns a task with some of everything a task can hold, all of which survives JSON.
func newTask(id a2a.TaskID, contextID string, state a2a.TaskState) *a2a.Task {
	ts := stamp
	return &a2a.Task{
		ID:        id,
		ContextID: contextID,
		Status: a2a.TaskStatus{
			State:     state,
			Timestamp: &ts,
			Message: &a2a.Message{
				ID: "status-" + string(id), Role: a2a.MessageRoleAgent, TaskID: id, ContextID: contextID,
				Parts: a2a.ContentParts{a2a.NewTextPart("working on it")},
			},
		},
		History: []*a2a.Message{{
			ID: "m-" + string(id), Role: a2a.MessageRoleUser, TaskID: id, ContextID: contextID,
			Parts: a2a.ContentParts{
				a2a.NewTextPart("hello ünïcödé \u2603 \"quoted\" \\ <tag> nul:\x00 end"),
				a2a.NewDataPart(map[string]any{"n": 1.5, "list": []any{"a", true, nil}}),
				{Content: a2a.URL("https://example.com/f.pdf"), Filename: "f.pdf", MediaType: "application/pdf"},
				a2a.NewRawPart([]byte{0, 1, 2, 0xff}),
			},
			Extensions:     []string{"urn:ext"},
			ReferenceTasks: []a2a.TaskID{"other"},
			Metadata:       map[string]any{"k": "v"},
		}},
		Artifacts: []*a2a.Artifact{{
			ID: "art-1", Name: "result", Description: "the result",
			Parts:    a2a.ContentParts{a2a.NewTextPart("42")},
			Metadata: map[string]any{"score": 0.5},
		}},
		Metadata: map[string]any{"writer": "fixture", "nested": map[string]any{"x": 2.0}},
	}
}

// statusEvent is a status update of task t to state s, with a marker text.
func statusEvent(t *a2a.Task, s a2a.TaskState, text string) *a2a.TaskStatusUpdateEvent {
	ts := stamp
	return &a2a.TaskStatusUpdateEvent{
		TaskID: t.ID, ContextID: t.ContextID,
		Status: a2a.TaskStatus{
			State: s, Timestamp: &ts,
			Message: &a2a.Message{ID: "e-" + text, Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{a2a.NewTextPart(text)}},
		},
		Metadata: map[string]any{"text": text},
	}
}

// eventText returns the marker text of a statusEvent.
func eventText(e a2a.Event) string {
	if su, ok := e.(*a2a.TaskStatusUpdateEvent); ok {
		if s, ok := su.Metadata["text"].(string); ok {
			return s
		}
	}
	return ""
}

// allEventKinds returns one event of each kind for task t.
func allEventKinds(t *a2a.Task) []a2a.Event {
	snapshot := newTask(t.ID, t.ContextID, a2a.TaskStateSubmitted)
	return []a2a.Event{
		snapshot,
		&a2a.Message{ID: "msg-1", Role: a2a.MessageRoleUser, TaskID: t.ID, ContextID: t.ContextID,
			Parts: a2a.ContentParts{a2a.NewTextPart("do it")}},
		statusEvent(t, a2a.TaskStateWorking, "working"),
		&a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Append: true, LastChunk: true,
			Artifact: &a2a.Artifact{ID: "art-2", Parts: a2a.ContentParts{a2a.NewTextPart("chunk")}}},
	}
}

// randomBytes returns n pseudo-random bytes (deterministic per seed).
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// tick waits until the store clock (µs) has moved on, so that the next write has a later
// Updated than the previous one.
func tick() { time.Sleep(2 * time.Millisecond) }

func diff(t testing.TB, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpOpts); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}
