package binding

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/a2ajson"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// Conversions between A2A types and capnweb values, and the error code table, are shared
// with the client through internal/wire.

// toWire converts an A2A value to the plain JSON value capnweb sends: what json.Marshal, then
// json.Unmarshal into an any, make of it. Stream responses and tasks, the values of the hot
// path, are converted directly (wireconv.go); the result is the same.
func toWire(v any) (any, error) {
	if out, ok := directWire(v); ok {
		return out, nil
	}
	return jsonWire(v)
}

// jsonWire is toWire by way of JSON.
func jsonWire(v any) (any, error) { return wire.Encode(v) }

// fromWire decodes a received capnweb value into an A2A request. Values JSON cannot hold are
// converted where ProtoJSON has a form for them (bytes, dates) and refused otherwise. A missing
// request is an empty one.
//
// The requests of the hot path (sendMessage, sendStreamingMessage, getTask) arrive as their
// JSON (a json.RawMessage parameter: capnweb hands over the JSON it received, and converts
// bytes and dates as above), which a2ajson.DecodeRequest reads; other values are decoded
// directly when they can be (wireconv.go), by way of JSON otherwise. The result is the same.
func fromWire(v any, dst any) error {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			raw = json.RawMessage("{}") // undefined
		}
		if err := a2ajson.DecodeRequest(raw, dst); err != nil {
			return invalidParams(err.Error())
		}
		return nil
	}
	if directFromWire(v, dst) {
		return nil
	}
	return jsonFromWire(v, dst)
}

// jsonFromWire is fromWire by way of JSON.
func jsonFromWire(v any, dst any) error {
	if v == nil || v == capnweb.Undefined {
		v = map[string]any{}
	}
	if err := wire.Decode(v, dst); err != nil {
		return invalidParams(err.Error())
	}
	return nil
}

func invalidParams(msg string) error {
	return a2a.NewError(a2a.ErrInvalidParams, "invalid params: "+msg)
}

// serviceParams reads the optional per-call service parameters: an object mapping names to
// a string or an array of strings.
func serviceParams(v any) (http.Header, error) {
	if v == nil || v == capnweb.Undefined {
		return nil, nil
	}
	if h, ok := v.(http.Header); ok { // from the binding itself (push)
		return h, nil
	}
	m, ok := wire.Fields(v)
	if !ok {
		return nil, invalidParams("service parameters must be an object of strings")
	}
	h := make(http.Header, len(m))
	for k, e := range m {
		switch x := e.(type) {
		case string:
			h.Add(k, x)
		case []any:
			for _, s := range x {
				str, ok := s.(string)
				if !ok {
					return nil, invalidParams(fmt.Sprintf("service parameter %q must be a string or an array of strings", k))
				}
				h.Add(k, str)
			}
		default:
			if e == capnweb.Undefined || e == nil {
				continue
			}
			return nil, invalidParams(fmt.Sprintf("service parameter %q must be a string or an array of strings", k))
		}
	}
	return h, nil
}

// capnwebError converts an error of the RequestHandler (or of the binding's checks) into the
// capnweb error the client sees: message, and the A2A code, reason and details as properties.
// Errors outside the A2A table are internal errors and do not show their text.
func capnwebError(err error) *capnweb.Error {
	var arg *capnweb.ArgError
	if errors.As(err, &arg) {
		// An argument capnweb could not convert (a capability where a request's JSON goes).
		// Checked first: an ArgError is also a *capnweb.Error (its default TypeError).
		err = invalidParams(arg.Error())
	}
	var ce *capnweb.Error
	if errors.As(err, &ce) {
		return ce // the peer's own error (an observer that threw), or one made on purpose
	}
	var re *requestError
	if errors.As(err, &re) {
		return capnweb.NewError("Error", re.message).
			WithProp("code", re.jsonrpcCode).
			WithProp("reason", re.reason).
			WithProp("details", []any{errorInfoJSON(re.reason, re.meta)})
	}
	code := wire.CodeOf(err)
	if code == 0 {
		return capnweb.NewError("Error", "internal error").
			WithProp("code", -32603).
			WithProp("reason", "INTERNAL_ERROR")
	}
	reason := a2a.ErrorReason(err)
	var meta map[string]string
	details := []any{}
	var ae *a2a.Error
	if errors.As(err, &ae) {
		for _, d := range ae.TypedDetails {
			if d == nil {
				continue
			}
			if d.TypeURL == errordetails.ErrorInfoType {
				if m, ok := d.Value["metadata"].(map[string]string); ok {
					meta = m
				}
				continue
			}
			if w, err := toWire(d); err == nil {
				details = append(details, w)
			}
		}
		if len(ae.Details) > 0 {
			if w, err := toWire(ae.Details); err == nil {
				details = append(details, w)
			}
		}
	}
	details = append([]any{errorInfoJSON(reason, meta)}, details...)
	return capnweb.NewError("Error", err.Error()).
		WithProp("code", code).
		WithProp("reason", reason).
		WithProp("details", details)
}

func errorInfoJSON(reason string, meta map[string]string) map[string]any {
	info := map[string]any{
		"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
		"reason": reason,
		"domain": a2a.ProtocolDomain,
	}
	if len(meta) > 0 {
		m := make(map[string]any, len(meta))
		for k, v := range meta {
			m[k] = v
		}
		info["metadata"] = m
	}
	return info
}
