package a2ajson

// The JSON of tasks, read by hand: json.Unmarshal spends most of a read's time in
// reflection and in the UnmarshalJSON methods of a2a-go's types (every Part, TaskState and
// MessageRole unmarshals into a wrapper of its own, re-scanning its bytes). decodeTask reads the
// shapes appendTask writes, strictly, into the value json.Unmarshal gives for the same bytes
// (decode_test.go compares them, and fuzzes the comparison). Anything else — an unknown or
// duplicate key, a null it does not expect, a string escape or number it does not read, invalid
// JSON — makes it give up, and DecodeTask runs json.Unmarshal on the whole input instead, so
// that the result and the error are always json.Unmarshal's. Metadata objects are read here too
// (freeValue), but for those it does not read, which json.Unmarshal reads alone; the value of a
// data part is found here and handed to json.Unmarshal.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2awebcap/a2awebcap/internal/jsonstr"
)

// maxFreeDepth bounds the nesting of a free-form value the fast path hands to json.Unmarshal,
// far below encoding/json's own limit (10000, counted from the top of the document), which a
// value decoded on its own would otherwise see from a lower start.
const maxFreeDepth = 1000

// decoder reads one stored task. Every method returns false when the input is not what the
// fast path reads; the caller then gives up on the whole input.
type decoder struct {
	b   []byte
	i   int
	buf []byte // scratch for unescaping strings
}

// DecodeTask reads the JSON of a task: what json.Unmarshal gives, read by hand where the bytes
// are what AppendTask writes, by json.Unmarshal otherwise.
func DecodeTask(b []byte) (*a2a.Task, error) {
	if t, ok := decodeTask(b); ok {
		return t, nil
	}
	var t a2a.Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decode task: %w", err)
	}
	return &t, nil
}

// decodeTask is DecodeTask's fast path: ok is false when it gives up.
func decodeTask(b []byte) (t *a2a.Task, ok bool) {
	d := decoder{b: b}
	t = new(a2a.Task)
	if !d.task(t) {
		return nil, false
	}
	d.ws()
	return t, d.i == len(d.b)
}

var (
	taskKeys     = []string{"id", "artifacts", "contextId", "history", "metadata", "status"}
	statusKeys   = []string{"message", "state", "timestamp"}
	messageKeys  = []string{"messageId", "contextId", "extensions", "metadata", "parts", "referenceTaskIds", "role", "taskId"}
	artifactKeys = []string{"artifactId", "description", "extensions", "metadata", "name", "parts"}
	partKeys     = []string{"text", "raw", "data", "url", "filename", "mediaType", "metadata"}
)

func (d *decoder) task(t *a2a.Task) bool {
	return d.object(taskKeys, func(k int) bool {
		var ok bool
		switch k {
		case 0:
			var s string
			s, ok = d.str()
			t.ID = a2a.TaskID(s)
		case 1:
			t.Artifacts, ok = array(d, (*decoder).artifact)
		case 2:
			t.ContextID, ok = d.str()
		case 3:
			t.History, ok = array(d, (*decoder).message)
		case 4:
			t.Metadata, ok = d.meta()
		case 5:
			ok = d.status(&t.Status)
		}
		return ok
	})
}

func (d *decoder) status(s *a2a.TaskStatus) bool {
	return d.object(statusKeys, func(k int) bool {
		var ok bool
		switch k {
		case 0:
			if s.Message, ok = d.message(); s.Message == nil {
				ok = false // null: json.Unmarshal's answer, but not ours to give
			}
		case 1:
			var v string
			if v, ok = d.str(); ok {
				s.State = taskState(v)
			}
		case 2:
			s.Timestamp, ok = d.time()
		}
		return ok
	})
}

// taskState is TaskState.UnmarshalJSON of the string v, with the states' constants rather than
// new strings.
func taskState(v string) a2a.TaskState {
	for _, s := range [...]a2a.TaskState{
		a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateSubmitted, a2a.TaskStateInputRequired,
		a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected, a2a.TaskStateAuthRequired,
	} {
		if v == string(s) {
			return s
		}
	}
	if v == "TASK_STATE_UNSPECIFIED" {
		return a2a.TaskStateUnspecified
	}
	return a2a.TaskState(v)
}

// role is MessageRole.UnmarshalJSON of the string v.
func role(v string) a2a.MessageRole {
	switch v {
	case string(a2a.MessageRoleAgent):
		return a2a.MessageRoleAgent
	case string(a2a.MessageRoleUser):
		return a2a.MessageRoleUser
	case "ROLE_UNSPECIFIED":
		return a2a.MessageRoleUnspecified
	}
	return a2a.MessageRole(v)
}

// time reads a timestamp with time.Time's own UnmarshalJSON, which json.Unmarshal calls with
// the string's raw bytes. Only strings of plain ASCII are taken (a timestamp has no escapes).
func (d *decoder) time() (*time.Time, bool) {
	d.ws()
	start := d.i
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	for d.i++; d.i < len(d.b); d.i++ {
		c := d.b[d.i]
		if c == '"' {
			d.i++
			t := new(time.Time)
			if t.UnmarshalJSON(d.b[start:d.i]) != nil {
				return nil, false
			}
			return t, true
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return nil, false
}

// message reads a message, or null (a nil message).
func (d *decoder) message() (*a2a.Message, bool) {
	if d.null() {
		return nil, true
	}
	m := new(a2a.Message)
	ok := d.object(messageKeys, func(k int) bool {
		var ok bool
		var s string
		switch k {
		case 0:
			m.ID, ok = d.str()
		case 1:
			m.ContextID, ok = d.str()
		case 2:
			m.Extensions, ok = d.strs()
		case 3:
			m.Metadata, ok = d.meta()
		case 4:
			m.Parts, ok = d.parts()
		case 5:
			m.ReferenceTasks, ok = array(d, func(d *decoder) (a2a.TaskID, bool) {
				s, ok := d.str()
				return a2a.TaskID(s), ok
			})
		case 6:
			if s, ok = d.str(); ok {
				m.Role = role(s)
			}
		case 7:
			s, ok = d.str()
			m.TaskID = a2a.TaskID(s)
		}
		return ok
	})
	return m, ok
}

// artifact reads an artifact, or null (a nil artifact).
func (d *decoder) artifact() (*a2a.Artifact, bool) {
	if d.null() {
		return nil, true
	}
	a := new(a2a.Artifact)
	ok := d.object(artifactKeys, func(k int) bool {
		var ok bool
		switch k {
		case 0:
			var s string
			s, ok = d.str()
			a.ID = a2a.ArtifactID(s)
		case 1:
			a.Description, ok = d.str()
		case 2:
			a.Extensions, ok = d.strs()
		case 3:
			a.Metadata, ok = d.meta()
		case 4:
			a.Name, ok = d.str()
		case 5:
			a.Parts, ok = d.parts()
		}
		return ok
	})
	return a, ok
}

// parts reads ContentParts: null is nil, [] is empty and not nil.
func (d *decoder) parts() (a2a.ContentParts, bool) {
	if d.null() {
		return nil, true
	}
	ps, ok := array(d, (*decoder).part)
	return a2a.ContentParts(ps), ok
}

// part reads what Part.UnmarshalJSON accepts, or null (a nil part): exactly one of text, raw,
// data and url, which must not be null (data), nor empty (url).
func (d *decoder) part() (*a2a.Part, bool) {
	if d.null() {
		return nil, true
	}
	p := new(a2a.Part)
	ok := d.object(partKeys, func(k int) bool {
		if k < 4 && p.Content != nil {
			return false // a second content: Part.UnmarshalJSON's error
		}
		switch k {
		case 0:
			s, ok := d.str()
			p.Content = a2a.Text(s)
			return ok
		case 1:
			s, ok := d.strBytes()
			if !ok {
				return false
			}
			raw := make([]byte, base64.StdEncoding.DecodedLen(len(s))) // as encoding/json decodes []byte
			n, err := base64.StdEncoding.Decode(raw, s)
			p.Content = a2a.Raw(raw[:n])
			return err == nil
		case 2:
			v, ok := d.free()
			if !ok || string(v) == "null" {
				return false
			}
			var x any
			if json.Unmarshal(v, &x) != nil {
				return false
			}
			p.Content = a2a.Data{Value: x}
			return true
		case 3:
			s, ok := d.str()
			p.Content = a2a.URL(s)
			return ok && s != ""
		case 4:
			var ok bool
			p.Filename, ok = d.str()
			return ok
		case 5:
			var ok bool
			p.MediaType, ok = d.str()
			return ok
		default:
			var ok bool
			p.Metadata, ok = d.meta()
			return ok
		}
	})
	return p, ok && p.Content != nil
}

// meta reads a Metadata object: by hand (freeObject) where it can, else with json.Unmarshal.
// null is not taken.
func (d *decoder) meta() (map[string]any, bool) {
	d.ws()
	start := d.i
	if m, ok := d.freeObject(0); ok {
		return m, true
	}
	d.i = start
	v, ok := d.free()
	if !ok || v[0] != '{' {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(v, &m) != nil {
		return nil, false
	}
	return m, true
}

// maxHandDepth bounds the nesting freeValue reads by hand; deeper values go to json.Unmarshal.
const maxHandDepth = 32

// freeValue reads a free-form JSON value into what json.Unmarshal gives for it in an any:
// map[string]any, []any (empty, not nil, for {} and []), string, float64, bool or nil, a
// repeated key taking the last value. It gives up on what it does not read as json.Unmarshal
// would — a string that is not valid UTF-8, a number out of float64's range, invalid JSON —
// and on nesting deeper than maxHandDepth.
func (d *decoder) freeValue(depth int) (any, bool) {
	d.ws()
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; c {
	case '{':
		m, ok := d.freeObject(depth)
		return m, ok
	case '[':
		if depth >= maxHandDepth {
			return nil, false
		}
		return array(d, func(d *decoder) (any, bool) { return d.freeValue(depth + 1) })
	case '"':
		return d.str()
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	return d.number()
}

// freeObject reads a JSON object as freeValue does.
func (d *decoder) freeObject(depth int) (map[string]any, bool) {
	if depth >= maxHandDepth || !d.consume('{') {
		return nil, false
	}
	m := make(map[string]any)
	if d.consume('}') {
		return m, true
	}
	for {
		k, ok := d.str()
		if !ok || !d.consume(':') {
			return nil, false
		}
		if m[k], ok = d.freeValue(depth + 1); !ok {
			return nil, false
		}
		if d.consume('}') {
			return m, true
		}
		if !d.consume(',') {
			return nil, false
		}
	}
}

// literal reads lit (true, false or null), which must be next.
func (d *decoder) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// number reads a JSON number as json.Unmarshal does into an any: a float64.
func (d *decoder) number() (any, bool) {
	end, ok := jsonstr.NumberEnd(d.b, d.i)
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(d.b[d.i:end]), 64)
	d.i = end
	return f, err == nil
}

// free returns the bytes of the free-form value that starts at d.i. It only finds where the
// value ends (brackets outside strings; a scalar up to a delimiter); json.Unmarshal of the bytes
// then checks them. That is enough: a valid JSON value is never the beginning of a longer one
// but for a number, whose characters are all taken here.
func (d *decoder) free() ([]byte, bool) {
	d.ws()
	start, depth := d.i, 0
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; c {
		case '"':
			for d.i++; d.i < len(d.b) && d.b[d.i] != '"'; d.i++ {
				if d.b[d.i] == '\\' {
					d.i++
				}
			}
			if d.i >= len(d.b) {
				return nil, false
			}
		case '{', '[':
			if depth++; depth > maxFreeDepth {
				return nil, false
			}
		case '}', ']':
			if depth == 0 { // the end of the object or array holding a scalar
				return d.b[start:d.i], d.i > start
			}
			depth--
		case ' ', '\t', '\n', '\r', ',':
			if depth == 0 {
				return d.b[start:d.i], d.i > start
			}
			continue
		default:
			continue
		}
		if depth == 0 {
			d.i++
			return d.b[start:d.i], true
		}
	}
	return d.b[start:d.i], depth == 0 && d.i > start
}

// strs reads an array of strings: [] is empty and not nil.
func (d *decoder) strs() ([]string, bool) { return array(d, (*decoder).str) }

// array reads a JSON array of what elem reads. As json.Unmarshal does, [] gives an empty slice,
// not nil; null is not taken.
func array[T any](d *decoder, elem func(*decoder) (T, bool)) ([]T, bool) {
	if !d.consume('[') {
		return nil, false
	}
	s := []T{}
	if d.consume(']') {
		return s, true
	}
	for {
		v, ok := elem(d)
		if !ok {
			return nil, false
		}
		s = append(s, v)
		if d.consume(']') {
			return s, true
		}
		if !d.consume(',') {
			return nil, false
		}
	}
}

// object reads a JSON object whose keys are among keys, each at most once, written without
// escapes; value reads the value of keys[k].
func (d *decoder) object(keys []string, value func(k int) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	var seen uint32
	for {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return false
		}
		start := d.i + 1
		end := start
		for end < len(d.b) && d.b[end] != '"' && d.b[end] != '\\' {
			end++
		}
		if end >= len(d.b) || d.b[end] != '"' {
			return false
		}
		key := d.b[start:end]
		k := -1
		for j, name := range keys {
			if string(key) == name {
				k = j
				break
			}
		}
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		d.i = end + 1
		if !d.consume(':') || !value(k) {
			return false
		}
		if d.consume('}') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}

// str reads a string as json.Unmarshal does; invalid UTF-8 is not taken.
func (d *decoder) str() (string, bool) {
	s, ok := d.strBytes()
	return string(s), ok
}

// strBytes reads a string into bytes that are valid until the next string is read.
func (d *decoder) strBytes() ([]byte, bool) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	d.i++
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c == '\\':
			return d.unescape(start)
		case c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			d.i++
		default:
			r, n := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			d.i += n
		}
	}
	return nil, false
}

// unescape reads the rest of a string with escapes, which began at start and whose first escape
// is at d.i, as encoding/json's unquote does (a lone or broken surrogate becomes U+FFFD).
func (d *decoder) unescape(start int) ([]byte, bool) {
	buf := append(d.buf[:0], d.b[start:d.i]...)
	defer func() { d.buf = buf[:0] }()
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return buf, true
		case c == '\\':
			var err error
			if buf, d.i, err = jsonstr.AppendUnescaped(buf, d.b, d.i); err != nil {
				return nil, false
			}
		case c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.i++
		default:
			r, n := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			buf = append(buf, d.b[d.i:d.i+n]...)
			d.i += n
		}
	}
	return nil, false
}

// null reads null if it is next.
func (d *decoder) null() bool {
	d.ws()
	return d.literal("null")
}

// consume reads c if it is next.
func (d *decoder) consume(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// ws skips JSON whitespace.
func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}
