package binding

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// restWriter sits between a2a-go's REST handler and the client. It
//
//   - labels JSON responses with the negotiated media type (application/a2a+json
//     or application/json; a2a-go always says application/json);
//   - holds back an SSE response until its first complete event: if that
//     event is an error (a2a-go writes `data: {"error":{...}}` after a 200),
//     the client gets the error's HTTP status and google.rpc.Status body
//     instead of a 200 event stream;
//   - marks error events of a stream already under way as `event: error`,
//     the SSE event type other SDKs (@a2a-js/sdk) look for.
//
// Keep-alive comments pass through and commit the 200 like any event.
type restWriter struct {
	w     http.ResponseWriter
	ctype string
	// jsonrpc: the stream is a JSON-RPC one. Its events are JSON-RPC responses; one that
	// fails before the first event is answered as a plain application/json JSON-RPC error
	// response (HTTP 200), which is what the conformance kit expects.
	jsonrpc bool

	status      int
	wroteHeader bool // the handler called WriteHeader (or Write)
	committed   bool // headers went to w
	sse         bool
	discard     bool // the stream was turned into an error response
	buf         []byte
}

var _ http.Flusher = (*restWriter)(nil)

func (rw *restWriter) Header() http.Header { return rw.w.Header() }

func (rw *restWriter) WriteHeader(code int) {
	if rw.wroteHeader {
		return
	}
	rw.wroteHeader = true
	rw.status = code
	mt, _, _ := mime.ParseMediaType(rw.w.Header().Get("Content-Type"))
	switch mt {
	case mediaSSE:
		if code == http.StatusOK {
			rw.sse = true
			return // committed with the first event
		}
	case mediaJSON:
		rw.w.Header().Set("Content-Type", rw.ctype)
	}
	rw.commit()
}

func (rw *restWriter) commit() {
	if !rw.committed {
		rw.committed = true
		rw.w.WriteHeader(rw.status)
	}
}

func (rw *restWriter) Write(b []byte) (int, error) {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	switch {
	case rw.discard:
		return len(b), nil
	case rw.sse:
		rw.buf = append(rw.buf, b...)
		return len(b), nil
	}
	return rw.w.Write(b)
}

func (rw *restWriter) Flush() {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.sse {
		rw.drain()
	}
	if rw.discard {
		return
	}
	rw.commit()
	if f, ok := rw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (rw *restWriter) Unwrap() http.ResponseWriter { return rw.w }

var eventEnd = []byte("\n\n")

// drain forwards the complete SSE events in buf.
func (rw *restWriter) drain() {
	for !rw.discard {
		i := bytes.Index(rw.buf, eventEnd)
		if i < 0 {
			return
		}
		event := rw.buf[:i+len(eventEnd)]
		rw.buf = rw.buf[i+len(eventEnd):]
		if data, ok := rw.errorEventData(event); ok {
			if !rw.committed {
				rw.writeError(data)
				return
			}
			event = append([]byte("event: error\n"), event...)
		}
		rw.commit()
		_, _ = rw.w.Write(event)
	}
}

// errorEventData returns the data of an SSE event whose payload is an error: a REST error
// ({"error": {...}}, as a2a-go writes stream errors) or a JSON-RPC error response.
func (rw *restWriter) errorEventData(event []byte) ([]byte, bool) {
	if rw.jsonrpc {
		return jsonrpcErrorData(event)
	}
	return restErrorData(event)
}

func jsonrpcErrorData(event []byte) ([]byte, bool) {
	for line := range bytes.SplitSeq(event, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		isErr, ok := scanJSONRPCError(data)
		if !ok {
			var resp struct {
				Error json.RawMessage `json:"error"`
			}
			isErr = json.Unmarshal(data, &resp) == nil && len(resp.Error) > 0 && string(resp.Error) != "null"
		}
		if isErr {
			return data, true
		}
		return nil, false
	}
	return nil, false
}

// scanJSONRPCError reports whether data, a JSON-RPC response, is an error response: one with
// an "error" member that is not null. Every event of a JSON-RPC stream is asked, so it scans
// the response's members instead of decoding it; ok is false when the decode must answer
// (jsonScanner).
func scanJSONRPCError(data []byte) (isErr, ok bool) {
	s := jsonScanner{b: data}
	scanned := s.object(func(key []byte) bool {
		if s.keyIs(key, "error") {
			isErr = !bytes.HasPrefix(data[s.i:], []byte("null"))
		}
		return s.skip()
	})
	if !scanned || s.bad {
		return false, false
	}
	return isErr, true
}

func restErrorData(event []byte) ([]byte, bool) {
	for line := range bytes.SplitSeq(event, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimPrefix(data, []byte(" "))
		if bytes.HasPrefix(data, []byte(`{"error":`)) {
			return data, true
		}
		return nil, false
	}
	return nil, false
}

// writeError turns a stream whose first event is an error into a plain
// error response.
func (rw *restWriter) writeError(data []byte) {
	var status struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	code := http.StatusInternalServerError
	if json.Unmarshal(data, &status) == nil && status.Error.Code >= 400 && status.Error.Code <= 599 {
		code = status.Error.Code
	}
	if rw.jsonrpc {
		code = http.StatusOK // JSON-RPC errors travel in a 200 response
	}
	h := rw.w.Header()
	h.Set("Content-Type", rw.ctype)
	for _, k := range []string{"Cache-Control", "Connection", "X-Accel-Buffering"} {
		h.Del(k)
	}
	rw.committed = true
	rw.discard = true
	rw.buf = nil
	rw.w.WriteHeader(code)
	_, _ = rw.w.Write(append(bytes.TrimRight(data, "\n"), '\n'))
}

// finish sends whatever the handler left unflushed.
func (rw *restWriter) finish() {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK) // an empty 200, e.g. DeleteTaskPushNotificationConfig
		return
	}
	if rw.discard {
		return
	}
	if rw.sse {
		rw.drain()
		if rw.discard {
			return
		}
		rw.commit()
		if len(strings.TrimSpace(string(rw.buf))) > 0 {
			_, _ = rw.w.Write(rw.buf)
		}
		rw.buf = nil
	}
}
