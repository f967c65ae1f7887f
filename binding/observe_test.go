package binding

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

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
