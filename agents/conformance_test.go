package agents

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// fastConformance keeps the streamed scenarios quick in tests.
func fastConformance() *Conformance {
	return &Conformance{StepDelay: time.Millisecond, LongRunning: 100 * time.Millisecond}
}

type scenarioWant struct {
	message   string          // when the result is a Message: its text
	state     a2a.TaskState   // final task state
	status    string          // final status message text
	artifacts [][]*a2a.Part   // artifact parts, in order
	updates   []a2a.TaskState // status updates a stream carries, in order
	lastChunk bool            // the (single) artifact's last event has lastChunk set
	names     map[int]string  // artifact index → expected name
	echo      bool            // status message parts equal the input's
	check     func(*a2a.Task) // extra checks on the blocking result
}

var (
	rawFile = &a2a.Part{Content: a2a.Raw("tck"), Filename: "output.txt", MediaType: "text/plain"}
	urlFile = &a2a.Part{Content: a2a.URL("https://example.com/output.txt"), Filename: "output.txt", MediaType: "text/plain"}
	text    = a2a.NewTextPart
)

var scenarioTests = []struct {
	id   string // message ID (the kit appends a session suffix)
	want scenarioWant
}{
	{"tck-complete-task-abc123", scenarioWant{state: a2a.TaskStateCompleted, status: "Hello from TCK",
		updates: []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"tck-artifact-text-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("Generated text content")}}, updates: []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"tck-artifact-file-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{rawFile}}, updates: []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"tck-artifact-file-url-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{urlFile}}, updates: []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"tck-artifact-data-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{a2a.NewDataPart(map[string]any{"key": "value", "count": 42})}},
		updates:   []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"tck-artifact-chunked-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("chunk-1 "), text("chunk-2 "), text("chunk-3")}}, lastChunk: true,
		names:   map[int]string{0: "chunked"},
		updates: []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"tck-artifact-multiple-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("First artifact")}, {a2a.NewDataPart(map[string]any{"index": 2})}},
		updates:   []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"tck-message-response-abc123", scenarioWant{message: "Direct message response"}},
	{"tck-input-required-abc123", scenarioWant{state: a2a.TaskStateInputRequired,
		updates: []a2a.TaskState{a2a.TaskStateInputRequired}}},
	{"tck-reject-task-abc123", scenarioWant{state: a2a.TaskStateRejected, status: "rejected"}},
	{"tck-stream-001-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("Stream hello from TCK")}},
		updates:   []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"tck-stream-002-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		updates: []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"tck-stream-003-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("Stream task lifecycle")}},
		updates:   []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"tck-stream-ordering-001-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("Ordered output")}},
		updates:   []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"tck-stream-artifact-text-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("Streamed text content")}},
		updates:   []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"tck-stream-artifact-file-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{rawFile}},
		updates:   []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"tck-stream-artifact-chunked-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		artifacts: [][]*a2a.Part{{text("chunk-1 "), text("chunk-2")}}, lastChunk: true,
		updates: []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"test-resubscribe-message-id-abc123", scenarioWant{state: a2a.TaskStateCompleted,
		updates: []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
	{"tck-send-001-abc123", scenarioWant{state: a2a.TaskStateCompleted, echo: true,
		updates: []a2a.TaskState{a2a.TaskStateCompleted}}},
	{"3f1c2a9e-unrelated-uuid", scenarioWant{state: a2a.TaskStateCompleted, echo: true,
		updates: []a2a.TaskState{a2a.TaskStateCompleted}}},
}

const inputText = "TCK input text"

func checkTask(t *testing.T, task *a2a.Task, w scenarioWant, in *a2a.Message) {
	t.Helper()
	if task.Status.State != w.state {
		t.Errorf("state = %s, want %s", task.Status.State, w.state)
	}
	if w.echo {
		if task.Status.Message == nil || jsonOf(t, task.Status.Message.Parts) != jsonOf(t, in.Parts) {
			t.Errorf("status message = %s, want an echo of %s", jsonOf(t, task.Status.Message), jsonOf(t, in.Parts))
		}
	} else if got := statusText(task.Status); got != w.status {
		t.Errorf("status message = %q, want %q", got, w.status)
	}
	if got, want := jsonOf(t, artifactParts(task.Artifacts)), jsonOf(t, orEmpty(w.artifacts)); got != want {
		t.Errorf("artifacts = %s, want %s", got, want)
	}
	for i, a := range task.Artifacts {
		if a.ID == "" {
			t.Errorf("artifact %d has no ID", i)
		}
		if name, ok := w.names[i]; ok && a.Name != name {
			t.Errorf("artifact %d name = %q, want %q", i, a.Name, name)
		}
	}
	if task.ID == "" || task.ContextID == "" {
		t.Errorf("task IDs missing: id=%q context=%q", task.ID, task.ContextID)
	}
	if w.check != nil {
		w.check(task)
	}
}

func orEmpty(p [][]*a2a.Part) [][]*a2a.Part {
	if p == nil {
		return [][]*a2a.Part{}
	}
	return p
}

func TestConformanceScenariosBlocking(t *testing.T) {
	for _, tr := range transports {
		client := newClient(t, fastConformance(), tr)
		for _, tc := range scenarioTests {
			t.Run(string(tr)+"/"+tc.id, func(t *testing.T) {
				t.Parallel()
				in := userMessage(tc.id, inputText)
				res := send(t, client, in)
				if tc.want.message != "" {
					msg, ok := res.(*a2a.Message)
					if !ok {
						t.Fatalf("result is %T, want *a2a.Message", res)
					}
					if got := MessageText(msg); got != tc.want.message {
						t.Errorf("message = %q, want %q", got, tc.want.message)
					}
					if msg.Role != a2a.MessageRoleAgent || msg.TaskID != "" {
						t.Errorf("message role=%s taskId=%q, want agent and no task", msg.Role, msg.TaskID)
					}
					return
				}
				checkTask(t, asTask(t, res), tc.want, in)
			})
		}
	}
}

func TestConformanceScenariosStreaming(t *testing.T) {
	for _, tr := range transports {
		client := newClient(t, fastConformance(), tr)
		for _, tc := range scenarioTests {
			t.Run(string(tr)+"/"+tc.id, func(t *testing.T) {
				t.Parallel()
				in := userMessage(tc.id, inputText)
				events := stream(t, client, in)
				s := summarize(t, events)
				if tc.want.message != "" {
					msg, ok := s.first.(*a2a.Message)
					if !ok || len(events) != 1 {
						t.Fatalf("stream = %d events starting with %T, want exactly one Message", len(events), s.first)
					}
					if got := MessageText(msg); got != tc.want.message {
						t.Errorf("message = %q, want %q", got, tc.want.message)
					}
					return
				}
				task, ok := s.first.(*a2a.Task)
				if !ok {
					t.Fatalf("first event is %T, want *a2a.Task", s.first)
				}
				if !slices.Equal(s.states, tc.want.updates) {
					t.Errorf("status updates = %v, want %v", s.states, tc.want.updates)
				}
				if tc.want.lastChunk {
					if len(s.artifacts) != 1 || !s.lastChunk[s.artifacts[0].ID] {
						t.Errorf("the chunked artifact's last event must have lastChunk set")
					}
				}
				// The folded stream must equal the task a client would get.
				folded := *task
				folded.Status = s.final
				folded.Artifacts = s.artifacts
				checkTask(t, &folded, tc.want, in)
			})
		}
	}
}

func TestConformanceMultiTurn(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			client := newClient(t, fastConformance(), tr)
			task := asTask(t, send(t, client, userMessage("tck-input-required-s1", "start")))
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("state = %s, want input-required", task.Status.State)
			}
			// As the kit's history helper does: follow-ups with the input-required prefix keep
			// the task waiting, then a complete-task follow-up completes it.
			for _, txt := range []string{"TCK history message 1", "TCK history message 2"} {
				m := userMessage("tck-input-required-s1-"+txt[len(txt)-1:], txt)
				m.TaskID = task.ID
				got := asTask(t, send(t, client, m))
				if got.Status.State != a2a.TaskStateInputRequired || got.ID != task.ID {
					t.Fatalf("after %q: task %s state %s, want %s input-required", txt, got.ID, got.Status.State, task.ID)
				}
			}
			m := userMessage("tck-complete-task-s1", "done")
			m.TaskID = task.ID
			got := asTask(t, send(t, client, m))
			if got.Status.State != a2a.TaskStateCompleted || statusText(got.Status) != "Hello from TCK" {
				t.Fatalf("final = %s %q, want completed \"Hello from TCK\"", got.Status.State, statusText(got.Status))
			}
			full, err := client.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
			if err != nil {
				t.Fatal(err)
			}
			var userTexts []string
			for _, h := range full.History {
				if h.Role == a2a.MessageRoleUser {
					userTexts = append(userTexts, MessageText(h))
				}
			}
			want := []string{"start", "TCK history message 1", "TCK history message 2", "done"}
			if !slices.Equal(userTexts, want) {
				t.Errorf("user history = %q, want %q", userTexts, want)
			}

			// A follow-up matching no scenario resumes an input-required task by echoing it.
			task = asTask(t, send(t, client, userMessage("tck-input-required-s2", "start")))
			m = userMessage("", "here is the input")
			m.TaskID, m.ContextID = task.ID, task.ContextID
			got = asTask(t, send(t, client, m))
			if got.Status.State != a2a.TaskStateCompleted || statusText(got.Status) != "here is the input" {
				t.Errorf("resumed = %s %q, want completed echo", got.Status.State, statusText(got.Status))
			}

			// tck-message-response on an existing task completes it with the message.
			task = asTask(t, send(t, client, userMessage("tck-input-required-s3", "start")))
			m = userMessage("tck-message-response-s3", "x")
			m.TaskID = task.ID
			got = asTask(t, send(t, client, m))
			if got.Status.State != a2a.TaskStateCompleted || statusText(got.Status) != "Direct message response" {
				t.Errorf("message-response follow-up = %s %q", got.Status.State, statusText(got.Status))
			}
		})
	}
}

func TestConformanceCancel(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			client := newClient(t, &Conformance{LongRunning: time.Minute}, tr)

			// An input-required task (the kit's CORE-CANCEL-001 setup).
			task := asTask(t, send(t, client, userMessage("tck-input-required-c1", "x")))
			got := cancelSettled(t, client, task.ID)
			if got.Status.State != a2a.TaskStateCanceled {
				t.Errorf("state = %s, want canceled", got.Status.State)
			}

			// A running task: cancel it while it works; its stream ends canceled, promptly.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			var taskID a2a.TaskID
			var last a2a.TaskState
			for ev, err := range client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: userMessage("test-resubscribe-message-id-c2", "x")}) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				switch v := ev.(type) {
				case *a2a.Task:
					taskID = v.ID
				case *a2a.TaskStatusUpdateEvent:
					last = v.Status.State
					if last == a2a.TaskStateWorking {
						if _, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: taskID}); err != nil {
							t.Fatalf("CancelTask: %v", err)
						}
					}
				}
			}
			if last != a2a.TaskStateCanceled {
				t.Errorf("stream ended with %s, want canceled", last)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cancel took %v", d)
			}
		})
	}
}

// cancelSettled cancels a task that just became input-required. a2a-go's local execution
// manager keeps the finished execution registered for a moment after its last event; a
// CancelTask in that window waits for that execution's result (input-required) and fails with
// ErrTaskNotCancelable. That is a2a-go's race, not the agent's: retry until it has settled.
func cancelSettled(t *testing.T, client *a2aclient.Client, id a2a.TaskID) *a2a.Task {
	t.Helper()
	for attempt := 0; ; attempt++ {
		got, err := client.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
		if err == nil {
			return got
		}
		if !isErr(err, a2a.ErrTaskNotCancelable) || attempt == 50 {
			t.Fatalf("CancelTask: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConformanceSubscribe(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			client := newClient(t, &Conformance{LongRunning: 500 * time.Millisecond}, tr)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			req := &a2a.SendMessageRequest{Message: userMessage("test-resubscribe-message-id-r1", "x"),
				Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
			res, err := client.SendMessage(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			task := asTask(t, res)
			var wg sync.WaitGroup
			finals := make([]a2a.TaskState, 2)
			for i := range finals {
				wg.Go(func() {
					for ev, err := range client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
						if err != nil {
							t.Errorf("subscriber %d: %v", i, err)
							return
						}
						if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
							finals[i] = su.Status.State
						}
					}
				})
			}
			wg.Wait()
			for i, s := range finals {
				if s != a2a.TaskStateCompleted {
					t.Errorf("subscriber %d ended with %s, want completed", i, s)
				}
			}
		})
	}
}

// Media types are the server's business (the kit's CORE-SEND-003 note): the agent plays any part.
func TestConformanceAcceptsAnyMediaType(t *testing.T) {
	client := newClient(t, fastConformance(), a2a.TransportProtocolJSONRPC)
	m := a2a.NewMessage(a2a.MessageRoleUser, &a2a.Part{Content: a2a.Raw("tck"), MediaType: "application/x-unsupported-tck-type"})
	m.ID = "tck-send-003-abc"
	if res := asTask(t, send(t, client, m)); res.Status.State != a2a.TaskStateCompleted {
		t.Errorf("state = %s", res.Status.State)
	}
}

func TestMatchScenario(t *testing.T) {
	meta := func(v any) *a2a.Message {
		m := userMessage("", "no prefix here")
		m.Metadata = map[string]any{ScenarioMetadataKey: v}
		return m
	}
	for _, tc := range []struct {
		name string
		msg  *a2a.Message
		want string // "" = no scenario
	}{
		{"message id", userMessage("tck-artifact-data-1234", "hello"), "tck-artifact-data"},
		{"longest prefix wins", userMessage("tck-artifact-file-url-1", ""), "tck-artifact-file-url"},
		{"longest prefix wins 2", userMessage("tck-stream-artifact-chunked-1", ""), "tck-stream-artifact-chunked"},
		{"text prefix", userMessage("", "  tck-reject-task please"), "tck-reject-task"},
		{"id before text", userMessage("tck-complete-task-1", "tck-reject-task"), "tck-complete-task"},
		{"metadata", meta("tck-input-required"), "tck-input-required"},
		{"metadata not a string", meta(42), ""},
		{"unknown tck prefix", userMessage("tck-send-001-1", "hi"), ""},
		{"prefix only at start", userMessage("", "say tck-complete-task"), ""},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := MatchScenario(tc.msg)
			if got := map[bool]string{true: s.Prefix}[ok]; got != tc.want {
				t.Errorf("MatchScenario = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConformanceScenarioTable(t *testing.T) {
	all := ConformanceScenarios()
	fromKit := 0
	for i, s := range all {
		if s.Prefix == "" || s.Behaviour == "" || s.run == nil {
			t.Errorf("scenario %d incomplete: %+v", i, s)
		}
		if i > 0 && len(s.Prefix) > len(all[i-1].Prefix) {
			t.Errorf("scenarios not sorted longest prefix first at %s", s.Prefix)
		}
		if s.FromKit {
			fromKit++
		}
		tested := slices.ContainsFunc(scenarioTests, func(tc struct {
			id   string
			want scenarioWant
		}) bool {
			return strings.HasPrefix(tc.id, s.Prefix+"-")
		})
		if !tested {
			t.Errorf("scenario %s has no test case", s.Prefix)
		}
	}
	// The kit's 1.0-dev scenario files define 16 prefixes.
	if fromKit != 16 {
		t.Errorf("%d scenarios from the kit, want 16", fromKit)
	}
	skills := (&Conformance{}).Skills()
	if len(skills) != 1 || len(skills[0].Examples) != len(all) {
		t.Errorf("skills = %+v", skills)
	}
}

// The executor also works driven directly, without a server: it must stop when the consumer does.
func TestConformanceStopsWhenConsumerStops(t *testing.T) {
	ec := &a2asrv.ExecutorContext{Message: userMessage("tck-stream-001-x", ""), TaskID: a2a.NewTaskID(), ContextID: "ctx"}
	n := 0
	for range (&Conformance{StepDelay: -1}).Execute(t.Context(), ec) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("n = %d", n)
	}
	// And when the context ends during a wait.
	ctx, cancel := context.WithCancel(t.Context())
	ec.Message = userMessage("test-resubscribe-message-id-x", "")
	var states []a2a.TaskState
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range (&Conformance{LongRunning: time.Hour}).Execute(ctx, ec) {
			if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
				states = append(states, su.Status.State)
				cancel()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Execute did not return after its context was canceled")
	}
	if !slices.Equal(states, []a2a.TaskState{a2a.TaskStateWorking}) {
		t.Errorf("states = %v", states)
	}
}
