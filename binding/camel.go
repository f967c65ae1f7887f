package binding

import (
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
	for i := 0; i < len(body); i++ {
		if body[i] != '"' {
			continue
		}
		j, maybe := i+1, false
		for ; j < len(body) && body[j] != '"'; j++ {
			switch body[j] {
			case '\\':
				maybe = true
				j++ // the escaped byte, perhaps a quote
			case '_':
				maybe = true
			}
		}
		k := j + 1
		for k < len(body) && (body[k] == ' ' || body[k] == '\t' || body[k] == '\n' || body[k] == '\r') {
			k++
		}
		if maybe && k < len(body) && body[k] == ':' {
			return true
		}
		i = j
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
