package binding

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/a2ajson"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// Direct conversions between A2A values and capnweb values for the capnweb binding's hot path.
// They give exactly what toWire's and fromWire's JSON round trips (wire.go) give, without
// building or walking trees of maps, and decline whatever they cannot treat exactly as those do;
// the JSON path then does the work, errors included.
//
// Outbound, directWire writes stream responses and tasks with package a2ajson, which appends
// the bytes json.Marshal gives (and fails where it fails), and hands them to capnweb as a
// json.RawMessage: the peer reads the value it would read from toWire's JSON tree, and capnweb
// copies the bytes into the message instead of encoding a tree. TestDirectWire checks it against
// JSON, and TestDirectWireCovers that its cases set every field.
//
// Inbound, the requests of the hot path arrive as JSON (fromWire); directFromWire decodes the
// one a task handle builds as a tree.

// wireSizeHint is the buffer a stream response starts in: an echo task of the engine's (about
// 750 bytes, with its history and artifact) fits without growing it.
const wireSizeHint = 1024

// directWire returns the capnweb value of v when v is of a type written directly.
func directWire(v any) (any, bool) {
	var b []byte
	var err error
	switch x := v.(type) {
	case a2a.StreamResponse:
		if x.Event == nil {
			return nil, false
		}
		b, err = a2ajson.AppendEvent(make([]byte, 0, wireSizeHint), x.Event)
	case *a2a.Task:
		if x == nil {
			return nil, false
		}
		b, err = a2ajson.AppendTask(make([]byte, 0, wireSizeHint), x)
	default:
		return nil, false
	}
	if err != nil {
		return nil, false // the JSON path reports json.Marshal's error
	}
	return json.RawMessage(b), true
}

// directFromWire decodes v into dst, a fresh GetTaskRequest (a task handle's get builds one as
// a tree), when v has exactly the shape fromWire's JSON path (wire.Plain, json.Marshal,
// json.Unmarshal) decodes without a question — known keys in their exact case, values of the
// fields' kinds, valid UTF-8, integral counts — and gives the same result. It declines anything
// else and then leaves dst untouched. (The requests that arrive from the peer as JSON are
// a2ajson.DecodeRequest's.) TestDirectFromWire and FuzzFromWire check it against JSON.
func directFromWire(v any, dst any) bool {
	m, ok := wire.Fields(v)
	x, ok2 := dst.(*a2a.GetTaskRequest)
	if !ok || !ok2 {
		return false
	}
	var r reader
	var req a2a.GetTaskRequest
	r.getTask(m, &req)
	if !r.bad {
		*x = req
	}
	return !r.bad
}

// reader decodes a request; bad is set at the first value it declines.
type reader struct{ bad bool }

// fields calls f with each member of m that is not undefined (wire.Plain drops those).
func (r *reader) fields(m map[string]any, f func(k string, v any)) {
	for k, v := range m {
		if r.bad {
			return
		}
		if v != capnweb.Undefined {
			f(k, v)
		}
	}
}

func (r *reader) text(v any) string {
	s, ok := v.(string)
	if !ok || !utf8.ValidString(s) { // encoding/json replaces invalid bytes
		r.bad = true
	}
	return s
}

// count is an integral number that fits an int, as json.Unmarshal reads one into *int.
func (r *reader) count(v any) *int {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
		r.bad = true
		return nil
	}
	n := int(f)
	return &n
}

func (r *reader) getTask(m map[string]any, req *a2a.GetTaskRequest) {
	r.fields(m, func(k string, v any) {
		switch k {
		case "tenant":
			req.Tenant = r.text(v)
		case "id":
			req.ID = a2a.TaskID(r.text(v))
		case "historyLength":
			req.HistoryLength = r.count(v)
		default:
			r.bad = true
		}
	})
}
