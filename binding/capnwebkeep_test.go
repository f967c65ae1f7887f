package binding

import (
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// A capnweb WebSocket that has not authenticated is closed after PreAuthIdleTimeout without a
// message; one that authenticated (with authenticate()) is kept.
func TestPreAuthIdleTimeout(t *testing.T) {
	t.Parallel()
	p := &passwords{}
	ts := startServer(t, serverConfig{engine: true, opts: &Options{Authenticate: p.auth, PreAuthIdleTimeout: time.Second,
		Capnweb: &capnweb.HandlerOptions{PingInterval: 500 * time.Millisecond}}})
	anon := ts.dialCapnweb(t, "", nil)
	authed := ts.dialCapnweb(t, "", nil)
	session := authed.Main().Call("authenticate", map[string]any{"User": "alice", "Password": "alice-secret"})
	if _, err := session.Call("listTasks", map[string]any{}).Await(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-anon.Done():
		if err := anon.Err(); err == nil || !strings.Contains(err.Error(), "idle timeout") {
			t.Errorf("the unauthenticated connection ended with %v, want an idle timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the unauthenticated connection was kept")
	}
	time.Sleep(2 * time.Second) // twice its PreAuthIdleTimeout, quiet
	if _, err := session.Call("listTasks", map[string]any{}).Await(t.Context()); err != nil {
		t.Errorf("the authenticated connection after a quiet while: %v", err)
	}
}
