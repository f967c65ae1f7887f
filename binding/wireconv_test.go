package binding

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/google/go-cmp/cmp"
)

// fullTask sets every field of every type the direct conversion handles (TestDirectWireCovers
// checks it does), with values that exercise the conversion: integers in metadata, a timestamp
// with nanoseconds in a zone east of UTC, every kind of part.
func fullTask() *a2a.Task {
	ts := time.Date(2026, 5, 1, 12, 30, 0, 120000000, time.FixedZone("x", 5*3600+30*60))
	meta := map[string]any{
		"seq": int64(7), "n": 3, "u": uint64(1<<63 + 1), "i32": int32(-4), "u32": uint32(9), "f": 1.5, "neg0": math.Copysign(0, -1),
		"s": "<tag> & \u2028", "b": true, "null": nil, "list": []any{1.0, "x", nil, []any{}}, "strs": []string{"a", "b"},
		"nested": map[string]any{"empty": map[string]any{}, "nilmap": map[string]any(nil), "nillist": []any(nil)},
	}
	msg := &a2a.Message{
		ID: "m1", ContextID: "c1", Extensions: []string{"https://ext.example/x"}, Metadata: meta,
		Parts: a2a.ContentParts{
			a2a.NewTextPart("hello"),
			{Content: a2a.Raw("bytes\x00\xff"), Filename: "f.bin", MediaType: "application/octet-stream", Metadata: map[string]any{"k": "v"}},
			a2a.NewDataPart(map[string]any{"x": 1, "y": []any{true}}),
			a2a.NewFileURLPart("https://files.example/a.png", "image/png"),
		},
		ReferenceTasks: []a2a.TaskID{"t0"}, Role: a2a.MessageRoleUser, TaskID: "t1",
	}
	return &a2a.Task{
		ID: "t1", ContextID: "c1", Metadata: meta, History: []*a2a.Message{msg},
		Artifacts: []*a2a.Artifact{{
			ID: "a1", Description: "desc", Extensions: []string{"e"}, Metadata: map[string]any{"m": 1},
			Name: "name", Parts: a2a.ContentParts{a2a.NewTextPart("")},
		}},
		Status: a2a.TaskStatus{Message: msg, State: a2a.TaskStateWorking, Timestamp: &ts},
	}
}

func directWireCases() map[string]any {
	task := fullTask()
	utc := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	west := time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("w", -(9*3600+30)))
	return map[string]any{
		"task":         task,
		"stream task":  a2a.StreamResponse{Event: task},
		"message":      a2a.StreamResponse{Event: &a2a.Message{ID: "m", Parts: a2a.ContentParts{}}},
		"nil parts":    a2a.StreamResponse{Event: &a2a.Message{ID: "m", Role: a2a.MessageRoleAgent}},
		"status":       a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: &utc}, Metadata: map[string]any{"a2awebcap.seq": int64(2)}}},
		"status west":  a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{Timestamp: &west}}},
		"artifact":     a2a.StreamResponse{Event: &a2a.TaskArtifactUpdateEvent{Append: true, LastChunk: true, TaskID: "t", ContextID: "c", Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("tok ")}}, Metadata: map[string]any{"k": "v"}}},
		"nil artifact": a2a.StreamResponse{Event: &a2a.TaskArtifactUpdateEvent{}},
		"nil elements": &a2a.Task{ID: "t", History: []*a2a.Message{nil}, Artifacts: []*a2a.Artifact{nil, {Parts: a2a.ContentParts{nil, {}, {Content: a2a.Raw(nil)}, {Content: a2a.Raw{}}, a2a.NewDataPart(nil), {Content: a2a.URL("")}}}}},
		"empty fields": &a2a.Task{History: []*a2a.Message{}, Artifacts: []*a2a.Artifact{}, Metadata: map[string]any{}},
	}
}

// awkwardCases are values json.Marshal writes in its own way (replacing bad UTF-8, formatting
// floats and times, refusing what JSON cannot hold); toWire must give what JSON gives, or fail
// as it does.
func awkwardCases() map[string]any {
	year10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	far := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600))
	deep := map[string]any{}
	for d, i := deep, 0; i <= 40; i++ {
		next := map[string]any{}
		d["d"] = next
		d = next
	}
	meta := func(v any) a2a.StreamResponse {
		return a2a.StreamResponse{Event: &a2a.Message{ID: "m", Metadata: map[string]any{"k": v}}}
	}
	return map[string]any{
		"bad utf8 text":    a2a.StreamResponse{Event: &a2a.Message{ID: "m", Parts: a2a.ContentParts{a2a.NewTextPart("a\xffb\xe2\x82")}}},
		"bad utf8 key":     a2a.StreamResponse{Event: &a2a.Message{ID: "m", Metadata: map[string]any{"\xff": 1}}},
		"NaN":              meta(math.NaN()),
		"Inf":              meta(math.Inf(1)),
		"float32":          meta(float32(0.1)),
		"time value":       meta(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		"struct value":     meta(struct{ A int }{1}),
		"json.Number":      meta(json.Number("12345678901234567890")),
		"deep":             meta(deep),
		"year 10000":       a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{Timestamp: &year10000}}},
		"zone 24h":         a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{Timestamp: &far}}},
		"typed nil event":  a2a.StreamResponse{Event: (*a2a.Task)(nil)},
		"no event":         a2a.StreamResponse{},
		"nil task":         (*a2a.Task)(nil),
		"other type":       &a2a.ListTasksResponse{Tasks: []*a2a.Task{fullTask()}},
		"bad utf8 in data": a2a.StreamResponse{Event: &a2a.Message{ID: "m", Parts: a2a.ContentParts{a2a.NewDataPart([]any{"\xc0"})}}},
	}
}

// TestDirectWire: toWire gives the value JSON gives (jsonWire: json.Marshal, then
// json.Unmarshal into a tree), or its error; the hot path's values go as json.RawMessage, with
// json.Marshal's bytes.
func TestDirectWire(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, v any, wantDirect bool) {
		want, wantErr := jsonWire(v)
		got, err := toWire(v)
		if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("toWire() error = %v, want %v", err, wantErr)
		}
		raw, direct := got.(json.RawMessage)
		if wantDirect && !direct {
			t.Fatalf("toWire() = %T, want a json.RawMessage", got)
		}
		if direct {
			if b, _ := json.Marshal(v); string(b) != string(raw) {
				t.Errorf("toWire() = %s\nwant json.Marshal's %s", raw, b)
			}
			var tree any
			if err := json.Unmarshal(raw, &tree); err != nil {
				t.Fatal(err)
			}
			got = tree
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("toWire() differs from JSON (-want +got):\n%s", diff)
		}
	}
	for name, v := range directWireCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, v, true)
		})
	}
	for name, v := range awkwardCases() {
		t.Run("awkward/"+name, func(t *testing.T) {
			t.Parallel()
			check(t, v, false)
		})
	}
}

// TestDirectWireCovers fails when a type the direct conversion handles has a field that
// fullTask leaves zero: a field a new a2a-go version added, which TestDirectWire would then not
// hold package a2ajson to.
func TestDirectWireCovers(t *testing.T) {
	t.Parallel()
	seen := map[reflect.Type]map[string]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			if seen[v.Type()] == nil {
				seen[v.Type()] = map[string]bool{}
			}
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() && !v.Field(i).IsZero() {
					seen[v.Type()][f.Name] = true
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(fullTask()))
	for _, v := range directWireCases() {
		walk(reflect.ValueOf(v))
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[a2a.Task](), reflect.TypeFor[a2a.Message](), reflect.TypeFor[a2a.Artifact](),
		reflect.TypeFor[a2a.Part](), reflect.TypeFor[a2a.TaskStatus](),
		reflect.TypeFor[a2a.TaskStatusUpdateEvent](), reflect.TypeFor[a2a.TaskArtifactUpdateEvent](),
	} {
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() && !seen[typ][f.Name] {
				t.Errorf("no test value sets %s.%s: does the direct conversion know it?", typ.Name(), f.Name)
			}
		}
	}
}

// requestCases are received request values: usual ones, and unusual ones (which the
// hand-written decoders leave to encoding/json, or which fail).
func requestCases() (direct, declined map[string]any) {
	msg := func(extra map[string]any) map[string]any {
		m := map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}
		for k, v := range extra {
			m[k] = v
		}
		return map[string]any{"message": m}
	}
	with := func(m map[string]any, k string, v any) map[string]any {
		m[k] = v
		return m
	}
	direct = map[string]any{
		"minimal": msg(nil),
		"every field": map[string]any{
			"tenant": "acme", "metadata": map[string]any{"k": []any{1.0, capnweb.Undefined, map[string]any{"u": capnweb.Undefined}}},
			"configuration": map[string]any{"acceptedOutputModes": []any{"text/plain"}, "returnImmediately": true, "historyLength": 3.0},
			"message": map[string]any{
				"messageId": "m", "contextId": "c", "taskId": "t", "role": "ROLE_UNSPECIFIED", "extensions": []any{"e"},
				"referenceTaskIds": []any{"t0"}, "metadata": map[string]any{"when": time.UnixMilli(1700000000123), "bin": []byte{0, 1, 2}},
				"parts": []any{
					map[string]any{"text": "", "filename": "f", "mediaType": "text/plain", "metadata": map[string]any{}},
					map[string]any{"data": map[string]any{"x": 1.5, "b": capnweb.TypedBytes{Type: "ArrayBuffer", Data: []byte("ab")}}},
					map[string]any{"url": "https://files.example/a"},
				},
			},
		},
		"undefined members": with(msg(map[string]any{"contextId": capnweb.Undefined}), "tenant", capnweb.Undefined),
		"empty lists":       msg(map[string]any{"parts": []any{}, "extensions": []any{}}),
		"empty config":      with(msg(nil), "configuration", map[string]any{}),
		"getTask":           map[string]any{"id": "t1", "tenant": "x", "historyLength": -0.0},
	}
	declined = map[string]any{
		"nil":                   nil,
		"undefined":             capnweb.Undefined,
		"not an object":         "hello",
		"unknown key":           with(msg(nil), "extra", 1.0),
		"other case":            map[string]any{"Message": map[string]any{"messageId": "m", "parts": []any{map[string]any{"text": "x"}}}},
		"null message":          map[string]any{"message": nil},
		"null field":            msg(map[string]any{"contextId": nil}),
		"number for string":     msg(map[string]any{"contextId": 5.0}),
		"bad utf8":              msg(map[string]any{"contextId": "\xff"}),
		"bad utf8 key":          with(msg(nil), "metadata", map[string]any{"\xff": 1.0}),
		"raw part":              msg(map[string]any{"parts": []any{map[string]any{"raw": "AAE="}}}),
		"two contents":          msg(map[string]any{"parts": []any{map[string]any{"text": "a", "url": "b"}}}),
		"no content":            msg(map[string]any{"parts": []any{map[string]any{"filename": "f"}}}),
		"empty url":             msg(map[string]any{"parts": []any{map[string]any{"url": ""}}}),
		"null data":             msg(map[string]any{"parts": []any{map[string]any{"data": nil}}}),
		"null part":             msg(map[string]any{"parts": []any{nil}}),
		"fractional count":      with(msg(nil), "configuration", map[string]any{"historyLength": 1.5}),
		"huge count":            with(msg(nil), "configuration", map[string]any{"historyLength": 1e300}),
		"push config":           with(msg(nil), "configuration", map[string]any{"taskPushNotificationConfig": map[string]any{"url": "https://x"}}),
		"NaN":                   with(msg(nil), "metadata", map[string]any{"x": math.NaN()}),
		"capability":            map[string]any{"id": capnweb.NewStub(func() {})},
		"getTask unknown field": map[string]any{"id": "t", "name": "x"},
	}
	return direct, declined
}

// decodeBoth decodes v, a request value as the peer sent it, as the binding does and by the
// JSON path that defines the result (jsonFromWire), into fresh values of the type the case is
// for (GetTaskRequest when it has an "id", else SendMessageRequest). The binding receives it
// as a method's json.RawMessage parameter (capnweb converts it, as capnweb.Decode does), or,
// for a task handle's getTask, as a tree that directFromWire may decode. It returns both
// results and both errors; direct reports whether directFromWire took the tree.
func decodeBoth(t *testing.T, v any) (got, want any, gotErr, wantErr error, direct bool) {
	t.Helper()
	var raw json.RawMessage
	convErr := capnweb.Decode(v, &raw)
	if m, isMap := v.(map[string]any); isMap && m["id"] != nil {
		var g, d, w a2a.GetTaskRequest
		wantErr = jsonFromWire(v, &w)
		if direct = directFromWire(v, &d); direct && (wantErr != nil || !cmp.Equal(d, w)) {
			t.Errorf("directFromWire(%v) = %+v, the JSON path %+v, %v", v, d, w, wantErr)
		}
		if gotErr = convErr; gotErr == nil {
			gotErr = fromWire(raw, &g)
		}
		return &g, &w, gotErr, wantErr, direct
	}
	var g, w a2a.SendMessageRequest
	wantErr = jsonFromWire(v, &w)
	if gotErr = convErr; gotErr == nil {
		gotErr = fromWire(raw, &g)
	}
	return &g, &w, gotErr, wantErr, false
}

// TestFromWire: the requests a method receives as JSON decode as by the JSON path, and fail
// where it fails; a task handle's getTask tree decodes directly when it can.
func TestFromWire(t *testing.T) {
	t.Parallel()
	direct, declined := requestCases()
	for name, v := range direct {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, want, gotErr, wantErr, _ := decodeBoth(t, v)
			if gotErr != nil || wantErr != nil {
				t.Fatalf("fromWire() = %v, the JSON path %v", gotErr, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fromWire() differs from the JSON path (-want +got):\n%s", diff)
			}
		})
	}
	for name, v := range declined {
		t.Run("unusual/"+name, func(t *testing.T) {
			t.Parallel()
			got, want, gotErr, wantErr, _ := decodeBoth(t, v)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("fromWire() = %v, the JSON path %v", gotErr, wantErr)
			}
			if diff := cmp.Diff(want, got); gotErr == nil && diff != "" {
				t.Errorf("fromWire() differs from the JSON path (-want +got):\n%s", diff)
			}
		})
	}
	m, _ := direct["getTask"].(map[string]any)
	if _, _, _, _, ok := decodeBoth(t, m); !ok {
		t.Error("directFromWire() declined a plain getTask tree")
	}
}

// FuzzFromWire checks that a request decodes as the JSON path decodes it, or fails where it
// fails. The input is JSON; strings "$u" stand for undefined, "$b…" for bytes, "$d<ms>" for a
// date, so that capnweb's own values appear too.
func FuzzFromWire(f *testing.F) {
	direct, _ := requestCases()
	for _, v := range direct {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		f.Add(string(b))
	}
	f.Add(`{"message":{"messageId":"m","role":"$u","parts":[{"text":"x","metadata":{"b":"$bhi","d":"$d1700000000000"}}]}}`)
	f.Add(`{"id":"t","historyLength":2}`)
	f.Fuzz(func(t *testing.T, in string) {
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		v = capnwebValues(v)
		got, want, gotErr, wantErr, _ := decodeBoth(t, v)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("fromWire(%s) = %v, the JSON path %v", in, gotErr, wantErr)
		}
		if diff := cmp.Diff(want, got); gotErr == nil && diff != "" {
			t.Errorf("fromWire(%s) differs from the JSON path (-want +got):\n%s", in, diff)
		}
	})
}

// capnwebValues replaces FuzzFromWire's marker strings by capnweb values.
func capnwebValues(v any) any {
	switch x := v.(type) {
	case string:
		switch {
		case x == "$u":
			return capnweb.Undefined
		case strings.HasPrefix(x, "$b"):
			return []byte(x[2:])
		case strings.HasPrefix(x, "$d"):
			if ms, err := strconv.ParseInt(x[2:], 10, 64); err == nil {
				return time.UnixMilli(ms)
			}
		}
	case map[string]any:
		for k, e := range x {
			x[k] = capnwebValues(e)
		}
	case []any:
		for i, e := range x {
			x[i] = capnwebValues(e)
		}
	}
	return v
}
