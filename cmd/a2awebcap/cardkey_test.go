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
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/client"
)

// serve -card-key signs its card and publishes the key; the client verifies it before it
// connects, and refuses a key it does not trust.
func TestServeSignedCard(t *testing.T) {
	keyFile := writeCardKey(t, t.TempDir())
	addr := freeAddr(t)
	base := "http://" + addr
	cfg := serveConfig{addr: addr, db: "memory", agent: "builtin", drain: time.Second, noPush: true, cardKey: keyFile, baseURL: base}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() { cancel(); <-done })
	waitUp(t, addr)

	resp, err := http.Get(base + cardJWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	var keys jose.JSONWebKeySet
	err = json.NewDecoder(resp.Body).Decode(&keys)
	resp.Body.Close()
	if err != nil || len(keys.Keys) != 1 {
		t.Fatalf("published key set: %+v, %v", keys, err)
	}
	c, err := client.New(t.Context(), base, &client.Options{VerifyCard: func(card *a2a.AgentCard) error { return auth.VerifyCard(card, &keys) }})
	if err != nil {
		t.Fatalf("client verifying the card with the published key: %v", err)
	}
	_ = c.Destroy()

	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	untrusted := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: other.Public(), KeyID: keys.Keys[0].KeyID, Use: "sig"}}}
	_, err = client.New(t.Context(), base, &client.Options{VerifyCard: func(card *a2a.AgentCard) error { return auth.VerifyCard(card, untrusted) }})
	if !errors.Is(err, auth.ErrCardSignature) {
		t.Errorf("client with an untrusted key: %v, want ErrCardSignature", err)
	}
	if _, _, err := cardSigner(keyFile, ""); err == nil {
		t.Error("-card-key without -base-url: no error")
	}
}

// -trust-keys on the client verbs: card and send go ahead when the card is signed by a trusted
// key, and refuse, saying why, a card signed by another key or not signed at all.
func TestVerbTrustKeys(t *testing.T) {
	dir := t.TempDir()
	keyFile := writeCardKey(t, dir)
	addr := freeAddr(t)
	signed := "http://" + addr
	cfg, err := parseServe([]string{"-addr", addr, "-db", "memory", "-no-push", "-card-key", keyFile, "-base-url", signed})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := starter(t, cfg)()
	t.Cleanup(func() { stop(); <-done })
	unsigned := startServe(t)

	resp, err := http.Get(signed + cardJWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	published, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	trusted := filepath.Join(dir, "trusted.json")
	if err := os.WriteFile(trusted, published, 0o600); err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(published, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("published key set: %s, %v", published, err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	wrong, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: other.Public(), KeyID: set.Keys[0].KeyID, Algorithm: "ES256", Use: "sig"}}})
	wrongFile := filepath.Join(dir, "wrong.json")
	symmetric := filepath.Join(dir, "symmetric.json")
	notJSON := filepath.Join(dir, "not.json")
	for file, data := range map[string]string{wrongFile: string(wrong), symmetric: `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"x"}]}`, notJSON: "keys"} {
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string // "" for success
	}{
		{"card, trusted", []string{"card", signed, "-trust-keys", trusted}, ""},
		{"send, trusted", []string{"send", signed, "-trust-keys", trusted, "echo", "hi"}, ""},
		{"send over jsonrpc, trusted", []string{"send", signed, "-binding", "jsonrpc", "-trust-keys", trusted, "echo", "hi"}, ""},
		{"card, other key", []string{"card", signed, "-trust-keys", wrongFile}, "does not verify"},
		{"send, other key", []string{"send", signed, "-trust-keys", wrongFile, "echo", "hi"}, "does not verify"},
		{"card, unsigned", []string{"card", unsigned, "-trust-keys", trusted}, "not signed"},
		{"send, unsigned", []string{"send", unsigned, "-trust-keys", trusted, "echo", "hi"}, "not signed"},
		{"symmetric key set", []string{"card", signed, "-trust-keys", symmetric}, "no public signing key"},
		{"not a key set", []string{"card", signed, "-trust-keys", notJSON}, "not a JWK set"},
		{"missing file", []string{"card", signed, "-trust-keys", filepath.Join(dir, "none")}, "-trust-keys"},
	} {
		out, err := verb(t, tt.args...)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantErr == "" && out == "":
			t.Errorf("%s: no output", tt.name)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.wantErr)
		case tt.wantErr != "" && out != "":
			t.Errorf("%s: printed %q although the card was refused", tt.name, out)
		}
	}
}

// writeCardKey writes a new P-256 private key as PKCS#8 PEM into dir and returns its file.
func writeCardKey(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "card.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
