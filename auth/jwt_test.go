package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
)

func TestJWT(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	s := iss.jwtScheme(t, &JWTOptions{Scopes: []string{"a2a"}})
	hour := time.Hour
	with := func(f func(c *jwt.Claims)) jwt.Claims {
		c := iss.claims("alice")
		f(&c)
		return c
	}
	scoped := map[string]any{"scope": "a2a read"}
	tests := []struct {
		name  string
		token string
		want  error // nil: accepted as alice
		cause error
	}{
		{name: "valid", token: iss.mint(t, iss.claims("alice"), scoped)},
		{name: "scp array", token: iss.mint(t, iss.claims("alice"), map[string]any{"scp": []string{"a2a"}})},
		{name: "within clock skew", token: iss.mint(t, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(time.Now().Add(-20 * time.Second)) }), scoped)},
		{name: "expired", token: iss.mint(t, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(time.Now().Add(-hour)) }), scoped), want: a2a.ErrUnauthenticated, cause: jwt.ErrExpired},
		{name: "no expiry", token: iss.mint(t, with(func(c *jwt.Claims) { c.Expiry = nil }), scoped), want: a2a.ErrUnauthenticated, cause: jwt.ErrExpired},
		{name: "not yet valid", token: iss.mint(t, with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(hour)) }), scoped), want: a2a.ErrUnauthenticated, cause: jwt.ErrNotValidYet},
		{name: "wrong issuer", token: iss.mint(t, with(func(c *jwt.Claims) { c.Issuer = "https://evil.example" }), scoped), want: a2a.ErrUnauthenticated, cause: jwt.ErrInvalidIssuer},
		{name: "wrong audience", token: iss.mint(t, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"other-agent"} }), scoped), want: a2a.ErrUnauthenticated, cause: jwt.ErrInvalidAudience},
		{name: "no subject", token: iss.mint(t, with(func(c *jwt.Claims) { c.Subject = "" }), scoped), want: a2a.ErrUnauthenticated},
		{name: "missing scope", token: iss.mint(t, iss.claims("alice"), map[string]any{"scope": "read"}), want: a2a.ErrUnauthorized},
		{name: "alg none", token: unsigned(t, "none", iss.claims("alice"), scoped), want: a2a.ErrUnauthenticated},
		{name: "HS256 with the RSA public key as secret", token: confused(t, iss, iss.claims("alice"), scoped), want: a2a.ErrUnauthenticated},
		{name: "tampered signature", token: tamper(iss.mint(t, iss.claims("alice"), scoped)), want: a2a.ErrUnauthenticated},
		{name: "tampered payload", token: swapPayload(iss.mint(t, iss.claims("alice"), scoped), iss.mint(t, iss.claims("mallory"), scoped)), want: a2a.ErrUnauthenticated},
		{name: "self-signed, unknown key", token: selfSigned(t, iss.claims("alice"), scoped), want: a2a.ErrUnauthenticated, cause: errUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, err := s.Authenticate(t.Context(), bearerHeader(tt.token))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Authenticate() = %v, want alice", err)
				}
				if u.Name != "alice" || !u.Authenticated || !strings.Contains(strings.Join(u.Attributes[AttrScopes].([]string), " "), "a2a") {
					t.Errorf("Authenticate() = %+v, want alice with scope a2a", u)
				}
				return
			}
			if !errors.Is(err, tt.want) || (tt.cause != nil && !errors.Is(err, tt.cause)) {
				t.Errorf("Authenticate() = %v, want %v (cause %v)", err, tt.want, tt.cause)
			}
			if err != nil && strings.Contains(err.Error(), "go-jose") {
				t.Errorf("Authenticate() = %q: library detail on the wire", err)
			}
		})
	}
}

// A token signed by a key the cached set does not hold refetches the set, so a rotated key
// works at once; made-up key IDs do not refetch more than once per KeyMinRefresh.
func TestJWTKeyRotation(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	s := iss.jwtScheme(t, &JWTOptions{KeyMinRefresh: time.Hour})
	auth := func(tok string) error { _, err := s.Authenticate(t.Context(), bearerHeader(tok)); return err }
	if err := auth(iss.mint(t, iss.claims("alice"), nil)); err != nil {
		t.Fatalf("before rotation: %v", err)
	}
	iss.rotate(t, "k2", true)
	// KeyMinRefresh is an hour: pretend the last fetch was longer ago.
	s.keys.mu.Lock()
	s.keys.fetched = s.keys.fetched.Add(-2 * time.Hour)
	s.keys.mu.Unlock()
	if err := auth(iss.mint(t, iss.claims("alice"), nil)); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if got := iss.fetches.Load(); got != 2 {
		t.Errorf("key set fetched %d times, want 2", got)
	}
	for range 5 {
		if err := auth(selfSigned(t, iss.claims("alice"), nil)); !errors.Is(err, errUnknownKey) {
			t.Errorf("unknown kid: %v, want errUnknownKey", err)
		}
	}
	if got := iss.fetches.Load(); got != 2 {
		t.Errorf("key set fetched %d times after unknown kids, want 2 (rate-limited)", got)
	}
}

// An expired key set is fetched again; a retired key stops working.
func TestJWTKeySetExpiry(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	s := iss.jwtScheme(t, &JWTOptions{KeyMinRefresh: time.Hour})
	old := iss.mint(t, iss.claims("alice"), nil)
	if _, err := s.Authenticate(t.Context(), bearerHeader(old)); err != nil {
		t.Fatal(err)
	}
	iss.rotate(t, "k2", false)
	s.keys.mu.Lock()
	s.keys.expires = time.Now().Add(-time.Second) // KeyTTL has passed
	s.keys.mu.Unlock()
	if _, err := s.Authenticate(t.Context(), bearerHeader(old)); !errors.Is(err, errUnknownKey) {
		t.Errorf("retired key after expiry: %v, want errUnknownKey", err)
	}
	if _, err := s.Authenticate(t.Context(), bearerHeader(iss.mint(t, iss.claims("alice"), nil))); err != nil {
		t.Errorf("new key: %v", err)
	}
}

// Many requests naming an unknown key at once cause one fetch, not one each.
func TestJWTConcurrentFetch(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	s := iss.jwtScheme(t, nil)
	tok := selfSigned(t, iss.claims("alice"), nil)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := s.Authenticate(t.Context(), bearerHeader(tok)); !errors.Is(err, errUnknownKey) {
				t.Errorf("Authenticate() = %v, want errUnknownKey", err)
			}
		})
	}
	wg.Wait()
	if got := iss.fetches.Load(); got != 1 {
		t.Errorf("key set fetched %d times, want 1", got)
	}
}

// The key set endpoint failing leaves the keys held in use.
func TestJWTKeySetOutage(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	s := iss.jwtScheme(t, nil)
	tok := iss.mint(t, iss.claims("alice"), nil)
	if _, err := s.Authenticate(t.Context(), bearerHeader(tok)); err != nil {
		t.Fatal(err)
	}
	iss.srv.Close()
	s.keys.mu.Lock()
	s.keys.expires = time.Now().Add(-time.Second)
	s.keys.mu.Unlock()
	if _, err := s.Authenticate(t.Context(), bearerHeader(tok)); err != nil {
		t.Errorf("during an outage: %v, want the held key to verify", err)
	}

	fresh := iss.jwtScheme(t, nil) // never fetched: nothing to fall back on
	if _, err := fresh.Authenticate(t.Context(), bearerHeader(tok)); !errors.Is(err, a2a.ErrUnauthenticated) || errors.Is(err, errUnknownKey) {
		t.Errorf("no keys ever fetched: %v, want UNAUTHENTICATED (cannot verify)", err)
	}
}

func TestNewJWTRefusesSymmetricAlgorithms(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"HS256", "none", "RSA1_5"} {
		_, err := NewJWT("b", &JWTOptions{Issuer: "https://i", Audience: "a", JWKSURL: "https://i/jwks", Algorithms: []string{alg}})
		if err == nil {
			t.Errorf("NewJWT(Algorithms: %s) = nil error", alg)
		}
	}
	if _, err := NewJWT("b", &JWTOptions{Issuer: "https://i", Audience: "a", JWKSURL: "http://keys.example/jwks"}); err == nil {
		t.Error("NewJWT(http JWKS URL off loopback) = nil error")
	}
}

func TestOIDCDiscovery(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	s, err := NewOIDC(t.Context(), "oidc", &JWTOptions{Issuer: iss.srv.URL, Audience: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Authenticate(t.Context(), bearerHeader(iss.mint(t, iss.claims("alice"), nil)))
	if err != nil || u.Name != "alice" {
		t.Fatalf("Authenticate() = %v, %v; want alice", u, err)
	}
	var card a2a.AgentCard
	Declare(&card, s)
	want := a2a.NamedSecuritySchemes{"oidc": a2a.OpenIDConnectSecurityScheme{OpenIDConnectURL: iss.srv.URL + DiscoveryPath}}
	if diff := cmp.Diff(want, card.SecuritySchemes); diff != "" {
		t.Errorf("Declare() schemes (-want +got):\n%s", diff)
	}
	if _, err := NewOIDC(t.Context(), "oidc", &JWTOptions{Issuer: iss.srv.URL + "/other", Audience: "agent"}); err == nil {
		t.Error("NewOIDC(issuer the document does not name) = nil error")
	}
}

// unsigned is a token with header alg and no signature.
func unsigned(t testing.TB, alg string, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	tok := sign(t, jose.HS256, make([]byte, 32), "k1", c, extra)
	parts := strings.Split(tok, ".")
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"` + alg + `","kid":"k1","typ":"JWT"}`))
	return hdr + "." + parts[1] + "."
}

// confused is the algorithm-confusion attack: HS256 keyed with the issuer's public key (PEM,
// as a naive verifier would read it).
func confused(t testing.TB, iss *testIssuer, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	iss.mu.Lock()
	pub := &iss.key.PublicKey
	iss.mu.Unlock()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	body := strings.Split(sign(t, jose.HS256, make([]byte, 32), "k1", c, extra), ".")[1]
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"k1","typ":"JWT"}`))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(hdr + "." + body))
	return hdr + "." + body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// tamper flips a bit of the signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sig[0] ^= 1
	return parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// swapPayload puts the payload of other under the signature of tok.
func swapPayload(tok, other string) string {
	a, b := strings.Split(tok, "."), strings.Split(other, ".")
	return a[0] + "." + b[1] + "." + a[2]
}

// selfSigned is a token signed by a key of the attacker's, with a kid the issuer never used.
func selfSigned(t testing.TB, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	other := newKey(t)
	return sign(t, jose.RS256, other, "attacker", c, extra)
}
