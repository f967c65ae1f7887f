package main

// Signing the agent card: -card-key names a PEM private key; the card is signed with it and the
// public key is published as a JWK set beside the card.

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/auth"
)

// cardJWKSPath is where serve publishes the key that signs its card.
const cardJWKSPath = "/.well-known/a2a-card-jwks.json"

// cardSigner reads the PEM private key (PKCS#8, SEC 1 EC or PKCS#1 RSA) at path and returns a
// signer for binding.Options.CardSigner and the JWK set to publish at cardJWKSPath.
func cardSigner(path, baseURL string) (func(*a2a.AgentCard) error, http.Handler, error) {
	if baseURL == "" {
		return nil, nil, errors.New("-card-key needs -base-url: a signed card must name a fixed origin")
	}
	signer, err := readSigningKey("-card-key", path)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("-card-key: %w", err)
	}
	sum := sha256.Sum256(pub)
	kid := hex.EncodeToString(sum[:8])
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: signer.Public(), KeyID: kid, Use: "sig"}}})
	if err != nil {
		return nil, nil, fmt.Errorf("-card-key: %w", err)
	}
	jku := baseURL + cardJWKSPath
	sign := func(c *a2a.AgentCard) error { return auth.SignCard(c, signer, kid, jku) }
	publish := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(jwks)
	})
	return sign, publish, nil
}

// readSigningKey reads the PEM private key (PKCS#8, SEC 1 EC or PKCS#1 RSA) at path, for the
// flag named flagName.
func readSigningKey(flagName, path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block in %s", flagName, path)
	}
	var key any
	if key, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if key, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
			if key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
				return nil, fmt.Errorf("%s: %s holds no PKCS#8, EC or RSA private key", flagName, path)
			}
		}
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: %T cannot sign", flagName, key)
	}
	return signer, nil
}

// readTrustedKeys reads the JWK set at path, for the flag named flagName, keeping its public
// signing keys: a symmetric key verifies whatever its holders sign.
func readTrustedKeys(flagName, path string) (*jose.JSONWebKeySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("%s %s: not a JWK set: %w", flagName, path, err)
	}
	var keys jose.JSONWebKeySet
	for _, k := range set.Keys {
		if k.Valid() && k.IsPublic() && k.Use != "enc" {
			keys.Keys = append(keys.Keys, k.Public())
		}
	}
	if len(keys.Keys) == 0 {
		return nil, fmt.Errorf("%s %s: no public signing key in the set", flagName, path)
	}
	return &keys, nil
}

// trustedCardVerifier reads the JWK set at path (-trust-keys) and returns the check a client
// verb runs on the agent card: it must carry a signature by one of those keys.
func trustedCardVerifier(path string) (func(*a2a.AgentCard) error, error) {
	keys, err := readTrustedKeys("-trust-keys", path)
	if err != nil {
		return nil, err
	}
	return func(card *a2a.AgentCard) error {
		switch err := auth.VerifyCard(card, keys); {
		case errors.Is(err, auth.ErrCardUnsigned):
			return fmt.Errorf("the agent card is not signed, and -trust-keys requires a signature: %w", err)
		case err != nil:
			return fmt.Errorf("the agent card's signature does not verify with a -trust-keys key: %w", err)
		}
		return nil
	}, nil
}
