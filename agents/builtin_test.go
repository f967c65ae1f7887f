package agents

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fastBuiltin() *Builtin {
	return &Builtin{Now: func() time.Time { return fixedNow }, Tick: time.Millisecond}
}

type builtinWant struct {
	// For Message replies.
	text     string // exact text, or
	contains []string
	data     map[string]any // a second, data part
	// For tasks.
	state     a2a.TaskState
	status    string
	artifact  *regexp.Regexp // the single artifact's text
	updates   []a2a.TaskState
	isMessage bool
}

func TestBuiltinCommands(t *testing.T) {
	noText := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"x": 1}))
	waitUpdates := []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateWorking,
		a2a.TaskStateWorking, a2a.TaskStateCompleted}
	tests := []struct {
		name string
		msg  *a2a.Message
		want builtinWant
	}{
		{"help", userMessage("", "help"), builtinWant{isMessage: true,
			contains: []string{"no language model", "echo TEXT", "time", "count [words] TEXT", "wait [N]", "ask"}}},
		{"help is case-insensitive", userMessage("", "  HELP  "), builtinWant{isMessage: true, contains: []string{"echo TEXT"}}},
		{"no text", noText, builtinWant{isMessage: true, contains: []string{"no text", "echo TEXT"}}},
		{"echo", userMessage("", "echo  hello,   world "), builtinWant{isMessage: true, text: "hello,   world"}},
		{"echo multi-line", userMessage("", "Echo one\ntwo"), builtinWant{isMessage: true, text: "one\ntwo"}},
		{"echo without text", userMessage("", "echo"), builtinWant{isMessage: true, contains: []string{"echo needs some text"}}},
		{"time", userMessage("", "time"), builtinWant{isMessage: true, text: "It is 2026-01-02T03:04:05Z (UTC).",
			data: map[string]any{"utc": "2026-01-02T03:04:05Z", "unix": fixedNow.Unix()}}},
		{"count words", userMessage("", "count words the quick brown fox"), builtinWant{isMessage: true,
			text: "4 words, 19 characters, 1 line.", data: map[string]any{"words": 4, "characters": 19, "lines": 1}}},
		{"count", userMessage("", "count één\ntwee"), builtinWant{isMessage: true,
			text: "2 words, 8 characters, 2 lines.", data: map[string]any{"words": 2, "characters": 8, "lines": 2}}},
		{"count singular", userMessage("", "count x"), builtinWant{isMessage: true,
			text: "1 word, 1 character, 1 line.", data: map[string]any{"words": 1, "characters": 1, "lines": 1}}},
		{"count without text", userMessage("", "count words"), builtinWant{isMessage: true, contains: []string{"count needs some text"}}},
		{"unknown", userMessage("", "dance now"), builtinWant{isMessage: true, contains: []string{`I don't know the command "dance"`, "echo TEXT"}}},
		{"wait", userMessage("", "wait 3"), builtinWant{state: a2a.TaskStateCompleted, status: "Done: waited 3 seconds.",
			artifact: regexp.MustCompile(`^Waited 3 seconds, from 2026-01-02T03:04:05Z to 2026-01-02T03:04:05Z\.$`),
			updates:  waitUpdates}},
		{"wait with unit", userMessage("", "wait 1s"), builtinWant{state: a2a.TaskStateCompleted, status: "Done: waited 1 second.",
			artifact: regexp.MustCompile(`^Waited 1 second, `),
			updates:  []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
		{"wait default", userMessage("", "wait"), builtinWant{state: a2a.TaskStateCompleted, status: "Done: waited 5 seconds.",
			artifact: regexp.MustCompile(`^Waited 5 seconds`),
			updates: []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateWorking,
				a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateCompleted}}},
		{"wait zero", userMessage("", "wait 0"), builtinWant{isMessage: true, contains: []string{"from 1 to 60"}}},
		{"wait too long", userMessage("", "wait 61"), builtinWant{isMessage: true, contains: []string{"from 1 to 60"}}},
		{"wait nonsense", userMessage("", "wait forever"), builtinWant{isMessage: true, contains: []string{"whole number"}}},
		{"ask", userMessage("", "ask"), builtinWant{state: a2a.TaskStateInputRequired,
			status: "What should I call you? Reply to this task with a name.", updates: []a2a.TaskState{a2a.TaskStateInputRequired}}},
	}
	for _, tr := range transports {
		client := newClient(t, fastBuiltin(), tr)
		for _, tc := range tests {
			check := func(t *testing.T, res a2a.SendMessageResult, updates []a2a.TaskState) {
				t.Helper()
				if tc.want.isMessage {
					msg, ok := res.(*a2a.Message)
					if !ok {
						t.Fatalf("result is %T, want *a2a.Message", res)
					}
					checkReply(t, msg.Parts, tc.want)
					return
				}
				task := asTask(t, res)
				if task.Status.State != tc.want.state || statusText(task.Status) != tc.want.status {
					t.Errorf("status = %s %q, want %s %q", task.Status.State, statusText(task.Status), tc.want.state, tc.want.status)
				}
				if tc.want.artifact != nil {
					if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "wait-result" ||
						!tc.want.artifact.MatchString(MessageText(&a2a.Message{Parts: task.Artifacts[0].Parts})) {
						t.Errorf("artifacts = %s, want one wait-result matching %s", jsonOf(t, task.Artifacts), tc.want.artifact)
					}
				} else if len(task.Artifacts) != 0 {
					t.Errorf("unexpected artifacts %s", jsonOf(t, task.Artifacts))
				}
				if updates != nil && !slices.Equal(updates, tc.want.updates) {
					t.Errorf("status updates = %v, want %v", updates, tc.want.updates)
				}
			}
			t.Run(string(tr)+"/blocking/"+tc.name, func(t *testing.T) {
				t.Parallel()
				check(t, send(t, client, tc.msg), nil)
			})
			t.Run(string(tr)+"/streaming/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := summarize(t, stream(t, client, tc.msg))
				if msg, ok := s.first.(*a2a.Message); ok {
					check(t, msg, nil)
					return
				}
				task, ok := s.first.(*a2a.Task)
				if !ok {
					t.Fatalf("first event is %T", s.first)
				}
				folded := *task
				folded.Status, folded.Artifacts = s.final, s.artifacts
				check(t, &folded, s.states)
			})
		}
	}
}

func checkReply(t *testing.T, parts []*a2a.Part, w builtinWant) {
	t.Helper()
	if len(parts) == 0 {
		t.Fatal("reply has no parts")
	}
	got := parts[0].Text()
	if w.text != "" && got != w.text {
		t.Errorf("reply = %q, want %q", got, w.text)
	}
	for _, s := range w.contains {
		if !strings.Contains(got, s) {
			t.Errorf("reply %q does not contain %q", got, s)
		}
	}
	wantParts := 1
	if w.data != nil {
		wantParts = 2
		if len(parts) < 2 || jsonOf(t, parts[1].Data()) != jsonOf(t, w.data) {
			t.Errorf("data part = %s, want %s", jsonOf(t, parts[1:]), jsonOf(t, w.data))
		}
	}
	if len(parts) != wantParts {
		t.Errorf("reply has %d parts, want %d", len(parts), wantParts)
	}
}

func TestBuiltinAsk(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			client := newClient(t, fastBuiltin(), tr)
			task := asTask(t, send(t, client, userMessage("", "ask")))
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("state = %s", task.Status.State)
			}
			// A blank answer asks again; the task stays open.
			m := userMessage("", "   ")
			m.TaskID = task.ID
			got := asTask(t, send(t, client, m))
			if got.Status.State != a2a.TaskStateInputRequired || !strings.Contains(statusText(got.Status), "still need a name") {
				t.Fatalf("blank answer: %s %q", got.Status.State, statusText(got.Status))
			}
			// Commands are not interpreted while a question is pending: the text is the answer.
			m = userMessage("", "  Ada \n Lovelace ")
			m.TaskID, m.ContextID = task.ID, task.ContextID
			got = asTask(t, send(t, client, m))
			if got.Status.State != a2a.TaskStateCompleted || statusText(got.Status) != "Nice to meet you, Ada Lovelace!" {
				t.Fatalf("answer: %s %q", got.Status.State, statusText(got.Status))
			}
			// Over streaming too.
			task = asTask(t, send(t, client, userMessage("", "ask")))
			m = userMessage("", "help")
			m.TaskID = task.ID
			s := summarize(t, stream(t, client, m))
			if s.final.State != a2a.TaskStateCompleted || statusText(s.final) != "Nice to meet you, help!" {
				t.Errorf("streamed answer: %s %q", s.final.State, statusText(s.final))
			}
			// A long answer is cut.
			task = asTask(t, send(t, client, userMessage("", "ask")))
			m = userMessage("", strings.Repeat("é", 300))
			m.TaskID = task.ID
			got = asTask(t, send(t, client, m))
			if want := "Nice to meet you, " + strings.Repeat("é", 100) + "…!"; statusText(got.Status) != want {
				t.Errorf("long answer: %q", statusText(got.Status))
			}
		})
	}
}

func TestBuiltinWaitCancel(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			client := newClient(t, &Builtin{Tick: 20 * time.Millisecond}, tr)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var taskID a2a.TaskID
			var states []a2a.TaskState
			for ev, err := range client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: userMessage("", "wait 60")}) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				switch v := ev.(type) {
				case *a2a.Task:
					taskID = v.ID
				case *a2a.TaskStatusUpdateEvent:
					states = append(states, v.Status.State)
					if strings.HasPrefix(statusText(v.Status), "2/60") {
						if _, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: taskID}); err != nil {
							t.Fatalf("CancelTask: %v", err)
						}
					}
				}
			}
			if len(states) < 3 || states[len(states)-1] != a2a.TaskStateCanceled {
				t.Fatalf("states = %v, want working updates then canceled", states)
			}
			got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: taskID})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.State != a2a.TaskStateCanceled || len(got.Artifacts) != 0 {
				t.Errorf("task = %s with %d artifacts, want canceled without artifact", got.Status.State, len(got.Artifacts))
			}
		})
	}
}

func TestBuiltinRejectsNonText(t *testing.T) {
	client := newClient(t, fastBuiltin(), a2a.TransportProtocolJSONRPC)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo hi"),
		&a2a.Part{Content: a2a.Raw{0x89, 'P', 'N', 'G'}, MediaType: "image/png", Filename: "x.png"})
	if _, err := client.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m}); !isErr(err, a2a.ErrUnsupportedContentType) {
		t.Errorf("err = %v, want ErrUnsupportedContentType", err)
	}
	m = a2a.NewMessage(a2a.MessageRoleUser, &a2a.Part{Content: a2a.Text("echo hi"), MediaType: "text/markdown"})
	if msg, ok := send(t, client, m).(*a2a.Message); !ok || msg.Parts[0].Text() != "hi" {
		t.Errorf("text/markdown part refused")
	}
}

func TestBuiltinSkills(t *testing.T) {
	b := &Builtin{}
	var ids []string
	for _, s := range b.Skills() {
		ids = append(ids, s.ID)
		if s.Name == "" || s.Description == "" || len(s.Examples) == 0 || s.Tags == nil {
			t.Errorf("skill %s incomplete: %+v", s.ID, s)
		}
		if !strings.Contains(b.HelpText(), s.ID) {
			t.Errorf("help text does not mention %s", s.ID)
		}
	}
	if want := []string{"help", "echo", "time", "count", "wait", "ask"}; !slices.Equal(ids, want) {
		t.Errorf("skills = %v, want %v", ids, want)
	}
}

func TestCheckMediaTypes(t *testing.T) {
	accepted := []string{"text/*", "application/json"}
	for _, tc := range []struct {
		mediaType string
		ok        bool
	}{
		{"", true},
		{"text/plain", true},
		{"text/markdown; charset=utf-8", true},
		{"TEXT/PLAIN", true},
		{"application/json", true},
		{"application/jsonx", false},
		{"image/png", false},
		{"textual/plain", false},
		{"not a media type", false},
	} {
		m := a2a.NewMessage(a2a.MessageRoleUser, &a2a.Part{Content: a2a.Text("x"), MediaType: tc.mediaType})
		err := checkMediaTypes(m, accepted)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok=%v", tc.mediaType, err, tc.ok)
		}
		if err != nil && !isErr(err, a2a.ErrUnsupportedContentType) {
			t.Errorf("%q: err = %v, want ErrUnsupportedContentType", tc.mediaType, err)
		}
	}
	if err := checkMediaTypes(nil, accepted); err != nil {
		t.Errorf("nil message: %v", err)
	}
}
