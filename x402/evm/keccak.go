package evm

import "golang.org/x/crypto/sha3"

// Keccak256 returns the Keccak-256 hash of the concatenation of data: Ethereum's hash, which
// pads differently from SHA3-256.
func Keccak256(data ...[]byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	for _, d := range data {
		h.Write(d)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
