package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// The behaviour suite: the same A2A scenarios over every binding, with this package's client,
// against the engine. Each scenario records what it observed as lines of text, with IDs and
// times left out; every binding must observe exactly the expected lines.

var everyBinding = []client.Binding{
	client.BindingCapnweb, client.BindingCapnwebBatch, client.BindingJSONRPC, client.BindingREST, client.BindingGRPC,
}

// principalAuth accepts "Bearer NAME" as principal NAME; "Bearer refused" is not allowed.
func principalAuth(_ context.Context, h http.Header) (*a2asrv.User, error) {
	name, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	switch {
	case !ok || name == "":
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "a bearer token is required")
	case name == "refused":
		return nil, a2a.NewError(a2a.ErrUnauthorized, "this principal may not use the agent")
	}
	return a2asrv.NewAuthenticatedUser(name, nil), nil
}

type scenario struct {
	name string
	run  func(t *testing.T, e *env) []string
	want []string
}

// env is one binding's view of the server: clients for two principals.
type env struct {
	srv        *a2atest.Server
	b          client.Binding
	alice, bob *client.Client
	key        string // unique per binding and scenario, for the agent's gates
}

func (e *env) connect(t *testing.T, principal string) *client.Client {
	t.Helper()
	c, err := client.New(t.Context(), e.srv.URL, &client.Options{
		Binding: e.b,
		Header:  http.Header{"Authorization": {"Bearer " + principal}},
	})
	if err != nil {
		t.Fatalf("connect over %s: %v", e.b, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func send(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

func followUp(task *a2a.Task, text string) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.TaskID, m.ContextID = task.ID, task.ContextID
	return &a2a.SendMessageRequest{Message: m}
}

func state(s a2a.TaskState) string {
	return strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_"))
}

// describe renders an event without IDs or times.
func describe(ev a2a.Event) string {
	switch x := ev.(type) {
	case *a2a.Task:
		return "task " + state(x.Status.State) + artifacts(x)
	case *a2a.Message:
		return "message " + a2atest.Text(x)
	case *a2a.TaskStatusUpdateEvent:
		s := "status " + state(x.Status.State)
		if x.Status.Message != nil {
			s += ": " + a2atest.Text(x.Status.Message)
		}
		return s
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact " + x.Artifact.Parts[0].Text()
	}
	return fmt.Sprintf("%T", ev)
}

func artifacts(t *a2a.Task) string {
	var s []string
	for _, a := range t.Artifacts {
		s = append(s, a.Parts[0].Text())
	}
	if len(s) == 0 {
		return ""
	}
	return " [" + strings.Join(s, ", ") + "]"
}

// reason names an error by its A2A reason.
func reason(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []error{a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrUnsupportedOperation,
		a2a.ErrInvalidParams, a2a.ErrUnauthenticated, a2a.ErrUnauthorized, a2a.ErrPushNotificationNotSupported,
		a2a.ErrUnsupportedContentType} {
		if errors.Is(err, s) {
			return a2a.ErrorReason(s)
		}
	}
	return "other: " + err.Error()
}

func stream(t *testing.T, seq func(func(a2a.Event, error) bool)) []string {
	t.Helper()
	var out []string
	for ev, err := range seq {
		if err != nil {
			return append(out, "error "+reason(err))
		}
		out = append(out, describe(ev))
	}
	return out
}

func mustTask(t *testing.T, c *client.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want a task", res)
	}
	return task
}

var scenarios = []scenario{
	{
		name: "SendMessage",
		run: func(t *testing.T, e *env) []string {
			task := mustTask(t, e.alice, send("hello"))
			msg, err := e.alice.SendMessage(t.Context(), send("message"))
			if err != nil {
				t.Fatal(err)
			}
			return []string{describe(task), describe(msg)}
		},
		want: []string{"task completed [echo: hello]", "message echo: message"},
	},
	{
		name: "ReturnImmediately",
		run: func(t *testing.T, e *env) []string {
			req := send("wait " + e.key)
			req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
			task := mustTask(t, e.alice, req)
			out := []string{"returned " + map[bool]string{true: "before completion", false: "completed"}[state(task.Status.State) != "completed"]}
			// Subscribe, then let the task finish: the subscriber sees it as it is, then the rest.
			events := stream(t, func(yield func(a2a.Event, error) bool) {
				first := true
				for ev, err := range e.alice.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
					if !yield(ev, err) {
						return
					}
					if first {
						first = false
						e.srv.Agent.Release(e.key)
					}
				}
			})
			// The first is the task in whichever state it reached, and a "working" update may
			// come before or after the subscription started: what follows the release is fixed.
			for _, ev := range events[1:] {
				if ev != "status working" {
					out = append(out, ev)
				}
			}
			return out
		},
		want: []string{"returned before completion", "artifact echo: wait KEY", "status completed"},
	},
	{
		name: "StreamingOrder",
		run: func(t *testing.T, e *env) []string {
			return stream(t, e.alice.SendStreamingMessage(t.Context(), send("stream me")))
		},
		want: []string{"task submitted", "status working", "artifact echo: stream me", "status completed"},
	},
	{
		name: "StreamMessage",
		run: func(t *testing.T, e *env) []string {
			return stream(t, e.alice.SendStreamingMessage(t.Context(), send("message")))
		},
		want: []string{"message echo: message"},
	},
	{
		name: "InputRequiredAndResume",
		run: func(t *testing.T, e *env) []string {
			out := stream(t, e.alice.SendStreamingMessage(t.Context(), send("ask")))
			list, err := e.alice.ListTasks(t.Context(), &a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired})
			if err != nil || len(list.Tasks) == 0 {
				t.Fatalf("listing the input-required task: %v", err)
			}
			task := list.Tasks[0]
			// A subscriber to the interrupted task sees it, then what the follow-up brings.
			var sub []string
			var wg sync.WaitGroup
			subscribed := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				first := true
				for ev, err := range e.alice.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
					if err != nil {
						sub = append(sub, "error "+reason(err))
						return
					}
					sub = append(sub, describe(ev))
					if first {
						first = false
						close(subscribed)
					}
				}
			}()
			<-subscribed
			out = append(out, "follow-up: "+describe(mustTask(t, e.alice, followUp(task, "bob"))))
			wg.Wait()
			return append(out, sub...)
		},
		want: []string{
			"task submitted", "status working", "status input_required: what is your name?",
			"follow-up: task completed [hello, bob]",
			// The subscriber: the task as it was, then only updates: the follow-up resumed it
			// (working), then the agent's work.
			"task input_required", "status working", "status working", "artifact hello, bob", "status completed",
		},
	},
	{
		name: "StreamedFollowUp",
		run: func(t *testing.T, e *env) []string {
			asked := stream(t, e.alice.SendStreamingMessage(t.Context(), send("ask")))
			list, err := e.alice.ListTasks(t.Context(), &a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired})
			if err != nil || len(list.Tasks) == 0 {
				t.Fatalf("listing the input-required task: %v", err)
			}
			// A streamed answer opens with the task no longer waiting: a client that ends a
			// stream at an interrupted state reads on to the answer.
			answered := stream(t, e.alice.SendStreamingMessage(t.Context(), followUp(list.Tasks[0], "bob")))
			return append(asked, answered...)
		},
		want: []string{
			"task submitted", "status working", "status input_required: what is your name?",
			"task working", "status working", "artifact hello, bob", "status completed",
		},
	},
	{
		name: "InputModes",
		run: func(t *testing.T, e *env) []string {
			// The card (behaviourCard) accepts text/plain by default and image/* for one skill.
			parts := []struct {
				name string
				part *a2a.Part
			}{
				{"text", a2a.NewTextPart("hello")},
				{"text with charset", &a2a.Part{Content: a2a.Text("hello"), MediaType: "Text/Plain; charset=utf-8"}},
				{"image (a skill's mode)", &a2a.Part{Content: a2a.Raw{0x89, 'P', 'N', 'G'}, MediaType: "image/png", Filename: "x.png"}},
				{"pdf", &a2a.Part{Content: a2a.Raw("%PDF-"), MediaType: "application/pdf"}},
				{"data without a type (application/json)", a2a.NewDataPart(map[string]any{"a": 1.0})},
				{"file without a type (application/octet-stream)", a2a.NewFileURLPart("https://example.com/f", "")},
				{"malformed type", &a2a.Part{Content: a2a.Text("x"), MediaType: "not a type"}},
			}
			var out []string
			for _, p := range parts {
				req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo"), p.part)}
				_, err := e.alice.SendMessage(t.Context(), req)
				streamed := stream(t, e.alice.SendStreamingMessage(t.Context(), req))
				out = append(out, p.name+": "+reason(err)+", streamed "+streamed[len(streamed)-1])
			}
			list, err := e.alice.ListTasks(t.Context(), &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			return append(out, fmt.Sprintf("tasks: %d", len(list.Tasks)))
		},
		want: []string{
			"text: ok, streamed status completed",
			"text with charset: ok, streamed status completed",
			"image (a skill's mode): ok, streamed status completed",
			"pdf: CONTENT_TYPE_NOT_SUPPORTED, streamed error CONTENT_TYPE_NOT_SUPPORTED",
			"data without a type (application/json): CONTENT_TYPE_NOT_SUPPORTED, streamed error CONTENT_TYPE_NOT_SUPPORTED",
			"file without a type (application/octet-stream): CONTENT_TYPE_NOT_SUPPORTED, streamed error CONTENT_TYPE_NOT_SUPPORTED",
			"malformed type: CONTENT_TYPE_NOT_SUPPORTED, streamed error CONTENT_TYPE_NOT_SUPPORTED",
			"tasks: 6", // the refused messages made none
		},
	},
	{
		name: "ExtendedCard",
		run: func(t *testing.T, e *env) []string {
			ext, err := e.alice.GetExtendedAgentCard(t.Context(), &a2a.GetExtendedAgentCardRequest{})
			if err != nil {
				return []string{"error " + reason(err)}
			}
			var skills []string
			for _, s := range ext.Skills {
				skills = append(skills, s.ID)
			}
			// The engine's card lists no interfaces: the binding gave it the one the caller
			// uses, where the public card lists it.
			using := e.alice.Interface()
			listed := false
			for _, in := range ext.SupportedInterfaces {
				listed = listed || (in.ProtocolBinding == using.ProtocolBinding && in.URL == using.URL)
			}
			return []string{ext.Name, "skills: " + strings.Join(skills, ","), fmt.Sprintf("lists this binding at its public URL: %v", listed)}
		},
		want: []string{"a2atest (extended)", "skills: echo,look,secret", "lists this binding at its public URL: true"},
	},
	{
		name: "Cancel",
		run: func(t *testing.T, e *env) []string {
			req := send("wait " + e.key)
			req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
			task := mustTask(t, e.alice, req)
			canceled, err := e.alice.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
			if err != nil {
				t.Fatal(err)
			}
			_, again := e.alice.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
			_, sub := e.alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
			subErr := stream(t, e.alice.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}))
			return []string{describe(canceled), "cancel again: " + reason(again), "get: " + reason(sub), "subscribe: " + strings.Join(subErr, ",")}
		},
		want: []string{"task canceled", "cancel again: TASK_NOT_CANCELABLE", "get: ok", "subscribe: error UNSUPPORTED_OPERATION"},
	},
	{
		name: "ListAndPaginate",
		run: func(t *testing.T, e *env) []string {
			for i := range 3 {
				if _, err := e.alice.SendMessage(t.Context(), send(fmt.Sprintf("list %s %d", e.key, i))); err != nil {
					t.Fatal(err)
				}
			}
			ctx := t.Context()
			page1, err := e.alice.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 2, IncludeArtifacts: true})
			if err != nil {
				t.Fatal(err)
			}
			page2, err := e.alice.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 2, PageToken: page1.NextPageToken, IncludeArtifacts: true})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range []*a2a.ListTasksResponse{page1, page2} {
				var names []string
				for _, task := range p.Tasks {
					names = append(names, strings.ReplaceAll(artifacts(task), e.key, "KEY"))
				}
				out = append(out, fmt.Sprintf("page of %d:%s more=%v", len(p.Tasks), strings.Join(names, ""), p.NextPageToken != ""))
			}
			return out
		},
		want: []string{
			"page of 2: [echo: list KEY 2] [echo: list KEY 1] more=true",
			"page of 1: [echo: list KEY 0] more=false",
		},
	},
	{
		name: "HistoryLength",
		run: func(t *testing.T, e *env) []string {
			task := mustTask(t, e.alice, send("history"))
			zero, one := 0, 1
			var out []string
			for _, n := range []*int{nil, &zero, &one} {
				got, err := e.alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID, HistoryLength: n})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("history %d", len(got.History)))
			}
			return out
		},
		want: []string{"history 1", "history 0", "history 1"},
	},
	{
		name: "Errors",
		run: func(t *testing.T, e *env) []string {
			ctx := t.Context()
			_, get := e.alice.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
			_, cancel := e.alice.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "no-such-task"})
			sub := stream(t, e.alice.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "no-such-task"}))
			return []string{"get: " + reason(get), "cancel: " + reason(cancel), "subscribe: " + strings.Join(sub, ",")}
		},
		want: []string{"get: TASK_NOT_FOUND", "cancel: TASK_NOT_FOUND", "subscribe: error TASK_NOT_FOUND"},
	},
	{
		name: "CallerScoping",
		run: func(t *testing.T, e *env) []string {
			ctx := t.Context()
			task := mustTask(t, e.alice, send("private"))
			_, get := e.bob.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
			_, cancel := e.bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
			sub := stream(t, e.bob.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
			list, err := e.bob.ListTasks(ctx, &a2a.ListTasksRequest{})
			if err != nil {
				t.Fatal(err)
			}
			return []string{"get: " + reason(get), "cancel: " + reason(cancel), "subscribe: " + strings.Join(sub, ","), fmt.Sprintf("bob lists %d", len(list.Tasks))}
		},
		want: []string{"get: TASK_NOT_FOUND", "cancel: TASK_NOT_FOUND", "subscribe: error TASK_NOT_FOUND", "bob lists 0"},
	},
}

// behaviourCard is a2atest's card, with a second skill that also takes images, and an extended
// card (extendedCard) for authenticated callers.
func behaviourCard() *a2a.AgentCard {
	card := a2atest.Card()
	card.Skills = append(card.Skills, a2a.AgentSkill{ID: "look", Name: "look", Description: "looks at images",
		Tags: []string{"test"}, InputModes: []string{"text/plain", "image/*"}})
	card.Capabilities.ExtendedAgentCard = true
	return card
}

// extendedCard is the engine's extended card: behaviourCard with one more skill, and no
// interfaces, which each binding fills in.
func extendedCard(context.Context) (*a2a.AgentCard, error) {
	card := behaviourCard()
	card.Name += " (extended)"
	card.Skills = append(card.Skills, a2a.AgentSkill{ID: "secret", Name: "secret", Description: "for principals only", Tags: []string{"test"}})
	return card, nil
}

func TestBehaviourEveryBinding(t *testing.T) {
	t.Parallel()
	srv := a2atest.Start(t, &a2atest.Options{
		Card:   behaviourCard(),
		HTTP:   &binding.Options{Authenticate: principalAuth},
		GRPC:   &binding.GRPCOptions{Authenticate: principalAuth},
		Engine: &engine.Options{ExtendedCard: extendedCard},
	})
	for _, b := range everyBinding {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					key := string(b) + "-" + sc.name
					e := &env{srv: srv, b: b, key: key}
					// Each scenario has principals of its own, so listings see only its tasks.
					e.alice = e.connect(t, "alice-"+key)
					e.bob = e.connect(t, "bob-"+key)
					got := sc.run(t, e)
					for i := range got {
						got[i] = strings.ReplaceAll(got[i], key, "KEY")
					}
					if diff := cmp.Diff(sc.want, got); diff != "" {
						t.Errorf("over %s (-want +got):\n%s", b, diff)
					}
				})
			}
		})
	}
}
