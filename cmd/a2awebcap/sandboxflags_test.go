package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// TestMain makes the test binary a Starlark worker when serve's sandbox re-executes it, as
// main does for the real binary.
func TestMain(m *testing.M) {
	sandbox.WorkerMain()
	// serve's default store goes to the data directory: a temporary one here, never the
	// machine's ~/.local/share.
	dir, err := os.MkdirTemp("", "a2awebcap-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_DATA_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	removeInstalled() // binary_test.go
	os.Exit(code)
}

// serve offers a signed Starlark package, run in worker processes, and the factory; a package
// whose code loads what its contract does not declare is refused at start.
func TestServeStarlarkPackages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys, sign := packageSigner(t, dir)
	pkgs := filepath.Join(dir, "pkgs")
	write := func(source string) {
		manifest := `{"name":"shout","version":"1","description":"shouts","contract":{},"runtime":"starlark","source":"capability.star",` +
			`"strategy":{"minimum":"pre-approved","recommended":"pre-approved"},"methods":[{"name":"shout","description":"shout it",` +
			`"params":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"result":{"type":"string"}}]}`
		sign(filepath.Join(pkgs, "shout"), manifest, source)
	}
	write("def shout(text):\n    return text.upper() + \"!\"\n")
	c, err := parseServe([]string{"-capabilities", "shout,factory", "-capability-packages", pkgs, "-capability-keys", keys,
		"-factory-dir", filepath.Join(dir, "agents"), "-capability-preinstall", "shout,factory"})
	if err != nil {
		t.Fatal(err)
	}
	def := &agent.Definition{Name: "x"}
	if err := c.caps.apply(t.Context(), def); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.caps.sandbox.close)
	if def.Rehydrate == nil {
		t.Error("the factory's Rehydrate is not the definition's")
	}
	h, err := agent.NewHost(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	set, release, err := h.Capabilities(t.Context(), agent.Principal{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	out, err := set.Call(t.Context(), capability.Request{Capability: "shout", Method: "shout", Args: json.RawMessage(`{"text":"hi"}`)})
	if err != nil || string(out) != `"HI!"` {
		t.Errorf("shout.shout = %s, %v", out, err)
	}
	if _, ok := set.Describe("factory"); !ok {
		t.Error("the factory is not installed")
	}

	write("load(\"fetch\", \"get\")\ndef shout(text):\n    return get(url = text)\n")
	c, _ = parseServe([]string{"-capabilities", "shout", "-capability-packages", pkgs, "-capability-keys", keys})
	if _, _, err := c.caps.catalog(t.Context(), &agent.Definition{Name: "x"}); err == nil || !strings.Contains(err.Error(), "loads fetch.get") {
		t.Errorf("a package beyond its contract: %v", err)
	}
	c, _ = parseServe([]string{"-capabilities", "factory"})
	if _, _, err := c.caps.catalog(t.Context(), &agent.Definition{Name: "x"}); err == nil || !strings.Contains(err.Error(), "-factory-dir") {
		t.Errorf("-capabilities factory without -factory-dir: %v", err)
	}
}

// The example package of docs/capabilities.md, greeter, reads the time through the clock
// capability: served with -capabilities clock,greeter, each principal's instance holds both,
// and greeter's calls reach the clock.
func TestServeClockForPackages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys, sign := packageSigner(t, dir)
	manifest := `{"name":"greeter","version":"1","description":"Greets people, politely and by the clock","runtime":"starlark",` +
		`"source":"capability.star","contract":{"reads":["clock:now"]},"strategy":{"minimum":"contract","recommended":"contract"},` +
		`"methods":[{"name":"greet","description":"Greet someone","params":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},"result":{"type":"string"}}]}`
	source := "load(\"clock\", \"now\")\n\ndef greet(name):\n    hour = int(now()[\"time\"][11:13])\n" +
		"    part = \"morning\" if hour < 12 else \"afternoon\" if hour < 18 else \"evening\"\n" +
		"    return \"Good %s, %s.\" % (part, name.strip().title())\n"
	sign(filepath.Join(dir, "pkgs", "greeter"), manifest, source)
	c, err := parseServe([]string{"-capabilities", "clock,greeter", "-capability-packages", filepath.Join(dir, "pkgs"),
		"-capability-keys", keys, "-capability-preinstall", "clock,greeter"})
	if err != nil {
		t.Fatal(err)
	}
	def := &agent.Definition{Name: "x"}
	if err := c.caps.apply(t.Context(), def); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.caps.sandbox.close)
	h, err := agent.NewHost(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, who := range []string{"alice", "bob"} {
		set, release, err := h.Capabilities(t.Context(), agent.Principal{Name: who})
		if err != nil {
			t.Fatal(err)
		}
		out, err := set.Call(t.Context(), capability.Request{Capability: "greeter", Method: "greet", Args: json.RawMessage(`{"name":"  grace hopper "}`)})
		if err != nil || !strings.HasPrefix(string(out), `"Good `) || !strings.HasSuffix(string(out), `, Grace Hopper."`) {
			t.Errorf("%s: greeter.greet = %s, %v", who, out, err)
		}
		now, err := set.Call(t.Context(), capability.Request{Capability: "clock", Method: "now", Args: json.RawMessage(`{}`)})
		if err != nil || !strings.Contains(string(now), `"unix"`) {
			t.Errorf("%s: clock.now = %s, %v", who, now, err)
		}
		release()
	}
}

// -reflect gives the runtime's instances the reflect capability; -reflect-every needs it.
func TestReflectFlags(t *testing.T) {
	t.Parallel()
	c, err := parseServe([]string{"-reflect", "-reflect-every", "1h"})
	if err != nil {
		t.Fatal(err)
	}
	def := &agent.Definition{}
	if err := c.reflect.apply(def); err != nil || def.Reflect == nil || def.Reflect.Every != time.Hour {
		t.Errorf("-reflect -reflect-every 1h: %+v, %v", def.Reflect, err)
	}
	c, _ = parseServe([]string{"-reflect-every", "1h"})
	if err := c.reflect.apply(&agent.Definition{}); err == nil {
		t.Error("-reflect-every without -reflect was accepted")
	}
}

// packageSigner makes a signing key in dir and the trusted-keys file naming it (keys), and
// returns sign, which writes a Starlark package (its manifest and capability.star) to pkg and
// signs it with that key.
func packageSigner(t *testing.T, dir string) (keys string, sign func(pkg, manifest, source string)) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "ops", Use: "sig"}}})
	keys = filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	return keys, func(pkg, manifest, source string) {
		t.Helper()
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{"manifest.json": manifest, "capability.star": source} {
			if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := capability.SignPackage(pkg, key, "ops"); err != nil {
			t.Fatal(err)
		}
	}
}
