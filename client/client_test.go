package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// The client's constants name what the server defines; they must not drift apart.
func TestConstantsMatchServer(t *testing.T) {
	t.Parallel()
	if client.ProtocolCapnweb != binding.ProtocolCapnweb {
		t.Errorf("client.ProtocolCapnweb = %q, binding.ProtocolCapnweb = %q", client.ProtocolCapnweb, binding.ProtocolCapnweb)
	}
	if client.SeqKey != engine.SeqKey {
		t.Errorf("client.SeqKey = %q, engine.SeqKey = %q", client.SeqKey, engine.SeqKey)
	}
}

// fullServer serves an agent card with every optional capability, so every operation has
// something to do. Every request but the card's must carry authHeader, as an HTTP header or
// gRPC metadata; the capnweb binding also makes it the caller's identity.
func fullServer(t *testing.T) *a2atest.Server {
	t.Helper()
	card := a2atest.Card()
	card.Capabilities.PushNotifications = true
	card.Capabilities.ExtendedAgentCard = true
	return a2atest.Start(t, &a2atest.Options{
		Card:     card,
		HTTP:     &binding.Options{Authenticate: bearerTester},
		WrapHTTP: requireHeader,
		GRPC: &binding.GRPCOptions{Authenticate: bearerTester, ServerOptions: []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				if err := checkMetadata(ctx); err != nil {
					return nil, err
				}
				return handler(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
				if err := checkMetadata(ss.Context()); err != nil {
					return err
				}
				return handler(srv, ss)
			}),
		}},
		Engine: &engine.Options{
			ExtendedCard: func(context.Context) (*a2a.AgentCard, error) {
				ext := a2atest.Card()
				ext.Name = "extended" // without interfaces: each binding gives it the public card's
				return ext, nil
			},
		},
	})
}

// authHeader is the credential bearerTester accepts.
var authHeader = http.Header{"Authorization": {"Bearer tester"}}

// requireHeader refuses HTTP requests without authHeader, but for the public card.
func requireHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != binding.WellKnownCardPath && r.Header.Get("Authorization") != authHeader.Get("Authorization") {
			http.Error(w, "no credentials", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func checkMetadata(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("authorization"); len(v) != 1 || v[0] != authHeader.Get("Authorization") {
		return status.Error(codes.Unauthenticated, "no credentials")
	}
	return nil
}

func bearerTester(_ context.Context, h http.Header) (*a2asrv.User, error) {
	if h.Get("Authorization") != "Bearer tester" {
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "send Authorization: Bearer tester")
	}
	return a2asrv.NewAuthenticatedUser("tester", nil), nil
}

// TestOperations runs every A2A operation over every binding.
func TestOperations(t *testing.T) {
	t.Parallel()
	srv := fullServer(t)
	for _, b := range allBindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := connect(t, srv, b, &client.Options{Header: authHeader})
			if got := c.Binding(); got != b {
				t.Fatalf("Client.Binding() = %q, want %q", got, b)
			}
			ctx := t.Context()

			t.Run("SendMessage", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(ctx, userMessage("hello"))
				if err != nil {
					t.Fatalf("SendMessage() = %v", err)
				}
				task, ok := res.(*a2a.Task)
				if !ok {
					t.Fatalf("SendMessage() = %T, want *a2a.Task", res)
				}
				if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text() != "echo: hello" {
					t.Errorf("SendMessage() = %s task with artifacts %+v, want completed with \"echo: hello\"", task.Status.State, task.Artifacts)
				}
			})

			t.Run("SendMessageReply", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(ctx, userMessage("message"))
				if err != nil {
					t.Fatalf("SendMessage() = %v", err)
				}
				msg, ok := res.(*a2a.Message)
				if !ok || a2atest.Text(msg) != "echo: message" {
					t.Errorf("SendMessage() = %#v, want the message \"echo: message\"", res)
				}
			})

			t.Run("GetTask", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(ctx, userMessage("get me"))
				if err != nil {
					t.Fatalf("SendMessage() = %v", err)
				}
				id := res.(*a2a.Task).ID
				task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id, HistoryLength: ptr(1)})
				if err != nil {
					t.Fatalf("GetTask() = %v", err)
				}
				if task.ID != id || task.Status.State != a2a.TaskStateCompleted || len(task.History) != 1 {
					t.Errorf("GetTask() = %s %s with %d messages, want %s completed with 1", task.ID, task.Status.State, len(task.History), id)
				}
			})

			t.Run("ListTasks", func(t *testing.T) {
				t.Parallel()
				contextID := uuid.NewString()
				var want []a2a.TaskID
				for range 2 {
					req := userMessage("list me")
					req.Message.ContextID = contextID
					res, err := c.SendMessage(ctx, req)
					if err != nil {
						t.Fatalf("SendMessage() = %v", err)
					}
					want = append([]a2a.TaskID{res.(*a2a.Task).ID}, want...) // newest first
				}
				list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID})
				if err != nil {
					t.Fatalf("ListTasks() = %v", err)
				}
				var got []a2a.TaskID
				for _, task := range list.Tasks {
					got = append(got, task.ID)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("ListTasks() tasks (-want +got):\n%s", diff)
				}
			})

			t.Run("CancelTask", func(t *testing.T) {
				t.Parallel()
				task, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: startWaiting(t, c, uuid.NewString()).ID})
				if err != nil {
					t.Fatalf("CancelTask() = %v", err)
				}
				if task.Status.State != a2a.TaskStateCanceled {
					t.Errorf("CancelTask() state = %s, want canceled", task.Status.State)
				}
			})

			t.Run("SendStreamingMessage", func(t *testing.T) {
				t.Parallel()
				events, err := collect(c.SendStreamingMessage(ctx, userMessage("stream me")))
				if err != nil {
					t.Fatalf("SendStreamingMessage() = %v", err)
				}
				want := []string{"task(TASK_STATE_SUBMITTED)", "status(TASK_STATE_WORKING)", "artifact(echo: stream me)", "status(TASK_STATE_COMPLETED)"}
				if diff := cmp.Diff(want, kinds(events)); diff != "" {
					t.Errorf("SendStreamingMessage() events (-want +got):\n%s", diff)
				}
			})

			t.Run("SendStreamingMessageInterrupted", func(t *testing.T) {
				t.Parallel()
				events, err := collect(c.SendStreamingMessage(ctx, userMessage("ask")))
				if err != nil {
					t.Fatalf("SendStreamingMessage() = %v", err)
				}
				if got := lastState(events); got != a2a.TaskStateInputRequired {
					t.Fatalf("SendStreamingMessage() ends in %s, want input-required (events %v)", got, kinds(events))
				}
				follow := userMessage("Ada")
				follow.Message.TaskID = events[0].TaskInfo().TaskID
				events, err = collect(c.SendStreamingMessage(ctx, follow))
				if err != nil {
					t.Fatalf("follow-up SendStreamingMessage() = %v", err)
				}
				if got := lastState(events); got != a2a.TaskStateCompleted {
					t.Errorf("follow-up SendStreamingMessage() ends in %s, want completed (events %v)", got, kinds(events))
				}
			})

			t.Run("SubscribeToTask", func(t *testing.T) {
				t.Parallel()
				key := uuid.NewString()
				id := startWaiting(t, c, key).ID
				var events []a2a.Event
				for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
					if err != nil {
						t.Fatalf("SubscribeToTask() = %v", err)
					}
					if len(events) == 0 {
						srv.Agent.Release(key)
					}
					events = append(events, ev)
				}
				if _, ok := events[0].(*a2a.Task); !ok || lastState(events) != a2a.TaskStateCompleted {
					t.Errorf("SubscribeToTask() events %v, want the task first and completed last", kinds(events))
				}
			})

			t.Run("PushConfigs", func(t *testing.T) {
				t.Parallel()
				res, err := c.SendMessage(ctx, userMessage("push"))
				if err != nil {
					t.Fatalf("SendMessage() = %v", err)
				}
				id := res.(*a2a.Task).ID
				cfg, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: id, ID: "hook", URL: "https://receiver.example/hook", Token: "tok"})
				if err != nil {
					t.Fatalf("CreateTaskPushConfig() = %v", err)
				}
				if cfg.ID != "hook" || cfg.URL != "https://receiver.example/hook" {
					t.Errorf("CreateTaskPushConfig() = %+v", cfg)
				}
				got, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: id, ID: "hook"})
				if err != nil {
					t.Fatalf("GetTaskPushConfig() = %v", err)
				}
				if diff := cmp.Diff(cfg, got); diff != "" {
					t.Errorf("GetTaskPushConfig() (-created +got):\n%s", diff)
				}
				list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: id})
				if err != nil {
					t.Fatalf("ListTaskPushConfigs() = %v", err)
				}
				if len(list) != 1 || list[0].ID != "hook" {
					t.Errorf("ListTaskPushConfigs() = %+v, want the one config", list)
				}
				if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: id, ID: "hook"}); err != nil {
					t.Fatalf("DeleteTaskPushConfig() = %v", err)
				}
				if _, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: id, ID: "hook"}); err == nil {
					t.Errorf("GetTaskPushConfig() after delete succeeded")
				}
			})

			t.Run("GetExtendedAgentCard", func(t *testing.T) {
				t.Parallel()
				// Every binding authenticates the client's credentials (Options.Header), and
				// the extended card is for authenticated callers.
				card, err := c.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
				if err != nil {
					t.Fatalf("GetExtendedAgentCard() = %v", err)
				}
				if card.Name != "extended" {
					t.Errorf("GetExtendedAgentCard().Name = %q, want \"extended\"", card.Name)
				}
			})

			t.Run("Errors", func(t *testing.T) {
				t.Parallel()
				done, err := c.SendMessage(ctx, userMessage("done"))
				if err != nil {
					t.Fatalf("SendMessage() = %v", err)
				}
				doneID := done.(*a2a.Task).ID
				tests := []struct {
					name string
					call func() error
					want error
				}{
					{"GetTask unknown", func() error {
						_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
						return err
					}, a2a.ErrTaskNotFound},
					{"CancelTask unknown", func() error {
						_, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "no-such-task"})
						return err
					}, a2a.ErrTaskNotFound},
					{"CancelTask completed", func() error {
						_, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: doneID})
						return err
					}, a2a.ErrTaskNotCancelable},
					{"SubscribeToTask completed", func() error {
						_, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: doneID}))
						return err
					}, a2a.ErrUnsupportedOperation},
					{"SubscribeToTask unknown", func() error {
						_, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "no-such-task"}))
						return err
					}, a2a.ErrTaskNotFound},
					{"ListTasks bad page size", func() error {
						_, err := c.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1000})
						return err
					}, a2a.ErrInvalidParams},
				}
				for _, tt := range tests {
					if err := tt.call(); !errors.Is(err, tt.want) {
						t.Errorf("%s: error = %v, want errors.Is %v", tt.name, err, tt.want)
					}
				}
			})
		})
	}
}

// versionInterceptor declares another A2A version on every call, as a service parameter.
type versionInterceptor struct {
	a2aclient.PassthroughInterceptor
}

func (versionInterceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	for k := range req.ServiceParams {
		if strings.EqualFold(k, a2a.SvcParamVersion) {
			req.ServiceParams[k] = []string{"9.9"}
		}
	}
	return ctx, nil, nil
}

// Service parameters reach the server as each call's params argument.
func TestServiceParams(t *testing.T) {
	t.Parallel()
	srv := a2atest.Start(t, nil)
	for _, b := range []client.Binding{client.BindingCapnweb, client.BindingCapnwebBatch} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := connect(t, srv, b, &client.Options{Interceptors: []a2aclient.CallInterceptor{versionInterceptor{}}})
			_, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "any"})
			if !errors.Is(err, a2a.ErrVersionNotSupported) {
				t.Errorf("GetTask() declaring A2A-Version 9.9: error = %v, want ErrVersionNotSupported", err)
			}
		})
	}
}
