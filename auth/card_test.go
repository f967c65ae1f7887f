package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// signedCard returns a card signed by a fresh P-256 key "k1" and the key set that verifies it.
func signedCard(t *testing.T) (*a2a.AgentCard, *jose.JSONWebKeySet) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	card := cardFixture()
	if err := SignCard(card, key, "k1", "https://agent.example/jwks.json"); err != nil {
		t.Fatalf("SignCard() error: %v", err)
	}
	return card, &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: "ES256", Use: "sig"}}}
}

func cardFixture() *a2a.AgentCard {
	card := a2atest.Card()
	card.SupportedInterfaces = append(card.SupportedInterfaces,
		&a2a.AgentInterface{URL: "https://agent.example/a2a", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version})
	card.Capabilities.Extensions = append(card.Capabilities.Extensions, a2a.AgentExtension{
		URI:    "https://ext.example/v1",
		Params: map[string]any{"ratio": 4.50, "big": 1e30, "text": "<é\u2028>", "z": nil, "a": []any{1.0, "x"}},
	})
	return card
}

func TestSignCardVerify(t *testing.T) {
	t.Parallel()
	card, keys := signedCard(t)
	if err := VerifyCard(card, keys); err != nil {
		t.Fatalf("VerifyCard(signed) = %v, want nil", err)
	}
	var hdr map[string]string
	b, _ := base64.RawURLEncoding.DecodeString(card.Signatures[0].Protected)
	if err := json.Unmarshal(b, &hdr); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"alg": "ES256", "kid": "k1", "typ": "JOSE", "jku": "https://agent.example/jwks.json"}
	if len(hdr) != len(want) {
		t.Errorf("protected header = %v, want %v", hdr, want)
	}
	for k, v := range want {
		if hdr[k] != v {
			t.Errorf("protected header = %v, want %v", hdr, want)
		}
	}
}

func TestSignCardKeyTypes(t *testing.T) {
	t.Parallel()
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []crypto.Signer{edKey, rsaKey} {
		card := cardFixture()
		if err := SignCard(card, key, "k", ""); err != nil {
			t.Fatalf("SignCard(%T) error: %v", key, err)
		}
		keys := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k"}}}
		if err := VerifyCard(card, keys); err != nil {
			t.Errorf("VerifyCard(signed with %T) = %v, want nil", key, err)
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err := SignCard(cardFixture(), p384, "k", ""); err == nil {
		t.Error("SignCard(P-384 key) = nil, want an error")
	}
}

func TestVerifyCardTampered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*a2a.AgentCard)
	}{
		{"name", func(c *a2a.AgentCard) { c.Name += "!" }},
		{"interface URL", func(c *a2a.AgentCard) {
			in := *c.SupportedInterfaces[0]
			in.URL = "https://evil.example/a2a"
			c.SupportedInterfaces[0] = &in
		}},
		{"interface added", func(c *a2a.AgentCard) {
			c.SupportedInterfaces = append(c.SupportedInterfaces, &a2a.AgentInterface{URL: "https://evil.example", ProtocolBinding: a2a.TransportProtocolJSONRPC})
		}},
		{"capability", func(c *a2a.AgentCard) { c.Capabilities.PushNotifications = !c.Capabilities.PushNotifications }},
		{"extension param", func(c *a2a.AgentCard) {
			c.Capabilities.Extensions = append([]a2a.AgentExtension(nil), c.Capabilities.Extensions...)
			last := &c.Capabilities.Extensions[len(c.Capabilities.Extensions)-1]
			last.Params = map[string]any{"ratio": 4.51}
		}},
		{"signature swapped", func(c *a2a.AgentCard) {
			s := c.Signatures[0]
			sig, _ := base64.RawURLEncoding.DecodeString(s.Signature)
			sig[0] ^= 1
			c.Signatures = []a2a.AgentCardSignature{{Protected: s.Protected, Signature: base64.RawURLEncoding.EncodeToString(sig)}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			card, keys := signedCard(t)
			tt.change(card)
			if err := VerifyCard(card, keys); !errors.Is(err, ErrCardSignature) {
				t.Errorf("VerifyCard(tampered %s) = %v, want ErrCardSignature", tt.name, err)
			}
		})
	}
}

// The signature covers the canonical card: another key order, indentation and a round trip
// through a2a.AgentCard keep it valid.
func TestVerifyCardReencoded(t *testing.T) {
	t.Parallel()
	card, keys := signedCard(t)
	b, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any // re-encoded with sorted keys, unlike the struct's order
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	b2, err := json.MarshalIndent(generic, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	var back a2a.AgentCard
	if err := json.Unmarshal(b2, &back); err != nil {
		t.Fatal(err)
	}
	if err := VerifyCard(&back, keys); err != nil {
		t.Errorf("VerifyCard(re-encoded card) = %v, want nil", err)
	}
	want, _ := canonicalCard(card)
	got, _ := canonicalCard(&back)
	if string(got) != string(want) {
		t.Errorf("canonical form changed by a round trip:\n%s\nwant\n%s", got, want)
	}
}

func TestVerifyCardRefusals(t *testing.T) {
	t.Parallel()
	card, keys := signedCard(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	payload, err := canonicalCard(card)
	if err != nil {
		t.Fatal(err)
	}
	forge := func(hdr string, key []byte) a2a.AgentCardSignature {
		p := base64.RawURLEncoding.EncodeToString([]byte(hdr))
		var sig []byte
		if key != nil {
			m := hmac.New(sha256.New, key)
			m.Write([]byte(p + "." + base64.RawURLEncoding.EncodeToString(payload)))
			sig = m.Sum(nil)
		}
		return a2a.AgentCardSignature{Protected: p, Signature: base64.RawURLEncoding.EncodeToString(sig)}
	}
	secret := []byte("0123456789abcdef0123456789abcdef")
	withHMAC := &jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey{{Key: secret, KeyID: "h"}}, keys.Keys...)}

	tests := []struct {
		name string
		sigs []a2a.AgentCardSignature
		keys *jose.JSONWebKeySet
		want error
	}{
		{"unsigned", nil, keys, ErrCardUnsigned},
		{"wrong key", card.Signatures, &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: other.Public(), KeyID: "k1"}}}, ErrCardSignature},
		{"unknown kid", card.Signatures, &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: keys.Keys[0].Key, KeyID: "k2"}}}, ErrCardSignature},
		{"no keys", card.Signatures, nil, ErrCardSignature},
		{"alg none", []a2a.AgentCardSignature{forge(`{"alg":"none","kid":"k1"}`, nil)}, keys, ErrCardSignature},
		{"HS256 with an HMAC key", []a2a.AgentCardSignature{forge(`{"alg":"HS256","kid":"h"}`, secret)}, withHMAC, ErrCardSignature},
		{"key for another alg", card.Signatures, &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: keys.Keys[0].Key, KeyID: "k1", Algorithm: "ES384"}}}, ErrCardSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := *card
			c.Signatures = tt.sigs
			if err := VerifyCard(&c, tt.keys); !errors.Is(err, tt.want) {
				t.Errorf("VerifyCard() = %v, want %v", err, tt.want)
			}
		})
	}

	// A forged signature does not hide a good one after it.
	c := *card
	c.Signatures = append([]a2a.AgentCardSignature{forge(`{"alg":"none"}`, nil)}, card.Signatures...)
	if err := VerifyCard(&c, keys); err != nil {
		t.Errorf("VerifyCard(forged, then good) = %v, want nil", err)
	}
}

// VerifyCard never panics nor accepts a signature it did not check, whatever the card holds.
func FuzzVerifyCard(f *testing.F) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1"}}}
	card := cardFixture()
	if err := SignCard(card, key, "k1", ""); err != nil {
		f.Fatal(err)
	}
	good := card.Signatures[0]
	f.Add(good.Protected, good.Signature, "k1")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)), "", "")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"k1"}`)), good.Signature, "k1")
	f.Fuzz(func(t *testing.T, protected, signature, kid string) {
		c := cardFixture()
		c.Signatures = []a2a.AgentCardSignature{{Protected: protected, Signature: signature, Header: map[string]any{"kid": kid}}}
		err := VerifyCard(c, keys)
		same := func(a, b string) bool { // base64url ignores the unused bits of the last character
			x, _ := base64.RawURLEncoding.DecodeString(a)
			y, _ := base64.RawURLEncoding.DecodeString(b)
			return string(x) == string(y)
		}
		if err == nil && (!same(protected, good.Protected) || !same(signature, good.Signature)) {
			// ECDSA signatures are not unique, but a forger without the key cannot find another.
			t.Fatalf("VerifyCard accepted protected=%q signature=%q", protected, signature)
		}
	})
}
