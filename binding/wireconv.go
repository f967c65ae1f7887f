package binding

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/a2ajson"
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
// Inbound, directFromWire decodes the requests of the hot path; see there.

// maxDirectDepth bounds the nesting of metadata and data values decoded directly; deeper ones
// go through JSON.
const maxDirectDepth = 32

// wireSizeHint is the buffer a stream response starts in: an echo task's fits.
const wireSizeHint = 512

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

// plain converts the JSON-like values of a received request (metadata, data parts) with the
// rules of the JSON path it replaces, wire.Plain: undefined members dropped, undefined
// elements null, bytes base64, dates RFC 3339 in UTC, strings valid UTF-8. bad is set at the
// first value it must leave to JSON.
type plain struct {
	bad bool
}

func (c *plain) str(s string) string {
	if !utf8.ValidString(s) {
		c.bad = true // encoding/json replaces the bad bytes
	}
	return s
}

// object copies o; nil becomes empty (wire.Plain makes a new map).
func (c *plain) object(o map[string]any, depth int) map[string]any {
	m := make(map[string]any, len(o))
	for k, v := range o {
		if v == capnweb.Undefined {
			continue
		}
		m[c.str(k)] = c.value(v, depth+1)
	}
	return m
}

func (c *plain) value(v any, depth int) any {
	if depth > maxDirectDepth {
		c.bad = true
		return nil
	}
	switch x := v.(type) {
	case nil, bool:
		return x
	case string:
		return c.str(x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			c.bad = true // wire.Plain refuses it
		}
		return x
	case map[string]any:
		return c.object(x, depth)
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			if e != capnweb.Undefined {
				a[i] = c.value(e, depth+1)
			}
		}
		return a
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case capnweb.TypedBytes:
		return base64.StdEncoding.EncodeToString(x.Data)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	c.bad = true
	return nil
}

// directFromWire decodes v into dst, a fresh SendMessageRequest or GetTaskRequest, when v has
// exactly the shape fromWire's JSON path (wire.Plain, json.Marshal, json.Unmarshal) decodes
// without a question — known keys in their exact case, values of the fields' kinds, valid UTF-8,
// integral counts — and gives the same result. It declines anything else (null, unknown or
// differently cased keys, raw bytes, push configs, other request types) and then leaves dst
// untouched. TestDirectFromWire and FuzzFromWire check it against JSON.
func directFromWire(v any, dst any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	r := reader{plain{}}
	switch x := dst.(type) {
	case *a2a.SendMessageRequest:
		var req a2a.SendMessageRequest
		r.sendMessage(m, &req)
		if !r.bad {
			*x = req
		}
	case *a2a.GetTaskRequest:
		var req a2a.GetTaskRequest
		r.getTask(m, &req)
		if !r.bad {
			*x = req
		}
	default:
		return false
	}
	return !r.bad
}

// reader decodes a request; bad is set at the first value it declines.
type reader struct{ plain }

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

func (r *reader) obj(v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		r.bad = true
	}
	return m
}

func (r *reader) text(v any) string {
	s, ok := v.(string)
	if !ok {
		r.bad = true
	}
	return r.str(s)
}

func (r *reader) texts(v any) []string {
	a, ok := v.([]any)
	if !ok {
		r.bad = true
		return nil
	}
	out := make([]string, len(a))
	for i, e := range a {
		out[i] = r.text(e)
	}
	return out
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

func (r *reader) sendMessage(m map[string]any, req *a2a.SendMessageRequest) {
	r.fields(m, func(k string, v any) {
		switch k {
		case "tenant":
			req.Tenant = r.text(v)
		case "message":
			req.Message = r.message(r.obj(v))
		case "configuration":
			req.Config = &a2a.SendMessageConfig{}
			r.fields(r.obj(v), func(k string, v any) {
				switch k {
				case "acceptedOutputModes":
					req.Config.AcceptedOutputModes = r.texts(v)
				case "returnImmediately":
					b, ok := v.(bool)
					req.Config.ReturnImmediately, r.bad = b, r.bad || !ok
				case "historyLength":
					req.Config.HistoryLength = r.count(v)
				default:
					r.bad = true
				}
			})
		case "metadata":
			req.Metadata = r.metadata(v)
		default:
			r.bad = true
		}
	})
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

func (r *reader) message(m map[string]any) *a2a.Message {
	msg := &a2a.Message{}
	r.fields(m, func(k string, v any) {
		switch k {
		case "messageId":
			msg.ID = r.text(v)
		case "contextId":
			msg.ContextID = r.text(v)
		case "taskId":
			msg.TaskID = a2a.TaskID(r.text(v))
		case "role":
			if msg.Role = a2a.MessageRole(r.text(v)); msg.Role == "ROLE_UNSPECIFIED" {
				msg.Role = a2a.MessageRoleUnspecified
			}
		case "extensions":
			msg.Extensions = r.texts(v)
		case "referenceTaskIds":
			ids := r.texts(v)
			msg.ReferenceTasks = make([]a2a.TaskID, len(ids))
			for i, id := range ids {
				msg.ReferenceTasks[i] = a2a.TaskID(id)
			}
		case "metadata":
			msg.Metadata = r.metadata(v)
		case "parts":
			a, ok := v.([]any)
			if !ok {
				r.bad = true
				return
			}
			msg.Parts = make(a2a.ContentParts, len(a))
			for i, e := range a {
				msg.Parts[i] = r.part(r.obj(e))
			}
		default:
			r.bad = true
		}
	})
	return msg
}

// part takes text, data or a non-empty url: exactly one (raw bytes go through JSON).
func (r *reader) part(m map[string]any) *a2a.Part {
	p := &a2a.Part{}
	n := 0
	r.fields(m, func(k string, v any) {
		switch k {
		case "text":
			p.Content, n = a2a.Text(r.text(v)), n+1
		case "data":
			if v == nil {
				r.bad = true // JSON's null data is no content
			}
			p.Content, n = a2a.Data{Value: r.value(v, 0)}, n+1
		case "url":
			u := r.text(v)
			if u == "" {
				r.bad = true
			}
			p.Content, n = a2a.URL(u), n+1
		case "filename":
			p.Filename = r.text(v)
		case "mediaType":
			p.MediaType = r.text(v)
		case "metadata":
			p.Metadata = r.metadata(v)
		default:
			r.bad = true
		}
	})
	if n != 1 {
		r.bad = true
	}
	return p
}

func (r *reader) metadata(v any) map[string]any {
	m := r.object(r.obj(v), 0)
	if m == nil {
		m = map[string]any{} // r.bad is set
	}
	return m
}
