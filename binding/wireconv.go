package binding

import (
	"encoding/base64"
	"math"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Direct conversions between A2A values and capnweb values for the capnweb binding's hot path.
// They give exactly what toWire's and fromWire's JSON round trips (wire.go) give, without
// encoding and parsing JSON, and decline whatever they cannot treat exactly as those do; the JSON
// path then does the work, errors included.
//
// Outbound, directWire converts stream responses and tasks field by field as a2a-go's ProtoJSON
// encoding (its MarshalJSON methods and json tags) writes them, into the tree json.Unmarshal
// would make of that: map[string]any, []any, string, float64, bool and nil. It declines strings
// that are not valid UTF-8 (encoding/json replaces their bad bytes), metadata values other than
// plain JSON-like ones and Go integers, non-finite numbers, timestamps RFC 3339 cannot write,
// deep or cyclic metadata, and typed nil events. TestDirectWire checks it against JSON, and
// TestDirectWireCovers that it knows every field.
//
// Inbound, directFromWire decodes the requests of the hot path; see there.

// maxDirectDepth bounds the nesting of metadata and data values converted directly; deeper
// ones (or cyclic ones) go through JSON, which reports the cycle.
const maxDirectDepth = 32

// plain converts strings and JSON-like values (metadata, data parts) in either direction,
// with the rules of the JSON path it replaces: toWire's json.Marshal (Go integers are numbers;
// strings must be valid UTF-8) or, inbound, wire.Plain (undefined members dropped,
// undefined elements null, bytes base64, dates RFC 3339 in UTC). bad is set at the first value
// it must leave to JSON.
type plain struct {
	bad     bool
	inbound bool
}

func (c *plain) str(s string) string {
	if !utf8.ValidString(s) {
		c.bad = true // encoding/json replaces the bad bytes
	}
	return s
}

// object copies o; nil stays nil outbound (JSON null) and becomes empty inbound (wire.Plain
// makes a new map).
func (c *plain) object(o map[string]any, depth int) map[string]any {
	if o == nil && !c.inbound {
		return nil
	}
	m := make(map[string]any, len(o))
	for k, v := range o {
		if c.inbound && v == capnweb.Undefined {
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
			c.bad = true // json.Marshal and wire.Plain refuse it
		}
		return x
	case map[string]any:
		if m := c.object(x, depth); m != nil {
			return m
		}
		return nil
	case []any:
		if x == nil && !c.inbound {
			return nil
		}
		a := make([]any, len(x))
		for i, e := range x {
			if !c.inbound || e != capnweb.Undefined {
				a[i] = c.value(e, depth+1)
			}
		}
		return a
	}
	if c.inbound {
		switch x := v.(type) {
		case []byte:
			return base64.StdEncoding.EncodeToString(x)
		case capnweb.TypedBytes:
			return base64.StdEncoding.EncodeToString(x.Data)
		case time.Time:
			return x.UTC().Format(time.RFC3339Nano)
		}
	} else {
		switch x := v.(type) {
		case int:
			return float64(x)
		case int64:
			return float64(x)
		case int32:
			return float64(x)
		case uint64:
			return float64(x)
		case uint32:
			return float64(x)
		case []string:
			if x == nil {
				return nil
			}
			return strList(c, x)
		}
	}
	c.bad = true
	return nil
}

// strList converts a list of strings (of any string type).
func strList[S ~string](c *plain, ss []S) []any {
	a := make([]any, len(ss))
	for i, s := range ss {
		a[i] = c.str(string(s))
	}
	return a
}

// direct converts one A2A value to its capnweb value.
type direct struct{ plain }

// directWire returns the capnweb value of v when v is of a type converted directly.
func directWire(v any) (any, bool) {
	var c direct
	var out any
	switch x := v.(type) {
	case a2a.StreamResponse:
		out = c.event(x.Event)
	case *a2a.Task:
		if x == nil {
			return nil, false
		}
		out = c.task(x)
	default:
		return nil, false
	}
	return out, !c.bad
}

func (c *direct) event(ev a2a.Event) map[string]any {
	var k string
	var v any
	switch e := ev.(type) {
	case *a2a.Task:
		k, v = "task", c.task(e)
	case *a2a.Message:
		k, v = "message", c.message(e)
	case *a2a.TaskStatusUpdateEvent:
		k, v = "statusUpdate", c.statusUpdate(e)
	case *a2a.TaskArtifactUpdateEvent:
		k, v = "artifactUpdate", c.artifactUpdate(e)
	}
	if v == nil {
		c.bad = true // no event, or a typed nil one
		return nil
	}
	return map[string]any{k: v}
}

func (c *direct) task(t *a2a.Task) any {
	if t == nil {
		return nil
	}
	m := make(map[string]any, 6)
	m["id"] = c.str(string(t.ID))
	if len(t.Artifacts) > 0 {
		a := make([]any, len(t.Artifacts))
		for i, x := range t.Artifacts {
			a[i] = c.artifact(x)
		}
		m["artifacts"] = a
	}
	m["contextId"] = c.str(t.ContextID)
	if len(t.History) > 0 {
		a := make([]any, len(t.History))
		for i, x := range t.History {
			a[i] = c.message(x)
		}
		m["history"] = a
	}
	c.metadata(m, t.Metadata)
	m["status"] = c.status(&t.Status)
	return m
}

func (c *direct) status(s *a2a.TaskStatus) map[string]any {
	m := make(map[string]any, 3)
	if s.Message != nil {
		m["message"] = c.message(s.Message)
	}
	m["state"] = c.str(s.State.String())
	if s.Timestamp != nil {
		m["timestamp"] = c.time(*s.Timestamp)
	}
	return m
}

func (c *direct) message(msg *a2a.Message) any {
	if msg == nil {
		return nil
	}
	m := make(map[string]any, 6)
	m["messageId"] = c.str(msg.ID)
	c.omitEmpty(m, "contextId", msg.ContextID)
	putList(c, m, "extensions", msg.Extensions)
	c.metadata(m, msg.Metadata)
	m["parts"] = c.parts(msg.Parts)
	putList(c, m, "referenceTaskIds", msg.ReferenceTasks)
	m["role"] = c.str(msg.Role.String())
	c.omitEmpty(m, "taskId", string(msg.TaskID))
	return m
}

func (c *direct) artifact(a *a2a.Artifact) any {
	if a == nil {
		return nil
	}
	m := make(map[string]any, 3)
	m["artifactId"] = c.str(string(a.ID))
	c.omitEmpty(m, "description", a.Description)
	putList(c, m, "extensions", a.Extensions)
	c.metadata(m, a.Metadata)
	c.omitEmpty(m, "name", a.Name)
	m["parts"] = c.parts(a.Parts)
	return m
}

func (c *direct) statusUpdate(e *a2a.TaskStatusUpdateEvent) any {
	if e == nil {
		return nil
	}
	m := make(map[string]any, 4)
	m["contextId"] = c.str(e.ContextID)
	m["status"] = c.status(&e.Status)
	m["taskId"] = c.str(string(e.TaskID))
	c.metadata(m, e.Metadata)
	return m
}

func (c *direct) artifactUpdate(e *a2a.TaskArtifactUpdateEvent) any {
	if e == nil {
		return nil
	}
	m := make(map[string]any, 6)
	if e.Append {
		m["append"] = true
	}
	m["artifact"] = c.artifact(e.Artifact)
	m["contextId"] = c.str(e.ContextID)
	if e.LastChunk {
		m["lastChunk"] = true
	}
	m["taskId"] = c.str(string(e.TaskID))
	c.metadata(m, e.Metadata)
	return m
}

// parts is ContentParts: null when nil, as its MarshalJSON writes it.
func (c *direct) parts(ps a2a.ContentParts) any {
	if ps == nil {
		return nil
	}
	a := make([]any, len(ps))
	for i, p := range ps {
		a[i] = c.part(p)
	}
	return a
}

// part is Part.MarshalJSON's flattened object.
func (c *direct) part(p *a2a.Part) any {
	if p == nil {
		return nil
	}
	m := make(map[string]any, 2)
	switch v := p.Content.(type) {
	case nil:
	case a2a.Text:
		m["text"] = c.str(string(v))
	case a2a.Raw:
		if v == nil {
			m["raw"] = nil
		} else {
			m["raw"] = base64.StdEncoding.EncodeToString(v)
		}
	case a2a.Data:
		m["data"] = c.value(v.Value, 0)
	case a2a.URL:
		if v != "" {
			m["url"] = c.str(string(v))
		}
	default:
		c.bad = true
	}
	c.omitEmpty(m, "filename", p.Filename)
	c.omitEmpty(m, "mediaType", p.MediaType)
	c.metadata(m, p.Metadata)
	return m
}

func (c *direct) omitEmpty(m map[string]any, k, s string) {
	if s != "" {
		m[k] = c.str(s)
	}
}

// putList sets m[k] to the strings of ss unless there are none (omitempty).
func putList[S ~string](c *direct, m map[string]any, k string, ss []S) {
	if len(ss) > 0 {
		m[k] = strList(&c.plain, ss)
	}
}

// time is time.Time.MarshalJSON's RFC 3339 string, which refuses years outside [0,9999] and
// zone offsets of 24 hours or more.
func (c *direct) time(t time.Time) string {
	s := t.Format(time.RFC3339Nano)
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' {
		c.bad = true
	} else if s[len(s)-1] != 'Z' {
		sign, h := s[len(s)-6], s[len(s)-5:len(s)-3]
		if ('0' <= sign && sign <= '9') || h >= "24" {
			c.bad = true
		}
	}
	return s
}

// metadata sets m["metadata"] unless md is empty (omitempty).
func (c *direct) metadata(m map[string]any, md map[string]any) {
	if len(md) > 0 {
		m["metadata"] = c.object(md, 0)
	}
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
	r := reader{plain{inbound: true}}
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
