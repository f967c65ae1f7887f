package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/ws"
	"github.com/google/go-cmp/cmp"
)

// The capnweb flags set the binding's limits and budgets; their defaults are the library's.
func TestCapnwebFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		limits  capnweb.Limits
		budget  binding.CapnwebBudget
		wantErr string
	}{
		{name: "defaults",
			limits: capnweb.Limits{MaxMessageSize: 32 << 20, MaxHeldBytes: 64 << 20, MaxPendingCalls: 4096},
			budget: binding.CapnwebBudget{Total: 1 << 30, PerPrincipal: 256 << 20, Unauthenticated: capnweb.Limits{MaxHeldBytes: 1 << 20, MaxExports: 64, MaxImports: 64}}},
		{name: "sizes and counts",
			args: []string{"-capnweb-max-message", "8MiB", "-capnweb-session-memory", "16m", "-capnweb-principal-memory", "off",
				"-capnweb-memory", "2GiB", "-capnweb-preauth-memory", "512KiB", "-capnweb-preauth-calls", "16", "-capnweb-running-calls", "100"},
			limits: capnweb.Limits{MaxMessageSize: 8 << 20, MaxHeldBytes: 16 << 20, MaxPendingCalls: 100},
			budget: binding.CapnwebBudget{Total: 2 << 30, PerPrincipal: -1, Unauthenticated: capnweb.Limits{MaxHeldBytes: 512 << 10, MaxExports: 16, MaxImports: 16}}},
		{name: "environment",
			env:    map[string]string{"A2AWEBCAP_CAPNWEB_MEMORY": "off", "A2AWEBCAP_CAPNWEB_SESSION_MEMORY": "1048576"},
			limits: capnweb.Limits{MaxMessageSize: 32 << 20, MaxHeldBytes: 1 << 20, MaxPendingCalls: 4096},
			budget: binding.CapnwebBudget{Total: -1, PerPrincipal: 256 << 20, Unauthenticated: capnweb.Limits{MaxHeldBytes: 1 << 20, MaxExports: 64, MaxImports: 64}}},
		{name: "a flag overrides a bad environment variable",
			args:   []string{"-capnweb-memory", "1GiB"},
			env:    map[string]string{"A2AWEBCAP_CAPNWEB_MEMORY": "lots"},
			limits: capnweb.Limits{MaxMessageSize: 32 << 20, MaxHeldBytes: 64 << 20, MaxPendingCalls: 4096},
			budget: binding.CapnwebBudget{Total: 1 << 30, PerPrincipal: 256 << 20, Unauthenticated: capnweb.Limits{MaxHeldBytes: 1 << 20, MaxExports: 64, MaxImports: 64}}},
		{name: "bad environment variable", env: map[string]string{"A2AWEBCAP_CAPNWEB_MEMORY": "lots"}, wantErr: "A2AWEBCAP_CAPNWEB_MEMORY"},
		{name: "message size cannot be off", args: []string{"-capnweb-max-message", "off"}, wantErr: "not a size"},
		{name: "zero", args: []string{"-capnweb-session-memory", "0"}, wantErr: "not a size"},
		{name: "negative count", args: []string{"-capnweb-preauth-calls", "-1"}, wantErr: "whole number"},
		{name: "overflow", args: []string{"-capnweb-memory", "99999999999GiB"}, wantErr: "not a size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := parseServe(append([]string{"-db", "memory"}, tt.args...))
			o := &binding.Options{Capnweb: &capnweb.HandlerOptions{}}
			if err == nil {
				err = cfg.capnweb.apply(o)
			}
			hopts, budget := o.Capnweb, o.CapnwebBudget
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.limits, hopts.Session.Limits); diff != "" {
				t.Errorf("session limits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.budget, *budget); diff != "" {
				t.Errorf("budget (-want +got):\n%s", diff)
			}
		})
	}
}

// serve with an API key and small capnweb budgets: a flood before authentication is stopped at
// the pre-auth call count, one after at the session's memory budget, each with a message
// saying so; a client that authenticates and calls is served all along.
func TestServeCapnwebBudget(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-agent", "builtin", "-api-key", "k-alice=alice",
		"-capnweb-session-memory", "4MiB", "-capnweb-preauth-calls", "8"})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := starter(t, cfg)()
	t.Cleanup(func() { stop(); <-done })
	wsURL := "ws://" + addr + "/a2a/capnweb"

	flood := func(key string, msg []byte, n int) string {
		t.Helper()
		h := http.Header{}
		if key != "" {
			h.Set("X-API-Key", key)
		}
		c, err := ws.Dial(t.Context(), wsURL, &ws.DialOptions{Header: h})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ws.StatusNormal, "")
		for range n {
			if c.WriteMessages(ws.Text, msg) != nil {
				break
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			_, m, err := c.ReadMessage(1 << 20)
			if err != nil {
				break
			}
			if strings.HasPrefix(string(m), `["abort",`) {
				return string(m)
			}
		}
		t.Fatal("the server did not abort the flood")
		return ""
	}
	if got := flood("", []byte(`["push",["pipeline",0,["getAgentCard"],[]]]`), 1000); !strings.Contains(got, "export table is full (limit 8)") {
		t.Errorf("a flood of calls before authentication: %s", got)
	}
	big := []byte(`["push","` + strings.Repeat("v", 1<<20) + `"]`)
	if got := flood("k-alice", big, 20); !strings.Contains(got, "session memory budget exceeded") || !strings.Contains(got, "limit of 4194304") {
		t.Errorf("a flood of values after authentication: %s", got)
	}

	s, err := capnweb.Dial(t.Context(), wsURL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess := s.Main().Call("authenticate", map[string]any{"X-API-Key": "k-alice"})
	defer sess.Release()
	msg := map[string]any{"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "echo hi"}}}}
	if _, err := sess.Call("sendMessage", msg).Await(t.Context()); err != nil {
		t.Errorf("a client that authenticates: sendMessage: %v", err)
	}
}
