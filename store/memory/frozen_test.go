package memory_test

import (
	"math"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/store"
)

// The store copies what it is given instead of encoding it at once (frozen.go): it must still
// refuse what JSON refuses, and give back what JSON gives back.

func TestWriteRefusesWhatJSONRefuses(t *testing.T) {
	t.Parallel()
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		edit func(*a2a.Task)
	}{
		{"channel in metadata", func(t *a2a.Task) { t.Metadata = map[string]any{"c": make(chan int)} }},
		{"NaN in metadata", func(t *a2a.Task) { t.Metadata = map[string]any{"n": math.NaN()} }},
		{"infinity in a data part", func(t *a2a.Task) {
			t.History[0].Parts = append(t.History[0].Parts, a2a.NewDataPart([]any{math.Inf(1)}))
		}},
		{"cyclic metadata", func(t *a2a.Task) { t.Metadata = cyclic }},
		{"timestamp after 9999", func(t *a2a.Task) { t.Status.Timestamp = &late }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			task := newTask(a2a.TaskID("t-" + tc.name))
			tc.edit(task)
			if err := s.Create(t.Context(), &store.Task{Task: task}, nil); err == nil {
				t.Errorf("Create() = nil, want an error")
			}
			ok := newTask(a2a.TaskID("e-" + tc.name))
			if err := s.Create(t.Context(), &store.Task{Task: ok}, nil); err != nil {
				t.Fatal(err)
			}
			bad := newTask(a2a.TaskID("e-" + tc.name))
			tc.edit(bad)
			err := s.Update(t.Context(), &store.Task{Task: ok, Version: 1}, []a2a.Event{bad})
			if err == nil {
				t.Errorf("Update() with the event = nil, want an error")
			}
		})
	}
}

type point struct {
	X int `json:"x"`
}

func TestReadGivesWhatJSONGives(t *testing.T) {
	t.Parallel()
	s := open(t)
	nested := map[string]any{"list": []any{1.5, "a"}}
	task := newTask("t")
	task.Metadata = map[string]any{"int": 3, "point": point{X: 2}, "nested": nested, "strs": []string{"a"}}
	task.History[0].Parts = append(task.History[0].Parts, a2a.NewDataPart(nested))
	if err := s.Create(t.Context(), &store.Task{Task: task}, []a2a.Event{task}); err != nil {
		t.Fatal(err)
	}
	nested["list"].([]any)[0] = "changed" // after the write: not seen by the store
	wantMeta := map[string]any{"int": 3.0, "point": map[string]any{"x": 2.0},
		"nested": map[string]any{"list": []any{1.5, "a"}}, "strs": []any{"a"}}
	wantData := map[string]any{"list": []any{1.5, "a"}}
	got, err := s.Get(t.Context(), store.Owner{}, "t")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(t.Context(), store.Owner{}, "t", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, gt := range []*a2a.Task{got.Task, evs[0].Event.(*a2a.Task)} {
		if d := cmp.Diff(wantMeta, gt.Metadata); d != "" {
			t.Errorf("Metadata mismatch (-want +got):\n%s", d)
		}
		if d := cmp.Diff(wantData, gt.History[0].Parts[1].Data()); d != "" {
			t.Errorf("data part mismatch (-want +got):\n%s", d)
		}
	}
}

func newTask(id a2a.TaskID) *a2a.Task {
	now := time.Now()
	return &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now},
		History: []*a2a.Message{{ID: "m", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart("hi")}}}}
}
