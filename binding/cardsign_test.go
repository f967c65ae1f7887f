package binding_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/auth"
	"github.com/a2awebcap/a2awebcap/binding"
)

// The served card carries the CardSigner's signature, and it verifies after the client's
// decoding — in the 1.0 shape and in a2av0's union shape.
func TestCardSigner(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "card"}}}
	for _, serve03 := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(nil)
		base := "http://" + srv.Listener.Addr().String()
		card := &a2a.AgentCard{
			Name: "signed", Version: "1.0.0", Description: "a <signed> card",
			Capabilities: a2a.AgentCapabilities{Streaming: true, Extensions: []a2a.AgentExtension{{URI: "urn:x", Params: map[string]any{"n": 1.50}}}},
			Skills:       []a2a.AgentSkill{{ID: "greet", Name: "Greet", Description: "says hello"}},
			Provider:     &a2a.AgentProvider{Org: "Example", URL: "https://example.org"},
		}
		calls := 0
		srv.Config.Handler = binding.NewHTTPHandler(a2asrv.NewHandler(greeter{}), card, &binding.Options{
			BaseURL: base,
			Serve03: serve03,
			CardSigner: func(c *a2a.AgentCard) error {
				calls++
				for _, in := range c.SupportedInterfaces {
					if !strings.HasPrefix(in.URL, base) {
						t.Errorf("CardSigner saw interface URL %q, want it under %s", in.URL, base)
					}
				}
				return auth.SignCard(c, key, "card", base+"/jwks.json")
			},
		})
		srv.Start()
		t.Cleanup(srv.Close)
		if calls != 1 {
			t.Errorf("CardSigner called %d times, want 1", calls)
		}
		if len(card.Signatures) != 0 {
			t.Errorf("caller's card got %d signatures, want 0", len(card.Signatures))
		}
		got, err := agentcard.NewResolver(nil).Resolve(t.Context(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if err := auth.VerifyCard(got, keys); err != nil {
			t.Errorf("Serve03=%v: VerifyCard(served card) = %v, want nil", serve03, err)
		}
	}
}

func TestCardSignerNeedsBaseURL(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "BaseURL") {
			t.Errorf("NewHTTPHandler(CardSigner, no BaseURL) panic = %v, want one naming BaseURL", r)
		}
	}()
	binding.NewHTTPHandler(a2asrv.NewHandler(greeter{}), &a2a.AgentCard{Name: "x"}, &binding.Options{
		CardSigner: func(*a2a.AgentCard) error { return nil },
	})
}
