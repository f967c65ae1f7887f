package memory

// What the store keeps of a task and of an event: a deep copy of what the write was given,
// which nobody else holds, encoded to JSON (the form the SQL stores write) only when it is
// first read, and decoded afresh on every read. A write so costs a typed copy, not a JSON
// encoding, and most stored values (those of the engine's tasks, whose live state the engine
// keeps itself) are never read back; reads still return exactly what encoding/json gives, as
// the other stores do.
//
// The copy must not accept what encoding would refuse, or a write that the other stores reject
// would succeed here: values inside Metadata and data parts are copied when they are what JSON
// decodes to (nil, bool, string, finite float64, map[string]any, []any), and any other value
// is encoded at once (so an unsupported value fails the write) and kept as its JSON;
// timestamps are checked as time.Time's MarshalJSON checks them.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/internal/codec"
)

// frozenTask is a stored task.
type frozenTask struct {
	once sync.Once
	task *a2a.Task // the copy, until encoded
	data []byte
	err  error
}

func freezeTask(t *a2a.Task) (*frozenTask, error) {
	c, err := copyTask(t)
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return &frozenTask{task: c}, nil
}

// thaw returns a fresh copy of the task, decoded from its JSON.
func (f *frozenTask) thaw() (*a2a.Task, error) {
	f.once.Do(func() {
		f.data, f.err = codec.EncodeTask(f.task)
		f.task = nil
	})
	if f.err != nil {
		return nil, f.err
	}
	return codec.DecodeTask(f.data)
}

// frozenEvent is a stored event.
type frozenEvent struct {
	once  sync.Once
	event a2a.Event // the copy, until encoded
	data  []byte
	err   error
}

// freezeEvents copies the events of a write (codec.CheckTask has rejected nil ones).
func freezeEvents(events []a2a.Event) ([]*frozenEvent, error) {
	out := make([]*frozenEvent, len(events))
	for i, e := range events {
		c, err := copyEvent(e)
		if err != nil {
			return nil, fmt.Errorf("%w: encode event %d: %v", store.ErrInvalid, i, err)
		}
		out[i] = &frozenEvent{event: c}
	}
	return out, nil
}

// thaw returns a fresh copy of the event, decoded from its JSON.
func (f *frozenEvent) thaw() (a2a.Event, error) {
	f.once.Do(func() {
		var enc [][]byte
		enc, f.err = codec.EncodeEvents([]a2a.Event{f.event})
		if f.err == nil {
			f.data = enc[0]
		}
		f.event = nil
	})
	if f.err != nil {
		return nil, f.err
	}
	return codec.DecodeEvent(f.data)
}

// maxCopyDepth bounds the recursion of copyValue: deeper values (and cyclic ones, which JSON
// refuses) go through JSON.
const maxCopyDepth = 32

var (
	errUnknownEvent = errors.New("unknown event type")
	errBadTime      = errors.New("Time.MarshalJSON: year outside of range [0,9999] or timezone hour outside of range [0,23]")
)

func copyEvent(e a2a.Event) (a2a.Event, error) {
	switch x := e.(type) {
	case *a2a.Task:
		return copyTask(x)
	case *a2a.Message:
		return copyMessage(x)
	case *a2a.TaskStatusUpdateEvent:
		if x == nil {
			return x, nil
		}
		c := *x
		var err error
		if c.Status, err = copyStatus(x.Status); err != nil {
			return nil, err
		}
		if c.Metadata, err = copyMeta(x.Metadata); err != nil {
			return nil, err
		}
		return &c, nil
	case *a2a.TaskArtifactUpdateEvent:
		if x == nil {
			return x, nil
		}
		c := *x
		var err error
		if c.Artifact, err = copyArtifact(x.Artifact); err != nil {
			return nil, err
		}
		if c.Metadata, err = copyMeta(x.Metadata); err != nil {
			return nil, err
		}
		return &c, nil
	}
	return nil, fmt.Errorf("%w: %T", errUnknownEvent, e)
}

func copyTask(t *a2a.Task) (*a2a.Task, error) {
	if t == nil {
		return nil, nil
	}
	c := *t
	var err error
	if c.Status, err = copyStatus(t.Status); err != nil {
		return nil, err
	}
	if t.History != nil {
		c.History = make([]*a2a.Message, len(t.History))
		for i, m := range t.History {
			if c.History[i], err = copyMessage(m); err != nil {
				return nil, err
			}
		}
	}
	if t.Artifacts != nil {
		c.Artifacts = make([]*a2a.Artifact, len(t.Artifacts))
		for i, a := range t.Artifacts {
			if c.Artifacts[i], err = copyArtifact(a); err != nil {
				return nil, err
			}
		}
	}
	if c.Metadata, err = copyMeta(t.Metadata); err != nil {
		return nil, err
	}
	return &c, nil
}

func copyStatus(s a2a.TaskStatus) (a2a.TaskStatus, error) {
	var err error
	if s.Message, err = copyMessage(s.Message); err != nil {
		return s, err
	}
	if s.Timestamp != nil {
		ts := *s.Timestamp
		if err := checkTime(ts); err != nil {
			return s, err
		}
		s.Timestamp = &ts
	}
	return s, nil
}

// checkTime refuses the times time.Time's MarshalJSON refuses.
func checkTime(t time.Time) error {
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off <= -24*3600 || off >= 24*3600 {
		return errBadTime
	}
	return nil
}

func copyMessage(m *a2a.Message) (*a2a.Message, error) {
	if m == nil {
		return nil, nil
	}
	c := *m
	var err error
	c.Extensions = slices.Clone(m.Extensions)
	c.ReferenceTasks = slices.Clone(m.ReferenceTasks)
	if c.Metadata, err = copyMeta(m.Metadata); err != nil {
		return nil, err
	}
	if c.Parts, err = copyParts(m.Parts); err != nil {
		return nil, err
	}
	return &c, nil
}

func copyArtifact(a *a2a.Artifact) (*a2a.Artifact, error) {
	if a == nil {
		return nil, nil
	}
	c := *a
	var err error
	c.Extensions = slices.Clone(a.Extensions)
	if c.Metadata, err = copyMeta(a.Metadata); err != nil {
		return nil, err
	}
	if c.Parts, err = copyParts(a.Parts); err != nil {
		return nil, err
	}
	return &c, nil
}

func copyParts(ps a2a.ContentParts) (a2a.ContentParts, error) {
	if ps == nil {
		return nil, nil
	}
	out := make(a2a.ContentParts, len(ps))
	for i, p := range ps {
		if p == nil {
			continue
		}
		c := *p
		switch x := p.Content.(type) {
		case a2a.Raw:
			c.Content = a2a.Raw(slices.Clone([]byte(x)))
		case a2a.Data:
			v, err := copyValue(x.Value, 0)
			if err != nil {
				return nil, err
			}
			c.Content = a2a.Data{Value: v}
		}
		var err error
		if c.Metadata, err = copyMeta(p.Metadata); err != nil {
			return nil, err
		}
		out[i] = &c
	}
	return out, nil
}

func copyMeta(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := copyValue(m, 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// copyValue copies a value inside Metadata or a data part: the values JSON decodes to are
// copied, any other value (or one nested deeper than maxCopyDepth) is replaced by its JSON
// (a json.RawMessage), which a read decodes as it would have decoded the value's.
func copyValue(v any, depth int) (any, error) {
	if depth < maxCopyDepth {
		switch x := v.(type) {
		case nil, bool, string:
			return x, nil
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				break // JSON refuses it: let it say so
			}
			return x, nil
		case map[string]any:
			if x == nil {
				return x, nil
			}
			c := make(map[string]any, len(x))
			for k, e := range x {
				ce, err := copyValue(e, depth+1)
				if err != nil {
					return nil, err
				}
				c[k] = ce
			}
			return c, nil
		case []any:
			if x == nil {
				return x, nil
			}
			c := make([]any, len(x))
			for i, e := range x {
				ce, err := copyValue(e, depth+1)
				if err != nil {
					return nil, err
				}
				c[i] = ce
			}
			return c, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}
