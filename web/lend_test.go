package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/cdptest"
	"github.com/a2awebcap/a2awebcap/web"
)

// lendPage is a page that lends the agent a capability over capnweb — "the document I have
// open", an RpcTarget — asks the agent to read from it, then disposes of the lease and asks
// again. It reports into document.body.dataset.
const lendPage = `<!doctype html>
<html><head><meta charset="utf-8">
<script type="importmap">{"imports": {"capnweb": "./vendor/capnweb.js"}}</script>
<script type="module">
import { newWebSocketRpcSession, RpcTarget } from "capnweb";

class Document extends RpcTarget {
  constructor() { super(); this.reads = 0; }
  read(args) { this.reads++; return "Once upon a time, in " + args.section; }
}
const description = {
  name: "document", description: "the document the user has open",
  methods: [{name: "read", description: "read a section",
    params: {type: "object", properties: {section: {type: "string"}}, required: ["section"]},
    result: {type: "string"},
    effects: [{access: "reads", resource: "doc:{section}"}]}],
  contract: {reads: ["doc:public/*"]},
};
const api = newWebSocketRpcSession(new URL("/a2a/capnweb", location.href).href.replace(/^http/, "ws"));
async function say(text) {
  const res = await api.sendMessage({message: {messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{text}]}});
  const m = res.task?.status?.message ?? res.message;
  return (m?.parts ?? []).map(p => p.text ?? "").join("");
}
const out = document.body.dataset;
try {
  const doc = new Document();
  const lease = api.capabilities().lend(description, doc);
  out.name = await lease.name;
  out.first = await say("read public/intro");
  out.outside = await say("read private/diary");
  out.reads = String(doc.reads);
  lease[Symbol.dispose]();
  let after = "";
  for (let i = 0; i < 200 && !after.startsWith("no-such-tool"); i++) {
    after = await say("read public/intro");
    if (!after.startsWith("no-such-tool")) await new Promise(r => setTimeout(r, 50));
  }
  out.after = after;
  out.readsAfter = String(doc.reads);
} catch (e) {
  out.error = String(e && e.stack || e);
}
out.done = "true";
</script></head><body></body></html>`

// TestBrowserLendsACapability: a page in headless Chromium grants the agent a capability over
// capnweb with the stock npm module; the agent's rule calls it (the call runs in the page);
// a call outside its declared contract never reaches the page; disposing of the lease revokes
// it.
func TestBrowserLendsACapability(t *testing.T) {
	t.Parallel()
	chromium := cdptest.Need(t, cdptest.ChromiumPath, "apt-get install chromium, or make chromium as root")

	pol := &agent.Policy{Rules: []agent.Rule{
		{Name: "read", When: `command == "read"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"document.read"`, "input": `args`}},
		{Name: "say", When: `last.action == "call"`, Action: agent.Reply, Reason: "say so",
			Params: map[string]string{"text": `last.status + ": " + last.result`}},
	}}
	h, err := agent.NewHost(&agent.Definition{Name: "reader", Policy: pol}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	page := http.NewServeMux()
	page.HandleFunc("GET /lend/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(lendPage))
	})
	page.Handle("GET /lend/vendor/", http.StripPrefix("/lend/", http.FileServerFS(web.Files())))
	srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h),
		HTTP: &binding.Options{AgentCapabilities: h.CallerCapabilities},
		WrapHTTP: func(a2a http.Handler) http.Handler {
			page.Handle("/", a2a)
			return page
		}})

	b := cdptest.Start(t, chromium)
	p, err := b.Open(srv.URL + "/lend/")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	waitErr := p.WaitFor(ctx, `String(document.body?.dataset.done === "true")`)
	get := func(key string) string {
		v, _ := p.Eval(`document.body.dataset.` + key + ` ?? ""`)
		return v
	}
	if waitErr != nil || get("error") != "" {
		t.Fatalf("the page: %v %s\npage log:\n%s", waitErr, get("error"), strings.Join(b.Log(), "\n"))
	}
	for key, want := range map[string]string{
		"name":       "document",
		"first":      "done: Once upon a time, in public/intro",
		"reads":      "1",
		"readsAfter": "1",
	} {
		if got := get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if got := get("outside"); !strings.HasPrefix(got, "refused: capability: outside the contract: reads doc:private/diary") {
		t.Errorf("a call outside the contract: %q", got)
	}
	if got := get("after"); !strings.HasPrefix(got, "no-such-tool: ") {
		t.Errorf("after the page disposed of the lease: %q", got)
	}
}
