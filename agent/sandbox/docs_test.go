package sandbox_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// docExample reads the package of docs/capabilities.md's example name: the fenced blocks after
// "<!-- example: name -->", each under a line naming its file ("`test.star`:").
func docExample(t *testing.T, name string) (capability.Manifest, map[string][]byte) {
	t.Helper()
	data, err := os.ReadFile("../../docs/capabilities.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	_, rest, ok := strings.Cut(doc, "<!-- example: "+name+" -->")
	if !ok {
		t.Fatalf("docs/capabilities.md has no example %s", name)
	}
	rest, _, _ = strings.Cut(rest, "\n### ")
	files := map[string][]byte{}
	re := regexp.MustCompile("(?s)`([a-z.]+)`:\\s*\n\n```[a-z]*\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(rest, -1) {
		files[m[1]] = []byte(m[2])
	}
	m, err := capability.ParseManifest(files["manifest.json"])
	if err != nil {
		t.Fatalf("the example's manifest: %v", err)
	}
	return m, files
}

// TestDocExample runs the example package of docs/capabilities.md: it compiles, passes the
// check, and its tests pass, reading the clock through the holder's set.
func TestDocExample(t *testing.T) {
	t.Parallel()
	m, files := docExample(t, "greeter")
	prog, err := sandbox.Compile(m, files, nil)
	if err != nil {
		t.Fatalf("Compile(docs example) = %v", err)
	}
	p := newPool(t, nil)
	set := capability.NewSet(&capability.SetOptions{Principal: "alice"})
	t.Cleanup(set.Close)
	clock := capability.Clock(func() time.Time { return time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC) })
	if err := set.Install(t.Context(), clock, capability.Grant{Strategy: capability.Strategy{Kind: capability.PreApproved}}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Test(t.Context(), prog, set, "alice")
	if err != nil {
		t.Fatalf("Test(docs example) = %v", err)
	}
	if len(res.Tests) != 1 || !res.Tests[0].OK {
		t.Errorf("Test(docs example) = %+v, want its one test passing", res.Tests)
	}
	greeter, err := p.Capability(prog, set, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Install(t.Context(), greeter, capability.Grant{Strategy: capability.Strategy{Kind: capability.ContractBased}, Approved: true}); err != nil {
		t.Fatal(err)
	}
	out, err := set.Call(t.Context(), capability.Request{Capability: "greeter", Method: "greet", Args: []byte(`{"name":"grace hopper"}`)})
	if err != nil || string(out) != `"Good morning, Grace Hopper."` {
		t.Errorf("greeter.greet = %s, %v", out, err)
	}
}
