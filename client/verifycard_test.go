package client_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// Options.VerifyCard with auth.VerifyCard: a card signed by the trusted key connects; with
// another key set, or from an unsigned server, New fails before connecting.
func TestVerifyCard(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	trusted := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "card"}}}
	untrusted := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: other.Public(), KeyID: "card"}}}
	signed := a2atest.Start(t, &a2atest.Options{HTTP: &binding.Options{
		CardSigner: func(c *a2a.AgentCard) error { return auth.SignCard(c, key, "card", "") },
	}})
	unsigned := a2atest.Start(t, nil)

	tests := []struct {
		name string
		srv  *a2atest.Server
		keys *jose.JSONWebKeySet
		want error // nil: connects
	}{
		{"signed, trusted key", signed, trusted, nil},
		{"signed, other key", signed, untrusted, auth.ErrCardSignature},
		{"unsigned", unsigned, trusted, auth.ErrCardUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := client.New(t.Context(), tt.srv.URL, &client.Options{
				VerifyCard: func(card *a2a.AgentCard) error { return auth.VerifyCard(card, tt.keys) },
			})
			if c != nil {
				t.Cleanup(func() { _ = c.Destroy() })
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("client.New() error = %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				return
			}
			if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "missing"}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("GetTask(missing) over a verified client = %v, want ErrTaskNotFound", err)
			}
		})
	}
}
