package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/internal/cdptest"
	"github.com/a2awebcap/a2awebcap/web"
)

// markdown.js in Chromium: the subset it renders, as DOM; everything else, raw HTML and unsafe
// links included, as text.
func TestMarkdown(t *testing.T) {
	t.Parallel()
	chromium := cdptest.Need(t, cdptest.ChromiumPath, "apt-get install chromium, or make chromium as root")
	srv := httptest.NewServer(http.StripPrefix("/web/", web.Handler()))
	defer srv.Close()
	b := cdptest.Start(t, chromium)
	p, err := b.Open(srv.URL + "/web/")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := p.WaitFor(ctx, `String(document.readyState === "complete")`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{`<img src=x onerror=alert(1)>`, `<p>&lt;img src=x onerror=alert(1)&gt;</p>`},
		{`<script>alert(1)</script>`, `<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>`},
		{"**b** *i* _j_ ~~s~~ `<c>`", `<p><strong>b</strong> <em>i</em> <em>j</em> <del>s</del> <code>&lt;c&gt;</code></p>`},
		{`[x](javascript:alert(1))`, `<p>x</p>`},
		{`[x](https://e.org/a?b=1&c=2)`, `<p><a href="https://e.org/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">x</a></p>`},
		{`[x](/relative)`, `<p>x</p>`},
		{`[mail](mailto:a@e.org)`, `<p><a href="mailto:a@e.org" target="_blank" rel="noopener noreferrer">mail</a></p>`},
		{`![alt](https://e.org/i.png)`, `<p><a href="https://e.org/i.png" target="_blank" rel="noopener noreferrer">image: alt</a></p>`},
		{"```js\n<b>x</b>\n```", `<div class="code"><pre><code data-lang="js">&lt;b&gt;x&lt;/b&gt;</code></pre><button type="button" class="copy" aria-label="copy the code">Copy</button></div>`},
		{"# Title", `<h3>Title</h3>`},
		{"- a\n- **b**", `<ul><li>a</li><li><strong>b</strong></li></ul>`},
		{"3. a\n4. b", `<ol start="3"><li>a</li><li>b</li></ol>`},
		{"> quoted <i>", `<blockquote><p>quoted &lt;i&gt;</p></blockquote>`},
		{"|a|b|\n|-|:-:|\n|1|<u>2</u>|", `<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>&lt;u&gt;2&lt;/u&gt;</td></tr></tbody></table>`},
		{"one\n\n---\n\ntwo", `<p>one</p><hr><p>two</p>`},
		{"line  \nbreak", `<p>line<br>break</p>`},
		{"reads file:*; writes file:notes/*", `<p>reads file:*; writes file:notes/*</p>`},
		{"2*3*4 and snake_case_name", `<p>2*3*4 and snake_case_name</p>`},
		{"<https://e.org/>", `<p><a href="https://e.org/" target="_blank" rel="noopener noreferrer">https://e.org/</a></p>`},
		{strings.Repeat(">", 50) + " deep", ""},
	} {
		in, _ := json.Marshal(tc.in)
		got, err := p.Await(`import("./markdown.js").then(m => { const d = document.createElement("div"); d.append(m.render(` + string(in) + `)); return d.innerHTML; })`)
		if err != nil {
			t.Fatalf("render(%q): %v", tc.in, err)
		}
		if tc.want == "" { // only bounded and textual
			if strings.Count(got, "<blockquote>") > 9 || !strings.Contains(got, "deep") {
				t.Errorf("render(%q) = %s", tc.in, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("render(%q)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}
