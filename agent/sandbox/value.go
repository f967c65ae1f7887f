package sandbox

// Values between JSON and Starlark: what a method's arguments become, what its result must be.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"

	"go.starlark.net/starlark"
)

// maxDepth bounds how deeply a value converted either way may nest.
const maxDepth = 64

// fromJSON decodes data (one JSON value) into a Starlark value: objects become dicts (keys in
// sorted order), arrays lists, integral numbers ints, other numbers floats.
func fromJSON(data []byte) (starlark.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return toStarlark(v, 0)
}

func toStarlark(v any, depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("a value nested more than %d deep", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(x), nil
	case string:
		return starlark.String(x), nil
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			if i, ok := new(big.Int).SetString(string(x), 10); ok {
				return starlark.MakeBigInt(i), nil
			}
		}
		f, err := x.Float64()
		if err != nil {
			return nil, err
		}
		return starlark.Float(f), nil
	case []any:
		elems := make([]starlark.Value, len(x))
		for i, e := range x {
			sv, err := toStarlark(e, depth+1)
			if err != nil {
				return nil, err
			}
			elems[i] = sv
		}
		return starlark.NewList(elems), nil
	case map[string]any:
		d := starlark.NewDict(len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sv, err := toStarlark(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), sv); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}

// toJSON encodes a Starlark value as JSON: None, bools, ints, finite floats, strings, lists,
// tuples and dicts with string keys; anything else is an error naming its type.
func toJSON(v starlark.Value) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, v, 0); err != nil {
		return nil, err
	}
	if b.Len() > maxFrame/2 {
		return nil, fmt.Errorf("a value larger than %d bytes of JSON", maxFrame/2)
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, v starlark.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("a value nested more than %d deep", maxDepth)
	}
	if b.Len() > maxFrame/2 {
		return fmt.Errorf("a value larger than %d bytes of JSON", maxFrame/2)
	}
	switch x := v.(type) {
	case starlark.NoneType:
		b.WriteString("null")
	case starlark.Bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case starlark.Int:
		b.WriteString(x.String())
	case starlark.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%v is not a JSON number", f)
		}
		data, _ := json.Marshal(f)
		b.Write(data)
	case starlark.String:
		data, _ := json.Marshal(string(x))
		b.Write(data)
	case starlark.Indexable: // list, tuple
		if _, ok := x.(*starlark.List); !ok {
			if _, ok := x.(starlark.Tuple); !ok {
				return fmt.Errorf("a %s is not a JSON value", v.Type())
			}
		}
		b.WriteByte('[')
		for i := range x.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, x.Index(i), depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *starlark.Dict:
		items := x.Items()
		type kv struct {
			k string
			v starlark.Value
		}
		kvs := make([]kv, 0, len(items))
		for _, it := range items {
			k, ok := it[0].(starlark.String)
			if !ok {
				return fmt.Errorf("a dict key %s is not a string", it[0].Type())
			}
			kvs = append(kvs, kv{string(k), it[1]})
		}
		slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		b.WriteByte('{')
		for i, e := range kvs {
			if i > 0 {
				b.WriteByte(',')
			}
			data, _ := json.Marshal(e.k)
			b.Write(data)
			b.WriteByte(':')
			if err := writeJSON(b, e.v, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("a %s is not a JSON value", v.Type())
	}
	return nil
}
