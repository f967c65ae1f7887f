package peer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/netguard"
	"github.com/a2awebcap/a2awebcap/registry"
)

// An agent a registry lists is found by skill and called; card summarizes an agent with its
// interfaces.
func TestRegistryAndCard(t *testing.T) {
	t.Parallel()
	ce := startCallee(t, client.BindingJSONRPC)
	st, err := registry.OpenSQLite(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, &registry.Options{Guard: netguard.New(&netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}), Tick: -1})
	t.Cleanup(func() { _ = reg.Close() })
	mux := http.NewServeMux()
	mux.Handle("/registry/", reg.Handler(nil))
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	if _, _, err := reg.Register(t.Context(), registry.Owner{}, ce.srv.URL); err != nil {
		t.Fatal(err)
	}
	rules := append([]agent.Rule{
		{Name: "card", When: `source == "user" && command == "card"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"a2a.card"`, "input": `"{\"agent\": \"" + args + "\"}"`}},
		{Name: "carded", When: `kind == "tool-result" && data.tool == "a2a.card"`, Action: agent.Reply, Reason: "say it",
			Params: map[string]string{"text": `"card: " + text`}},
		{Name: "by-skill", When: `source == "user" && command == "skill"`, Action: agent.CallTool, Reason: "the user asked",
			Params: map[string]string{"tool": `"a2a.call"`, "input": `"{\"skill\": \"" + args + "\", \"message\": \"hi\"}"`}},
	}, callerRules(ce.srv.URL)...)
	srv, _ := startCaller(t, peer.Settings{Allow: ce.allow(), Networks: []string{"127.0.0.1/32"}, Registry: rs.URL}, rules)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := dial(t, srv.URL, "ta")
	if _, text := final(events(t, ctx, c, "skill echo", "")); !strings.Contains(text, "from "+ce.srv.URL) || !strings.Contains(text, "echo: hi") {
		t.Errorf("skill echo through the registry: %q, want the callee's answer", text)
	}
	_, text := final(events(t, ctx, c, "card "+ce.srv.URL, ""))
	if !strings.Contains(text, `"name":"a2atest"`) || !strings.Contains(text, `"protocolBinding":"JSONRPC"`) || !strings.Contains(text, `"id":"echo"`) {
		t.Errorf("card: %q, want its name, skills and interfaces", text)
	}
}
