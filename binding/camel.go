package binding

import (
	"bytes"
	"encoding/json"
	"strings"
)

// camelParams rewrites the snake_case field names of a JSON-RPC request's params to the
// lowerCamelCase names a2a-go's decoder knows. ProtoJSON parsers accept both spellings (the
// proto field name and its JSON name) and clients built on protobuf send the former (the
// conformance kit does: history_length, task_id); a2a-go ignores them silently, which turns
// "historyLength: 1" into "all history". Values under metadata, and other free-form maps, keep
// their keys. A body that does not parse is passed through for a2a-go to reject.
func camelParams(body []byte) []byte {
	if !mayHaveSnakeKey(body) {
		return body // the common case, seen without parsing the body twice
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil || len(req["params"]) == 0 {
		return body
	}
	var params any
	if json.Unmarshal(req["params"], &params) != nil {
		return body
	}
	changed := false
	params = camelKeys(params, &changed)
	if !changed {
		return body
	}
	p, err := json.Marshal(params)
	if err != nil {
		return body
	}
	req["params"] = p
	out, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return out
}

// mayHaveSnakeKey reports whether an object key in the JSON text body may hold an underscore:
// one that does, or one with an escape, which may spell one. It reads strings as JSON does
// and nothing else, so it never misses a key camelParams would rewrite; on text that is not
// JSON it answers anything (camelParams passes such a body through either way).
func mayHaveSnakeKey(body []byte) bool {
	s := jsonScanner{b: body}
	for s.i < len(body) {
		if body[s.i] != '"' {
			s.i++
			continue
		}
		str, ok := s.str()
		if !ok {
			return false // not JSON
		}
		s.ws()
		if s.i < len(body) && body[s.i] == ':' && (bytes.IndexByte(str, '_') >= 0 || bytes.IndexByte(str, '\\') >= 0) {
			return true
		}
	}
	return false
}

// freeForm are fields whose values are maps of user data, not messages.
var freeForm = map[string]bool{"metadata": true, "data": true, "params": true}

func camelKeys(v any, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ck := k
			if strings.Contains(k, "_") {
				ck = snakeToCamel(k)
				*changed = true
			}
			if freeForm[ck] {
				out[ck] = e
				continue
			}
			if _, dup := x[ck]; dup && ck != k {
				continue // both spellings sent: the camelCase one wins
			}
			out[ck] = camelKeys(e, changed)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = camelKeys(e, changed)
		}
	}
	return v
}

func snakeToCamel(s string) string {
	parts := strings.Split(s, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}
