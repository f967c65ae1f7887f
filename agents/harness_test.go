package agents

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

// transports are the a2a-go bindings the agents are tested through: the AgentExecutor sees the
// same calls whichever carries the request.
var transports = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON}

// newClient serves exec with the engine serve runs it on (on a memory store), through a2a-go's
// transport over transport on an httptest server, and returns a client for it.
func newClient(t *testing.T, exec a2asrv.AgentExecutor, transport a2a.TransportProtocol) *a2aclient.Client {
	t.Helper()
	handler := engine.New(exec, memory.New(), &engine.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = handler.Close(context.Background()) })
	var srv *httptest.Server
	var opt a2aclient.FactoryOption
	switch transport {
	case a2a.TransportProtocolJSONRPC:
		srv = httptest.NewServer(a2asrv.NewJSONRPCHandler(handler))
		opt = a2aclient.WithJSONRPCTransport(srv.Client())
	case a2a.TransportProtocolHTTPJSON:
		srv = httptest.NewServer(a2asrv.NewRESTHandler(handler))
		opt = a2aclient.WithRESTTransport(srv.Client())
	default:
		t.Fatalf("unsupported transport %q", transport)
	}
	t.Cleanup(srv.Close)
	if _, err := url.Parse(srv.URL); err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromEndpoints(t.Context(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL, transport)}, opt)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { _ = client.Destroy() })
	return client
}

// userMessage builds a user message with the given ID (random when empty) and text.
func userMessage(id, text string) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	if id != "" {
		m.ID = id
	}
	return m
}

func send(t *testing.T, c *a2aclient.Client, m *a2a.Message) a2a.SendMessageResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("SendMessage(%s): %v", m.ID, err)
	}
	return res
}

func stream(t *testing.T, c *a2aclient.Client, m *a2a.Message) []a2a.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var events []a2a.Event
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage(%s): %v after %d events", m.ID, err, len(events))
		}
		events = append(events, ev)
	}
	return events
}

func asTask(t *testing.T, res a2a.SendMessageResult) *a2a.Task {
	t.Helper()
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want *a2a.Task", res)
	}
	return task
}

// statusText is the text of a task status message ("" when there is none).
func statusText(s a2a.TaskStatus) string { return MessageText(s.Message) }

// jsonOf renders v as JSON for comparisons that should ignore Go types lost on the wire
// (int vs float64 in data parts).
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// artifactParts returns the parts of each artifact, in order.
func artifactParts(arts []*a2a.Artifact) [][]*a2a.Part {
	out := make([][]*a2a.Part, 0, len(arts))
	for _, a := range arts {
		out = append(out, a.Parts)
	}
	return out
}

// streamSummary folds a stream of events the way a client does.
type streamSummary struct {
	first     a2a.Event
	states    []a2a.TaskState // status updates, in order
	artifacts []*a2a.Artifact // assembled with append semantics
	lastChunk map[a2a.ArtifactID]bool
	final     a2a.TaskStatus
}

func summarize(t *testing.T, events []a2a.Event) streamSummary {
	t.Helper()
	s := streamSummary{lastChunk: map[a2a.ArtifactID]bool{}}
	if len(events) == 0 {
		t.Fatal("stream produced no events")
	}
	s.first = events[0]
	for i, ev := range events {
		switch v := ev.(type) {
		case *a2a.Task:
			if i != 0 {
				t.Errorf("event %d is a Task; only the first may be", i)
			}
			s.final = v.Status
		case *a2a.Message:
			if len(events) != 1 {
				t.Errorf("a Message stream must hold exactly one event, got %d", len(events))
			}
		case *a2a.TaskStatusUpdateEvent:
			s.states = append(s.states, v.Status.State)
			s.final = v.Status
		case *a2a.TaskArtifactUpdateEvent:
			found := false
			for _, a := range s.artifacts {
				if a.ID == v.Artifact.ID {
					found = true
					if !v.Append {
						t.Errorf("artifact %s sent twice without append", a.ID)
					}
					a.Parts = append(a.Parts, v.Artifact.Parts...)
				}
			}
			if !found {
				if v.Append {
					t.Errorf("artifact %s: first chunk has append set", v.Artifact.ID)
				}
				cp := *v.Artifact
				s.artifacts = append(s.artifacts, &cp)
			}
			if s.lastChunk[v.Artifact.ID] {
				t.Errorf("artifact %s: chunk after lastChunk", v.Artifact.ID)
			}
			s.lastChunk[v.Artifact.ID] = v.LastChunk
		default:
			t.Fatalf("event %d: unexpected %T", i, ev)
		}
	}
	return s
}

func isErr(err, target error) bool { return err != nil && errors.Is(err, target) }
