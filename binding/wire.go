package binding

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"
	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Conversions between A2A types and capnweb values. A2A values travel as their ProtoJSON
// objects (what a2a-go's JSON encoding produces), so the capnweb binding carries exactly the
// params and results of the JSON-RPC binding.

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
func jsonWire(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// fromWire decodes a received capnweb value into an A2A request. Values JSON cannot hold are
// converted where ProtoJSON has a form for them (bytes, dates) and refused otherwise. The
// requests of the hot path are decoded directly when they can be (wireconv.go); the result is
// the same as by way of JSON.
func fromWire(v any, dst any) error {
	if directFromWire(v, dst) {
		return nil
	}
	return jsonFromWire(v, dst)
}

// jsonFromWire is fromWire by way of JSON.
func jsonFromWire(v any, dst any) error {
	plain, err := plainJSON(v, 0)
	if err != nil {
		return invalidParams(err.Error())
	}
	if plain == nil {
		plain = map[string]any{}
	}
	b, err := json.Marshal(plain)
	if err != nil {
		return invalidParams(err.Error())
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return invalidParams(err.Error())
	}
	return nil
}

func invalidParams(msg string) error {
	return a2a.NewError(a2a.ErrInvalidParams, "invalid params: "+msg)
}

// plainJSON returns v as a tree of JSON values: undefined members are dropped, bytes become
// base64 strings and dates RFC 3339 strings. capnweb's own limits already bound the depth.
func plainJSON(v any, depth int) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%v is not a JSON number", x)
		}
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e == capnweb.Undefined {
				continue
			}
			p, err := plainJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = p
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if e == capnweb.Undefined {
				continue // null, as JSON.stringify writes it
			}
			p, err := plainJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case capnweb.TypedBytes:
		return base64.StdEncoding.EncodeToString(x.Data), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	}
	if v == capnweb.Undefined {
		return nil, nil
	}
	return nil, fmt.Errorf("a %s cannot appear in an A2A request", typeName(v))
}

func typeName(v any) string {
	switch v.(type) {
	case *capnweb.Stub:
		return "capability"
	case *capnweb.ReadableStream, *capnweb.WritableStream:
		return "stream"
	case *capnweb.Error:
		return "error"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}

// serviceParams reads the optional per-call service parameters: an object mapping names to
// a string or an array of strings.
func serviceParams(v any) (http.Header, error) {
	if v == nil || v == capnweb.Undefined {
		return nil, nil
	}
	m, ok := v.(map[string]any)
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

// JSON-RPC codes of the A2A error table (spec §5.4, §9.5), shared by the capnweb binding.
var jsonrpcCodes = []struct {
	err  error
	code int
}{
	{a2a.ErrTaskNotFound, -32001},
	{a2a.ErrTaskNotCancelable, -32002},
	{a2a.ErrPushNotificationNotSupported, -32003},
	{a2a.ErrUnsupportedOperation, -32004},
	{a2a.ErrUnsupportedContentType, -32005},
	{a2a.ErrInvalidAgentResponse, -32006},
	{a2a.ErrExtendedCardNotConfigured, -32007},
	{a2a.ErrExtensionSupportRequired, -32008},
	{a2a.ErrVersionNotSupported, -32009},
	{a2a.ErrParseError, -32700},
	{a2a.ErrInvalidRequest, -32600},
	{a2a.ErrMethodNotFound, -32601},
	{a2a.ErrInvalidParams, -32602},
	{a2a.ErrInternalError, -32603},
	{a2a.ErrServerError, -32000},
	{a2a.ErrUnauthenticated, -31401},
	{a2a.ErrUnauthorized, -31403},
}

// capnwebError converts an error of the RequestHandler (or of the binding's checks) into the
// capnweb error the client sees: message, and the A2A code, reason and details as properties.
// Errors outside the A2A table are internal errors and do not show their text.
func capnwebError(err error) *capnweb.Error {
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
	code := 0
	for _, e := range jsonrpcCodes {
		if errors.Is(err, e.err) {
			code = e.code
			break
		}
	}
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
