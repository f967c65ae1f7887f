package binding

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"

	"github.com/a2awebcap/a2awebcap/internal/backlog"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// seqKey is the metadata key under which engine's stream events carry their sequence number
// in their task's event log (engine.SeqKey; a test keeps the two equal).
const seqKey = wire.SeqKey

// eventIDWriter sits between a2a-go's streaming handlers and the client and gives every SSE
// event the id a client needs to resume the stream: `id: N` for an event whose stream event
// carries its sequence number N in its metadata (under seqKey), no id line for the others.
// a2a-go gives each event a random id instead, which a browser's EventSource would send back
// as Last-Event-ID on reconnection, where the handler cannot make sense of it.
//
// Each event is forwarded as soon as its closing blank line is written; comments pass
// unchanged. a2a-go flushes after each event and keep-alive comment, one write system call
// each: with a backlog hint (withBacklog), a flush while the stream's producer has the next
// event in hand already is held, up to maxHeld bytes, so that a burst of events leaves in one
// write. The first event always goes at once. Responses that are not event streams pass
// through untouched. An event left unfinished when the handler returns is dropped, as SSE
// clients drop it.
type eventIDWriter struct {
	w http.ResponseWriter
	// jsonrpc: the events are JSON-RPC responses whose result is the stream event;
	// otherwise they are the stream event itself (HTTP+JSON).
	jsonrpc bool
	// hint, when set, says whether the producer has another event in hand.
	hint *backlog.Hint

	wroteHeader bool
	sse         bool   // the response is an event stream
	buf         []byte // the beginning of an unfinished event
	flushed     bool   // a flush went through
	held        int    // bytes written since the last flush that went through
}

// maxHeld bounds the bytes of events whose flush is held (eventIDWriter).
const maxHeld = 16 << 10

// withBacklog returns r with a backlog hint in its context, for the engine's event streams to
// report to, and the hint, for the stream's eventIDWriter to read.
func withBacklog(r *http.Request) (*http.Request, *backlog.Hint) {
	h := &backlog.Hint{}
	return r.WithContext(backlog.With(r.Context(), h)), h
}

var _ http.Flusher = (*eventIDWriter)(nil)

func (iw *eventIDWriter) Header() http.Header { return iw.w.Header() }

func (iw *eventIDWriter) WriteHeader(code int) {
	if iw.wroteHeader {
		return
	}
	iw.wroteHeader = true
	mt, _, _ := mime.ParseMediaType(iw.w.Header().Get("Content-Type"))
	iw.sse = mt == mediaSSE
	iw.w.WriteHeader(code)
}

func (iw *eventIDWriter) Write(b []byte) (int, error) {
	if !iw.wroteHeader {
		iw.WriteHeader(http.StatusOK)
	}
	if !iw.sse {
		return iw.w.Write(b)
	}
	iw.buf = append(iw.buf, b...)
	iw.held += len(b)
	for {
		i := bytes.Index(iw.buf, eventEnd)
		if i < 0 {
			return len(b), nil
		}
		event := iw.buf[:i+len(eventEnd)]
		iw.buf = iw.buf[i+len(eventEnd):]
		if _, err := iw.w.Write(withEventID(event, iw.jsonrpc)); err != nil {
			return len(b), err
		}
	}
}

func (iw *eventIDWriter) Flush() {
	if !iw.wroteHeader {
		iw.WriteHeader(http.StatusOK)
	}
	if iw.sse && iw.flushed && iw.hint != nil && iw.hint.More.Load() && iw.held < maxHeld {
		return // the next event follows at once: one flush for both
	}
	iw.flushed, iw.held = true, 0
	if f, ok := iw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (iw *eventIDWriter) Unwrap() http.ResponseWriter { return iw.w }

// withEventID returns the SSE event (its lines up to and including the closing blank line)
// with its id lines replaced by `id: N`, N the sequence number of its stream event, or with
// none when it has no sequence number. Comments and events without id or data come back as
// they are.
func withEventID(event []byte, jsonrpc bool) []byte {
	var data [][]byte
	hasID := false
	for line := range bytes.Lines(event) {
		switch name, value := sseField(line); string(name) {
		case "id":
			hasID = true
		case "data":
			data = append(data, value)
		}
	}
	seq, ok := eventSeq(bytes.Join(data, []byte("\n")), jsonrpc)
	if !hasID && !ok {
		return event
	}
	out := make([]byte, 0, len(event)+24)
	if ok {
		out = append(append(append(out, "id: "...), strconv.FormatInt(seq, 10)...), '\n')
	}
	for line := range bytes.Lines(event) {
		if name, _ := sseField(line); string(name) != "id" {
			out = append(out, line...)
		}
	}
	return out
}

// sseField splits an SSE line into its field name and value ("" and the comment for a comment).
func sseField(line []byte) (name, value []byte) {
	name, value, _ = bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte(":"))
	return name, bytes.TrimPrefix(value, []byte(" "))
}

// seqMetadata is what eventSeq reads of a stream event.
type seqMetadata struct {
	Metadata struct {
		Seq json.Number `json:"a2awebcap.seq"`
	} `json:"metadata"`
}

// streamEvent holds the stream event of an SSE event's data in every shape the bindings
// write: a 1.0 StreamResponse ({"task": {...}}, {"statusUpdate": {...}}, ...), its 0.3
// HTTP+JSON form (the same with "msg" for a message), or a 0.3 JSON-RPC event, whose
// metadata is at the top.
type streamEvent struct {
	seqMetadata
	Task           *seqMetadata `json:"task"`
	Message        *seqMetadata `json:"message"`
	Msg            *seqMetadata `json:"msg"`
	StatusUpdate   *seqMetadata `json:"statusUpdate"`
	ArtifactUpdate *seqMetadata `json:"artifactUpdate"`
}

// eventSeq returns the sequence number in the metadata of the stream event in data, a
// JSON-RPC response holding it as its result when jsonrpc is set.
func eventSeq(data []byte, jsonrpc bool) (int64, bool) {
	if !bytes.Contains(data, []byte(`"`+seqKey+`"`)) {
		return 0, false // the common case for events of other handlers, without decoding
	}
	if seq, found, ok := scanEventSeq(data, jsonrpc); ok {
		return seq, found // the common case for the engine's events, without decoding
	}
	return decodeEventSeq(data, jsonrpc)
}

// decodeEventSeq is eventSeq by decoding the event.
func decodeEventSeq(data []byte, jsonrpc bool) (int64, bool) {
	var ev streamEvent
	if jsonrpc {
		var resp struct {
			Result *streamEvent `json:"result"`
		}
		if json.Unmarshal(data, &resp) != nil || resp.Result == nil {
			return 0, false
		}
		ev = *resp.Result
	} else if json.Unmarshal(data, &ev) != nil {
		return 0, false
	}
	seq := ev.Metadata.Seq
	for _, m := range []*seqMetadata{ev.Task, ev.Message, ev.Msg, ev.StatusUpdate, ev.ArtifactUpdate} {
		if m != nil && m.Metadata.Seq != "" {
			seq = m.Metadata.Seq
		}
	}
	n, err := strconv.ParseInt(seq.String(), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
