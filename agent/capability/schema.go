package capability

// JSON Schemas of methods' parameters and results: the subset a capability may use, enforced
// exactly as described. A schema a capability declares is what the model is told and what
// every call is checked against, so a keyword this package would not enforce is refused rather
// than shown and ignored.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/a2awebcap/a2awebcap/internal/jcs"
)

// Schema is a JSON Schema (2020-12) restricted to what this package enforces: type,
// description, properties, required, items, enum, bounds on lengths, sizes and numbers.
// Objects never allow properties they do not declare (Describe writes
// "additionalProperties": false). The zero Schema accepts any value.
type Schema struct {
	// Type is "object", "array", "string", "integer", "number", "boolean" or "null"; "" allows
	// any.
	Type        string             `json:"type,omitempty"`
	Description string             `json:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	Enum        []string           `json:"enum,omitempty"`
	MaxLength   *int               `json:"maxLength,omitempty"`
	MaxItems    *int               `json:"maxItems,omitempty"`
	Minimum     *float64           `json:"minimum,omitempty"`
	Maximum     *float64           `json:"maximum,omitempty"`
}

// ErrBadSchema reports a schema this package cannot enforce.
var ErrBadSchema = errors.New("capability: unsupported schema")

// maxSchemaDepth bounds how deeply schemas nest.
const maxSchemaDepth = 16

// MarshalJSON writes s with "additionalProperties": false on objects.
func (s *Schema) MarshalJSON() ([]byte, error) {
	type plain Schema
	if s.Type != "object" {
		return json.Marshal((*plain)(s))
	}
	return json.Marshal(struct {
		*plain
		AdditionalProperties bool `json:"additionalProperties"`
	}{(*plain)(s), false})
}

var schemaKeys = map[string]bool{"type": true, "description": true, "properties": true, "required": true,
	"items": true, "enum": true, "maxLength": true, "maxItems": true, "minimum": true, "maximum": true,
	"additionalProperties": true}

// UnmarshalJSON reads a schema, refusing keywords it would not enforce (exactly spelled:
// encoding/json alone would match keys case-insensitively) and "additionalProperties" other
// than false. It does not see duplicate keys: read schemas with [ParseSchema] or
// [ParseManifest], which refuse them.
func (s *Schema) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return fmt.Errorf("%w: a schema is an object", ErrBadSchema)
	}
	for k, v := range m {
		if !schemaKeys[k] {
			return fmt.Errorf("%w: keyword %q", ErrBadSchema, k)
		}
		if k == "additionalProperties" && string(v) != "false" {
			return fmt.Errorf("%w: additionalProperties must be false", ErrBadSchema)
		}
	}
	type plain Schema
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	*s = Schema(p)
	return nil
}

// ParseSchema reads a schema from JSON: [Schema.UnmarshalJSON], and no duplicate keys,
// invalid UTF-8 or nesting deeper than 16.
func ParseSchema(data []byte) (*Schema, error) {
	if _, err := jcs.Canonicalize(data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	var s Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	if err := s.check(0); err != nil {
		return nil, err
	}
	return &s, nil
}

// check reports whether s is a schema this package enforces.
func (s *Schema) check(depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrBadSchema, maxSchemaDepth)
	}
	switch s.Type {
	case "", "object", "array", "string", "integer", "number", "boolean", "null":
	default:
		return fmt.Errorf("%w: type %q", ErrBadSchema, s.Type)
	}
	if (len(s.Properties) > 0 || len(s.Required) > 0) && s.Type != "object" {
		return fmt.Errorf("%w: properties on a non-object", ErrBadSchema)
	}
	for _, r := range s.Required {
		if s.Properties[r] == nil {
			return fmt.Errorf("%w: required property %q is not declared", ErrBadSchema, r)
		}
	}
	if s.Items != nil && s.Type != "array" {
		return fmt.Errorf("%w: items on a non-array", ErrBadSchema)
	}
	if len(s.Enum) > 0 && s.Type != "string" {
		return fmt.Errorf("%w: enum is for strings", ErrBadSchema)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[k]
		if p == nil {
			return fmt.Errorf("%w: property %q has no schema", ErrBadSchema, k)
		}
		if err := p.check(depth + 1); err != nil {
			return err
		}
	}
	if s.Items != nil {
		return s.Items.check(depth + 1)
	}
	return nil
}

// validate checks v (as decoded by decodeJSON) against s, naming where it fails: "path: want
// a string".
func (s *Schema) validate(v any, at string) error {
	if s == nil {
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", cmpOr(at, "value"), fmt.Sprintf(format, args...))
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fail("want an object")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p, declared := s.Properties[k]
			if !declared {
				return fail("unknown property %q", k)
			}
			if err := p.validate(m[k], join(at, k)); err != nil {
				return err
			}
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				return fail("missing property %q", r)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fail("want an array")
		}
		if s.MaxItems != nil && len(a) > *s.MaxItems {
			return fail("more than %d items", *s.MaxItems)
		}
		for i, x := range a {
			if err := s.Items.validate(x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fail("want a string")
		}
		if s.MaxLength != nil && utf8.RuneCountInString(str) > *s.MaxLength {
			return fail("longer than %d characters", *s.MaxLength)
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			return fail("want one of %s", strings.Join(s.Enum, ", "))
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return fail("want a %s", s.Type)
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) {
			return fail("number out of range")
		}
		if s.Type == "integer" && (f != math.Trunc(f) || math.Abs(f) > 1<<53) {
			return fail("want an integer")
		}
		if s.Minimum != nil && f < *s.Minimum {
			return fail("less than %v", *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return fail("more than %v", *s.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fail("want true or false")
		}
	case "null":
		if v != nil {
			return fail("want null")
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

// decodeJSON reads data strictly — no duplicate keys, valid UTF-8, nothing after the value,
// nesting bounded — into maps, slices, strings, json.Numbers, bools and nils. It returns the
// canonical form too (RFC 8785), which identifies the value whatever its spelling.
func decodeJSON(data []byte) (any, []byte, error) {
	canon, err := jcs.Canonicalize(data)
	if err != nil {
		return nil, nil, errors.New(strings.TrimPrefix(err.Error(), "jcs: "))
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, err
	}
	return v, canon, nil
}

func cmpOr[T ~string](a, b T) T {
	if a != "" {
		return a
	}
	return b
}

// Schema constructors, for capabilities written in Go.

// Object is an object schema with the given properties, of which required are required.
func Object(desc string, props map[string]*Schema, required ...string) *Schema {
	return &Schema{Type: "object", Description: desc, Properties: props, Required: required}
}

// String is a string schema.
func String(desc string) *Schema { return &Schema{Type: "string", Description: desc} }

// Integer is an integer schema.
func Integer(desc string) *Schema { return &Schema{Type: "integer", Description: desc} }

// Boolean is a boolean schema.
func Boolean(desc string) *Schema { return &Schema{Type: "boolean", Description: desc} }

// Array is an array schema of items.
func Array(desc string, items *Schema) *Schema {
	return &Schema{Type: "array", Description: desc, Items: items}
}
