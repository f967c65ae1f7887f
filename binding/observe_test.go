package binding

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/a2awebcap/a2awebcap/telemetry"
)

// A capnweb session attenuated, then revoked, is two records of the operator's audit stream.
func TestCapnwebGrantAndRevokeAudited(t *testing.T) {
	t.Parallel()
	var audit lockedLog
	obs := telemetry.New(&telemetry.Options{Audit: slog.New(slog.NewJSONHandler(&audit, nil))})
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Telemetry: obs}})
	main := ts.dialCapnweb(t, "", nil).Main()
	ro := main.Call("attenuate", map[string]any{"readOnly": true})
	if _, err := ro.Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Call("revoke", ro).Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	var events []string
	grants := map[string]bool{}
	for line := range strings.Lines(audit.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		events = append(events, rec["event"].(string))
		grants[rec["grant"].(string)] = true
		if rec["event"] == "capnweb-grant" && rec["readOnly"] != true {
			t.Errorf("grant record %v: want readOnly", rec)
		}
	}
	if strings.Join(events, ",") != "capnweb-grant,capnweb-revoke" || len(grants) != 1 {
		t.Errorf("audit stream:\n%s\nwant a grant then its revocation", audit.String())
	}
}

// lockedLog is a log destination safe for concurrent writes.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A browser's capnweb connection joins its trace through the URL query (it cannot set headers
// on a WebSocket); a call's own parameters win over the connection's.
func TestCapnwebTraceContext(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	obs := telemetry.New(&telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Telemetry: obs}})
	const conn = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const call = "00-11111111111111111111111111111111-2222222222222222-01"
	main := ts.dialCapnweb(t, "?traceparent="+conn, nil).Main()
	if _, err := main.Call("listTasks", map[string]any{}).Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Call("listTasks", map[string]any{}, map[string]any{"traceparent": call}).Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rec.Ended() {
		got = append(got, s.SpanContext().TraceID().String()+"/"+s.Parent().SpanID().String())
	}
	want := []string{"0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331", "11111111111111111111111111111111/2222222222222222"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("spans (trace/parent) %v, want %v", got, want)
	}
}
