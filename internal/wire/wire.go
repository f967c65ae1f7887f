// Package wire holds what both ends of the capnweb A2A binding (docs/capnweb-binding.md) must
// agree on, so that the server (package binding) and the client (package client) share it
// without depending on each other: how A2A values become capnweb values and back, and the A2A
// error code table.
//
// A2A values travel as their ProtoJSON objects, exactly what a2a-go's JSON encoding produces,
// so the capnweb binding carries the params and results of the JSON-RPC binding.
package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Codes is the A2A error table of the JSON-RPC binding (spec §5.4, §9.5), which the capnweb
// binding shares: each error condition with its code. A code maps back to its sentinel, and
// an error to the code of the first sentinel it matches.
var Codes = []struct {
	Err  error
	Code int
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

// CodeOf returns the code of the first condition in Codes that err matches, or 0.
func CodeOf(err error) int {
	for _, e := range Codes {
		if errors.Is(err, e.Err) {
			return e.Code
		}
	}
	return 0
}

// Sentinel returns the a2a sentinel error of a code, or nil for a code outside the table.
func Sentinel(code int) error {
	for _, e := range Codes {
		if e.Code == code {
			return e.Err
		}
	}
	return nil
}

// Encode converts an A2A value to the plain JSON value (maps, slices, float64, strings) that
// capnweb sends.
func Encode(v any) (any, error) {
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

// Decode converts a received capnweb value into the A2A value dst points to, through Plain and
// a2a-go's JSON decoding.
func Decode(v any, dst any) error {
	plain, err := Plain(v)
	if err != nil {
		return err
	}
	b, err := json.Marshal(plain)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// Fields returns the properties of v, a capnweb object: a capnweb.Object, as objects arrive
// from the wire, or a map[string]any, as Go code passes them; ok is false for anything else.
func Fields(v any) (m map[string]any, ok bool) {
	switch x := v.(type) {
	case capnweb.Object:
		return x.Map(), true
	case map[string]any:
		return x, true
	}
	return nil, false
}

// Plain returns a received capnweb value as a tree of JSON values: undefined members are
// dropped, objects become maps, bytes become base64 strings and dates RFC 3339 strings, as
// ProtoJSON writes them.
// Values JSON has no form for (capabilities, streams, errors, non-finite numbers) are errors.
// capnweb's own limits already bound the depth.
func Plain(v any) (any, error) {
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
			p, err := Plain(e)
			if err != nil {
				return nil, err
			}
			out[k] = p
		}
		return out, nil
	case capnweb.Object:
		out := make(map[string]any, len(x))
		for _, f := range x {
			if f.Value == capnweb.Undefined {
				continue
			}
			p, err := Plain(f.Value)
			if err != nil {
				return nil, err
			}
			out[f.Key] = p
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if e == capnweb.Undefined {
				continue // null, as JSON.stringify writes it
			}
			p, err := Plain(e)
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
	return nil, fmt.Errorf("a %s cannot appear in an A2A value", typeName(v))
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

// StateOf returns the task state an event reports: a Task's or a status update's.
func StateOf(ev a2a.Event) (a2a.TaskState, bool) {
	switch x := ev.(type) {
	case *a2a.Task:
		return x.Status.State, true
	case *a2a.TaskStatusUpdateEvent:
		return x.Status.State, true
	}
	return "", false
}

// SeqKey is the metadata key under which a2aWebCap's engine numbers each streamed event in its
// task's event log (engine.SeqKey; a test keeps them equal).
const SeqKey = "a2awebcap.seq"

// Seq returns an event's sequence number in its task's event log: an int64 as the engine sets
// it, or the whole float64 it becomes once it went through JSON.
func Seq(ev a2a.Event) (int64, bool) {
	switch v := ev.Meta()[SeqKey].(type) {
	case float64:
		if v >= 0 && v == math.Trunc(v) && v < 1<<53 {
			return int64(v), true
		}
	case int64:
		return v, v >= 0
	}
	return 0, false
}
