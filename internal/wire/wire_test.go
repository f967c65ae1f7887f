package wire

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

func TestPlain(t *testing.T) {
	t.Parallel()
	when := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	tests := []struct {
		name    string
		in, out any
	}{
		{"scalars", []any{nil, true, "s", 1.5}, []any{nil, true, "s", 1.5}},
		{"undefined members dropped", map[string]any{"a": capnweb.Undefined, "b": 1.0}, map[string]any{"b": 1.0}},
		{"undefined elements are null", []any{capnweb.Undefined}, []any{nil}},
		{"bytes", map[string]any{"raw": []byte("hi")}, map[string]any{"raw": "aGk="}},
		{"typed bytes", capnweb.TypedBytes{Type: "ArrayBuffer", Data: []byte("hi")}, "aGk="},
		{"date", when, "2026-01-02T02:04:05.000000006Z"},
		{"undefined", capnweb.Undefined, nil},
	}
	for _, tt := range tests {
		got, err := Plain(tt.in)
		if err != nil {
			t.Errorf("Plain(%s) = %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.out, got); diff != "" {
			t.Errorf("Plain(%s) (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, bad := range []any{math.Inf(1), math.NaN(), map[string]any{"s": capnweb.ReadableStreamOf()}, []any{capnweb.NewError("Error", "x")}} {
		if got, err := Plain(bad); err == nil {
			t.Errorf("Plain(%T) = %v, want an error", bad, got)
		}
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var task a2a.Task
	in := map[string]any{"id": "t1", "contextId": "c1", "status": map[string]any{"state": "TASK_STATE_WORKING", "timestamp": time.Unix(0, 0)}}
	if err := Decode(in, &task); err != nil {
		t.Fatalf("Decode() = %v", err)
	}
	if task.ID != "t1" || task.Status.State != a2a.TaskStateWorking || task.Status.Timestamp == nil || !task.Status.Timestamp.Equal(time.Unix(0, 0)) {
		t.Errorf("Decode() = %+v", task)
	}
	back, err := Encode(&task)
	if err != nil {
		t.Fatalf("Encode() = %v", err)
	}
	if m, ok := back.(map[string]any); !ok || m["id"] != "t1" {
		t.Errorf("Encode() = %v", back)
	}
}

// The table is a bijection: each code one condition, each condition one code.
func TestCodes(t *testing.T) {
	t.Parallel()
	codes := map[int]bool{}
	for _, c := range Codes {
		if codes[c.Code] {
			t.Errorf("code %d twice", c.Code)
		}
		codes[c.Code] = true
		if got := Sentinel(c.Code); !errors.Is(got, c.Err) {
			t.Errorf("Sentinel(%d) = %v, want %v", c.Code, got, c.Err)
		}
		if got := CodeOf(a2a.NewError(c.Err, "x")); got != c.Code {
			t.Errorf("CodeOf(%v) = %d, want %d", c.Err, got, c.Code)
		}
	}
	if Sentinel(1) != nil || CodeOf(errors.New("x")) != 0 {
		t.Errorf("codes outside the table map to something")
	}
}
