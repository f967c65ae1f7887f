package capnweb

import (
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"weak"

	"github.com/a2awebcap/a2awebcap/internal/jsonstr"
)

// Object is a JavaScript object: its properties, in order.
//
// An object received from the peer arrives as an Object, its properties in the order the peer
// sent them (a JavaScript peer sends them in the order of Object.keys), and an Object sent goes
// in its order. So an object that passes through Go — echoed, kept in a target and returned,
// forwarded — keeps its key order, as JavaScript callers expect. A map[string]any is sent with
// its keys sorted: Go maps have no order.
//
// Get reads a property, Map makes a map of them, and Decode converts an Object into a map or a
// struct. An Object's keys are distinct; one built in Go with a key twice is sent as it is, and
// the peer keeps the last value, as JSON.parse does. Object implements json.Marshaler and
// json.Unmarshaler, in order too.
type Object []Prop

// Prop is a property of an Object.
type Prop struct {
	Key   string
	Value any
}

// Get returns the value of the property named key, and whether there is one (the last, if
// the key repeats). It compares key with each.
func (o Object) Get(key string) (any, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Value, true
		}
	}
	return nil, false
}

// Map returns the properties as a map. The values are not converted: an object among them is
// an Object still.
func (o Object) Map() map[string]any {
	m := make(map[string]any, len(o))
	for _, p := range o {
		m[p.Key] = p.Value
	}
	return m
}

// MarshalJSON writes o as a JSON object, its properties in order (undefined ones left out, as
// JSON.stringify leaves them out), each value as encoding/json writes it.
func (o Object) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	b := []byte{'{'}
	n := 0
	for _, p := range o {
		if p.Value == Undefined {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = jsonstr.AppendGo(b, p.Key)
		b = append(b, ':')
		v, err := json.Marshal(p.Value)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a JSON object into o, its properties in order, as a message's values are
// read: objects inside are Objects, arrays []any, numbers float64; duplicate keys are an error.
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := parseJSON(data, 2*DefaultLimits.MaxDepth)
	if err != nil {
		return err
	}
	obj, ok := v.(Object)
	if !ok {
		if v == nil { // null leaves o as it is, as encoding/json does
			return nil
		}
		return errors.New("capnweb: Object.UnmarshalJSON: not a JSON object")
	}
	*o = obj
	return nil
}

// The library's own lookups of properties (pipelined reads of a value the peer sent, say) go
// through an index when an object has many keys: a peer could otherwise send one large object
// and then make every small message cost a walk of it.

// indexAbove: an object with more keys than this is looked up through an index.
const indexAbove = 32

// objectIndexes holds the index of each large object looked up, by a weak pointer to its
// first property, until the object is collected.
var objectIndexes sync.Map // weak.Pointer[Prop] -> *objectIndex

type objectIndex struct {
	n   int            // the object's length when indexed
	pos map[string]int // key -> position of its last property
}

// lookup is Get, through an index for a large object. The index is built on the first lookup
// and kept while the object lives; a lookup it answers is checked against the object, which is
// read again if it was changed since (a changed key is not found until it is read again by
// Get: received objects are not changed, and one the program changes in place it should not
// send while it does).
func (o Object) lookup(key string) (any, bool) {
	if len(o) <= indexAbove {
		return o.Get(key)
	}
	i, ok := o.index()[key]
	if !ok {
		return nil, false
	}
	if i < len(o) && o[i].Key == key {
		return o[i].Value, true
	}
	return o.Get(key)
}

// index returns o's index, building it if o has none or has grown or shrunk since.
func (o Object) index() map[string]int {
	wp := weak.Make(&o[0])
	if v, ok := objectIndexes.Load(wp); ok && v.(*objectIndex).n == len(o) {
		return v.(*objectIndex).pos
	}
	pos := make(map[string]int, len(o))
	for i, p := range o {
		pos[p.Key] = i
	}
	if _, had := objectIndexes.Swap(wp, &objectIndex{n: len(o), pos: pos}); !had {
		runtime.AddCleanup(&o[0], dropIndex, wp)
	}
	return pos
}

func dropIndex(wp weak.Pointer[Prop]) { objectIndexes.Delete(wp) }
