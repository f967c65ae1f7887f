package a2ainterop

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

// probes records the server's capnweb WebSocket sessions opened with ?probe=NAME, so that the
// script can read their Stats at /test/stats?probe=NAME.
type probes struct {
	mu       sync.Mutex
	sessions map[string]*capnweb.Session
}

func (p *probes) onSession(r *http.Request, s *capnweb.Session) {
	if name := r.URL.Query().Get("probe"); name != "" {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.sessions[name] = s
	}
}

func (p *probes) all() map[string]*capnweb.Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]*capnweb.Session, len(p.sessions))
	for k, v := range p.sessions {
		out[k] = v
	}
	return out
}

// ServeHTTP answers {imports, exports, done} for the session named by ?probe=.
func (p *probes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := p.all()[r.URL.Query().Get("probe")]
	if s == nil {
		http.NotFound(w, r)
		return
	}
	st := s.Stats()
	done := false
	select {
	case <-s.Done():
		done = true
	default:
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"imports": st.Imports, "exports": st.Exports, "done": done})
}

// TestInteropCapnwebA2A runs capnweb_client.mjs, the stock npm capnweb client, against the
// capnweb binding of the server `a2awebcap serve` assembles (engine on SQLite, built-in agent),
// with bearer-token authentication. The script checks every AgentSession operation, streams
// through an observer and as a ReadableStream, task handles, an input-required task resumed,
// error codes and reasons, caller scoping, a pipelined authenticate → sendMessage → getTask in
// one round trip, push through a callback, that disposing everything leaves the server's
// session with no exports but its main object, and the main operations over HTTP batch.
//
// With -v it logs the frames of a few exchanges, as in docs/capnweb-binding.md.
func TestInteropCapnwebA2A(t *testing.T) {
	t.Parallel()
	node := needNode(t, "capnweb")
	p := &probes{sessions: map[string]*capnweb.Session{}}
	url := stacktest.Start(t, &binding.Options{
		Authenticate: stacktest.Bearer(map[string]string{"alice-token": "alice", "bob-token": "bob"}),
		Capnweb:      &capnweb.HandlerOptions{OnSession: p.onSession},
	}, map[string]http.Handler{"GET /test/stats": p})

	wantSteps := []string{
		"card", "authenticate", "pipeline", "send", "get", "list", "cancel", "task-handle",
		"stream-observer", "stream-readable", "subscribe", "input-required", "input-required-stream", "push-config",
		"extended-card", "errors", "scoping", "push-callback", "disposal", "batch", "batch-cancel",
		"version-refused", "last-event-id-query", "batch-push", "per-call-credentials",
	}
	lines := runSteps(t, node, wantSteps, "capnweb_client.mjs", url)

	var wire strings.Builder
	for _, line := range lines {
		var f struct{ Wire, Dir, Frame string }
		if json.Unmarshal([]byte(line), &f) == nil && f.Wire != "" {
			arrow := "→"
			if f.Dir == "S->C" {
				arrow = "←"
			}
			wire.WriteString(f.Wire + " " + arrow + " " + f.Frame + "\n")
		}
	}
	t.Logf("wire frames (→ client to server, ← server to client):\n%s", wire.String())

	// The script disposed its main stubs: every WebSocket session it opened has ended.
	for name, s := range p.all() {
		select {
		case <-s.Done():
		case <-time.After(5 * time.Second):
			t.Errorf("server session %q still open after the client disposed it; stats %+v", name, s.Stats())
		}
	}
	if len(p.all()) < 2 {
		t.Errorf("recorded %d probed sessions, want main and disposal", len(p.all()))
	}
}
