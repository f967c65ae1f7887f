package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// startServe runs serve's server (memory store, built-in agent) for the test and returns its
// base URL.
func startServe(t *testing.T) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, serveConfig{addr: addr, db: "memory", agent: "builtin", drain: time.Second}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitUp(t, addr)
	return "http://" + addr
}

func verb(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runVerb(t.Context(), args[0], args[1:], stdio{in: strings.NewReader(""), out: &out, err: io.Discard})
	return out.String(), err
}

// Every verb over every binding the server offers (gRPC is covered by the client package).
func TestVerbs(t *testing.T) {
	url := startServe(t)
	for _, b := range []string{"auto", "capnweb", "capnweb-batch", "jsonrpc", "rest"} {
		t.Run(b, func(t *testing.T) {
			out, err := verb(t, "send", url, "--binding", b, "echo", "hello", "there")
			if err != nil || strings.TrimSpace(out) != "hello there" {
				t.Errorf("send: %q, %v", out, err)
			}
			out, err = verb(t, "stream", url, "wait", "1", "-binding", b)
			if err != nil || !strings.Contains(out, "1/1 seconds elapsed.\n") || !strings.HasSuffix(strings.TrimSpace(out), "Done: waited 1 second.") {
				t.Errorf("stream: %q, %v", out, err)
			}
			out, err = verb(t, "send", url, "-binding", b, "-no-wait", "-o", "json", "wait", "30")
			if err != nil {
				t.Fatalf("send -no-wait: %v", err)
			}
			var sent a2a.StreamResponse
			if err := json.Unmarshal([]byte(out), &sent); err != nil {
				t.Fatalf("send -o json printed %q: %v", out, err)
			}
			id := string(sent.Event.TaskInfo().TaskID)
			if out, err := verb(t, "get", url, id, "-binding", b); err != nil || !strings.HasPrefix(out, "task "+id) {
				t.Errorf("get: %q, %v", out, err)
			}
			// (-no-wait returns the task as it starts: submitted or already working.)
			out, err = verb(t, "list", url, "-binding", b, "-state", "completed", "-o", "json")
			var list a2a.ListTasksResponse
			if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Tasks) == 0 {
				t.Errorf("list -state completed: %q, %v", out, err)
			}
			for _, task := range list.Tasks {
				if task.Status.State != a2a.TaskStateCompleted {
					t.Errorf("list -state completed lists a %s task", task.Status.State)
				}
			}
			if out, err := verb(t, "cancel", url, id, "-binding", b); err != nil || !strings.Contains(out, "canceled") {
				t.Errorf("cancel: %q, %v", out, err)
			}
			if _, err := verb(t, "get", url, "no-such-task", "-binding", b); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("get of an unknown task: %v, want TaskNotFound", err)
			}
			_, err = verb(t, "subscribe", url, id, "-binding", b)
			if !errors.Is(err, a2a.ErrUnsupportedOperation) {
				t.Errorf("subscribe to a canceled task: %v, want UnsupportedOperation", err)
			}
		})
	}
}

func TestVerbSubscribe(t *testing.T) {
	url := startServe(t)
	out, err := verb(t, "send", url, "-no-wait", "-o", "json", "wait", "2")
	if err != nil {
		t.Fatal(err)
	}
	var sent a2a.StreamResponse
	if err := json.Unmarshal([]byte(out), &sent); err != nil {
		t.Fatal(err)
	}
	out, err = verb(t, "subscribe", url, string(sent.Event.TaskInfo().TaskID))
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "Done: waited 2 seconds.") {
		t.Errorf("subscribe: %q, %v", out, err)
	}
}

func TestVerbUsage(t *testing.T) {
	for _, args := range [][]string{
		{"get", "http://x"},
		{"send", "http://x"},
		{"list", "http://x", "-o", "yaml"},
		{"card", "http://x", "extra"},
		{"send", "http://x", "-H", "no colon", "hi"},
	} {
		if _, err := verb(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if out, err := verb(t, "card", startServe(t)); err != nil || !strings.Contains(out, "urn:a2awebcap:capnweb:v1") {
		t.Errorf("card: %q, %v", out, err)
	}
}

// serve serves the web page at /web/ and the capnweb module it loads from -capnweb-js.
func TestServeWeb(t *testing.T) {
	module := filepath.Join(t.TempDir(), "index.js")
	if err := os.WriteFile(module, []byte("export const x = 1;"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, serveConfig{addr: addr, db: "memory", agent: "builtin", drain: time.Second, capnwebJS: module}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitUp(t, addr)
	for path, want := range map[string]string{
		"/":                            `<script type="module" src="app.js">`,
		"/web/conn.js":                 `from "./vendor/capnweb.js"`,
		"/web/vendor/capnweb.js":       "export const x = 1;",
		"/.well-known/agent-card.json": "urn:a2awebcap:capnweb:v1",
	} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: HTTP %d, body without %q", path, resp.StatusCode, want)
		}
	}
}

// serve -agent notes runs the agent runtime's note taker, its memory kept in the task store's
// SQLite file: what it was told survives a restart.
func TestServeNotesAgent(t *testing.T) {
	db := filepath.Join(t.TempDir(), "a2a.db")
	addr := freeAddr(t)
	start := func() func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, serveConfig{addr: addr, db: db, agent: "notes", drain: time.Second, noPush: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		waitUp(t, addr)
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		}
	}
	stop := start()
	url := "http://" + addr
	if out, err := verb(t, "send", url, "remember", "the", "color", "is", "blue"); err != nil || !strings.Contains(out, "blue") {
		t.Errorf("remember: %q, %v", out, err)
	}
	stop()
	stop = start()
	defer stop()
	out, err := verb(t, "send", url, "what", "do", "you", "know", "about", "the", "color")
	if err != nil || !strings.Contains(out, "blue") {
		t.Errorf("recall after a restart: %q, %v", out, err)
	}
}
