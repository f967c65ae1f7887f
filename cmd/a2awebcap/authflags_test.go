package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/auth"
)

// serve with API keys refuses callers without one, serves callers with one, and says so on
// its card.
func TestServeAPIKeys(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte("# ci\nk-file=bot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-api-key", "k-flag=alice", "-api-keys-file", file})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() { cancel(); <-done })
	waitUp(t, addr)

	card := fetchCard(t, http.DefaultClient, "http://"+addr)
	if got, ok := card.SecuritySchemes["apiKey"].(a2a.APIKeySecurityScheme); !ok || got.Name != "X-API-Key" || len(card.SecurityRequirements) != 1 {
		t.Errorf("card declares %v %v, want the apiKey scheme", card.SecuritySchemes, card.SecurityRequirements)
	}
	for _, tt := range []struct {
		key  string
		want int
	}{{"", 401}, {"wrong", 401}, {"k-flag", 200}, {"k-file", 200}} {
		header := http.Header{"A2A-Version": {"1.0"}}
		if tt.key != "" {
			header.Set("X-API-Key", tt.key)
		}
		resp := listTasks(t, http.DefaultClient, "http://"+addr, header)
		if resp.StatusCode != tt.want {
			t.Errorf("ListTasks with key %q: status %d, want %d", tt.key, resp.StatusCode, tt.want)
		}
	}
}

func TestServeAuthFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badUsers := filepath.Join(dir, "bad-users")
	if err := os.WriteFile(badUsers, []byte("ann-without-hash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plainUsers := filepath.Join(dir, "plain-users")
	if err := os.WriteFile(plainUsers, []byte("ann:not-a-bcrypt-hash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-basic-users-file", filepath.Join(dir, "none")},
		{"-basic-users-file", badUsers},
		{"-basic-users-file", plainUsers},
		{"-introspect-url", "https://as.example/introspect"}, // no client credentials in the environment
		{"-api-key", "no-principal"},
		{"-jwks-url", "https://id.example/jwks"},
		{"-jwt-issuer", "https://id.example", "-jwks-url", "https://id.example/jwks"}, // no audience
		{"-oidc-issuer", "https://a.example", "-jwt-issuer", "https://b.example"},
		{"-jwt-scopes", "a2a"},
	} {
		cfg, err := parseServe(args)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.auth.schemes(t.Context()); err == nil {
			t.Errorf("serve %v: no error", args)
		}
	}
}

// -jwt-issuer with -jwt-scopes and an API key: the card declares both, with the scopes.
func TestServeAuthDeclared(t *testing.T) {
	t.Parallel()
	cfg, err := parseServe([]string{"-jwt-issuer", "https://id.example", "-jwt-audience", "agent",
		"-jwks-url", "https://id.example/jwks", "-jwt-scopes", "a2a, read", "-api-key", "k=bot"})
	if err != nil {
		t.Fatal(err)
	}
	schemes, err := cfg.auth.schemes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var card a2a.AgentCard
	auth.Declare(&card, schemes...)
	want := a2a.SecurityRequirementsOptions{{"bearer": {"a2a", "read"}}, {"apiKey": {}}}
	if diff := cmp.Diff(want, card.SecurityRequirements); diff != "" {
		t.Errorf("declared requirements (-want +got):\n%s", diff)
	}
}

// listTasks posts a JSON-RPC ListTasks with header to the server at base and returns the
// response, its body closed.
func listTasks(t *testing.T, c *http.Client, base string, header http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/a2a/jsonrpc",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`))
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// fetchCard reads the agent card the server at base serves.
func fetchCard(t *testing.T, c *http.Client, base string) a2a.AgentCard {
	t.Helper()
	resp, err := c.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	return card
}
