package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
)

func TestCapabilityFlags(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bad := [][]string{
		{"-capabilities", "fs"},
		{"-capabilities", "fs", "-fs-root", filepath.Join(root, "none")},
		{"-capabilities", "fs", "-fs-root", root, "-fs-writes", "notes/*"},
		{"-capabilities", "fetch"},
		{"-capabilities", "fetch", "-fetch-allow", "ftp://x/*"},
		{"-capabilities", "teleport"},
		{"-capabilities", "self", "-capability-strategy", "fs=contract"},
		{"-capabilities", "self", "-capability-strategy", "self=sometimes"},
		{"-capabilities", "self", "-capability-preinstall", "fs"},
		{"-capabilities", "self", "-capability-packages", root},
	}
	for _, args := range bad {
		c, err := parseServe(args)
		if err != nil {
			t.Fatalf("parseServe(%q) = %v", args, err)
		}
		if _, _, err := c.caps.catalog(t.Context(), &agent.Definition{Name: "x"}); err == nil {
			t.Errorf("%q: accepted", args)
		}
	}
	c, err := parseServe([]string{"-capabilities", "self,fs,fetch,agents", "-fs-root", root, "-fs-writes", "file:notes/*",
		"-fetch-allow", "https://api.example.com/*", "-capability-strategy", "fs=call-by-call,fetch=budget:calls=5", "-capability-preinstall", "self"})
	if err != nil {
		t.Fatal(err)
	}
	cat, pre, err := c.caps.catalog(t.Context(), &agent.Definition{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range cat.Offers() {
		st := o.Strategy.String()
		if o.Strategy.Kind == "" {
			st = "recommended " + string(o.Manifest.Strategy.Recommended)
		}
		got = append(got, o.Manifest.Name+" "+st+" "+o.Manifest.Contract.String())
	}
	want := []string{"agents recommended contract spawns agents or capabilities", "fetch budget:calls=5 network https://api.example.com/*", "fs call-by-call reads file:*; writes file:notes/*",
		"self recommended pre-approved reads self:memory, self:policy, self:capabilities"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(pre) != 1 || pre[0] != "self" {
		t.Errorf("catalog:\n%s\nwant:\n%s\npreinstall %q", strings.Join(got, "\n"), strings.Join(want, "\n"), pre)
	}
}

func TestPrincipalDir(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, p := range []string{"alice", "Alice", "..", ".", "a/b", "a_b", "anonymous", "anonymous@acme", strings.Repeat("x", 300), "é"} {
		d := principalDir(p)
		if d == "." || d == ".." || strings.ContainsAny(d, `/\`) || filepath.Base(d) != d || len(d) > 60 {
			t.Errorf("principalDir(%q) = %q", p, d)
		}
		if other, ok := seen[d]; ok {
			t.Errorf("principalDir(%q) = principalDir(%q) = %q", p, other, d)
		}
		seen[d] = p
	}
}

// Each principal's fs is a directory of its own under -fs-root; the capability is installed
// with the user's command over A2A, and serve's operators' flags bound it.
func TestServeOffersCapabilities(t *testing.T) {
	root := t.TempDir()
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-no-push", "-capabilities", "fs,self", "-fs-root", root,
		"-fs-writes", "file:notes/*"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	waitUp(t, addr)
	for _, x := range []struct{ msg, want string }{
		{"/capabilities", "- fs 1: Files in a directory of your own. Contract: reads file:*; writes file:notes/*. Default strategy: contract."},
		{"/capability install fs audit-only", "Installed fs under audit-only."},
		{"/capability show fetch", `No capability "fetch" is offered.`},
	} {
		out, err := verb(t, "send", "http://"+addr, x.msg)
		if err != nil || !strings.Contains(out, x.want) {
			t.Errorf("send %q: %q, %v; want %q", x.msg, out, err, x.want)
		}
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "u-anonymous-") {
		t.Errorf("-fs-root holds %v, want the anonymous principal's directory", ents)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// sign-capability signs a package that serve then accepts with -capability-keys, and refuses
// once tampered with; a package needs a runtime this build has.
func TestSignCapability(t *testing.T) {
	// Not parallel: it registers a package runtime in packageRuntimes, which the parallel
	// tests that start serve read.
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "me", Use: "sig"}}})
	keysFile := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keysFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	pkgs := filepath.Join(dir, "pkgs")
	pkg := filepath.Join(pkgs, "greet")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := `{"name":"greet","version":"1.0.0","description":"greets","contract":{},"strategy":{"minimum":"pre-approved","recommended":"pre-approved"},` +
		`"methods":[{"name":"hello","description":"say hello"}],"runtime":"test","source":"greet.src"}`
	for name, data := range map[string]string{"manifest.json": manifest, "greet.src": "hello"} {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := signCapability([]string{"-key", keyFile, "-kid", "me", pkg}); err != nil {
		t.Fatal(err)
	}
	cfg := capabilityConfig{offer: "greet", packages: pkgs, keys: keysFile}
	if _, _, err := cfg.catalog(t.Context(), nil); err == nil || !strings.Contains(err.Error(), `no "test" runtime`) {
		t.Errorf("a package without its runtime: %v", err)
	}
	packageRuntimes["test"] = func(_ context.Context, p *capability.Package, _ capability.Env) (*capability.Capability, error) {
		return capability.New(capability.Description{Name: p.Manifest.Name, Methods: p.Manifest.Methods},
			capability.Funcs{"hello": func(context.Context, *capability.Call) (any, error) { return string(p.Source()), nil }})
	}
	t.Cleanup(func() { delete(packageRuntimes, "test") })
	cat, _, err := cfg.catalog(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := agent.NewHost(&agent.Definition{Name: "x", Capabilities: cat, Preinstall: []string{"greet"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	set, release, err := h.Capabilities(t.Context(), agent.Principal{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if out, err := set.Call(t.Context(), capability.Request{Capability: "greet", Method: "hello"}); err != nil || string(out) != `"hello"` {
		t.Errorf("greet.hello = %s, %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "greet.src"), []byte("pwned"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cfg.catalog(t.Context(), nil); !errors.Is(err, capability.ErrSignature) {
		t.Errorf("a tampered package: %v, want ErrSignature", err)
	}
	if err := signCapability([]string{pkg}); err == nil {
		t.Error("sign-capability without -key")
	}
}
