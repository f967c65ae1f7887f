package auth

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testIssuer is an OpenID provider on loopback: it mints RS256 tokens and serves its key set
// and discovery document.
type testIssuer struct {
	srv     *httptest.Server
	fetches atomic.Int32 // key set fetches

	mu   sync.Mutex
	key  *rsa.PrivateKey
	kid  string
	keys []jose.JSONWebKey // the published set
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	iss := &testIssuer{}
	iss.rotate(t, "k1", false)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		iss.fetches.Add(1)
		iss.mu.Lock()
		set := jose.JSONWebKeySet{Keys: iss.keys}
		iss.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	mux.HandleFunc("GET "+DiscoveryPath, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/jwks"})
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// rotate makes a new signing key kid; keep says whether the old ones stay published.
func (iss *testIssuer) rotate(t testing.TB, kid string, keep bool) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.key, iss.kid = k, kid
	pub := jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}
	if keep {
		iss.keys = append(iss.keys, pub)
	} else {
		iss.keys = []jose.JSONWebKey{pub}
	}
}

// claims are a token's standard claims for principal sub, valid now for an hour.
func (iss *testIssuer) claims(sub string) jwt.Claims {
	now := time.Now()
	return jwt.Claims{
		Issuer: iss.srv.URL, Subject: sub, Audience: jwt.Audience{"agent"},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour)),
	}
}

// mint signs claims (and extra ones) with the current key.
func (iss *testIssuer) mint(t testing.TB, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	iss.mu.Lock()
	key, kid := iss.key, iss.kid
	iss.mu.Unlock()
	return sign(t, jose.RS256, key, kid, c, extra)
}

func sign(t testing.TB, alg jose.SignatureAlgorithm, key crypto.PrivateKey, kid string, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	b := jwt.Signed(signer).Claims(c)
	if extra != nil {
		b = b.Claims(extra)
	}
	tok, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jwtScheme is a JWT scheme trusting iss, for audience "agent".
func (iss *testIssuer) jwtScheme(t testing.TB, opts *JWTOptions) *JWT {
	t.Helper()
	o := JWTOptions{}
	if opts != nil {
		o = *opts
	}
	o.Issuer, o.JWKSURL = iss.srv.URL, iss.srv.URL+"/jwks"
	o.Audience = "agent"
	s, err := NewJWT("bearer", &o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bearerHeader(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func newKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
