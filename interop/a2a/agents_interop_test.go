package a2ainterop

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

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
		store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
			Authenticator: func(context.Context) (string, error) { return "interop", nil },
		})
		h := a2asrv.NewHandler(echo{}, a2asrv.WithTaskStore(store), a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
		hosted = append(hosted, binding.HostedAgent{Name: name, Handler: h, Card: &a2a.AgentCard{
			Name: name, Description: "echoes its input", Version: "1.0.0",
			DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			Capabilities: a2a.AgentCapabilities{Streaming: true},
			Skills:       []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echo", Tags: []string{"echo"}}},
		}})
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
