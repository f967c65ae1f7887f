package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/internal/jcs"
)

// Signed agent cards (A2A 1.0 §8.4): each of AgentCard.Signatures is a JWS (RFC 7515) with a
// detached payload, in the flattened JSON form without "payload". The payload is the RFC 8785
// canonical JSON of the card without its "signatures" member, so re-encoding the card — other
// key order, whitespace, escapes or number spellings, a round trip through a2a.AgentCard —
// keeps its signatures valid, and changing any field breaks them.

// CardAlgorithms are the JWS algorithms VerifyCard accepts. "none" and the HMAC algorithms
// (HS256…), with which whoever can verify can also sign, are never accepted.
var CardAlgorithms = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}

// maxCardSignatures bounds the signatures VerifyCard tries, so a card cannot make a
// client spend unbounded time verifying.
const maxCardSignatures = 16

var (
	// ErrCardUnsigned: the card has no signatures.
	ErrCardUnsigned = errors.New("auth: agent card is not signed")
	// ErrCardSignature: no signature of the card verifies with the given keys.
	ErrCardSignature = errors.New("auth: agent card signature does not verify")
)

// SignCard appends a signature of card to card.Signatures: a JWS over the canonical card
// without its signatures, with the protected header {"alg", "kid", "typ": "JOSE"} and "jku"
// when jku is not empty (the URL of the JWK set that holds the key; kid names the key in it).
// key is an ECDSA P-256 key (ES256), an Ed25519 key (EdDSA) or an RSA key of at least 2048
// bits (RS256); any crypto.Signer holding one, such as a KMS or HSM handle, will do. Sign the
// card last: any later change invalidates the signature.
func SignCard(card *a2a.AgentCard, key crypto.Signer, kid, jku string) error {
	var alg string
	switch pub := key.Public().(type) {
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() {
			return errors.New("auth: SignCard: ECDSA keys must be P-256 (ES256)")
		}
		alg = "ES256"
	case ed25519.PublicKey:
		alg = "EdDSA"
	case *rsa.PublicKey:
		if pub.N.BitLen() < 2048 {
			return errors.New("auth: SignCard: RSA keys must have at least 2048 bits")
		}
		alg = "RS256"
	default:
		return fmt.Errorf("auth: SignCard: unsupported key type %T", pub)
	}
	payload, err := canonicalCard(card)
	if err != nil {
		return err
	}
	hdr := map[string]string{"alg": alg, "typ": "JOSE"}
	if kid != "" {
		hdr["kid"] = kid
	}
	if jku != "" {
		hdr["jku"] = jku
	}
	hj, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	protected := base64.RawURLEncoding.EncodeToString(hj)
	input := []byte(protected + "." + base64.RawURLEncoding.EncodeToString(payload))

	var sig []byte
	switch alg {
	case "EdDSA":
		sig, err = key.Sign(rand.Reader, input, crypto.Hash(0))
	default:
		digest := sha256.Sum256(input)
		sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err == nil && alg == "ES256" {
			sig, err = rawECDSA(sig, 32)
		}
	}
	if err != nil {
		return fmt.Errorf("auth: SignCard: signing: %w", err)
	}
	card.Signatures = append(card.Signatures, a2a.AgentCardSignature{
		Protected: protected,
		Signature: base64.RawURLEncoding.EncodeToString(sig),
	})
	return nil
}

// rawECDSA turns an ASN.1 ECDSA signature (what crypto.Signer returns) into JWS's r‖s.
func rawECDSA(der []byte, size int) ([]byte, error) {
	var rs struct{ R, S *big.Int }
	if rest, err := asn1.Unmarshal(der, &rs); err != nil || len(rest) != 0 {
		return nil, errors.New("malformed ECDSA signature")
	}
	out := make([]byte, 2*size)
	rs.R.FillBytes(out[:size])
	rs.S.FillBytes(out[size:])
	return out, nil
}

// VerifyCard checks card's signatures against keys: it returns nil when one of them is a JWS
// in an algorithm of CardAlgorithms, signed by a key of keys (the one its "kid" names, or any
// when it names none), over the canonical card without its signatures. Otherwise it returns
// ErrCardUnsigned or an error wrapping ErrCardSignature that says why the first signature
// failed (unknown key, refused algorithm, bad signature — which is also what a card changed
// after signing gives).
//
// keys must come from a source the caller trusts for this agent: VerifyCard does not fetch
// the "jku" a signature names, since whoever can change the card can change that URL too.
func VerifyCard(card *a2a.AgentCard, keys *jose.JSONWebKeySet) error {
	if len(card.Signatures) == 0 {
		return ErrCardUnsigned
	}
	payload, err := canonicalCard(card)
	if err != nil {
		return err
	}
	algs := make([]jose.SignatureAlgorithm, len(CardAlgorithms))
	for i, a := range CardAlgorithms {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	var first error
	for i, s := range card.Signatures {
		if i == maxCardSignatures {
			break
		}
		err := verifyCardSignature(s, payload, keys, algs)
		if err == nil {
			return nil
		}
		if first == nil {
			first = fmt.Errorf("%w: signature %d: %v", ErrCardSignature, i, err)
		}
	}
	return first
}

func verifyCardSignature(s a2a.AgentCardSignature, payload []byte, keys *jose.JSONWebKeySet, algs []jose.SignatureAlgorithm) error {
	jws, err := jose.ParseDetached(s.Protected+".."+s.Signature, payload, algs)
	if err != nil {
		return errors.New("malformed, or an algorithm not accepted")
	}
	hdr := jws.Signatures[0].Protected
	kid := hdr.KeyID
	if kid == "" { // a hint in the unprotected header; the signature still decides
		kid, _ = s.Header["kid"].(string)
	}
	var candidates []jose.JSONWebKey
	if keys != nil {
		if kid != "" {
			candidates = keys.Key(kid)
		} else {
			candidates = keys.Keys
		}
	}
	tried := false
	for _, k := range candidates {
		if !k.Valid() || (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != hdr.Algorithm) {
			continue
		}
		pub := k.Public()
		if pub.Key == nil { // a symmetric key: never for cards
			continue
		}
		tried = true
		if jws.DetachedVerify(payload, pub) == nil {
			return nil
		}
	}
	if !tried {
		return fmt.Errorf("no usable key %q", kid)
	}
	return errors.New("bad signature")
}

// canonicalCard returns what a card signature signs: the RFC 8785 canonical JSON of card
// without its signatures.
func canonicalCard(card *a2a.AgentCard) ([]byte, error) {
	c := *card
	c.Signatures = nil
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("auth: encoding the agent card: %w", err)
	}
	out, err := jcs.Canonicalize(b)
	if err != nil {
		return nil, fmt.Errorf("auth: canonicalizing the agent card: %v", err)
	}
	return out, nil
}
