package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/cdptest"
	"github.com/a2awebcap/a2awebcap/web"
)

// serve -agents has no root agent: / (through /web/) is the index of its agents, under the app's
// CSP, while each agent's own page stays the app. In Chromium the index lists each agent with
// its description, what its card says and links to its chat and its card; following the chat
// link opens that agent's app, connected to it.
func TestServeAgentsIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	defs := filepath.Join(dir, "agents")
	if err := os.Mkdir(defs, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"researcher.json": `{"name": "researcher", "policy": "notes", "description": "Researches <b>tides</b>."}`,
		"writer.json":     `{"name": "writer", "policy": "assistant", "description": "Writes."}`,
	} {
		if err := os.WriteFile(filepath.Join(defs, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-no-push", "-agents", defs})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := starter(t, cfg)()
	t.Cleanup(func() { stop(); <-done })
	base := "http://" + addr

	for path, want := range map[string]string{"/": "agents.js", "/web/": "agents.js", "/agents/writer/web/": "app.js"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `src="`+want+`"`) {
			t.Errorf("GET %s = %d %.200q, want the page that loads %s", path, resp.StatusCode, body, want)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != web.CSP {
			t.Errorf("GET %s: Content-Security-Policy %q, want the app's", path, got)
		}
	}

	chromium := cdptest.Need(t, cdptest.ChromiumPath, "apt-get install chromium, or make chromium as root")
	b := cdptest.Start(t, chromium)
	p, err := b.Open("about:blank")
	if err != nil {
		t.Fatal(err)
	}
	shots := cdptest.ScreenshotDir(t)
	shot := func(name string) {
		t.Helper()
		path := filepath.Join(shots, name+".png")
		if err := p.Screenshot(path); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	wait := func(cond string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := p.WaitFor(ctx, `String(Boolean(`+cond+`))`); err != nil {
			dom, _ := p.Eval(`document.body?.outerHTML ?? ""`)
			t.Fatalf("%s: %v\npage log:\n%s\nDOM:\n%s", cond, err, strings.Join(p.Log(), "\n"), dom)
		}
	}
	if err := p.Size(1000, 700); err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(base + "/"); err != nil {
		t.Fatal(err)
	}
	wait(`document.body?.dataset.state === "ready"`)
	shot("agents-index")
	got, err := p.Eval(`[...document.querySelectorAll("#agents li.agent")].map(li => [li.dataset.name,
		li.querySelector("h2 a").getAttribute("href"), li.querySelector("h2 + p").textContent,
		li.querySelector("a[aria-label^='agent card']").getAttribute("href"),
		li.querySelector(".meta").textContent].join(" | ")).join("\n")`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"researcher | ../agents/researcher/web/ | Researches <b>tides</b>. | ../agents/researcher/.well-known/agent-card.json | ",
		"writer | ../agents/writer/web/ | Writes. | ../agents/writer/.well-known/agent-card.json | ",
		"bindings: urn:a2awebcap:capnweb:v1, JSONRPC, HTTP+JSON",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the index shows\n%s\nwant a line with %q", got, want)
		}
	}
	if bold, _ := p.Eval(`String(document.querySelectorAll("#agents b").length)`); bold != "0" {
		t.Errorf("a description became HTML: %s <b> elements", bold)
	}
	if err := p.Click(`li[data-name="writer"] h2 a`); err != nil {
		t.Fatal(err)
	}
	wait(`location.pathname === "/agents/writer/web/" && document.body?.dataset.state === "ready" && document.getElementById("agent")?.textContent === "writer"`)
	shot("agents-writer")
	for _, line := range p.Log() {
		if strings.Contains(line, "Content Security Policy") || strings.Contains(strings.ToLower(line), "error") {
			t.Errorf("page log: %s", line)
		}
	}
}
