package evm_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// mail is the example of the EIP-712 specification (eips.ethereum.org/EIPS/eip-712, its
// Example.js): the "Ether Mail" domain and a Mail from Cow to Bob.
func mail() *evm.TypedData {
	return &evm.TypedData{
		Types: evm.Types{
			"EIP712Domain": {{"name", "string"}, {"version", "string"}, {"chainId", "uint256"}, {"verifyingContract", "address"}},
			"Person":       {{"name", "string"}, {"wallet", "address"}},
			"Mail":         {{"from", "Person"}, {"to", "Person"}, {"contents", "string"}},
		},
		PrimaryType: "Mail",
		Domain: map[string]any{
			"name": "Ether Mail", "version": "1", "chainId": float64(1),
			"verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
		},
		Message: map[string]any{
			"from":     map[string]any{"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
			"to":       map[string]any{"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
			"contents": "Hello, Bob!",
		},
	}
}

func hexOf(b []byte) string { return "0x" + hex.EncodeToString(b) }

// TestMailVectors checks every intermediate value the EIP-712 specification gives for its
// example, and the signature of it with the key keccak256("cow").
func TestMailVectors(t *testing.T) {
	t.Parallel()
	td := mail()
	enc, err := evm.EncodeType(td.Types, "Mail")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Mail(Person from,Person to,string contents)Person(string name,address wallet)"; enc != want {
		t.Errorf("EncodeType(Mail) = %q, want %q", enc, want)
	}
	th, _ := evm.TypeHash(td.Types, "Mail")
	check := func(name string, got [32]byte, err error, want string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if hexOf(got[:]) != want {
			t.Errorf("%s = %s, want %s", name, hexOf(got[:]), want)
		}
	}
	check("typeHash(Mail)", th, nil, "0xa0cedeb2dc280ba39b857546d74f5549c3a1d7bdc2dd96bf881f76108e23dac2")
	h, err := evm.HashStruct(td.Types, "Mail", td.Message)
	check("hashStruct(message)", h, err, "0xc52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e")
	sep, err := td.DomainSeparator()
	check("domainSeparator", sep, err, "0xf2cee375fa42b42143804025fc449deafd50cc031ca257e0b194a650a912090f")
	digest, err := td.Hash()
	check("digest", digest, err, "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2")

	cow := evm.Keccak256([]byte("cow"))
	if got, want := hexOf(cow[:]), "0xc85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4"; got != want {
		t.Errorf("keccak256(cow) = %s, want %s", got, want)
	}
	key, err := evm.PrivateKeyFromBytes(cow[:])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := key.Address().Hex(), "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"; got != want {
		t.Errorf("address of keccak256(cow) = %s, want %s", got, want)
	}
	sig := key.Sign(digest)
	const wantSig = "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b915621c"
	if hexOf(sig) != wantSig {
		t.Errorf("Sign(digest) = %s, want %s", hexOf(sig), wantSig)
	}
	who, err := evm.Recover(digest, sig)
	if err != nil || who != key.Address() {
		t.Errorf("Recover(digest, sig) = %s, %v, want %s", who, err, key.Address())
	}
}

// TestDomainTypeDerived: without an EIP712Domain type, the domain's type is made of the
// standard fields it holds, which gives the specification's separator.
func TestDomainTypeDerived(t *testing.T) {
	t.Parallel()
	td := mail()
	delete(td.Types, "EIP712Domain")
	digest, err := td.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hexOf(digest[:]), "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2"; got != want {
		t.Errorf("digest = %s, want %s", got, want)
	}
}

func TestRecoverRefuses(t *testing.T) {
	t.Parallel()
	key, err := evm.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	digest := evm.Keccak256([]byte("x"))
	sig := key.Sign(digest)
	// The high-s twin of a valid signature: s' = n - s, v flipped.
	n, _ := hex.DecodeString("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141")
	high := append([]byte(nil), sig...)
	var borrow int
	for i := 31; i >= 0; i-- {
		d := int(n[i]) - int(sig[32+i]) - borrow
		borrow = 0
		if d < 0 {
			d += 256
			borrow = 1
		}
		high[32+i] = byte(d)
	}
	high[64] ^= 1 // 27 <-> 28
	for name, s := range map[string][]byte{
		"short":  sig[:64],
		"bad v":  append(append([]byte(nil), sig[:64]...), 29),
		"zero r": append(make([]byte, 32), sig[32:]...),
		"high s": high,
	} {
		if _, err := evm.Recover(digest, s); !errors.Is(err, evm.ErrSignature) {
			t.Errorf("Recover(%s) = %v, want ErrSignature", name, err)
		}
	}
	v0 := append(append([]byte(nil), sig[:64]...), sig[64]-27)
	if who, err := evm.Recover(digest, v0); err != nil || who != key.Address() {
		t.Errorf("Recover(v in 0/1) = %s, %v, want %s", who, err, key.Address())
	}
	other := evm.Keccak256([]byte("y"))
	if who, err := evm.Recover(other, sig); err == nil && who == key.Address() {
		t.Error("a signature of one digest recovered its signer for another")
	}
}

func TestParseAddress(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826",
		"0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826",
		"0XCD2A3D9F938E13CD947EC05ABC7FE734DF8DD826",
	} {
		a, err := evm.ParseAddress(ok)
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", ok, err)
			continue
		}
		if a.Hex() != "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826" {
			t.Errorf("ParseAddress(%q).Hex() = %s", ok, a.Hex())
		}
	}
	for _, bad := range []string{"", "0x", "CD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826", "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD82", "0xcD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826", "0xZZ2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"} {
		if _, err := evm.ParseAddress(bad); !errors.Is(err, evm.ErrAddress) {
			t.Errorf("ParseAddress(%q) = %v, want ErrAddress", bad, err)
		}
	}
}

func TestEncodeValues(t *testing.T) {
	t.Parallel()
	types := evm.Types{"T": {{"a", "uint8"}, {"b", "int8"}, {"c", "bytes4"}, {"d", "bool"}, {"e", "uint256[2]"}, {"f", "bytes"}}}
	ok := map[string]any{"a": "255", "b": -128, "c": "0x01020304", "d": true, "e": []any{"0x10", float64(3)}, "f": "0x"}
	if _, err := evm.HashStruct(types, "T", ok); err != nil {
		t.Fatalf("HashStruct: %v", err)
	}
	for name, v := range map[string]map[string]any{
		"uint8 overflow": {"a": "256"},
		"int8 underflow": {"b": -129},
		"bytes4 short":   {"c": "0x0102"},
		"bool string":    {"d": "true"},
		"array length":   {"e": []any{"1"}},
		"fraction":       {"a": 1.5},
		"missing":        {"a": nil},
	} {
		m := map[string]any{}
		for k, x := range ok {
			m[k] = x
		}
		for k, x := range v {
			if x == nil {
				delete(m, k)
			} else {
				m[k] = x
			}
		}
		if _, err := evm.HashStruct(types, "T", m); !errors.Is(err, evm.ErrTypedData) {
			t.Errorf("HashStruct(%s) = %v, want ErrTypedData", name, err)
		}
	}
	if _, err := evm.ParseInt(strings.Repeat("9", 79)); err == nil {
		t.Error("ParseInt took 79 digits")
	}
}
