package engine

import (
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// A new task's first write carries its first event alone, unless the run is already over in
// what was queued: then all of it, in one write.
func TestFirstWrite(t *testing.T) {
	t.Parallel()
	task := &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	status := func(s a2a.TaskState) pulled { return pulled{ev: a2a.NewStatusUpdateEvent(task, s, nil)} }
	art := pulled{ev: a2a.NewArtifactEvent(task, a2a.NewTextPart("x"))}
	for _, tc := range []struct {
		name  string
		batch []pulled
		want  int
	}{
		{"one event", []pulled{{ev: task}}, 1},
		{"a stream under way", []pulled{{ev: task}, art, art}, 1},
		{"a quick task", []pulled{{ev: task}, art, status(a2a.TaskStateCompleted)}, 3},
		{"asks for input", []pulled{{ev: task}, status(a2a.TaskStateInputRequired)}, 2},
		{"fails", []pulled{{ev: task}, {err: errors.New("boom")}}, 2},
		{"working again", []pulled{{ev: task}, status(a2a.TaskStateWorking)}, 1},
	} {
		if got := firstWrite(tc.batch); got != tc.want {
			t.Errorf("%s: firstWrite() = %d, want %d", tc.name, got, tc.want)
		}
	}
}
