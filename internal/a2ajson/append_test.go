package a2ajson

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// The hand-written encoding must give the bytes json.Marshal gives.

func sameAsMarshal(t *testing.T, name string, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	var got []byte
	var err error
	switch x := v.(type) {
	case *a2a.Task:
		got, err = AppendTask(nil, x)
	case a2a.StreamResponse:
		got, err = AppendEvent(nil, x.Event)
	default:
		t.Fatalf("%s: cannot encode %T", name, v)
	}
	if (err != nil) != (werr != nil) {
		t.Errorf("%s: encode error %v, json.Marshal error %v", name, err, werr)
		return
	}
	if string(got) != string(want) {
		t.Errorf("%s: encoded\n%s\nwant (json.Marshal)\n%s", name, got, want)
	}
}

// awkward is a string with everything appendString must escape.
const awkward = "q\" b\\ <a href='x'>&amp; \x00\x01\b\f\n\r\t\x1f \x7f ü \u2028\u2029 \xff\xfe end \u00e9\u20ac\U0001F600"

func fixtureTask() *a2a.Task {
	ts := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("x", 5*3600+30*60))
	msg := &a2a.Message{
		ID: "m1", Role: a2a.MessageRoleUser, TaskID: "t1", ContextID: "c1",
		Parts: a2a.ContentParts{
			a2a.NewTextPart(awkward),
			a2a.NewTextPart(""),
			a2a.NewDataPart(map[string]any{"n": 1.5, "list": []any{"a", true, nil, "<&>"}, "i": 3}),
			a2a.NewDataPart(nil),
			{Content: a2a.URL("https://example.com/f.pdf?a=1&b=<2>"), Filename: "f.pdf", MediaType: "application/pdf"},
			{Content: a2a.URL(""), Filename: "only-name"},
			a2a.NewRawPart([]byte{0, 1, 2, 0xff}),
			a2a.NewRawPart(nil),
			a2a.NewRawPart([]byte{}),
			{Metadata: map[string]any{"k": "v"}},
			{},
			nil,
		},
		Extensions:     []string{"urn:ext", awkward},
		ReferenceTasks: []a2a.TaskID{"other", "<x>"},
		Metadata:       map[string]any{"k": "v", "z": map[string]any{"deep": []any{1.0}}},
	}
	return &a2a.Task{
		ID: "t1", ContextID: awkward,
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &ts,
			Message: &a2a.Message{ID: "s", Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{a2a.NewTextPart("working")}}},
		History: []*a2a.Message{msg, nil, {ID: "empty"}, {ID: "noparts", Parts: a2a.ContentParts{}}},
		Artifacts: []*a2a.Artifact{
			{ID: "a1", Name: "n", Description: "d", Extensions: []string{"e"}, Parts: a2a.ContentParts{a2a.NewTextPart("42")},
				Metadata: map[string]any{"score": 0.5}},
			nil,
			{ID: "a2"},
		},
		Metadata: map[string]any{"writer": "fixture"},
	}
}

func TestEncodeSameAsMarshal(t *testing.T) {
	t.Parallel()
	full := fixtureTask()
	now := time.Now()
	bare := &a2a.Task{}
	cases := map[string]any{
		"full task":          full,
		"bare task":          bare,
		"nil task":           (*a2a.Task)(nil),
		"empty slices":       &a2a.Task{ID: "x", History: []*a2a.Message{}, Artifacts: []*a2a.Artifact{}, Metadata: map[string]any{}},
		"task event":         a2a.StreamResponse{Event: full},
		"message event":      a2a.StreamResponse{Event: full.History[0]},
		"bare message event": a2a.StreamResponse{Event: &a2a.Message{}},
		"status event": a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c",
			Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: &now}, Metadata: map[string]any{"a": 1}}},
		"bare status event": a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{}},
		"artifact event": a2a.StreamResponse{Event: &a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Append: true, LastChunk: true,
			Artifact: full.Artifacts[0], Metadata: map[string]any{"b": "c"}}},
		"bare artifact event": a2a.StreamResponse{Event: &a2a.TaskArtifactUpdateEvent{}},
		"nil task event":      a2a.StreamResponse{Event: (*a2a.Task)(nil)},
		"nil message event":   a2a.StreamResponse{Event: (*a2a.Message)(nil)},
		"nil status event":    a2a.StreamResponse{Event: (*a2a.TaskStatusUpdateEvent)(nil)},
		"nil artifact event":  a2a.StreamResponse{Event: (*a2a.TaskArtifactUpdateEvent)(nil)},
		"unspecified":         &a2a.Task{ID: "u", Status: a2a.TaskStatus{}, History: []*a2a.Message{{ID: "r"}}},
	}
	for name, v := range cases {
		sameAsMarshal(t, name, v)
	}
}

func TestEncodeRefusesWhatMarshalRefuses(t *testing.T) {
	t.Parallel()
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	early := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
	farZone := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))
	farWest := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", -100*3600))
	nearZone := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("near", -(23*3600+59*60+59)))
	for name, edit := range map[string]func(*a2a.Task){
		"NaN metadata":      func(t *a2a.Task) { t.Metadata = map[string]any{"n": math.NaN()} },
		"channel in data":   func(t *a2a.Task) { t.History[0].Parts[2] = a2a.NewDataPart(make(chan int)) },
		"part metadata":     func(t *a2a.Task) { t.History[0].Parts[0].Metadata = map[string]any{"f": func() {}} },
		"artifact metadata": func(t *a2a.Task) { t.Artifacts[0].Metadata = map[string]any{"n": math.Inf(1)} },
		"message metadata":  func(t *a2a.Task) { t.Status.Message.Metadata = map[string]any{"n": math.Inf(-1)} },
		"late timestamp":    func(t *a2a.Task) { t.Status.Timestamp = &late },
		"early timestamp":   func(t *a2a.Task) { t.Status.Timestamp = &early },
		"far zone":          func(t *a2a.Task) { t.Status.Timestamp = &farZone },
		"far west zone":     func(t *a2a.Task) { t.Status.Timestamp = &farWest },
		"near zone":         func(t *a2a.Task) { t.Status.Timestamp = &nearZone },
		"unchanged":         func(t *a2a.Task) {}, // a control: encodes
	} {
		task := fixtureTask()
		edit(task)
		sameAsMarshal(t, name, task)
		sameAsMarshal(t, name+" (event)", a2a.StreamResponse{Event: task})
	}
}

func FuzzEncodeSameAsMarshal(f *testing.F) {
	f.Add("t1", awkward, "text", "file.pdf", "https://x/<y>", []byte{1, 2}, true)
	f.Add("", "", "", "", "", []byte(nil), false)
	f.Fuzz(func(t *testing.T, id, ctx, text, name, url string, raw []byte, flag bool) {
		task := fixtureTask()
		task.ID, task.ContextID = a2a.TaskID(id), ctx
		m := task.History[0]
		m.Parts[0] = a2a.NewTextPart(text)
		m.Parts[4].Filename, m.Parts[4].Content = name, a2a.URL(url)
		m.Parts[6] = a2a.NewRawPart(raw)
		m.Metadata = map[string]any{text: name}
		task.Artifacts[0].Name, task.Artifacts[0].Description = name, text
		sameAsMarshal(t, "task", task)
		sameAsMarshal(t, "artifact event", a2a.StreamResponse{Event: &a2a.TaskArtifactUpdateEvent{
			TaskID: a2a.TaskID(id), ContextID: ctx, Append: flag, LastChunk: !flag, Artifact: task.Artifacts[0]}})
		sameAsMarshal(t, "status event", a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{
			TaskID: a2a.TaskID(id), ContextID: ctx, Status: task.Status}})
	})
}

// BenchmarkEncode measures the stored form of a task and its events as the engine writes a
// small task: the task, and two events.
func BenchmarkEncode(b *testing.B) {
	msg := &a2a.Message{ID: "m1", Role: a2a.MessageRoleUser, TaskID: "t", ContextID: "c", Parts: a2a.ContentParts{a2a.NewTextPart("task hello")}}
	now := time.Now()
	task := &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now}, History: []*a2a.Message{msg},
		Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("task hello")}}}}
	evs := []a2a.Event{task, &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: task.Status}}
	b.Run("codec", func(b *testing.B) {
		for b.Loop() {
			if _, err := AppendTask(nil, task); err != nil {
				b.Fatal(err)
			}
			for _, e := range evs {
				if _, err := AppendEvent(nil, e); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(task)
			for _, e := range evs {
				json.Marshal(a2a.StreamResponse{Event: e})
			}
		}
	})
}

// freeCases are free-form values (metadata, data parts) appendFree writes itself or leaves to
// json.Marshal; either way the bytes must be json.Marshal's.
func freeCases() map[string]any {
	cycle := map[string]any{}
	cycle["self"] = cycle
	deep := map[string]any{}
	for d, i := deep, 0; i < 40; i++ {
		next := map[string]any{}
		d["d"] = next
		d = next
	}
	many := map[string]any{}
	for i := range 20 {
		many[string(rune('a'+i))+"key"] = float64(i) / 3
	}
	return map[string]any{
		"floats": []any{0.0, math.Copysign(0, -1), 1e-6, 9.99999e-7, 1e-7, 1.5e-9, 1e20, 1e21, 123456789.123, -2.5e300,
			math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, 1.0 / 3},
		"ints":        []any{int(-1), int64(math.MinInt64), int64(math.MaxInt64), int32(-7), uint64(math.MaxUint64), uint32(7)},
		"strings":     []any{"", awkward, "<script>&</script>"},
		"nils":        map[string]any{"m": map[string]any(nil), "a": []any(nil), "s": []string(nil), "n": nil},
		"strs":        []string{"a", awkward},
		"many keys":   many,
		"nested":      map[string]any{"b": []any{map[string]any{"z": true, "a": false}, []any{}}, "a": map[string]any{}},
		"deep":        deep,
		"cycle":       cycle,
		"NaN":         []any{1.0, math.NaN()},
		"Inf":         map[string]any{"x": math.Inf(-1)},
		"float32":     []any{float32(0.1)},
		"other types": map[string]any{"t": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), "m": map[string]string{"k": "v"}, "i8": int8(3)},
		"bad utf8":    map[string]any{"\xff": "a\xfe"},
	}
}

func TestFreeSameAsMarshal(t *testing.T) {
	t.Parallel()
	for name, v := range freeCases() {
		want, werr := json.Marshal(v)
		got, err := appendFree([]byte("prefix"), v)
		if (err != nil) != (werr != nil) {
			t.Errorf("%s: appendFree error %v, json.Marshal error %v", name, err, werr)
			continue
		}
		if err == nil && string(got) != "prefix"+string(want) {
			t.Errorf("%s: appendFree = %s\nwant prefix + json.Marshal's %s", name, got, want)
		}
	}
}

func FuzzFreeSameAsMarshal(f *testing.F) {
	f.Add(1.5, int64(-3), "k", awkward)
	f.Add(1e-7, int64(math.MaxInt64), "", "")
	f.Add(1e21, int64(0), "<", "\xff")
	f.Fuzz(func(t *testing.T, x float64, i int64, k, s string) {
		v := map[string]any{k: x, s: []any{i, s, x, uint64(i)}, "z" + k: map[string]any{s: nil}}
		want, werr := json.Marshal(v)
		got, err := appendFree(nil, v)
		if (err != nil) != (werr != nil) || err == nil && string(got) != string(want) {
			t.Fatalf("appendFree(%#v) = %s, %v; json.Marshal %s, %v", v, got, err, want, werr)
		}
	})
}
