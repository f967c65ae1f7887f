// Package evm is the little of Ethereum that x402's "exact" scheme needs, without a chain:
// Keccak-256, addresses (EIP-55 checksums), secp256k1 keys that sign the way Ethereum does
// (65-byte r‖s‖v signatures, low s, deterministic nonces per RFC 6979), recovery of the signer's
// address from a signature, and EIP-712 typed-data hashing.
//
//	key, _ := evm.ParsePrivateKey("0x…")
//	digest, _ := td.Hash()             // td is an evm.TypedData: types, primary type, domain, message
//	sig := key.Sign(digest)            // 65 bytes: r, s, v (27 or 28)
//	who, err := evm.Recover(digest, sig) // == key.Address()
//
// Curve arithmetic is github.com/decred/dcrd/dcrec/secp256k1/v4; Keccak-256 is the legacy
// (pre-SHA-3 padding) Keccak of golang.org/x/crypto/sha3.
package evm
