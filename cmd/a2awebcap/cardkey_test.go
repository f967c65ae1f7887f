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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "card.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
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
