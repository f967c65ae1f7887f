package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitUp(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server at %s did not come up", addr)
}

func sdkClient(t *testing.T, addr string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), "http://"+addr)
	if err != nil {
		t.Fatalf("resolving the agent card: %v", err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

func text(m *a2a.Message) string {
	if m == nil || len(m.Parts) == 0 {
		return ""
	}
	return m.Parts[0].Text()
}

// starter returns a function that runs serve with cfg, returning once it is up, with the
// function that stops it and the channel run's result arrives on. Each call starts it anew
// (on the same store: a restart).
func starter(t *testing.T, cfg serveConfig) func() (context.CancelFunc, chan error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return func() (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- run(ctx, cfg, log) }()
		waitUp(t, cfg.addr)
		return cancel, done
	}
}

// serve on the SQLite default answers through its card, and its tasks survive a restart.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := serveConfig{addr: addr, db: filepath.Join(dir, "a2a.db"), agent: "builtin", drain: 5 * time.Second}
	start := starter(t, cfg)
	stop, done := start()
	c := sdkClient(t, addr)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo persistence"))})
	if err != nil {
		t.Fatalf("SendMessage(echo) error = %v", err)
	}
	var id a2a.TaskID
	switch r := res.(type) {
	case *a2a.Task:
		id = r.ID
	case *a2a.Message:
		if !strings.Contains(text(r), "persistence") {
			t.Errorf("echo reply = %q", text(r))
		}
	}
	// A task that takes a while: completes, with progress, as a task.
	res, err = c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("wait 1"))})
	if err != nil {
		t.Fatalf("SendMessage(wait 1) error = %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage(wait 1) = %#v, want a completed task", res)
	}
	if id == "" {
		id = task.ID
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve stopped with %v", err)
	}

	// Restart on the same file: the task is still there.
	stop, done = start()
	defer func() { stop(); <-done }()
	c = sdkClient(t, addr)
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatalf("GetTask after restart error = %v", err)
	}
	if got.ID != id {
		t.Errorf("GetTask after restart = %v", got.ID)
	}
}

// -serve-0.3 (or A2AWEBCAP_SERVE_03) serves 0.3 clients; without it a 0.3 request gets
// VersionNotSupportedError.
func TestServe03(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      string // A2AWEBCAP_SERVE_03
		wantCode int    // JSON-RPC error code; 0: a result
	}{
		{"default", nil, "", -32009},
		{"flag", []string{"-serve-0.3"}, "", 0},
		{"env", nil, "true", 0},
		{"flag overrides env", []string{"-serve-0.3=false"}, "1", -32009},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("A2AWEBCAP_SERVE_03", tc.env)
			addr := freeAddr(t)
			cfg, err := parseServe(append([]string{"-addr", addr, "-db", "memory"}, tc.args...))
			if err != nil {
				t.Fatalf("parseServe() error = %v", err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run() = %v", err)
				}
			})
			waitUp(t, addr)

			body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"help"}]}}}`
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/a2a/jsonrpc", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("A2A-Version", "0.3")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Result *struct {
					Kind string `json:"kind"`
				} `json:"result"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("decoding the response: %v", err)
			}
			switch {
			case tc.wantCode != 0 && (got.Error == nil || got.Error.Code != tc.wantCode):
				t.Errorf("0.3 message/send: error %+v, result %+v; want error code %d", got.Error, got.Result, tc.wantCode)
			case tc.wantCode == 0 && (got.Error != nil || got.Result == nil || got.Result.Kind == ""):
				t.Errorf("0.3 message/send: error %+v, result %+v; want a 0.3 task or message", got.Error, got.Result)
			}
		})
	}
}

// A server killed with SIGKILL while a task runs comes back with the task and every event
// stored before the kill, and resumes the task where it stood (the built-in agent's "wait"
// resumes; an agent that cannot is failed with a reason, see the engine's tests): the client
// reconnects with its last event id and gets every later event once, in order, to the end.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server process")
	}
	dir := t.TempDir()
	bin := installBinary(t)
	addr := freeAddr(t)
	db := filepath.Join(dir, "a2a.db")
	startProc := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "-addr", addr, "-db", db, "-agent", "builtin") // its "wait" makes a long task
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitUp(t, addr)
		return cmd
	}
	p := startProc()
	c := sdkClient(t, addr)
	// A long task, streamed: read a few progress events, then kill the server.
	ctx, cancel := context.WithCancel(t.Context())
	var taskID a2a.TaskID
	var progress []string // status messages received before the kill: acknowledged events
	var lastSeq int64
	seen := 0
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("wait 4"))}) {
		if err != nil {
			t.Fatalf("stream error before the kill: %v", err)
		}
		if tk, ok := ev.(*a2a.Task); ok {
			taskID = tk.ID
		}
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			if su.Status.Message != nil {
				progress = append(progress, text(su.Status.Message))
			}
			if n, ok := su.Metadata[engine.SeqKey].(float64); ok {
				lastSeq = int64(n)
			}
		}
		if seen++; seen == 3 { // the task, "Waiting 4 seconds.", "1/4 seconds elapsed."
			break
		}
	}
	cancel()
	if taskID == "" {
		t.Fatal("the stream did not start with the task")
	}
	p.Process.Signal(syscall.SIGKILL)
	p.Wait()

	p = startProc()
	defer func() { p.Process.Signal(syscall.SIGTERM); p.Wait() }()
	c = sdkClient(t, addr)
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: taskID})
	if err != nil {
		t.Fatalf("GetTask after the kill error = %v", err)
	}
	if store.IsTerminal(got.Status.State) {
		t.Errorf("state after the kill = %v, want the task resumed (working) or completed", got.Status.State)
	}
	var history []string
	for _, m := range got.History {
		history = append(history, text(m))
	}
	if len(progress) == 0 {
		t.Fatal("no progress event arrived before the kill")
	}
	for _, p := range progress {
		if !slices.Contains(history, p) {
			t.Errorf("progress %q, received before the kill, is not in the task's history %q", p, history)
		}
	}

	// The client reconnects where it left off and receives what it missed, ending with the
	// failure, over HTTP+JSON with Last-Event-ID.
	if lastSeq == 0 {
		t.Fatal("streamed events carried no sequence number")
	}
	missed := resume(t, "http://"+addr+"/a2a/rest/tasks/"+string(taskID)+":subscribe", lastSeq)
	if len(missed) == 0 {
		t.Fatal("resuming after the restart returned no event")
	}
	final, ok := missed[len(missed)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || final.Status.State != a2a.TaskStateCompleted {
		t.Errorf("last resumed event = %#v, want the completed status", missed[len(missed)-1])
	}
	if n, _ := final.Metadata[engine.SeqKey].(float64); int64(n) != lastSeq+int64(len(missed)) {
		t.Errorf("resumed %d events ending at seq %v after seq %d: some were skipped or repeated", len(missed), n, lastSeq)
	}
	// Every second is reported once, in order, across the kill.
	for _, ev := range missed {
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && su.Status.Message != nil {
			progress = append(progress, text(su.Status.Message))
		}
	}
	want := []string{"Waiting 4 seconds.", "1/4 seconds elapsed.", "2/4 seconds elapsed.", "3/4 seconds elapsed.", "4/4 seconds elapsed.", "Done: waited 4 seconds."}
	if !slices.Equal(progress, want) {
		t.Errorf("progress across the kill = %q, want %q", progress, want)
	}
}

// resume subscribes with Last-Event-ID over HTTP+JSON and reads the SSE stream to its end.
func resume(t *testing.T, url string, after int64) []a2a.Event {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", fmt.Sprint(after))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("resume: status %d: %s", resp.StatusCode, b)
	}
	var out []a2a.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var sr a2a.StreamResponse
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &sr); err != nil {
			t.Fatalf("resume: bad event %q: %v", data, err)
		}
		out = append(out, sr.Event)
	}
	return out
}
