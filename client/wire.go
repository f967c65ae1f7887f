package client

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// a2aError returns the a2a-go error a capnweb error carries in its code, reason and details
// properties (docs/capnweb-binding.md, Errors), built like a2a-go's JSON-RPC client builds it
// from a JSON-RPC error so that errors.Is(err, a2a.ErrTaskNotFound) and the details work the
// same on every binding. It returns nil for errors that carry no A2A code.
func a2aError(err error) error {
	var ce *capnweb.Error
	if !errors.As(err, &ce) {
		return nil
	}
	code, ok := ce.Code().(float64)
	if !ok || code != math.Trunc(code) {
		return nil
	}
	sentinel := wire.Sentinel(int(code))
	if sentinel == nil {
		sentinel = a2a.ErrInternalError
	}
	msg := ce.Message
	if msg == "" {
		msg = sentinel.Error()
	}
	res := a2a.NewError(sentinel, msg)
	var details []*errordetails.Typed
	if err := wire.Decode(ce.Props["details"], &details); err != nil {
		return res // the code says enough; malformed details are dropped
	}
	first := true
	for _, d := range details {
		switch {
		case d == nil:
		case d.TypeURL == errordetails.ErrorInfoType:
			if meta := stringMap(d.Value["metadata"]); meta != nil {
				res = res.WithErrorInfoMeta(meta)
			}
		default:
			if first {
				res = res.WithDetails(d.Value)
				first = false
			}
			res.TypedDetails = append(res.TypedDetails, d)
		}
	}
	return res
}

func stringMap(v any) map[string]string {
	m, ok := wire.Fields(v)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		if s, ok := e.(string); ok {
			out[k] = s
		}
	}
	return out
}

// paramsValue is the per-call params argument: an object of service parameter names and
// string arrays, or undefined when there are none.
func paramsValue(p a2aclient.ServiceParams) any {
	if len(p) == 0 {
		return capnweb.Undefined
	}
	m := make(map[string]any, len(p))
	for k, vs := range p {
		if len(vs) == 0 {
			continue
		}
		a := make([]any, len(vs))
		for i, v := range vs {
			a[i] = v
		}
		m[k] = a
	}
	return m
}

// lastEventID is the service parameter that resumes a stream after an event's sequence number.
const lastEventID = "Last-Event-ID"

// withLastEventID returns a copy of p with Last-Event-ID set to seq, replacing the caller's.
func withLastEventID(p a2aclient.ServiceParams, seq int64) a2aclient.ServiceParams {
	out := make(a2aclient.ServiceParams, len(p)+1)
	for k, v := range p {
		if !strings.EqualFold(k, lastEventID) {
			out[k] = v
		}
	}
	out[strings.ToLower(lastEventID)] = []string{strconv.FormatInt(seq, 10)}
	return out
}

// callerLastEventID returns the Last-Event-ID the caller sent, if any.
func callerLastEventID(p a2aclient.ServiceParams) (int64, bool) {
	for k, v := range p {
		if strings.EqualFold(k, lastEventID) && len(v) > 0 {
			n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// headerPairs flattens h into lowercase name, value pairs (gRPC metadata).
func headerPairs(h http.Header) []string {
	var kv []string
	for k, vs := range h {
		for _, v := range vs {
			kv = append(kv, strings.ToLower(k), v)
		}
	}
	return kv
}
