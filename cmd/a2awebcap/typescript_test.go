package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/web"
)

// TestTypeScriptClient checks web/a2awebcap.d.ts, the capnweb binding's TypeScript types, as
// `serve` serves them: tsc (the pinned typescript, strict) checks the declarations on their own
// and a client written against them with the stock npm capnweb (interop/ts/client.ts), then
// the compiled client runs against serve — the runtime assistant over a fake model — doing a
// send, a stream to an observer and as a ReadableStream, a task get and cancel, push through a
// callback, an attenuated session saved, restored and revoked, a typed error,
// the sessions extension's listSessions and Session, the memory extension, the capabilities
// object, and an HTTP batch.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := needNodeModule(t, "typescript")
	interop, err := filepath.Abs(filepath.Join("..", "..", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	llm := fakeStreamingModel(t)
	addr := startServeWith(t, "-llm-url", llm+"/v1", "-llm-model", "tiny")
	base := "http://" + addr

	// The types serve serves are the repository's file.
	resp, err := http.Get(base + "/web/" + web.TypesPath)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	repo, err := os.ReadFile(filepath.Join("..", "..", "web", "a2awebcap.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(served, repo) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("GET /web/%s: HTTP %d, %s, %d bytes; want the %d bytes of web/a2awebcap.d.ts as text", web.TypesPath, resp.StatusCode, resp.Header.Get("Content-Type"), len(served), len(repo))
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	tsc := filepath.Join("node_modules", "typescript", "bin", "tsc")
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, node, args...)
		cmd.Dir = interop
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run(tsc, "-p", filepath.Join("ts", "tsconfig.types.json"))
	// Emitted beside interop/node_modules, so that the client's imports resolve.
	outDir, err := os.MkdirTemp(filepath.Join(interop, "ts"), ".out-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outDir) })
	run(tsc, "-p", "ts", "--outDir", outDir)

	cmd := exec.CommandContext(ctx, node, filepath.Join(outDir, "client.js"), base)
	cmd.Dir = interop
	out, err := cmd.CombinedOutput()
	t.Logf("node client.js:\n%s", out)
	if err != nil {
		t.Errorf("the TypeScript client failed: %v", err)
	}
	want := []string{"card", "send", "stream-observer", "stream-readable", "get-cancel", "push", "attenuate", "errors", "session", "memory", "capabilities", "batch"}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		var s struct {
			Step  string
			OK    bool
			Error string
		}
		if json.Unmarshal([]byte(line), &s) != nil || s.Step == "" {
			continue
		}
		if !s.OK {
			t.Errorf("step %s: %s", s.Step, s.Error)
		}
		got = append(got, s.Step)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || !strings.Contains(string(out), fmt.Sprintf("%d passed, 0 failed", len(want))) {
		t.Errorf("steps %v, want %v all passed", got, want)
	}
}

// needNodeModule returns the node binary; it skips (or, with CI set, fails) when Node or the
// pinned npm package pkg (interop/node_modules) is missing.
func needNodeModule(t *testing.T, pkg string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		if _, err = os.Stat(filepath.Join("..", "..", "interop", "node_modules", pkg, "package.json")); err != nil {
			err = fmt.Errorf("interop/node_modules/%s is missing: run `make npm`", pkg)
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("this test needs Node and npm %s in CI: %v", pkg, err)
		}
		t.Skipf("skipping: %v", err)
	}
	return node
}

// fakeStreamingModel serves an OpenAI-compatible chat-completions endpoint that streams
// "Because of Rayleigh scattering." in two chunks, except to a last message that says "slow":
// that gets one token, then nothing until the request ends (the caller canceled) or a minute
// passes.
func fakeStreamingModel(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string }
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := ""
		if n := len(req.Messages); n > 0 {
			last = req.Messages[n-1].Content
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(s string) {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", s)
			w.(http.Flusher).Flush()
		}
		if strings.Contains(last, "slow") {
			chunk("Let me think")
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
			return
		}
		chunk("Because of ")
		chunk("Rayleigh scattering.")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
