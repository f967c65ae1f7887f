package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/cdptest"
	"github.com/a2awebcap/a2awebcap/web"
)

var installed struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

// installBinary installs the command as the README says (go install ./cmd/a2awebcap, here
// into a temporary GOBIN), once per test run, and returns the binary's path.
func installBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	installed.once.Do(func() {
		installed.dir, installed.err = os.MkdirTemp("", "a2awebcap-bin-")
		if installed.err != nil {
			return
		}
		cmd := exec.Command("go", "install", "./cmd/a2awebcap")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "GOBIN="+installed.dir)
		installed.out, installed.err = cmd.CombinedOutput()
		installed.bin = filepath.Join(installed.dir, "a2awebcap")
	})
	if installed.err != nil {
		t.Fatalf("go install ./cmd/a2awebcap: %v\n%s", installed.err, installed.out)
	}
	return installed.bin
}

// removeInstalled removes what installBinary installed; TestMain calls it after the tests.
func removeInstalled() {
	if installed.dir != "" {
		os.RemoveAll(installed.dir)
	}
}

// serveProcess runs the installed binary's serve in dir, a fresh home (HOME and XDG_DATA_HOME
// inside it), on a free address; the test's end stops it. It returns the base URL and the
// process's standard error so far.
func serveProcess(t *testing.T, bin, dir string, args ...string) (string, func() string) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"serve", "-addr", addr}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "XDG_DATA_HOME=", "A2AWEBCAP_DB=")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	waitUp(t, addr)
	return "http://" + addr, stderr.String
}

// The installed binary, started from an empty directory, serves the web app: the page, its
// script and the capnweb module, which is npm capnweb's, embedded: no npm, no checkout.
func TestBinaryServesWebAppFromAnyDirectory(t *testing.T) {
	bin := installBinary(t)
	dir := t.TempDir()
	base, _ := serveProcess(t, bin, dir, "-db", "memory")
	module, err := web.Files().(interface{ ReadFile(string) ([]byte, error) }).ReadFile(web.ModulePath)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{
		"/":                            []byte(`<script type="module" src="app.js">`),
		"/web/":                        []byte(`<form id="composer" method="post">`),
		"/web/app.js":                  []byte(`from "./conn.js"`),
		"/web/conn.js":                 []byte(`from "./vendor/capnweb.js"`),
		"/web/markdown.js":             []byte(`export function render(`),
		"/web/app.css":                 []byte(`prefers-color-scheme`),
		"/web/" + web.ModulePath:       module,
		"/web/vendor/LICENSE.txt":      []byte("Cloudflare"),
		"/.well-known/agent-card.json": []byte("urn:a2awebcap:capnweb:v1"),
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, want) {
			t.Errorf("GET %s: HTTP %d, %d bytes, without what it should hold", path, resp.StatusCode, len(body))
		}
		if path == "/web/"+web.ModulePath && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("the module is served as %q, which browsers refuse for a module", resp.Header.Get("Content-Type"))
		}
		if strings.HasPrefix(path, "/web/") && resp.Header.Get("Content-Security-Policy") != web.CSP {
			t.Errorf("GET %s: Content-Security-Policy %q, want the page's", path, resp.Header.Get("Content-Security-Policy"))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "home" {
			t.Errorf("serve left %s in its working directory", e.Name())
		}
	}
	// And the page works: in headless Chromium it connects to the binary's agent, and a
	// message sent from it is answered in the chat.
	chromium := cdptest.Need(t, cdptest.ChromiumPath, "apt-get install chromium, or make chromium as root")
	page, err := cdptest.Start(t, chromium).Open(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	agentSays := `[...document.querySelectorAll("#transcript .bubble.agent")].at(-1)?.querySelector(".body").textContent.trim()`
	err = page.WaitFor(ctx, `String(document.body?.dataset.state === "ready")`)
	if err == nil {
		err = page.TypeText("#text", "echo hello from the binary")
	}
	if err == nil {
		err = page.Press("Enter")
	}
	if err == nil {
		err = page.WaitFor(ctx, `String(`+agentSays+` === "hello from the binary")`)
	}
	if err != nil {
		dom, _ := page.Eval(`document.body?.outerHTML ?? ""`)
		t.Errorf("the web app, served by the binary: %v\npage log:\n%s\nDOM:\n%s", err, strings.Join(page.Log(), "\n"), dom)
	}

	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "a2awebcap ") || !strings.Contains(string(out), "capnweb "+web.CapnwebVersion) {
		t.Errorf("a2awebcap version: %q, %v", out, err)
	}
}
