package peer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
	"github.com/a2awebcap/a2awebcap/internal/stacktest"
)

// bindings are the callee's bindings a caller may be left with by the callee's card.
var bindings = []client.Binding{client.BindingCapnweb, client.BindingJSONRPC, client.BindingREST, client.BindingGRPC}

// recorder is the test agent, recording the metadata of every message it receives.
type recorder struct {
	*a2atest.Agent
	mu    sync.Mutex
	meta  []map[string]any
	trace []string // each message's traceparent service parameter
}

func (r *recorder) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	r.mu.Lock()
	if ec.Message != nil {
		r.meta = append(r.meta, ec.Message.Metadata)
		tp := ""
		if ec.ServiceParams != nil {
			if v, ok := ec.ServiceParams.Get("traceparent"); ok && len(v) > 0 {
				tp = v[0]
			}
		}
		r.trace = append(r.trace, tp)
	}
	r.mu.Unlock()
	return r.Agent.Execute(ctx, ec)
}

func (r *recorder) traces() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.trace...)
}

func (r *recorder) metas() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.meta...)
}

// callee serves the test agent whose card lists only binding b's interface, so that a caller
// reading the card can only choose b.
type callee struct {
	srv *a2atest.Server
	rec *recorder
}

func startCallee(t testing.TB, b client.Binding) *callee {
	t.Helper()
	rec := &recorder{Agent: a2atest.NewAgent()}
	return &callee{srv: a2atest.Start(t, &a2atest.Options{Executor: rec, WrapHTTP: onlyBinding(b)}), rec: rec}
}

// onlyBinding serves the agent card with binding b's interface only.
func onlyBinding(b client.Binding) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/.well-known/agent-card.json") {
				h.ServeHTTP(w, r)
				return
			}
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, r)
			var card map[string]any
			if err := json.Unmarshal(rr.Body.Bytes(), &card); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			var kept []any
			for _, in := range card["supportedInterfaces"].([]any) {
				in := in.(map[string]any)
				if in["protocolBinding"] != string(b.Protocol()) {
					continue
				}
				if u := in["url"].(string); !strings.Contains(u, "://") {
					in["url"] = "http://" + u // alone on its card, a plain gRPC interface says so
				}
				kept = append(kept, in)
			}
			card["supportedInterfaces"] = kept
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(card)
		})
	}
}

// allow is the contract for the callee's origins (HTTP and gRPC).
func (c *callee) allow() []string {
	return []string{c.srv.URL, "http://" + c.srv.GRPCAddr}
}

// callerRules call the agent at target with the user's text after "ask", report the result,
// and say when the call failed.
func callerRules(target string) []agent.Rule {
	return []agent.Rule{
		{Name: "delegate", When: `source == "user" && command == "ask" && args != ""`, Action: agent.CallTool,
			Params: map[string]string{"tool": `"a2a.call"`, "input": `"{\"agent\": \"` + target + `\", \"message\": \"" + args + "\"}"`},
			Reason: "the user asked"},
		{Name: "continue", When: `source == "user" && command == "continue" && args != ""`, Action: agent.CallTool,
			Params: map[string]string{"tool": `"a2a.call"`, "input": `"{\"task\": \"" + args + "\", \"message\": \"more\"}"`},
			Reason: "the user asked"},
		{Name: "report", When: `kind == "tool-result" && source == "agent" && data.tool == "a2a.call"`, Action: agent.Reply,
			Params: map[string]string{"text": `"from " + data.agent + " task " + data.task + " (" + data.state + ") saying [" + data.text + "]: " + text`}, Reason: "say what it said"},
		{Name: "trouble", When: `last.action == "call" && last.status != "done"`, Action: agent.Reply,
			Params: map[string]string{"text": `"call " + last.status + ": " + last.result`}, Reason: "say what went wrong"},
	}
}

// startCaller serves a runtime agent holding the a2a capability, with bearer tokens ta (alice)
// and tb (bob).
func startCaller(t testing.TB, s peer.Settings, rules []agent.Rule) (*a2atest.Server, *agent.Host) {
	t.Helper()
	return startCallerWith(t, s, rules, &peer.Options{})
}

func startCallerWith(t testing.TB, s peer.Settings, rules []agent.Rule, o *peer.Options) (*a2atest.Server, *agent.Host) {
	t.Helper()
	return startCallerDef(t, s, &agent.Definition{Name: "writer", Policy: &agent.Policy{Rules: rules}}, o)
}

// startCallerDef serves def holding the a2a capability (and self), with bearer tokens ta
// (alice) and tb (bob).
func startCallerDef(t testing.TB, s peer.Settings, def *agent.Definition, o *peer.Options) (*a2atest.Server, *agent.Host) {
	t.Helper()
	o.Strategy = capability.Strategy{Kind: capability.AuditOnly}
	offer, err := peer.Offer(s, o)
	if err != nil {
		t.Fatal(err)
	}
	cat := capability.NewCatalog()
	for _, off := range []capability.Offer{offer, capability.SelfOffer()} {
		if err := cat.Add(off); err != nil {
			t.Fatal(err)
		}
	}
	def.Capabilities, def.Preinstall = cat, []string{"a2a", "self"}
	h, err := agent.NewHost(def, &agent.HostOptions{ParkTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	auth := stacktest.Bearer(map[string]string{"ta": "alice", "tb": "bob"})
	srv := a2atest.Start(t, &a2atest.Options{Executor: agent.Executor(h), HTTP: &binding.Options{Authenticate: auth}})
	return srv, h
}

func dial(t *testing.T, u, token string) *client.Client {
	t.Helper()
	return dialWith(t, u, http.Header{"Authorization": {"Bearer " + token}})
}

func dialWith(t *testing.T, u string, h http.Header) *client.Client {
	t.Helper()
	c, err := client.New(t.Context(), u, &client.Options{Binding: client.BindingJSONRPC, Header: h})
	if err != nil {
		t.Fatalf("client.New(%s) = %v", u, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// events sends text (on task, if not "") and collects the stream's events.
func events(t *testing.T, ctx context.Context, c *client.Client, text string, task a2a.TaskID) []a2a.Event {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	msg.TaskID = task
	var out []a2a.Event
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage(%q) = %v", text, err)
		}
		out = append(out, ev)
	}
	return out
}

func relayMeta(m map[string]any) map[string]any {
	v, _ := m[agent.MetaKey].(map[string]any)
	if v["kind"] != "relay" {
		return nil
	}
	return v
}

func partsText(ps a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range ps {
		if t, ok := p.Content.(a2a.Text); ok {
			b.WriteString(string(t))
		}
	}
	return b.String()
}

func final(evs []a2a.Event) (a2a.TaskState, string) {
	for i := len(evs) - 1; i >= 0; i-- {
		if st, ok := evs[i].(*a2a.TaskStatusUpdateEvent); ok {
			text := ""
			if st.Status.Message != nil {
				text = partsText(st.Status.Message.Parts)
			}
			return st.Status.State, text
		}
	}
	return "", ""
}

// The callee's events stream into the caller's task as they arrive, in order, each with its
// provenance, whichever binding the callee's card leaves the caller; the result is an
// observation from the callee, and the callee's message carries hops, chain and budget, and
// the caller's request's trace ID.
func TestRelayOverEveryBinding(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ce := startCallee(t, b)
			base := ce.srv.URL
			srv, _ := startCaller(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}}, callerRules(base))
			for range 3 {
				ce.rec.Step("k")
			}
			const traceID, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			c := dialWith(t, srv.URL, http.Header{"Authorization": {"Bearer ta"}, "Traceparent": {"00-" + traceID + "-" + span + "-01"}})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			evs := events(t, ctx, c, "ask steps k 3", "")
			var steps []string
			var calleeTask string
			for _, ev := range evs {
				switch e := ev.(type) {
				case *a2a.TaskArtifactUpdateEvent:
					m := relayMeta(e.Artifact.Metadata)
					if m == nil {
						continue
					}
					if m["source"] != "agent "+base {
						t.Errorf("relayed artifact source = %v, want agent %s", m["source"], base)
					}
					calleeTask, _ = m["task"].(string)
					if !strings.HasPrefix(string(e.Artifact.ID), calleeTask+":") {
						t.Errorf("relayed artifact ID = %s, want %s:…", e.Artifact.ID, calleeTask)
					}
					steps = append(steps, partsText(e.Artifact.Parts))
				case *a2a.TaskStatusUpdateEvent:
					if m := relayMeta(e.Metadata); m != nil && m["agent"] == "" {
						t.Errorf("relayed status without the callee's name: %v", m)
					}
				}
			}
			if got, want := strings.Join(steps, ","), "step 1,step 2,step 3"; got != want {
				t.Errorf("relayed artifacts = %q, want %q", got, want)
			}
			st, text := final(evs)
			if st != a2a.TaskStateCompleted || !strings.Contains(text, "from "+base+" task "+calleeTask+" (completed)") ||
				!strings.Contains(text, `"binding":"`+string(b)+`"`) {
				t.Errorf("caller ended %s %q, want completed, from %s over %s", st, text, base, b)
			}
			// The observation's data repeats the result's text, for rules.
			if _, rest, ok := strings.Cut(text, ") saying ["); ok {
				said, result, _ := strings.Cut(rest, "]: ")
				var r struct {
					Text string `json:"text"`
				}
				if err := json.Unmarshal([]byte(result), &r); err != nil || r.Text == "" || said != r.Text {
					t.Errorf("data.text = %q, want the result's text %q (%v)", said, r.Text, err)
				}
			}
			metas := ce.rec.metas()
			if len(metas) != 1 {
				t.Fatalf("callee received %d messages, want 1", len(metas))
			}
			m := metas[0]
			if fmt.Sprint(m[peer.HopsKey], m[peer.BudgetKey]) != "1 7" {
				t.Errorf("callee's message hops, budget = %v %v, want 1 7 (16 - 1, halved)", m[peer.HopsKey], m[peer.BudgetKey])
			}
			if tp := ce.rec.traces()[0]; !strings.HasPrefix(tp, "00-"+traceID+"-") || strings.Contains(tp, span) || !strings.HasSuffix(tp, "-01") {
				t.Errorf("callee's traceparent = %q, want trace %s under a new parent span", tp, traceID)
			}
		})
	}
}

// Canceling the caller's task cancels the callee's.
func TestCancelPropagates(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingCapnweb)
	srv, _ := startCaller(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}}, callerRules(ce.srv.URL))
	c := dial(t, srv.URL, "ta")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask wait never"))
	var task a2a.TaskID
	var calleeTask string
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			t.Fatal(err)
		}
		if tk, ok := ev.(*a2a.Task); ok {
			task = tk.ID
		}
		if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			if m := relayMeta(st.Metadata); m != nil {
				calleeTask, _ = m["task"].(string)
				break
			}
		}
	}
	if calleeTask == "" {
		t.Fatal("no relayed event from the callee")
	}
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task}); err != nil {
		t.Fatalf("CancelTask(caller's task) = %v", err)
	}
	cc, err := client.New(ctx, ce.srv.URL, &client.Options{Binding: client.BindingCapnweb})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Destroy()
	a2atest.WaitTask(t, cc, a2a.TaskID(calleeTask), func(tk *a2a.Task) bool { return tk.Status.State == a2a.TaskStateCanceled })
}

// The callee's question reaches the caller's user, said as the callee's; the answer, on the
// caller's task, reaches the callee, and the call goes on.
func TestInputRequiredRelay(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingJSONRPC)
	srv, _ := startCaller(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}}, callerRules(ce.srv.URL))
	c := dial(t, srv.URL, "ta")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	evs := events(t, ctx, c, "ask ask", "")
	st, q := final(evs)
	if st != a2a.TaskStateInputRequired || !strings.Contains(q, " asks: ") {
		t.Fatalf("caller's task = %s %q, want input-required with the callee's question", st, q)
	}
	last := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if m := relayMeta(last.Status.Message.Metadata); m == nil || m["source"] != "agent "+ce.srv.URL {
		t.Errorf("question's metadata = %v, want the callee as its source", last.Status.Message.Metadata)
	}
	evs = events(t, ctx, c, "Ada", last.TaskID)
	st, text := final(evs)
	if st != a2a.TaskStateCompleted || !strings.Contains(text, "hello, Ada") {
		t.Errorf("after the answer, caller's task = %s %q, want completed with hello, Ada", st, text)
	}
}

// Two principals calling through the same agent each have their own callee tasks: one cannot
// continue the other's.
func TestPrincipalsApart(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingREST)
	srv, _ := startCaller(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}}, callerRules(ce.srv.URL))
	alice, bob := dial(t, srv.URL, "ta"), dial(t, srv.URL, "tb")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	evs := events(t, ctx, alice, "ask ask", "")
	var calleeTask string
	for _, ev := range evs {
		if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && st.Status.Message != nil {
			if m := relayMeta(st.Status.Message.Metadata); m != nil {
				calleeTask, _ = m["task"].(string)
			}
		}
	}
	if calleeTask == "" {
		t.Fatal("alice's call left no callee task")
	}
	_, text := final(events(t, ctx, bob, "continue "+calleeTask, ""))
	if !strings.Contains(text, "bad-arguments") || !strings.Contains(text, "is not one this capability started") {
		t.Errorf("bob continuing alice's callee task: %q, want it refused", text)
	}
}

// A URL the contract does not allow is refused before anything is dialed.
func TestOutsideContract(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingJSONRPC)
	srv, _ := startCaller(t, peer.Settings{Allow: []string{"https://agents.example/*"}, Networks: []string{"127.0.0.1/32"}}, callerRules(ce.srv.URL))
	_, text := final(events(t, t.Context(), dial(t, srv.URL, "ta"), "ask hello", ""))
	if !strings.Contains(text, "call refused") {
		t.Errorf("caller said %q, want the call refused", text)
	}
	if n := len(ce.rec.metas()); n != 0 {
		t.Errorf("callee received %d messages, want none", n)
	}
}

// Without networks, loopback is not reached, whatever the contract allows.
func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingJSONRPC)
	srv, _ := startCaller(t, peer.Settings{Allow: ce.allow()}, callerRules(ce.srv.URL))
	_, text := final(events(t, t.Context(), dial(t, srv.URL, "ta"), "ask hello", ""))
	if !strings.Contains(text, "not a public address") {
		t.Errorf("caller said %q, want the address refused", text)
	}
}

func TestParseSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, err string }{
		{`{"allow": ["https://a.example/*"]}`, ""},
		{`{}`, "allow"},
		{`{"allow": ["https://a.example/*"], "Allow": []}`, "Allow"},
		{`{"allow": ["https://a.example/*"], "networks": ["nope"]}`, "networks"},
		{`{"allow": ["https://a.example/*"], "timeout": "soon"}`, "timeout"},
		{`{"allow": ["https://a.example/*"], "credentials": [{"prefix": "https://a.example/", "header": "Authorization"}]}`, "credentials 1"},
		{`{"allow": ["https://a.example/*"], "extra": 1}`, "extra"},
	} {
		_, err := peer.ParseSettings([]byte(tc.in))
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseSettings(%s) = %v, want an error naming %q", tc.in, err, tc.err)
		}
	}
}

// With answers "memory", the callee's question is answered from the caller's own beliefs when
// one matches (the user is not asked), and asked of the user otherwise.
func TestAnswersFromMemory(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingCapnweb)
	notes := agent.Notes()
	rules := append(callerRules(ce.srv.URL), agent.Rule{Name: "delegate-memory", When: `source == "user" && command == "askm" && args != ""`,
		Action: agent.CallTool, Reason: "the user asked",
		Params: map[string]string{"tool": `"a2a.call"`, "input": `"{\"agent\": \"` + ce.srv.URL + `\", \"answers\": \"memory\", \"message\": \"" + args + "\"}"`}})
	notes.Rules = append(rules, notes.Rules...)
	srv, _ := startCallerDef(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}},
		&agent.Definition{Name: "writer", Policy: notes}, &peer.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	alice, bob := dial(t, srv.URL, "ta"), dial(t, srv.URL, "tb")
	if st, text := final(events(t, ctx, alice, "remember name is Ada", "")); st != a2a.TaskStateCompleted {
		t.Fatalf("remember: %s %q", st, text)
	}
	evs := events(t, ctx, alice, "askm ask", "")
	st, text := final(evs)
	if st != a2a.TaskStateCompleted || !strings.Contains(text, "hello, Ada") {
		t.Errorf("alice's call answered from memory: %s %q, want completed with hello, Ada", st, text)
	}
	var note string
	for _, ev := range evs {
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && su.Status.Message != nil && strings.Contains(partsText(su.Status.Message.Parts), "answered from memory") {
			note = partsText(su.Status.Message.Parts)
		}
	}
	if !strings.Contains(note, "answered from memory: name is Ada (belief ") {
		t.Errorf("alice's task said %q, want which belief answered", note)
	}
	// bob's memory holds no name: bob is asked.
	if st, q := final(events(t, ctx, bob, "askm ask", "")); st != a2a.TaskStateInputRequired || !strings.Contains(q, "asks: what is your name?") {
		t.Errorf("bob's call: %s %q, want the question asked of bob", st, q)
	}
}

// find lists the known agents with a skill, and call by skill calls the first of them the
// contract allows; no match is a clear error.
func TestFindAndCallBySkill(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingJSONRPC)
	rules := append([]agent.Rule{
		{Name: "find", When: `source == "user" && command == "find"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"a2a.find"`, "input": `"{\"skill\": \"" + args + "\"}"`}},
		{Name: "found", When: `kind == "tool-result" && data.tool == "a2a.find"`, Action: agent.Reply, Reason: "say it",
			Params: map[string]string{"text": `"found: " + text`}},
		{Name: "by-skill", When: `source == "user" && command == "skill"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"a2a.call"`, "input": `"{\"skill\": \"" + args + "\", \"message\": \"hi\"}"`}},
	}, callerRules(ce.srv.URL)...)
	srv, _ := startCaller(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}, Agents: []string{ce.srv.URL + "/"}}, rules)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := dial(t, srv.URL, "ta")
	if _, text := final(events(t, ctx, c, "find ECH", "")); !strings.Contains(text, `"url":"`+ce.srv.URL+`"`) || !strings.Contains(text, `"source":"agents"`) {
		t.Errorf("find ECH: %q, want the callee listed", text)
	}
	if _, text := final(events(t, ctx, c, "find nothing", "")); text != "found: []" {
		t.Errorf("find nothing: %q, want none", text)
	}
	if _, text := final(events(t, ctx, c, "skill echo", "")); !strings.Contains(text, "from "+ce.srv.URL) || !strings.Contains(text, "echo: hi") {
		t.Errorf("skill echo: %q, want the callee's answer", text)
	}
	if _, text := final(events(t, ctx, c, "skill weaving", "")); !strings.Contains(text, "no agent with a skill weaving is known") {
		t.Errorf("skill weaving: %q, want no agent", text)
	}
}

// A call that outlives its timeout ends, and so does the callee's task.
func TestTimeoutCancelsCallee(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingCapnweb)
	srv, _ := startCaller(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}, Timeout: "5s"}, callerRules(ce.srv.URL))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	evs := events(t, ctx, dial(t, srv.URL, "ta"), "ask wait forever", "")
	if _, text := final(evs); !strings.Contains(text, "took longer than 5s") {
		t.Fatalf("caller said %q, want the call timed out", text)
	}
	cc, err := client.New(ctx, ce.srv.URL, &client.Options{Binding: client.BindingCapnweb})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Destroy()
	list, err := cc.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) == 0 {
		t.Skip("the machine was too loaded for the callee to start its task within the call's 5 s")
	}
	calleeTask := list.Tasks[0].ID
	a2atest.WaitTask(t, cc, calleeTask, func(tk *a2a.Task) bool { return tk.Status.State == a2a.TaskStateCanceled })
}

// A header credential, read from the environment, authenticates every call on every binding;
// the secret is in no result, log or audit record the caller keeps.
func TestHeaderCredential(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-token-for-the-callee"
	auth := func(_ context.Context, h http.Header) (*a2asrv.User, error) {
		if h.Get("Authorization") != "Bearer "+secret {
			return nil, a2a.ErrUnauthenticated
		}
		return a2asrv.NewAuthenticatedUser("writer-bot", nil), nil
	}
	for _, b := range bindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			rec := &recorder{Agent: a2atest.NewAgent()}
			users := make(chan string, 4)
			callee := a2atest.Start(t, &a2atest.Options{Executor: userRecorder{rec, users}, HTTP: &binding.Options{Authenticate: auth},
				GRPC: &binding.GRPCOptions{Authenticate: auth}, WrapHTTP: onlyBinding(b)})
			s := peer.Settings{Allow: []string{callee.URL, "http://" + callee.GRPCAddr}, Networks: []string{"127.0.0.1/32"},
				Credentials: []peer.Credential{{Prefix: callee.URL + "/", Header: "Authorization", Scheme: "Bearer", Env: "CALLEE_TOKEN"}}}
			srv, h := startCallerWith(t, s, callerRules(callee.URL), &peer.Options{Getenv: func(k string) string {
				if k == "CALLEE_TOKEN" {
					return secret
				}
				return ""
			}})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			evs := events(t, ctx, dial(t, srv.URL, "ta"), "ask hello", "")
			if st, text := final(evs); st != a2a.TaskStateCompleted || !strings.Contains(text, "echo: hello") || !strings.Contains(text, `"binding":"`+string(b)+`"`) {
				t.Fatalf("authenticated call: %s %q", st, text)
			}
			select {
			case u := <-users:
				if u != "writer-bot" {
					t.Errorf("callee saw principal %q, want writer-bot", u)
				}
			default:
				t.Error("the callee ran nothing")
			}
			recs, err := h.Audit().Records(ctx, capability.AuditQuery{All: true})
			if err != nil {
				t.Fatal(err)
			}
			data, _ := json.Marshal(recs)
			for _, ev := range evs {
				d, _ := json.Marshal(ev)
				data = append(data, d...)
			}
			if strings.Contains(string(data), secret) || len(recs) == 0 {
				t.Errorf("the secret is in the caller's audit log or task (%d records)", len(recs))
			}
		})
	}
}

// userRecorder records the principal of each task it runs.
type userRecorder struct {
	*recorder
	users chan string
}

func (u userRecorder) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	if ec.User != nil {
		select {
		case u.users <- ec.User.Name:
		default:
		}
	}
	return u.recorder.Execute(ctx, ec)
}

// A callee that streams more events than a call relays is cut off, with a clear error, and
// its task canceled.
func TestTooManyEvents(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingJSONRPC)
	for range 8 {
		ce.rec.Step("many")
	}
	srv, _ := startCaller(t, peer.WithMaxEvents(peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}}, 5), callerRules(ce.srv.URL))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, text := final(events(t, ctx, dial(t, srv.URL, "ta"), "ask steps many 8", "")); !strings.Contains(text, "sent more than 5 events in one call") {
		t.Errorf("caller said %q, want the callee cut off", text)
	}
}
