package evm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// PrivateKey is a secp256k1 private key. It is safe for concurrent use.
type PrivateKey struct {
	k    *secp256k1.PrivateKey
	addr Address
}

// GenerateKey returns a new random key.
func GenerateKey() (*PrivateKey, error) {
	k, err := secp256k1.GeneratePrivateKeyFromRand(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("evm: generating a key: %w", err)
	}
	return newKey(k), nil
}

// ParsePrivateKey reads a key as 64 hex digits, with or without "0x". Zero and values not
// below the curve order are refused.
func ParsePrivateKey(s string) (*PrivateKey, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return nil, errors.New("evm: a private key is 32 bytes in hex")
	}
	return PrivateKeyFromBytes(b)
}

// PrivateKeyFromBytes makes a key of 32 big-endian bytes, refusing zero and values not below
// the curve order.
func PrivateKeyFromBytes(b []byte) (*PrivateKey, error) {
	var s secp256k1.ModNScalar
	if len(b) != 32 || s.SetByteSlice(b) || s.IsZero() {
		return nil, errors.New("evm: a private key is 32 bytes, not zero, below the curve order")
	}
	return newKey(secp256k1.NewPrivateKey(&s)), nil
}

func newKey(k *secp256k1.PrivateKey) *PrivateKey {
	return &PrivateKey{k: k, addr: pubAddress(k.PubKey())}
}

// pubAddress is the address of a public key: the last 20 bytes of the Keccak-256 of its
// uncompressed encoding without the 0x04 prefix.
func pubAddress(p *secp256k1.PublicKey) Address {
	h := Keccak256(p.SerializeUncompressed()[1:])
	var a Address
	copy(a[:], h[12:])
	return a
}

// Address returns the key's account address.
func (k *PrivateKey) Address() Address { return k.addr }

// Sign signs a 32-byte digest (a hash, never a message) and returns 65 bytes: r, s (low, as
// EIP-2 requires) and v = 27 + the recovery id. The nonce is deterministic (RFC 6979).
func (k *PrivateKey) Sign(digest [32]byte) []byte {
	c := ecdsa.SignCompact(k.k, digest[:], false) // [27+recid] r s
	sig := make([]byte, 65)
	copy(sig, c[1:])
	sig[64] = c[0]
	return sig
}

// ErrSignature: a signature that is malformed or that recovers no key.
var ErrSignature = errors.New("evm: invalid signature")

// Recover returns the address whose key made sig (65 bytes r‖s‖v, v 27 or 28, or 0 or 1) over
// digest. It refuses a high s (the other of the two valid signatures for every (r, s), which
// EIP-2 rules out) and r or s out of range; any other signature recovers some address, which
// the caller compares with the one it expects.
func Recover(digest [32]byte, sig []byte) (Address, error) {
	if len(sig) != 65 {
		return Address{}, fmt.Errorf("%w: %d bytes, want 65", ErrSignature, len(sig))
	}
	v := sig[64]
	if v < 27 {
		v += 27
	}
	if v != 27 && v != 28 {
		return Address{}, fmt.Errorf("%w: v = %d", ErrSignature, sig[64])
	}
	var r, s secp256k1.ModNScalar
	if r.SetByteSlice(sig[:32]) || r.IsZero() || s.SetByteSlice(sig[32:64]) || s.IsZero() {
		return Address{}, fmt.Errorf("%w: r or s out of range", ErrSignature)
	}
	if s.IsOverHalfOrder() {
		return Address{}, fmt.Errorf("%w: s is not low (EIP-2)", ErrSignature)
	}
	compact := make([]byte, 65)
	compact[0] = v
	copy(compact[1:], sig[:64])
	pub, _, err := ecdsa.RecoverCompact(compact, digest[:])
	if err != nil {
		return Address{}, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	return pubAddress(pub), nil
}
