package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/client"
)

// serveWith runs serve with args until the test ends and returns its HTTP address.
func serveWith(t *testing.T, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	cfg, err := parseServe(append([]string{"-addr", addr, "-db", "memory", "-agent", "builtin"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() { cancel(); <-done })
	waitUp(t, addr)
	return addr
}

// serve with authentication offers the extended card: the public card plus what
// -extended-card adds, on every binding, with the interfaces of the public card.
func TestServeExtendedCard(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "extended.json")
	add := `{"description": "for our own staff", "skills": [{"id": "audit", "name": "audit", "description": "reads the audit log", "tags": ["ops"]}]}`
	if err := os.WriteFile(file, []byte(add), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveWith(t, "-api-key", "k=alice", "-extended-card", file, "-grpc-addr", freeAddr(t))

	public := fetchCard(t, http.DefaultClient, "http://"+addr)
	if !public.Capabilities.ExtendedAgentCard {
		t.Errorf("public card: capabilities.extendedAgentCard = false, want true")
	}
	if slices.ContainsFunc(public.Skills, func(s a2a.AgentSkill) bool { return s.ID == "audit" }) {
		t.Errorf("public card lists the extended card's skill")
	}
	for _, b := range []client.Binding{client.BindingCapnweb, client.BindingCapnwebBatch, client.BindingJSONRPC, client.BindingREST, client.BindingGRPC} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c, err := client.New(t.Context(), "http://"+addr, &client.Options{Binding: b, Header: http.Header{"X-API-Key": {"k"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			ext, err := c.GetExtendedAgentCard(t.Context(), &a2a.GetExtendedAgentCardRequest{})
			if err != nil {
				t.Fatalf("GetExtendedAgentCard() = %v", err)
			}
			if ext.Name != public.Name || ext.Description != "for our own staff" || len(ext.Skills) != len(public.Skills)+1 || ext.Skills[len(ext.Skills)-1].ID != "audit" {
				t.Errorf("extended card %q %q with %d skills, want the public card's name, the new description and one more skill", ext.Name, ext.Description, len(ext.Skills))
			}
			using := c.Interface()
			if !slices.ContainsFunc(ext.SupportedInterfaces, func(in *a2a.AgentInterface) bool {
				return in.ProtocolBinding == using.ProtocolBinding && in.URL == using.URL
			}) {
				t.Errorf("extended card's interfaces %v do not list the one in use, %v", ext.SupportedInterfaces, using)
			}
		})
	}
}

// Without authentication serve offers no extended card: the card says so, and asking is
// UNSUPPORTED_OPERATION (A2A 1.0 §3.3.4).
func TestServeNoExtendedCardWithoutAuth(t *testing.T) {
	t.Parallel()
	addr := serveWith(t)
	if fetchCard(t, http.DefaultClient, "http://"+addr).Capabilities.ExtendedAgentCard {
		t.Errorf("capabilities.extendedAgentCard = true without authentication")
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/a2a/jsonrpc",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ Error struct{ Code int } }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error.Code != -32004 {
		t.Errorf("GetExtendedAgentCard: error code %d (%v), want -32004 (UNSUPPORTED_OPERATION)", r.Error.Code, err)
	}
}

func TestServeExtendedCardErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	ok := write("ok.json", `{"skills": []}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"without authentication", []string{"-extended-card", ok}, "needs authentication"},
		{"missing file", []string{"-api-key", "k=a", "-extended-card", filepath.Join(dir, "none")}, "no such file"},
		{"a field of the public card", []string{"-api-key", "k=a", "-extended-card", write("name.json", `{"name": "other"}`)}, `unknown field "name"`},
		{"a public skill's id", []string{"-api-key", "k=a", "-extended-card", write("dup.json", `{"skills": [{"id": "echo", "name": "e", "description": "d"}]}`)}, "already has a skill"},
		{"an incomplete skill", []string{"-api-key", "k=a", "-extended-card", write("bad.json", `{"skills": [{"id": "x"}]}`)}, "are required"},
		{"a mode the public card refuses", []string{"-api-key", "k=a", "-extended-card", write("img.json", `{"skills": [{"id": "img", "name": "i", "description": "d", "inputModes": ["image/png"]}]}`)}, "refuse"},
	} {
		cfg, err := parseServe(append([]string{"-addr", "127.0.0.1:0", "-db", "memory", "-agent", "builtin"}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		err = run(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: run() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
