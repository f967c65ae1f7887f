package evm

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Address is a 20-byte account address.
type Address [20]byte

// ErrAddress: a string that is not an address.
var ErrAddress = errors.New("evm: not an address")

// ParseAddress reads "0x" (or "0X") and 40 hex digits. A mixed-case address must carry a valid
// EIP-55 checksum; all-lower and all-upper ones carry none and are taken as they are.
func ParseAddress(s string) (Address, error) {
	var a Address
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return a, fmt.Errorf("%w: %q: want 0x and 40 hex digits", ErrAddress, s)
	}
	digits := s[2:]
	if _, err := hex.Decode(a[:], []byte(digits)); err != nil {
		return a, fmt.Errorf("%w: %q: %v", ErrAddress, s, err)
	}
	if digits != strings.ToLower(digits) && digits != strings.ToUpper(digits) && a.Hex()[2:] != digits {
		return a, fmt.Errorf("%w: %q: wrong EIP-55 checksum", ErrAddress, s)
	}
	return a, nil
}

// Hex returns the address with its EIP-55 checksum: "0x" and 40 hex digits, a letter in
// upper case where the Keccak-256 of the lower-case digits has a high nibble ≥ 8.
func (a Address) Hex() string {
	lower := hex.EncodeToString(a[:])
	h := Keccak256([]byte(lower))
	out := []byte(lower)
	for i, c := range out {
		if c < 'a' {
			continue
		}
		nibble := h[i/2]
		if i%2 == 0 {
			nibble >>= 4
		}
		if nibble&0xf >= 8 {
			out[i] = c - 'a' + 'A'
		}
	}
	return "0x" + string(out)
}

// String is Hex.
func (a Address) String() string { return a.Hex() }

// IsZero reports whether a is the zero address.
func (a Address) IsZero() bool { return a == Address{} }

// MarshalText writes Hex.
func (a Address) MarshalText() ([]byte, error) { return []byte(a.Hex()), nil }

// UnmarshalText reads what ParseAddress reads.
func (a *Address) UnmarshalText(b []byte) error {
	v, err := ParseAddress(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
