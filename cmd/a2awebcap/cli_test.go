package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// scriptAgent does what the first word of a message says, to show the CLI every outcome:
//
//	tokens   streams "Hello, world!" in three appended chunks, then completes saying it again
//	fail     fails; reject: rejects; auth: asks for authorization; cancelme: cancels itself
//	ask      asks for a name; the answer completes the task with "hello, NAME"
//	parts    answers with an artifact per part it got: files back as files, data as data,
//	         and a file named "../escape.txt"
//	wait     works until canceled (started is told the task's ID)
//	else     answers with a message "echo: TEXT"
type scriptAgent struct {
	started chan a2a.TaskID
	mu      sync.Mutex
	ctxIDs  []string // the context of each message
}

func (a *scriptAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.mu.Lock()
		a.ctxIDs = append(a.ctxIDs, ec.ContextID)
		a.mu.Unlock()
		text := a2atest.Text(ec.Message)
		cmd, _, _ := strings.Cut(text, " ")
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			cmd = "answer"
		}
		msg := func(s string) *a2a.Message {
			return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(s))
		}
		status := func(s a2a.TaskState, m *a2a.Message) bool { return yield(a2a.NewStatusUpdateEvent(ec, s, m), nil) }
		switch cmd {
		case "tokens", "fail", "reject", "auth", "cancelme", "ask", "answer", "parts", "wait":
		default:
			yield(a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("echo: "+text)), nil)
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !status(a2a.TaskStateWorking, nil) {
			return
		}
		switch cmd {
		case "tokens":
			first := a2a.NewArtifactEvent(ec, a2a.NewTextPart("Hel"))
			first.Artifact.Name = "answer"
			if !yield(first, nil) {
				return
			}
			for _, chunk := range []string{"lo, ", "world!"} {
				if !yield(a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart(chunk)), nil) {
					return
				}
			}
			status(a2a.TaskStateWorking, msg("Hello, world!"))
			status(a2a.TaskStateCompleted, msg("Hello, world!"))
		case "fail":
			status(a2a.TaskStateFailed, msg("It went wrong."))
		case "reject":
			status(a2a.TaskStateRejected, msg("I will not."))
		case "auth":
			status(a2a.TaskStateAuthRequired, msg("Sign in first."))
		case "cancelme":
			status(a2a.TaskStateCanceled, msg("Canceled by the agent."))
		case "ask":
			status(a2a.TaskStateInputRequired, msg("What is your name?"))
		case "answer":
			status(a2a.TaskStateCompleted, msg("hello, "+text))
		case "parts":
			for _, p := range ec.Message.Parts {
				if p.Text() != "" {
					continue
				}
				ae := a2a.NewArtifactEvent(ec, p)
				ae.Artifact.Name = "got"
				if !yield(ae, nil) {
					return
				}
			}
			evil := a2a.NewRawPart([]byte("contained"))
			evil.Filename, evil.MediaType = "../escape.txt", "text/plain"
			if !yield(a2a.NewArtifactEvent(ec, evil), nil) {
				return
			}
			status(a2a.TaskStateCompleted, nil)
		case "wait":
			status(a2a.TaskStateWorking, msg("Working."))
			a.started <- ec.TaskID
			<-ctx.Done()
		}
	}
}

func (a *scriptAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func startScript(t *testing.T) (*scriptAgent, string) {
	t.Helper()
	a := &scriptAgent{started: make(chan a2a.TaskID, 4)}
	card := a2atest.Card()
	card.DefaultInputModes = []string{"*/*"}
	srv := a2atest.Start(t, &a2atest.Options{Executor: a, Card: card})
	return a, srv.URL
}

// cli runs a verb as the process would, with stdin, and returns its output (the error, if
// any, last on stderr) and exit code.
func cli(ctx context.Context, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	var out, errw lockedBuffer
	return cliTo(ctx, stdin, &out, &errw, args...)
}

func cliTo(ctx context.Context, stdin io.Reader, out, errw *lockedBuffer, args ...string) (stdout, stderr string, code int) {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	err := runVerb(ctx, args[0], args[1:], stdio{in: stdin, out: out, err: errw})
	if err != nil {
		fmt.Fprintf(errw, "(%v)", err)
	}
	return out.String(), errw.String(), exitCode(err)
}

// lockedBuffer is a bytes.Buffer that a test reads while a verb writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the buffer holds s. The bound is generous (the machine may be loaded):
// it is there to fail a hung test, not to time anything.
func (l *lockedBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(l.String(), s) {
			return
		}
	}
	t.Fatalf("the output never showed %q: %q", s, l.String())
}

// Each outcome has its own exit code, the help lists them, and a task that waits says how to
// continue it.
func TestExitCodes(t *testing.T) {
	_, url := startScript(t)
	for _, tc := range []struct {
		args []string
		code int
		hint string
	}{
		{[]string{"send", url, "hello"}, exitOK, ""},
		{[]string{"stream", url, "tokens"}, exitOK, ""},
		{[]string{"send", url, "fail"}, exitFailed, ""},
		{[]string{"stream", url, "cancelme"}, exitCanceled, ""},
		{[]string{"send", url, "reject"}, exitRejected, ""},
		{[]string{"send", url, "ask"}, exitInputRequired, "reply with\n  a2awebcap send -task "},
		{[]string{"stream", url, "auth"}, exitAuthRequired, "a2awebcap send -task "},
		{[]string{"send", url}, exitUsage, ""},
		{[]string{"send", url, "-nope", "x"}, exitUsage, ""},
		{[]string{"get", url}, exitUsage, ""},
		{[]string{"list", url, "-o", "yaml"}, exitUsage, ""},
		{[]string{"send", url, "-q", "-v", "x"}, exitUsage, ""},
		{[]string{"get", url, "no-such-task"}, exitError, ""},
		{[]string{"get", "http://127.0.0.1:1", "x"}, exitError, ""},
	} {
		_, stderr, code := cli(t.Context(), nil, tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit code %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
		}
		if tc.hint != "" && !strings.Contains(stderr, tc.hint) {
			t.Errorf("%q: stderr %q, want the hint %q", tc.args, stderr, tc.hint)
		}
	}
	// The hint's command works: it answers the task.
	_, stderr, _ := cli(t.Context(), nil, "send", url, "ask")
	cmd := strings.Fields(stderr[strings.Index(stderr, "a2awebcap send -task"):])
	out, _, code := cli(t.Context(), nil, append(append([]string{"send"}, cmd[2:5]...), "Ada")...)
	if code != exitOK || strings.TrimSpace(out) != "hello, Ada" {
		t.Errorf("the hint's command %q: %q, exit %d", cmd, out, code)
	}
	if !strings.Contains(usage, "Exit codes:") || !strings.Contains(usage, "6 input required") {
		t.Errorf("the help does not list the exit codes")
	}
}

// Under -o json an error is a JSON object on standard output, with the A2A reason.
func TestErrorsAsJSON(t *testing.T) {
	_, url := startScript(t)
	stdout, _, code := cli(t.Context(), nil, "get", url, "no-such-task", "-o", "json")
	var e errorJSON
	if err := json.Unmarshal([]byte(stdout), &e); err != nil {
		t.Fatalf("get -o json of an unknown task printed %q: %v", stdout, err)
	}
	if e.Error.Reason != "TASK_NOT_FOUND" || e.Error.ExitCode != exitError || code != exitError || e.Error.Message == "" {
		t.Errorf("error JSON %+v, exit %d", e, code)
	}
	stdout, _, code = cli(t.Context(), nil, "send", url, "-o", "json")
	if err := json.Unmarshal([]byte(stdout), &e); err != nil || code != exitUsage || e.Error.ExitCode != exitUsage {
		t.Errorf("send -o json with no message: %q (%v), exit %d", stdout, err, code)
	}
}

// Message words that start with a dash: after --, or a number after the URL.
func TestDashWords(t *testing.T) {
	_, url := startScript(t)
	for _, args := range [][]string{
		{"send", url, "--", "-5", "degrees"},
		{"send", url, "-5", "degrees"},
		{"send", "-binding", "jsonrpc", url, "-5", "degrees"},
		{"send", url, "-5", "degrees", "-binding", "rest"},
	} {
		out, stderr, code := cli(t.Context(), nil, args...)
		if code != exitOK || strings.TrimSpace(out) != "echo: -5 degrees" {
			t.Errorf("%q: %q, exit %d, stderr %q", args, out, code, stderr)
		}
	}
	out, stderr, code := cli(t.Context(), nil, "send", url, "--", "-v", "--", "x")
	if code != exitOK || strings.TrimSpace(out) != "echo: -v -- x" {
		t.Errorf("after --, flags are text: %q, exit %d, %q", out, code, stderr)
	}
	if _, stderr, code := cli(t.Context(), nil, "send", url, "-minus", "five"); code != exitUsage || !strings.Contains(stderr, "put -- before message words") {
		t.Errorf("an unknown dash word: exit %d, stderr %q", code, stderr)
	}
}

// Streamed text prints inline, and what the agent says is printed once, though it says it in
// chunks, in a working status and in the final status.
func TestStreamInline(t *testing.T) {
	_, url := startScript(t)
	for _, b := range []string{"capnweb", "jsonrpc", "rest"} {
		for _, q := range []string{"", "-q"} {
			args := []string{"stream", url, "-binding", b, "tokens"}
			if q != "" {
				args = append(args, q)
			}
			out, stderr, code := cli(t.Context(), nil, args...)
			if code != exitOK || out != "Hello, world!\n" {
				t.Errorf("%q: stdout %q, want \"Hello, world!\\n\" once (exit %d, stderr %q)", args, out, code, stderr)
			}
		}
	}
	// -v adds the task's states on standard error; -o json gives every event.
	out, stderr, _ := cli(t.Context(), nil, "stream", url, "-v", "tokens")
	if out != "Hello, world!\n" || !strings.Contains(stderr, "[working]") || !strings.Contains(stderr, "[completed]") || !strings.Contains(stderr, "(over capnweb") {
		t.Errorf("-v: stdout %q, stderr %q", out, stderr)
	}
	out, _, _ = cli(t.Context(), nil, "stream", url, "-o", "json", "tokens")
	if n := strings.Count(out, "\n"); n != 7 { // the task, working, 3 chunks, working with the text, completed
		t.Errorf("-o json printed %d lines, want one per event (7):\n%s", n, out)
	}
}

// -f and -data attach files and data; -save keeps the files the agent returns, inside the
// directory, never overwriting one; data artifacts are pretty-printed.
func TestFilesAndData(t *testing.T) {
	_, url := startScript(t)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(notes, []byte("# Notes\nbuy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	save := filepath.Join(dir, "out")
	for round := range 2 {
		out, stderr, code := cli(t.Context(), nil, "send", url, "-f", notes, "-data", `{"n": 1, "tags": ["a"]}`, "-save", save, "parts")
		if code != exitOK {
			t.Fatalf("send -f -data: exit %d, %q", code, stderr)
		}
		if !strings.Contains(out, "got:\n{\n  \"n\": 1,\n  \"tags\": [\n    \"a\"\n  ]\n}\n") {
			t.Errorf("the data artifact is not pretty-printed:\n%s", out)
		}
		suffix := ""
		if round == 1 {
			suffix = "-1"
		}
		if b, err := os.ReadFile(filepath.Join(save, "notes"+suffix+".md")); err != nil || string(b) != "# Notes\nbuy milk\n" {
			t.Errorf("round %d: the file came back as %q, %v", round, b, err)
		}
		if b, err := os.ReadFile(filepath.Join(save, "escape"+suffix+".txt")); err != nil || string(b) != "contained" {
			t.Errorf("round %d: the file named ../escape.txt was saved as %q, %v", round, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.txt")); err == nil {
		t.Error("a file named ../escape.txt was saved outside -save's directory")
	}
	// Without -save, files are mentioned.
	out, _, _ := cli(t.Context(), nil, "send", url, "-f", notes, "parts")
	if !strings.Contains(out, "notes.md: a file (text/markdown; charset=utf-8, 17 bytes): -save DIR keeps it") {
		t.Errorf("without -save: %q", out)
	}
	for _, args := range [][]string{
		{"send", url, "-f", filepath.Join(dir, "missing"), "x"},
		{"send", url, "-data", "{not json", "x"},
	} {
		if _, _, code := cli(t.Context(), nil, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// chat: each line a message in one context; input-required is answered by the next line, on
// the same task; end of input ends it.
func TestChat(t *testing.T) {
	a, url := startScript(t)
	in := strings.NewReader("hello\ntokens\nask\nAda\n\n/quit\nnever sent\n")
	out, stderr, code := cli(t.Context(), in, "chat", url)
	want := "echo: hello\nHello, world!\nWhat is your name?\nhello, Ada\n"
	if code != exitOK || out != want {
		t.Errorf("chat: stdout %q, want %q (exit %d)\nstderr: %s", out, want, code, stderr)
	}
	if !strings.Contains(stderr, "answer> ") {
		t.Errorf("chat did not prompt for the answer: %q", stderr)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ctxIDs) != 4 {
		t.Fatalf("the agent got %d messages, want 4", len(a.ctxIDs))
	}
	for _, id := range a.ctxIDs[1:] {
		if id != a.ctxIDs[0] {
			t.Errorf("chat's messages went to contexts %q, want one", a.ctxIDs)
			break
		}
	}
}

// Ctrl-C in chat cancels the running task, then ends with exit code 130.
func TestChatInterrupt(t *testing.T) {
	a, url := startScript(t)
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancelCause(t.Context())
	var out, errw lockedBuffer
	done := make(chan int, 1)
	go func() {
		_, _, code := cliTo(ctx, inR, &out, &errw, "chat", url)
		done <- code
	}()
	if _, err := io.WriteString(inW, "wait\n"); err != nil {
		t.Fatal(err)
	}
	task := <-a.started
	out.waitFor(t, "Working.")
	cancel(errInterrupted)
	if code := <-done; code != exitInterrupted || !strings.Contains(errw.String(), "canceled task "+string(task)) {
		t.Errorf("chat after Ctrl-C: exit %d, stderr %q", code, errw.String())
	}
	got, _, _ := cli(t.Context(), nil, "get", url, string(task))
	if !strings.Contains(got, "canceled") {
		t.Errorf("the task after Ctrl-C in chat: %q, want canceled", got)
	}
}

// Ctrl-C while streaming stops watching; the task goes on, and the hint says how to resume.
func TestStreamInterruptHint(t *testing.T) {
	a, url := startScript(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	var out, errw lockedBuffer
	done := make(chan int, 1)
	go func() {
		_, _, code := cliTo(ctx, nil, &out, &errw, "stream", url, "wait")
		done <- code
	}()
	task := <-a.started
	out.waitFor(t, "Working.")
	cancel(errInterrupted)
	if code := <-done; code != exitInterrupted || !strings.Contains(errw.String(), "resume with\n  a2awebcap subscribe "+url+" "+string(task)) {
		t.Errorf("stream after Ctrl-C: exit %d, stderr %q", code, errw.String())
	}
	got, _, _ := cli(t.Context(), nil, "get", url, string(task))
	if !strings.Contains(got, "working") {
		t.Errorf("the task after Ctrl-C in stream: %q, want it still working", got)
	}
}
