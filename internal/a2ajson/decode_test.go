package a2ajson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
)

// The hand-written decoding must give what json.Unmarshal gives.

// decodableTask is fixtureTask without the parts Part.UnmarshalJSON refuses (no content, null
// data or raw, an empty URL), so that json.Unmarshal reads it back.
func decodableTask() *a2a.Task {
	t := fixtureTask()
	m := t.History[0]
	var keep a2a.ContentParts
	for _, p := range m.Parts {
		if p != nil {
			switch c := p.Content.(type) {
			case nil:
				continue
			case a2a.Data:
				if c.Value == nil {
					continue
				}
			case a2a.Raw:
				if c == nil {
					continue
				}
			case a2a.URL:
				if c == "" {
					continue
				}
			}
		}
		keep = append(keep, p)
	}
	m.Parts = keep
	return t
}

// roundTripTask is a task that json.Unmarshal gives back exactly: UTC time, float64 numbers,
// valid UTF-8, no empty slice or map that encoding omits.
func roundTripTask() *a2a.Task {
	ts := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	text := "q\" b\\ <a href='x'>&amp; \x00\x01\b\f\n\r\t\x1f \x7f ü \u2028\u2029 end \u00e9\u20ac\U0001F600"
	return &a2a.Task{
		ID: "t1", ContextID: text,
		Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Timestamp: &ts,
			Message: &a2a.Message{ID: "s", Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{a2a.NewTextPart("working")}}},
		History: []*a2a.Message{
			{
				ID: "m1", Role: a2a.MessageRoleUser, TaskID: "t1", ContextID: "c1",
				Parts: a2a.ContentParts{
					a2a.NewTextPart(text),
					a2a.NewTextPart(""),
					a2a.NewDataPart(map[string]any{"n": 1.5, "list": []any{"a", true, nil, "<&>"}, "i": 3.0}),
					a2a.NewDataPart("just a string"),
					a2a.NewDataPart(false),
					{Content: a2a.URL("https://example.com/f.pdf?a=1&b=<2>"), Filename: "f.pdf", MediaType: "application/pdf"},
					a2a.NewRawPart([]byte{0, 1, 2, 0xff}),
					a2a.NewRawPart([]byte{}),
					{Content: a2a.Text("t"), Metadata: map[string]any{"k": "v"}},
					nil,
				},
				Extensions:     []string{"urn:ext", text},
				ReferenceTasks: []a2a.TaskID{"other", "<x>"},
				Metadata:       map[string]any{"k": "v", "z": map[string]any{"deep": []any{1.0}}},
			},
			nil,
			{ID: "empty"},
			{ID: "noparts", Parts: a2a.ContentParts{}},
		},
		Artifacts: []*a2a.Artifact{
			{ID: "a1", Name: "n", Description: "d", Extensions: []string{"e"}, Parts: a2a.ContentParts{a2a.NewTextPart("42")},
				Metadata: map[string]any{"score": 0.5}},
			nil,
			{ID: "a2"},
		},
		Metadata: map[string]any{"writer": "fixture"},
	}
}

func mustEncode(t testing.TB, task *a2a.Task) []byte {
	t.Helper()
	b, err := AppendTask(nil, task)
	if err != nil {
		t.Fatalf("AppendTask() error: %v", err)
	}
	return b
}

// sameAsUnmarshal checks DecodeTask(b), and its fast path, against json.Unmarshal; it reports
// whether the fast path read b.
func sameAsUnmarshal(t *testing.T, b []byte) (fast bool) {
	t.Helper()
	want := new(a2a.Task)
	werr := json.Unmarshal(b, want)
	if got, ok := decodeTask(b); ok {
		if werr != nil {
			t.Errorf("decodeTask(%s) took what json.Unmarshal refuses (%v)", b, werr)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeTask(%s) differs from json.Unmarshal (-want +got):\n%s", b, cmp.Diff(want, got))
		}
		fast = true
	}
	got, err := DecodeTask(b)
	switch {
	case werr != nil:
		// The text is json.Unmarshal's, but not compared: a2a-go lists a part's keys in map order.
		if err == nil || !strings.HasPrefix(err.Error(), "decode task: ") {
			t.Errorf("DecodeTask(%s) error = %v, want json.Unmarshal's %v", b, err, werr)
		}
	case err != nil:
		t.Errorf("DecodeTask(%s) error = %v, json.Unmarshal's nil", b, err)
	case !reflect.DeepEqual(got, want):
		t.Errorf("DecodeTask(%s) differs from json.Unmarshal (-want +got):\n%s", b, cmp.Diff(want, got))
	}
	return fast
}

func TestDecodeSameAsUnmarshal(t *testing.T) {
	t.Parallel()
	local := time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local)
	far := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 5*3600+30*60))
	tasks := map[string]*a2a.Task{
		"decodable fixture": decodableTask(),
		"round-trip task":   roundTripTask(),
		"bare task":         {},
		"empty slices":      {ID: "x", History: []*a2a.Message{}, Artifacts: []*a2a.Artifact{}, Metadata: map[string]any{}},
		"unspecified":       {ID: "u", History: []*a2a.Message{{ID: "r", Parts: a2a.ContentParts{a2a.NewTextPart("x")}}}},
		"local time":        {ID: "l", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: &local}},
		"zoned time":        {ID: "z", Status: a2a.TaskStatus{State: a2a.TaskStateFailed, Timestamp: &far}},
		"other state": {ID: "o", Status: a2a.TaskStatus{State: "SOMETHING_NEW"},
			History: []*a2a.Message{{ID: "r", Role: "ROLE_OTHER"}}},
		"all nil": {History: []*a2a.Message{nil}, Artifacts: []*a2a.Artifact{nil},
			Status: a2a.TaskStatus{Message: &a2a.Message{Parts: a2a.ContentParts{nil}}}},
	}
	for name, task := range tasks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := mustEncode(t, task)
			if !sameAsUnmarshal(t, b) {
				t.Errorf("decodeTask(%s) fell back to json.Unmarshal", b)
			}
			indented, err := json.MarshalIndent(task, "", "\t")
			if err != nil {
				t.Fatal(err)
			}
			if !sameAsUnmarshal(t, indented) {
				t.Errorf("decodeTask(%s) fell back to json.Unmarshal", indented)
			}
		})
	}
}

// handWritten is JSON the encoder does not write: what the fast path reads (fast) and what it
// leaves to json.Unmarshal.
var handWritten = []struct {
	json string
	fast bool
}{
	{`{"status":{"state":"TASK_STATE_WORKING"},"contextId":"c","id":"t"}`, true},
	{` { "id" : "t" , "status" : { } } `, true},
	{`{"id":"\u00e9\ud83d\ude00 \ud800 \ud800\u0041 \udc00\ud800\udc00 \/\b\f\n\r\t\"\\ \u00E9"}`, true},
	{`{"id":"é😀"}`, true},
	{`{"history":[{"parts":[{"url":"u","text":""}]}]}`, false},
	{`{"history":[{"parts":[{"raw":"AAEC\r\n/w=="}]}]}`, true},
	{`{"history":[{"parts":[{"raw":"AAEC\\r\\n/w=="}]}]}`, false},
	{`{"history":[{"parts":[{"raw":"AA="}]}]}`, false},
	{`{"history":[{"parts":[{"data":1e400}]}]}`, false},
	{`{"history":[{"parts":[{"data":-0.5e+3},{"data":[]},{"data":{"a":[{}]}},{"data":"s"},{"data":true}]}]}`, true},
	{`{"history":[{"parts":[{"data":null}]}]}`, false},
	{`{"history":[{"parts":[{"data":1x}]}]}`, false},
	{`{"history":[{"parts":[{"data":01}]}]}`, false},
	{`{"history":[{"parts":[{"data":{"a":1]}}]}]}`, false},
	{`{"history":[{"parts":[{"text":"a","text":"b"}]}]}`, false},
	{`{"history":[{"parts":[{"text":"a","metadata":null}]}]}`, false},
	{`{"history":[{"parts":[{"text":"a","Text":"b"}]}]}`, false},
	{`{"history":[{"parts":[{"text":"a","other":1}]}]}`, false},
	{`{"history":[{"parts":[{"text":"a"}],"metadata":{"a":1,"a":2}}]}`, true},
	{`{"history":[{"parts":[]}]}`, true},
	{`{"history":[{"parts":null}]}`, true},
	{`{"history":null}`, false},
	{`{"ID":"t"}`, false},
	{`{"id":"t","id":"u"}`, false},
	{`{"id":"t"} x`, false},
	{`{"id":"t"}{}`, false},
	{`{"id":"t",}`, false},
	{`{"id":"\x"}`, false},
	{`{"id":"\u12"}`, false},
	{"{\"id\":\"\xff\"}", false},
	{"{\"id\":\"\x01\"}", false},
	{`{"id":5}`, false},
	{`{"status":null}`, false},
	{`{"status":{"message":null}}`, false},
	{`{"status":{"timestamp":null}}`, false},
	{`{"status":{"timestamp":"2026-01-02T03:04:05Z"}}`, true},
	{`{"status":{"timestamp":"2026-01-02T03:04:05+01:00"}}`, true},
	{`{"status":{"timestamp":"2026-01-02 03:04:05Z"}}`, false},
	{`{"status":{"timestamp":"2026\u002d01-02T03:04:05Z"}}`, false},
	{`{"status":{"state":"TASK_STATE_UNSPECIFIED"}}`, true},
	{`{"metadata":{"x":[1,2,{"y":"}"}]}}`, true},
	{`{"metadata":[]}`, false},
	{`{"metadata":{}}`, true},
	{`{"metadata":{"n":-0.5e+3,"z":0,"e":1E2,"t":true,"f":false,"u":null,"s":"a\u00e9","a":[[],{}],"o":{"k":[1,"x"]}}}`, true},
	{`{"metadata":{"big":1e400}}`, false},
	{`{"metadata":{"n":01}}`, false},
	{`{"metadata":{"n":1.}}`, false},
	{`{"metadata":{"n":.5}}`, false},
	{`{"metadata":{"n":-}}`, false},
	{`{"metadata":{"n":1e}}`, false},
	{`{"metadata":{"n":+1}}`, false},
	{`{"metadata":{"t":tru}}`, false},
	{`{"metadata":{"a":[1,]}}`, false},
	{`{"metadata":{"a":1,}}`, false},
	{"{\"metadata\":{\"s\":\"\xff\"}}", true},
	{`{"metadata":{"deep":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}}`, true},
	{`null`, false},
	{``, false},
	{`{`, false},
	{`[]`, false},
}

// TestMetaByHand checks that metadata is read by hand (freeObject) where it can be, the same as
// json.Unmarshal reads it, and handed to json.Unmarshal where not.
func TestMetaByHand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		json   string
		byHand bool
	}{
		{`{}`, true},
		{`{"seq":3,"tenant":"","a":{"b":[1,2.5,-3e-2,"c",null,true,false]}}`, true},
		{`{"a":1,"a":"last"}`, true},
		{`{"k\u00e9\n":"v\ud83d\ude00"}`, true},
		{` { "a" : [ 1 , { } ] } `, true},
		{`{"deep":` + strings.Repeat(`[`, maxHandDepth) + strings.Repeat(`]`, maxHandDepth) + `}`, false},
		{`{"big":1e400}`, false},
		{"{\"s\":\"\xff\"}", false},
	} {
		d := decoder{b: []byte(c.json)}
		_, byHand := d.freeObject(0)
		if byHand != c.byHand {
			t.Errorf("freeObject(%s) ok = %v, want %v", c.json, byHand, c.byHand)
		}
		d = decoder{b: []byte(c.json)}
		got, ok := d.meta()
		var want map[string]any
		err := json.Unmarshal([]byte(c.json), &want)
		if ok != (err == nil) || ok && !reflect.DeepEqual(got, want) {
			t.Errorf("meta(%s) = %#v, %v; json.Unmarshal: %#v, %v", c.json, got, ok, want, err)
		}
	}
}

func TestDecodeHandWritten(t *testing.T) {
	t.Parallel()
	for _, c := range handWritten {
		if fast := sameAsUnmarshal(t, []byte(c.json)); fast != c.fast {
			t.Errorf("decodeTask(%s) fast path = %v, want %v", c.json, fast, c.fast)
		}
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for name, task := range map[string]*a2a.Task{
		"round-trip task": roundTripTask(),
		"bare task":       {},
		"status only":     {ID: "s", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}},
	} {
		got, err := DecodeTask(mustEncode(t, task))
		if err != nil {
			t.Errorf("%s: DecodeTask(AppendTask()) error: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, task) {
			t.Errorf("%s: DecodeTask(AppendTask()) differs (-want +got):\n%s", name, cmp.Diff(task, got))
		}
	}
}

func FuzzDecodeSameAsUnmarshal(f *testing.F) {
	for _, task := range []*a2a.Task{fixtureTask(), decodableTask(), roundTripTask(), {}} {
		f.Add(mustEncode(f, task))
		b, err := json.MarshalIndent(task, " ", " ")
		if err == nil {
			f.Add(b)
		}
	}
	for _, c := range handWritten {
		f.Add([]byte(c.json))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsUnmarshal(t, b) })
}

// BenchmarkDecodeTask measures reading a task back: a small one, as the engine writes it (see
// BenchmarkEncode), and the rich fixture.
func BenchmarkDecodeTask(b *testing.B) {
	msg := &a2a.Message{ID: "m1", Role: a2a.MessageRoleUser, TaskID: "t", ContextID: "c", Parts: a2a.ContentParts{a2a.NewTextPart("task hello")}}
	now := time.Now()
	small := &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now}, History: []*a2a.Message{msg},
		Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("task hello")}}}}
	for _, task := range []struct {
		name string
		b    []byte
	}{{"small", mustEncode(b, small)}, {"rich", mustEncode(b, roundTripTask())}} {
		b.Run(task.name+"/codec", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeTask(task.b); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(task.name+"/json.Unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var t a2a.Task
				if err := json.Unmarshal(task.b, &t); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
