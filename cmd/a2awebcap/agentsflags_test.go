package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve -agents serves each agent of a directory under /agents/NAME/, on every binding (gRPC by
// tenant), each with its own memory, kept in the -db file across a restart.
func TestServeAgents(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "agents")
	if err := os.Mkdir(defs, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(defs, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("researcher.json", `{"name": "researcher", "policy": "notes", "description": "Researches.",
	  "rules": [{"name": "research", "when": "command == \"research\"", "action": "reply", "params": {"text": "\"researching \" + args"}, "reason": "asked"}]}`)
	write("writer.json", `{"name": "writer", "policy": "assistant", "description": "Writes."}`)
	addr, gaddr := freeAddr(t), freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-grpc-addr", gaddr, "-db", filepath.Join(dir, "a.db"), "-no-push", "-agents", defs})
	if err != nil {
		t.Fatal(err)
	}
	start := starter(t, cfg)
	stop, done := start()
	resp, err := http.Get("http://" + addr + "/agents")
	if err != nil {
		t.Fatal(err)
	}
	index, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(index), `"name":"researcher"`) || !strings.Contains(string(index), `"name":"writer"`) {
		t.Errorf("GET /agents = %s", index)
	}
	// Each agent's web page, beside its card: the page finds the card relative to itself.
	for path, want := range map[string]string{"/agents/writer/web/": "<html", "/agents/writer/web/app.js": "import",
		"/agents/writer/web/vendor/capnweb.js": "export", "/agents/writer/.well-known/agent-card.json": `"name":"writer"`} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d %.80q, want 200 with %q", path, resp.StatusCode, body, want)
		}
	}
	researcher, writer := "http://"+addr+"/agents/researcher", "http://"+addr+"/agents/writer"
	for _, b := range []string{"capnweb", "jsonrpc", "rest", "grpc"} {
		if out, err := verb(t, "send", "-binding", b, researcher, "research tides"); err != nil || !strings.Contains(out, "researching tides") {
			t.Errorf("researcher over %s: %q, %v", b, out, err)
		}
		if out, err := verb(t, "send", "-binding", b, writer, "echo hello"); err != nil || !strings.Contains(out, "hello") {
			t.Errorf("writer over %s: %q, %v", b, out, err)
		}
	}
	if out, err := verb(t, "send", researcher, "remember the tide is high"); err != nil || !strings.Contains(out, "Noted") {
		t.Fatalf("remember: %q, %v", out, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	stop, done = start()
	defer func() { stop(); <-done }()
	if out, _ := verb(t, "send", researcher, "what do you know about the tide"); !strings.Contains(out, "the tide is high") {
		t.Errorf("the researcher after a restart: %q", out)
	}
	if out, _ := verb(t, "send", writer, "what do you know about the tide"); !strings.Contains(out, "I know nothing about that") {
		t.Errorf("the writer knows the researcher's memory: %q", out)
	}
}

func TestServeAgentsFlags(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name": "a"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-agents", dir, "-agent", "notes"},
		{"-agents", dir, "-llm-url", "http://127.0.0.1:1/v1", "-llm-model", "m"},
		{"-agents", dir, "-capabilities", "fs"},
	} {
		if _, err := parseServe(args); err == nil || !strings.Contains(err.Error(), "-agents") {
			t.Errorf("parseServe(%q) = %v, want an error about -agents", args, err)
		}
	}
}
