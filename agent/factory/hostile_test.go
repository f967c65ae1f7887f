package factory_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// Hostile Starlark inside a served agent: mallory's agent calls capabilities whose code loops,
// eats memory or reaches for what it was not granted; each call fails with a clear error, and
// alice's agent, calling a legitimate one at the same time, is answered.
func TestHostileStarlarkInTheAgent(t *testing.T) {
	t.Parallel()
	// The limits under test are steps and memory; the clock is generous, for a loaded machine.
	pool := sandbox.New(&sandbox.Options{Workers: 2, Memory: 64 << 20, Limits: sandbox.Limits{Steps: 2_000_000, Time: time.Minute}})
	t.Cleanup(func() { pool.Close() })
	run := pool.Runtime(nil)
	catalog := capability.NewCatalog()
	method := `"methods":[{"name":"run","description":"run it","params":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}]`
	for name, src := range map[string]string{
		"spin":  "def run(x):\n    for i in range(1 << 62):\n        pass\n",
		"bomb":  "def run(x):\n    keep = []\n    for i in range(1 << 20):\n        keep.append(x * (1 << 20) + str(i))\n",
		"reach": "def run(x):\n    return open(x)\n",
		"echo":  "def run(x):\n    return x.upper()\n",
	} {
		m, err := capability.ParseManifest([]byte(`{"name":"` + name + `","version":"1","description":"` + name + `","runtime":"starlark",` +
			`"source":"capability.star","contract":{},"strategy":{"minimum":"pre-approved","recommended":"pre-approved"},` + method + `}`))
		if err != nil {
			t.Fatal(err)
		}
		p := &capability.Package{Manifest: m, Files: map[string][]byte{"capability.star": []byte(src)}}
		if name == "reach" { // it does not compile: refused at install, as ReadPackage's check would
			if _, err := sandbox.Compile(m, p.Files, nil); err == nil || !strings.Contains(err.Error(), "undefined: open") {
				t.Errorf("reach compiles: %v", err)
			}
			continue
		}
		if err := catalog.Add(p.Offer(capability.Strategy{}, run)); err != nil {
			t.Fatal(err)
		}
	}
	pol := &agent.Policy{Rules: []agent.Rule{
		{Name: "call", When: `command.startsWith("/")`, Action: agent.CallTool,
			Params: map[string]string{"tool": `command.substring(1) + ".run"`, "input": "args"}, Reason: "call it"},
		{Name: "say", When: `command.startsWith("/")`, Action: agent.Reply,
			Params: map[string]string{"text": `last.status + ": " + last.result`}, Reason: "say what happened"},
	}}
	h, err := agent.NewHost(&agent.Definition{Name: "hostile", Policy: pol, Capabilities: catalog,
		Preinstall: []string{"spin", "bomb", "echo"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	mallory, alice := agent.Principal{Name: "mallory"}, agent.Principal{Name: "alice"}
	for _, x := range []struct{ msg, want string }{
		{"/spin go", "failed: capability spin.run: sandbox: step limit exceeded (2000000 steps)"},
		{"/bomb a", "failed: capability bomb.run: sandbox: memory limit exceeded (64 MiB)"},
	} {
		var wg sync.WaitGroup
		var got string
		wg.Go(func() { got = askAs(t, h, mallory, "m-"+x.msg, x.msg).Reply })
		if r := askAs(t, h, alice, "a-"+x.msg, "/echo hi").Reply; r != "done: HI" {
			t.Errorf("alice beside mallory's %s: %q", x.msg, r)
		}
		wg.Wait()
		if got != x.want {
			t.Errorf("mallory %s: %q, want %q", x.msg, got, x.want)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if a, err := h.Instance(ctx, alice); err != nil {
		t.Fatal(err)
	} else if _, err := a.View(ctx); err != nil {
		t.Errorf("alice's instance after it all: %v", err)
	}
}
