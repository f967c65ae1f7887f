package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

func TestQuestionTimeoutFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    time.Duration
		wantErr string
	}{
		{name: "an hour by default", want: time.Hour},
		{name: "flag", args: []string{"-question-timeout", "2s"}, want: 2 * time.Second},
		{name: "environment", env: map[string]string{"A2AWEBCAP_QUESTION_TIMEOUT": "10m"}, want: 10 * time.Minute},
		{name: "the flag overrides the environment", env: map[string]string{"A2AWEBCAP_QUESTION_TIMEOUT": "10m"},
			args: []string{"-question-timeout", "30s"}, want: 30 * time.Second},
		{name: "the flag overrides a bad environment value", env: map[string]string{"A2AWEBCAP_QUESTION_TIMEOUT": "soon"},
			args: []string{"-question-timeout", "30s"}, want: 30 * time.Second},
		{name: "bad environment value", env: map[string]string{"A2AWEBCAP_QUESTION_TIMEOUT": "soon"}, wantErr: "A2AWEBCAP_QUESTION_TIMEOUT"},
		{name: "zero", args: []string{"-question-timeout", "0"}, wantErr: "-question-timeout"},
		{name: "negative", args: []string{"-question-timeout", "-1m"}, wantErr: "-question-timeout"},
		{name: "not a duration", args: []string{"-question-timeout", "an hour"}, wantErr: "-question-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseServeCase(t, tc.args, tc.env, tc.wantErr)
			if ok && c.runtime.question != tc.want {
				t.Errorf("parseServe(%q): question timeout %v, want %v", tc.args, c.runtime.question, tc.want)
			}
		})
	}
}

// parseServeCase runs parseServe on args with env set, for a table test: it fails the test
// unless the error is about wantErr ("": none), and reports whether c is the parsed config.
func parseServeCase(t *testing.T, args []string, env map[string]string, wantErr string) (c serveConfig, ok bool) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	c, err := parseServe(args)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("parseServe(%q) error = %v, want one about %q", args, err, wantErr)
		}
		return c, false
	}
	if err != nil {
		t.Fatalf("parseServe(%q) = %v", args, err)
	}
	return c, true
}

// saverAgents writes an -agents definition of "saver", whose "save PATH" writes PATH through
// the fs capability under call-by-call: each write asks the user first. It returns its path.
func saverAgents(t *testing.T) string {
	t.Helper()
	def := `{"name": "saver", "policy": "none",
	 "capabilities": {"offer": ["fs"], "preinstall": ["fs"], "strategies": {"fs": "call-by-call"}},
	 "rules": [
	  {"name": "save", "when": "command == \"save\"", "action": "call", "reason": "the user asked",
	   "params": {"tool": "\"fs.write\"", "input": "\"{\\\"path\\\": \\\"\" + args + \"\\\", \\\"content\\\": \\\"hello\\\"}\""}},
	  {"name": "done", "when": "last.action == \"call\"", "action": "reply", "reason": "say so",
	   "params": {"text": "last.status + \": \" + last.result"}}]}`
	path := filepath.Join(t.TempDir(), "saver.json")
	if err := os.WriteFile(path, []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// written lists the files under root.
func written(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// questionEventually is how long a test waits for what a question's timeout or an answer
// should bring about soon, on a loaded machine.
const questionEventually = 45 * time.Second

// settledTask polls the task until it leaves input-required (and working) and returns it.
func settledTask(t *testing.T, c *client.Client, id a2a.TaskID) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(questionEventually)
	for {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("GetTask(%s) = %v", id, err)
		}
		switch got.Status.State {
		case a2a.TaskStateInputRequired, a2a.TaskStateWorking, a2a.TaskStateSubmitted:
		default:
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v task %s is still %s %q", questionEventually, id, got.Status.State, a2atest.Text(got.Status.Message))
		}
		time.Sleep(50 * time.Millisecond) // polling a bounded wait, not a synchronization
	}
}

// -question-timeout reaches the hosted agents: a call-by-call approval nobody answers within 2 s
// is withdrawn, and its task ends with the turn, saying why; the late answer is refused.
func TestServeQuestionTimeout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	addr := startServeWith(t, "-agents", saverAgents(t), "-fs-root", root, "-question-timeout", "2s")
	c, err := client.New(t.Context(), "http://"+addr+"/agents/saver", &client.Options{Binding: client.BindingJSONRPC})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	asked := time.Now()
	task, err := a2atest.Send(t, c, nil, "save notes/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateInputRequired || !strings.Contains(a2atest.Text(task.Status.Message), "fs.write") {
		t.Fatalf("the task is %s %q, want input-required asking about fs.write", task.Status.State, a2atest.Text(task.Status.Message))
	}
	got := settledTask(t, c, task.ID)
	const why = "capability: approval required: p1 (call), and it could not be asked: agent: no answer came in time"
	if got.Status.State != a2a.TaskStateCompleted || !strings.Contains(a2atest.Text(got.Status.Message), why) {
		t.Fatalf("the task ended %s %q, want completed saying %q", got.Status.State, a2atest.Text(got.Status.Message), why)
	}
	if waited := time.Since(asked); waited < 2*time.Second {
		t.Errorf("the question was withdrawn after %v, before its 2s", waited)
	}
	if _, err := a2atest.Send(t, c, task, "yes"); err == nil || !strings.Contains(err.Error(), "accepts no more messages") {
		t.Errorf("an answer after the task ended: %v", err)
	}
	if w := written(t, root); len(w) != 0 {
		t.Errorf("the unapproved call wrote %v", w)
	}
}

// A question survives its replica as it survives a restart: a turn of replica A waits on a
// call-by-call approval, A is killed (SIGKILL); once its leases expired the task is still
// input-required, and the answer sent through replica B runs the turn again from its message
// on B, which makes the approved call and completes the task.
func TestClusterQuestionSurvivesItsReplica(t *testing.T) {
	env := newClusterEnv(t)
	root := t.TempDir()
	flags := []string{"-agents", saverAgents(t), "-fs-root", root}
	a, b := env.start(t, "qa", flags...), env.start(t, "qb", flags...)
	dial := func(r *replicaProc) *client.Client {
		c, err := client.New(t.Context(), "http://"+r.addr+"/agents/saver", &client.Options{Binding: client.BindingJSONRPC})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Destroy() })
		return c
	}
	ca, cb := dial(a), dial(b)
	task, err := a2atest.Send(t, ca, nil, "save notes/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateInputRequired || !strings.Contains(a2atest.Text(task.Status.Message), "fs.write") {
		t.Fatalf("the task is %s %q, want input-required asking about fs.write", task.Status.State, a2atest.Text(task.Status.Message))
	}
	a.kill()
	// Three lease times (-lease 1s): A's leases have expired and B's recovery has run.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		got, err := cb.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask on B = %v", err)
		}
		if got.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("after A died the task is %s %q, want still input-required", got.Status.State, a2atest.Text(got.Status.Message))
		}
	}
	if _, err := a2atest.Send(t, cb, task, "yes"); err != nil {
		t.Fatalf("the answer on B: %v", err)
	}
	got := settledTask(t, cb, task.ID)
	if got.Status.State != a2a.TaskStateCompleted || !strings.HasPrefix(a2atest.Text(got.Status.Message), "done") {
		t.Fatalf("after the answer on B the task is %s %q, want completed, done", got.Status.State, a2atest.Text(got.Status.Message))
	}
	w := written(t, root)
	if len(w) != 1 || filepath.Base(w[0]) != "a.txt" {
		t.Fatalf("the approved call wrote %v, want one notes/a.txt under %s", w, root)
	}
	if data, _ := os.ReadFile(w[0]); string(data) != "hello" {
		t.Errorf("the approved call wrote %q", data)
	}
}
