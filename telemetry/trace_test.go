package telemetry_test

import (
	"context"
	"iter"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/telemetry"
)

// serveAgent serves exec on HTTP (JSON-RPC, REST, capnweb) and gRPC, observed by obs; it
// returns the agent's URL.
func serveAgent(t *testing.T, exec a2asrv.AgentExecutor, obs *telemetry.Observer) string {
	t.Helper()
	eng := engine.New(exec, memory.New(), nil)
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	card := agents.Card("traced", "Traced.", "")
	h := binding.NewHTTPHandler(eng, card, &binding.Options{Telemetry: obs, GRPCAddress: gln.Addr().String()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	gs := binding.NewGRPCServer(eng, &binding.GRPCOptions{Card: card, Telemetry: obs})
	go func() { _ = gs.Serve(gln) }()
	t.Cleanup(gs.Stop)
	return srv.URL
}

// caller is an agent that, for each message, asks another agent (over one binding, with
// package client) and answers with what it said: an agent-to-agent hop.
type caller struct {
	peer string
	over client.Binding
}

func (a *caller) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		answer := "the peer failed"
		c, err := client.New(ctx, a.peer, &client.Options{Binding: a.over})
		if err == nil {
			var res a2a.SendMessageResult
			res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo hop"))})
			c.Destroy()
			if err == nil {
				answer = "the peer answered"
				_ = res
			}
		}
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(answer))
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, msg), nil)
	}
}

func (a *caller) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// One trace: a caller's span, the capnweb call to agent A (its W3C trace context in the call's
// service parameters), A's executor calling agent B with package client over each binding
// (the context in HTTP headers, gRPC metadata or capnweb parameters), and B's server span —
// all with the caller's trace id, each span the child of the one before.
func TestOneTraceAcrossAgents(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{}) // as serve does
	for _, hop := range []client.Binding{client.BindingJSONRPC, client.BindingREST, client.BindingGRPC, client.BindingCapnweb, client.BindingCapnwebBatch} {
		t.Run(string(hop), func(t *testing.T) {
			t.Parallel()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			obs := telemetry.New(&telemetry.Options{TracerProvider: tp})
			b := serveAgent(t, &agents.Builtin{}, obs)
			a := serveAgent(t, &caller{peer: b, over: hop}, obs)

			ctx, root := tp.Tracer("test").Start(t.Context(), "caller")
			c, err := client.New(ctx, a, &client.Options{Binding: client.BindingCapnweb})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))})
			root.End()
			if err != nil {
				t.Fatal(err)
			}
			task, ok := res.(*a2a.Task)
			if !ok || task.Status.State != a2a.TaskStateCompleted || task.Status.Message == nil ||
				task.Status.Message.Parts[0].Text() != "the peer answered" {
				t.Fatalf("A answered %#v, want a completed task saying the peer answered", res)
			}

			var spanA, spanB sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() != "a2a.SendMessage" {
					continue
				}
				for _, kv := range s.Attributes() {
					if kv.Key == "a2a.binding" && kv.Value.AsString() == "capnweb" && s.Parent().SpanID() == root.SpanContext().SpanID() {
						spanA = s
					}
				}
			}
			if spanA == nil {
				t.Fatalf("no server span of A's SendMessage, child of the caller's span, among %v", names(rec.Ended()))
			}
			for _, s := range rec.Ended() {
				if s.Name() == "a2a.SendMessage" && s.Parent().SpanID() == spanA.SpanContext().SpanID() {
					spanB = s
				}
			}
			if spanB == nil {
				t.Fatalf("no server span of B's SendMessage, child of A's, among %v", names(rec.Ended()))
			}
			want := root.SpanContext().TraceID()
			for _, s := range []sdktrace.ReadOnlySpan{spanA, spanB} {
				if s.SpanContext().TraceID() != want || s.SpanKind() != trace.SpanKindServer {
					t.Errorf("span %s: trace %s kind %s, want trace %s, a server span", s.Name(), s.SpanContext().TraceID(), s.SpanKind(), want)
				}
			}
		})
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name()+" parent "+s.Parent().SpanID().String())
	}
	return out
}
