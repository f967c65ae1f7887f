// Package a2ajson writes and reads the JSON of A2A tasks and events by hand: the bytes
// json.Marshal gives for a2a-go's types, and the values json.Unmarshal makes of them.
//
// encoding/json spends most of a write's time in reflection and in the MarshalJSON methods of
// a2a-go's types (each of which marshals a wrapper and then has its output re-scanned). The
// functions below append the same bytes json.Marshal gives for the same value (append_test.go
// compares them, and fuzzes the comparison); only the free-form values (Metadata, the value of a
// data part) are left to encoding/json. Reading a task back is written by hand too (decode.go),
// for the same reason — json.Unmarshal was a tenth of the server's CPU on getTask — and it falls
// back to json.Unmarshal on anything it does not expect.
//
// The stores keep tasks and events in this form (store/internal/codec), and the capnweb binding
// sends it (binding/wireconv.go).
package a2ajson

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2awebcap/a2awebcap/internal/jsonstr"
)

// AppendTask appends json.Marshal(t).
func AppendTask(b []byte, t *a2a.Task) ([]byte, error) { return appendTask(b, t) }

// AppendEvent appends json.Marshal(a2a.StreamResponse{Event: e}): the event wrapped as
// {"task": …}, {"message": …}, {"statusUpdate": …} or {"artifactUpdate": …}.
func AppendEvent(b []byte, e a2a.Event) ([]byte, error) { return appendEvent(b, e) }

// appendEvent appends json.Marshal(a2a.StreamResponse{Event: e}).
func appendEvent(b []byte, e a2a.Event) ([]byte, error) {
	var err error
	switch x := e.(type) {
	case *a2a.Message:
		if x == nil {
			return append(b, "{}"...), nil
		}
		b = append(b, `{"message":`...)
		b, err = appendMessage(b, x)
	case *a2a.Task:
		if x == nil {
			return append(b, "{}"...), nil
		}
		b = append(b, `{"task":`...)
		b, err = appendTask(b, x)
	case *a2a.TaskStatusUpdateEvent:
		if x == nil {
			return append(b, "{}"...), nil
		}
		b = append(b, `{"statusUpdate":`...)
		b, err = appendStatusUpdate(b, x)
	case *a2a.TaskArtifactUpdateEvent:
		if x == nil {
			return append(b, "{}"...), nil
		}
		b = append(b, `{"artifactUpdate":`...)
		b, err = appendArtifactUpdate(b, x)
	default:
		return nil, fmt.Errorf("unknown event type: %T", e)
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendTask appends json.Marshal(t).
func appendTask(b []byte, t *a2a.Task) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, string(t.ID))
	if len(t.Artifacts) > 0 {
		b = append(b, `,"artifacts":[`...)
		for i, a := range t.Artifacts {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendArtifact(b, a); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"contextId":`...)
	b = appendString(b, t.ContextID)
	if len(t.History) > 0 {
		b = append(b, `,"history":[`...)
		for i, m := range t.History {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendMessage(b, m); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if b, err = appendMeta(b, t.Metadata); err != nil {
		return nil, err
	}
	b = append(b, `,"status":`...)
	if b, err = appendStatus(b, &t.Status); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendStatus(b []byte, s *a2a.TaskStatus) ([]byte, error) {
	b = append(b, '{')
	if s.Message != nil {
		var err error
		b = append(b, `"message":`...)
		if b, err = appendMessage(b, s.Message); err != nil {
			return nil, err
		}
		b = append(b, ',')
	}
	b = append(b, `"state":`...)
	b = appendString(b, s.State.String())
	if s.Timestamp != nil {
		var err error
		b = append(b, `,"timestamp":`...)
		if b, err = appendTime(b, *s.Timestamp); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendTime appends time.Time's MarshalJSON without its allocation: the same format, and the
// same check (a 4-digit year, a zone offset under 24 hours), whose failure MarshalJSON reports.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	n := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	if b[n+4] != '-' || (b[len(b)-1] != 'Z' && (digit(b[len(b)-6]) || (b[len(b)-5]-'0')*10+(b[len(b)-4]-'0') >= 24)) {
		if _, err := t.MarshalJSON(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("Time.MarshalJSON: cannot encode %v", t)
	}
	return append(b, '"'), nil
}

func appendMessage(b []byte, m *a2a.Message) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"messageId":`...)
	b = appendString(b, m.ID)
	if m.ContextID != "" {
		b = append(b, `,"contextId":`...)
		b = appendString(b, m.ContextID)
	}
	if len(m.Extensions) > 0 {
		b = append(b, `,"extensions":`...)
		b = appendStrings(b, m.Extensions)
	}
	if b, err = appendMeta(b, m.Metadata); err != nil {
		return nil, err
	}
	b = append(b, `,"parts":`...)
	if b, err = appendParts(b, m.Parts); err != nil {
		return nil, err
	}
	if len(m.ReferenceTasks) > 0 {
		b = append(b, `,"referenceTaskIds":[`...)
		for i, id := range m.ReferenceTasks {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, string(id))
		}
		b = append(b, ']')
	}
	b = append(b, `,"role":`...)
	b = appendString(b, m.Role.String())
	if m.TaskID != "" {
		b = append(b, `,"taskId":`...)
		b = appendString(b, string(m.TaskID))
	}
	return append(b, '}'), nil
}

func appendArtifact(b []byte, a *a2a.Artifact) ([]byte, error) {
	if a == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"artifactId":`...)
	b = appendString(b, string(a.ID))
	if a.Description != "" {
		b = append(b, `,"description":`...)
		b = appendString(b, a.Description)
	}
	if len(a.Extensions) > 0 {
		b = append(b, `,"extensions":`...)
		b = appendStrings(b, a.Extensions)
	}
	if b, err = appendMeta(b, a.Metadata); err != nil {
		return nil, err
	}
	if a.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, a.Name)
	}
	b = append(b, `,"parts":`...)
	if b, err = appendParts(b, a.Parts); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendStatusUpdate(b []byte, e *a2a.TaskStatusUpdateEvent) ([]byte, error) {
	var err error
	b = append(b, `{"contextId":`...)
	b = appendString(b, e.ContextID)
	b = append(b, `,"status":`...)
	if b, err = appendStatus(b, &e.Status); err != nil {
		return nil, err
	}
	b = append(b, `,"taskId":`...)
	b = appendString(b, string(e.TaskID))
	if b, err = appendMeta(b, e.Metadata); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendArtifactUpdate(b []byte, e *a2a.TaskArtifactUpdateEvent) ([]byte, error) {
	var err error
	b = append(b, '{')
	if e.Append {
		b = append(b, `"append":true,`...)
	}
	b = append(b, `"artifact":`...)
	if b, err = appendArtifact(b, e.Artifact); err != nil {
		return nil, err
	}
	b = append(b, `,"contextId":`...)
	b = appendString(b, e.ContextID)
	if e.LastChunk {
		b = append(b, `,"lastChunk":true`...)
	}
	b = append(b, `,"taskId":`...)
	b = appendString(b, string(e.TaskID))
	if b, err = appendMeta(b, e.Metadata); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendParts appends ContentParts' MarshalJSON: null when nil.
func appendParts(b []byte, ps a2a.ContentParts) ([]byte, error) {
	if ps == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendPart(b, p); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendPart appends Part's MarshalJSON: at most one of text, raw, data and url (none for
// unknown content or an empty URL), then filename, mediaType and metadata when set.
func appendPart(b []byte, p *a2a.Part) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	n := len(b)
	switch c := p.Content.(type) {
	case a2a.Text:
		b = append(b, `"text":`...)
		b = appendString(b, string(c))
	case a2a.Raw:
		b = append(b, `"raw":`...)
		if c == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, c)
			b = append(b, '"')
		}
	case a2a.Data:
		b = append(b, `"data":`...)
		var err error
		if b, err = appendFree(b, c.Value); err != nil {
			return nil, err
		}
	case a2a.URL:
		if c != "" {
			b = append(b, `"url":`...)
			b = appendString(b, string(c))
		}
	}
	sep := func() {
		if len(b) > n {
			b = append(b, ',')
		}
	}
	if p.Filename != "" {
		sep()
		b = append(b, `"filename":`...)
		b = appendString(b, p.Filename)
	}
	if p.MediaType != "" {
		sep()
		b = append(b, `"mediaType":`...)
		b = appendString(b, p.MediaType)
	}
	if len(p.Metadata) > 0 {
		sep()
		b = append(b, `"metadata":`...)
		var err error
		if b, err = appendFree(b, p.Metadata); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendMeta appends `,"metadata":…` when m is not empty.
func appendMeta(b []byte, m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return b, nil
	}
	b = append(b, `,"metadata":`...)
	return appendFree(b, m)
}

// appendFree appends a free-form value (metadata, the value of a data part) as json.Marshal
// writes it. The JSON-like values (maps with string keys, []any, strings, bools, finite floats,
// Go integers) are written here; anything else, or anything nested deeper than maxFreeDepth
// levels, is left to json.Marshal.
func appendFree(b []byte, v any) ([]byte, error) {
	n := len(b)
	if out, ok := appendPlain(b, v, 0); ok {
		return out, nil
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b[:n], enc...), nil
}

// maxPlainDepth bounds the nesting appendPlain writes itself.
const maxPlainDepth = 32

// appendPlain is appendFree's fast path: ok is false for a value it leaves to json.Marshal.
func appendPlain(b []byte, v any, depth int) (_ []byte, ok bool) {
	if depth > maxPlainDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		return appendString(b, x), true
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPlain(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendStrings(b, x), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		var buf [8]string // the keys of a small map sort without an allocation
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if b, ok = appendPlain(b, x[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendFloat appends f as encoding/json does; ok is false for NaN and ±Inf, which it refuses.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString appends s as encoding/json does (see jsonstr.AppendGo).
func appendString(b []byte, s string) []byte { return jsonstr.AppendGo(b, s) }
