package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
	"github.com/a2awebcap/a2awebcap/web"
)

// TestBrowser loads the page in headless Chromium against the full server stack: the page
// fetches the agent card, opens the capnweb WebSocket with the stock npm module (the copy
// embedded in the package), authenticates
// with a bearer token, streams "wait 2" and "echo hello browser", and renders each event. The
// test reads the rendered events from the DOM.
func TestBrowser(t *testing.T) {
	t.Parallel()
	chromium := need(t, chromiumPath, "apt-get install chromium, or make chromium as root")

	base := stacktest.Start(t, &binding.Options{
		Authenticate: stacktest.Bearer(map[string]string{"carol-token": "carol"}),
	}, map[string]http.Handler{
		"GET /web/": http.StripPrefix("/web/", http.FileServerFS(web.Files())),
	})
	b := startBrowser(t, chromium)
	q := url.Values{"token": {"carol-token"}, "send": {"wait 2", "echo hello browser"}}
	p, err := b.open(base + "/web/?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	waitErr := p.waitFor(ctx, `String(document.body?.dataset.done === "true")`)
	dom, err := p.eval(`document.documentElement.outerHTML`)
	if err != nil {
		t.Fatal(err)
	}
	if waitErr != nil {
		t.Fatalf("the page did not finish: %v\npage log:\n%s\nDOM:\n%s", waitErr, strings.Join(b.log, "\n"), dom)
	}

	var got []string
	for _, m := range regexp.MustCompile(`<li[^>]*>([^<]*)</li>`).FindAllStringSubmatch(dom, -1) {
		got = append(got, m[1])
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^task \S+: TASK_STATE_SUBMITTED$`),
		regexp.MustCompile(`^status TASK_STATE_WORKING: Waiting 2 seconds\.$`),
		regexp.MustCompile(`^status TASK_STATE_WORKING: 1/2 seconds elapsed\.$`),
		regexp.MustCompile(`^status TASK_STATE_WORKING: 2/2 seconds elapsed\.$`),
		regexp.MustCompile(`^artifact wait-result: Waited 2 seconds, from .*\.$`),
		regexp.MustCompile(`^status TASK_STATE_COMPLETED: Done: waited 2 seconds\.$`),
		regexp.MustCompile(`^message: hello browser$`),
	}
	if len(got) != len(want) {
		t.Fatalf("rendered %d events, want %d:\n%s\npage log:\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(b.log, "\n"))
	}
	for i, re := range want {
		if !re.MatchString(got[i]) {
			t.Errorf("event %d = %q, want /%s/", i, got[i], re)
		}
	}
	if !strings.Contains(dom, `<h1 id="agent">a2awebcap</h1>`) {
		t.Errorf("the page did not show the agent card's name")
	}
	if !strings.Contains(dom, `data-state="message"`) {
		t.Errorf("the status line does not report the last send done")
	}
}

// The server closes a WebSocket that stays quiet past its idle timeout; the page opens a new one
// for its next message (and authenticates on it again).
func TestBrowserReconnects(t *testing.T) {
	t.Parallel()
	chromium := need(t, chromiumPath, "apt-get install chromium, or make chromium as root")

	base := stacktest.Start(t, &binding.Options{
		Authenticate: stacktest.Bearer(map[string]string{"carol-token": "carol"}),
		Capnweb:      &capnweb.HandlerOptions{IdleTimeout: 300 * time.Millisecond},
	}, map[string]http.Handler{
		"GET /web/": http.StripPrefix("/web/", http.FileServerFS(web.Files())),
	})
	b := startBrowser(t, chromium)
	q := url.Values{"token": {"carol-token"}, "send": {"echo before", "echo after"}, "pause": {"1500"}}
	p, err := b.open(base + "/web/?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	waitErr := p.waitFor(ctx, `String(document.body?.dataset.done === "true")`)
	dom, err := p.eval(`document.documentElement.outerHTML`)
	if err != nil {
		t.Fatal(err)
	}
	if waitErr != nil {
		t.Fatalf("the page did not finish: %v\npage log:\n%s\nDOM:\n%s", waitErr, strings.Join(b.log, "\n"), dom)
	}
	var got []string
	for _, m := range regexp.MustCompile(`<li[^>]*>([^<]*)</li>`).FindAllStringSubmatch(dom, -1) {
		got = append(got, m[1])
	}
	if want := []string{"message: before", "message: after"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rendered %q, want %q\npage log:\n%s", got, want, strings.Join(b.log, "\n"))
	}
}
