// Package a2ainterop checks the A2A bindings (package binding) against the
// stock Node peers installed in interop/node_modules by `cd interop && npm ci`
// (make npm): JSON-RPC and HTTP+JSON against the official JavaScript SDK, npm
// @a2a-js/sdk@1.3.0, and the capnweb binding against npm capnweb@0.12.0.
package a2ainterop

import (
	"context"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

// echo is the agent the Node script expects (see a2a_client.mjs).
type echo struct{}

func (echo) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var text string
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		working := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("working"))
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, working), nil) {
			return
		}
		var wait <-chan time.Time // nil: no wait
		if d, ok := strings.CutPrefix(text, "sleep:"); ok {
			dur, _ := time.ParseDuration(d)
			wait = time.After(dur)
		}
		if strings.HasPrefix(text, "wait:") {
			wait = make(chan time.Time) // until canceled
		}
		if wait != nil {
			select {
			case <-wait:
			case <-ctx.Done():
				return
			}
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (echo) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// echoHandler is a2a-go's default handler running the echo agent on a store of its own.
func echoHandler() a2asrv.RequestHandler {
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return "interop", nil },
	})
	return a2asrv.NewHandler(echo{}, a2asrv.WithTaskStore(store), a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
}

// echoCard is the echo agent's card, named name.
func echoCard(name string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               name,
		Description:        "echoes its input",
		Version:            "1.0.0",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echo", Tags: []string{"echo"}}},
	}
}

// startServer runs NewHTTPHandler on 127.0.0.1:0 with a2a-go's default
// handler and the echo agent, and returns its base URL.
func startServer(t *testing.T) string {
	t.Helper()
	handler, card := echoHandler(), echoCard("echo")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           binding.NewHTTPHandler(handler, card, &binding.Options{KeepAlive: 200 * time.Millisecond}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + lis.Addr().String()
}

// TestInteropA2AJSClient runs the @a2a-js/sdk client script over JSON-RPC
// and HTTP+JSON against NewHTTPHandler.
func TestInteropA2AJSClient(t *testing.T) {
	node := needNode(t, "@a2a-js/sdk")
	url := startServer(t)
	wantSteps := []string{"card", "send", "stream", "get", "list", "cancel", "subscribe", "version"}

	for _, b := range []string{"JSONRPC", "HTTP+JSON"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			runSteps(t, node, wantSteps, "a2a_client.mjs", url, b)
		})
	}
}

// TestInteropA2AJSUpstreamStreamError shows why package binding rewrites REST
// streams that fail before their first event: a2a-go's own REST handler
// answers them with 200 text/event-stream and `data: {"error":...}`, which
// @a2a-js/sdk reads as one empty event — the error is lost. Through
// NewHTTPHandler the same request is an HTTP 404 the SDK raises as
// RestTaskNotFoundError.
func TestInteropA2AJSUpstreamStreamError(t *testing.T) {
	node := needNode(t, "@a2a-js/sdk")
	bare := httptest.NewServer(http.StripPrefix("/a2a/rest", a2asrv.NewRESTHandler(a2asrv.NewHandler(echo{}))))
	t.Cleanup(bare.Close)
	ours := startServer(t)

	for _, tc := range []struct{ name, url, want string }{
		{"a2a-go", bare.URL + "/a2a/rest", `{"events":[{}]}`},
		{"binding", ours + "/a2a/rest", `{"error":"RestTaskNotFoundError"}`},
	} {
		out, err := exec.CommandContext(t.Context(), node, "a2a_stream_error.mjs", tc.url).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: node: %v\n%s", tc.name, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%s: the SDK saw %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestInteropA2AJSEngine runs a2a_engine.mjs, the @a2a-js/sdk client, over JSON-RPC and
// HTTP+JSON against this project's engine behind the bindings (internal/a2atest): the stream
// shape around an input-required task as the SDK sees it.
func TestInteropA2AJSEngine(t *testing.T) {
	node := needNode(t, "@a2a-js/sdk")
	card := a2atest.Card()
	card.Capabilities.PushNotifications = true // configs are stored; nothing here sends them
	card.Capabilities.ExtendedAgentCard = true
	extended := *card
	extended.Name += " (extended)"
	srv := a2atest.Start(t, &a2atest.Options{
		Card: card,
		// Anonymous callers are served; "Bearer alice-token" is alice, who gets the extended card.
		HTTP:   &binding.Options{Authenticate: stacktest.Bearer(map[string]string{"alice-token": "alice"})},
		Engine: &engine.Options{ExtendedCard: func(context.Context) (*a2a.AgentCard, error) { return &extended, nil }},
	})
	wantSteps := []string{"card", "followup-stream", "subscribe-resume", "push-config", "content-type", "extended-card"}
	for _, b := range []string{"JSONRPC", "HTTP+JSON"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			runSteps(t, node, wantSteps, "a2a_engine.mjs", srv.URL, b)
		})
	}
}
