package a2ainterop

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/internal/agentstest"
)

// TestInteropA2AJSHostedAgent runs the whole @a2a-js/sdk client script against one of several
// agents served by NewAgentsHandler, addressed by its own URL (/agents/echo).
func TestInteropA2AJSHostedAgent(t *testing.T) {
	node := needNode(t, "@a2a-js/sdk")
	var hosted []binding.HostedAgent
	for _, name := range []string{"other", "echo"} {
		hosted = append(hosted, binding.HostedAgent{Name: name, Handler: echoHandler(), Card: echoCard(name)})
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: binding.NewAgentsHandler(hosted, &binding.Options{KeepAlive: 200 * time.Millisecond}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := "http://" + lis.Addr().String() + "/agents/echo/"
	wantSteps := []string{"card", "send", "stream", "get", "list", "cancel", "subscribe", "version"}
	for _, b := range []string{"JSONRPC", "HTTP+JSON"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			runSteps(t, node, wantSteps, "a2a_client.mjs", url, b)
		})
	}
}

// TestInteropA2AJSRuntimeAgents has @a2a-js/sdk call two agents of the runtime hosted by one
// server (package hosting), each by its own URL: each answers by its own rules, and neither
// finds the other's task.
func TestInteropA2AJSRuntimeAgents(t *testing.T) {
	node := needNode(t, "@a2a-js/sdk")
	defs, err := hosting.ParseDefinitions([]byte(`[
	  {"name": "researcher", "rules": [{"name": "research", "when": "command == \"research\"", "action": "reply", "params": {"text": "\"researching \" + args"}, "reason": "asked"}]},
	  {"name": "writer", "rules": [{"name": "write", "when": "command == \"write\"", "action": "reply", "params": {"text": "\"writing on \" + args"}, "reason": "asked"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	srv := agentstest.Start(t, defs, nil)
	wantSteps := []string{"card researcher", "send researcher", "stream researcher", "card writer", "send writer", "stream writer",
		"isolation researcher", "isolation writer"}
	for _, b := range []string{"JSONRPC", "HTTP+JSON"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			runSteps(t, node, wantSteps, "a2a_agents.mjs", b,
				srv.AgentURL("researcher"), "research tides", "researching tides",
				srv.AgentURL("writer"), "write waves", "writing on waves")
		})
	}
}
