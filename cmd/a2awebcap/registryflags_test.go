package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/registry"
)

// serveArgs runs serve with args until the test ends; it returns once the server is up.
func serveArgs(t *testing.T, args ...string) {
	t.Helper()
	cfg, err := parseServe(args)
	if err != nil {
		t.Fatalf("parseServe(%q): %v", args, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve %q stopped with %v", args, err)
		}
	})
	waitUp(t, cfg.addr)
}

// TestRegistryServe: serve -registry is a registry; serve -register-with registers an agent
// with it at start; the agents verbs find, show and unregister it.
func TestRegistryServe(t *testing.T) {
	t.Parallel()
	raddr, aaddr := freeAddr(t), freeAddr(t)
	regURL := "http://" + raddr
	serveArgs(t, "-addr", raddr, "-db", "memory", "-agent", "builtin", "-name", "registry", "-no-push",
		"-registry", "-registry-allow", "127.0.0.0/8")
	serveArgs(t, "-addr", aaddr, "-db", "memory", "-agent", "builtin", "-name", "worker", "-no-push",
		"-base-url", "http://"+aaddr, "-register-with", regURL)

	verb := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runAgentsVerb(args, &out, &errOut)
		return out.String(), err
	}
	var page registry.Page
	deadline := time.Now().Add(20 * time.Second) // registration is retried every few seconds at most
	for {
		out, err := verb("search", regURL, "-skill", "echo", "-o", "json")
		if err == nil && json.Unmarshal([]byte(out), &page) == nil && len(page.Agents) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not register itself: %q, %v", out, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e := page.Agents[0]
	if e.Card.Name != "worker" || e.URL != "http://"+aaddr+"/.well-known/agent-card.json" || e.State != registry.StateReachable {
		t.Errorf("entry = %+v", e)
	}
	out, err := verb("search", regURL, "-name", "work")
	if err != nil || !strings.Contains(out, e.ID) || !strings.Contains(out, "worker") || !strings.Contains(out, "reachable") {
		t.Errorf("agents search (text) = %q, %v", out, err)
	}
	out, err = verb("show", regURL, e.ID)
	if err != nil || !strings.Contains(out, "skill echo") || !strings.Contains(out, "signature: unsigned") {
		t.Errorf("agents show = %q, %v", out, err)
	}
	if _, err := verb("show", regURL, "nope"); err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Errorf("agents show nope: %v", err)
	}
	if out, err := verb("unregister", regURL, e.ID); err != nil || !strings.Contains(out, "unregistered") {
		t.Errorf("agents unregister = %q, %v", out, err)
	}
	if out, err := verb("search", regURL); err != nil || strings.Contains(out, e.ID) {
		t.Errorf("after unregistering: %q, %v", out, err)
	}
	if _, err := parseServe([]string{"-register-with", regURL}); err == nil {
		t.Error("-register-with without -base-url was accepted")
	}
}

// TestRegistryServeAgents: with -agents, -register-with registers each hosted agent at its
// own base URL.
func TestRegistryServeAgents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, def := range map[string]string{
		"alpha.json": `{"name": "alpha", "policy": "notes"}`,
		"beta.json":  `{"name": "beta", "policy": "assistant"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(def), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	raddr, aaddr := freeAddr(t), freeAddr(t)
	regURL := "http://" + raddr
	serveArgs(t, "-addr", raddr, "-db", "memory", "-agent", "builtin", "-no-push", "-registry", "-registry-allow", "127.0.0.0/8")
	serveArgs(t, "-addr", aaddr, "-db", "memory", "-agents", dir, "-no-push", "-base-url", "http://"+aaddr, "-register-with", regURL)
	c := registry.NewClient(regURL, nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := c.Search(t.Context(), registry.Query{})
		if err == nil && len(p.Agents) == 2 {
			for i, name := range []string{"alpha", "beta"} {
				if e := p.Agents[i]; e.Card.Name != name || e.URL != "http://"+aaddr+"/agents/"+name+"/.well-known/agent-card.json" {
					t.Errorf("entry %d = %s at %s", i, e.Card.Name, e.URL)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hosted agents did not register: %+v, %v", p, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
