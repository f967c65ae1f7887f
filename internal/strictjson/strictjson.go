// Package strictjson decodes untrusted JSON strictly: encoding/json matches object keys to
// struct fields without regard to case and takes the last of repeated keys, which lets two
// readers of one document see different values (message smuggling). Unmarshal refuses both,
// and unknown keys.
package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/a2awebcap/a2awebcap/internal/jcs"
)

// Unmarshal decodes data into v (a pointer) refusing duplicate keys, invalid UTF-8, keys that
// are not exactly a field's JSON name, and unknown keys, at any depth. Values of types that
// implement json.Unmarshaler, and maps, check their own keys (a map's keys are not checked,
// its values are).
func Unmarshal(data []byte, v any) error {
	if _, err := jcs.Canonicalize(data); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "jcs: "))
	}
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if err := exactKeys(raw, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// exactKeys checks the object keys of raw against the JSON names of t's fields, recursively.
func exactKeys(raw any, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // it checks itself
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return nil // a type mismatch: json.Unmarshal says so
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = f.Type
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("unknown key %q", join(at, k))
			}
			if err := exactKeys(m[k], ft, join(at, k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if a, ok := raw.([]any); ok {
			for i, x := range a {
				if err := exactKeys(x, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if m, ok := raw.(map[string]any); ok {
			for k, x := range m {
				if err := exactKeys(x, t.Elem(), join(at, k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}
