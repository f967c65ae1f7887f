package web_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/web"
)

// Every file of the page is served with the strict CSP and the other security headers, and as
// the type a browser accepts for it.
func TestHandlerSendsSecurityHeaders(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.StripPrefix("/web/", web.Handler()))
	defer srv.Close()
	for path, ctype := range map[string]string{
		"/web/":                  "text/html",
		"/web/app.js":            "text/javascript",
		"/web/conn.js":           "text/javascript",
		"/web/markdown.js":       "text/javascript",
		"/web/app.css":           "text/css",
		"/web/" + web.AgentsPage: "text/html",
		"/web/agents.js":         "text/javascript",
		"/web/agents.css":        "text/css",
		"/web/" + web.ModulePath: "text/javascript",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, got, ctype)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != web.CSP {
			t.Errorf("GET %s: Content-Security-Policy %q", path, got)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v", path, resp.Header)
		}
	}
}

// The page's code never turns a string into HTML or code: no innerHTML and the like, no eval,
// no inline script or style in the page (which the CSP would refuse anyway).
func TestNoHTMLSinks(t *testing.T) {
	t.Parallel()
	sinks := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|createContextualFragment|DOMParser|srcdoc`)
	for _, name := range []string{"app.js", "conn.js", "markdown.js", "agents.js"} {
		src, err := fs.ReadFile(web.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sinks.FindAll(src, -1) {
			t.Errorf("%s uses %s", name, m)
		}
	}
	for _, name := range []string{"index.html", web.AgentsPage} {
		page, err := fs.ReadFile(web.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=`).Find(page); m != nil {
			t.Errorf("%s has inline script or style: %s", name, m)
		}
	}
}
