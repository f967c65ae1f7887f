package push

// The key that signs deliveries, and the JWKS that publishes it.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/store"
)

// JWKSPath is where the server publishes the public keys that verify its deliveries.
const JWKSPath = "/.well-known/a2a-push-jwks.json"

// keySetting names the signing key in the store (store.Store.LoadOrStore).
const keySetting = "push.signing-key"

// Key is the ES256 key that signs deliveries. It also serves the JWKS (ServeHTTP).
type Key struct {
	jwk    jose.JSONWebKey // private
	signer jose.Signer
	jwks   []byte
}

// NewKey wraps an ECDSA P-256 private key.
func NewKey(priv *ecdsa.PrivateKey) (*Key, error) {
	if priv == nil || priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("push: signing key must be ECDSA P-256 (ES256)")
	}
	jwk := jose.JSONWebKey{Key: priv, Algorithm: string(jose.ES256), Use: "sig"}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("push: key thumbprint: %w", err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk},
		(&jose.SignerOptions{}).WithType(signatureType))
	if err != nil {
		return nil, fmt.Errorf("push: signer: %w", err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	if err != nil {
		return nil, fmt.Errorf("push: jwks: %w", err)
	}
	return &Key{jwk: jwk, signer: signer, jwks: jwks}, nil
}

// LoadKey returns the server's signing key, kept in st: generated and stored on first use, so
// it survives restarts and replicas sharing a store share it.
func LoadKey(ctx context.Context, st store.Store) (*Key, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("push: generate key: %w", err)
	}
	fresh, err := json.Marshal(jose.JSONWebKey{Key: priv})
	if err != nil {
		return nil, fmt.Errorf("push: encode key: %w", err)
	}
	data, err := st.LoadOrStore(ctx, keySetting, fresh)
	if err != nil {
		return nil, err
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("push: stored key: %w", err)
	}
	stored, ok := jwk.Key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("push: stored key is a %T, not an ECDSA private key", jwk.Key)
	}
	return NewKey(stored)
}

// KeyID is the key's ID (its RFC 7638 thumbprint), the "kid" of its signatures.
func (k *Key) KeyID() string { return k.jwk.KeyID }

// ServeHTTP serves the JWKS (the public key) for receivers: mount it at JWKSPath.
func (k *Key) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(k.jwks)
}
