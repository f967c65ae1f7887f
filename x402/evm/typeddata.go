package evm

// EIP-712: hashing typed structured data.

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Field is one member of a struct type: its name and its EIP-712 type ("address", "uint256",
// "string", "bytes32", "Person", "Person[]", "uint8[3]", …).
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Types are the struct types of typed data, by name.
type Types map[string][]Field

// TypedData is what EIP-712 signs: a message of type PrimaryType under a domain. Values are
// those JSON gives (string, float64 for small integers, bool, []any, map[string]any) or Go's:
// integers as *big.Int, int64, uint64 or decimal / 0x-hex strings; addresses as Address or hex
// strings; bytes as []byte or 0x-hex strings.
type TypedData struct {
	Types       Types          `json:"types"`
	PrimaryType string         `json:"primaryType"`
	Domain      map[string]any `json:"domain"`
	Message     map[string]any `json:"message"`
}

// domainFields are the fields EIP712Domain may have, in the order EIP-712 gives them.
var domainFields = []Field{
	{"name", "string"}, {"version", "string"}, {"chainId", "uint256"},
	{"verifyingContract", "address"}, {"salt", "bytes32"},
}

// ErrTypedData: typed data that cannot be hashed as given.
var ErrTypedData = errors.New("evm: invalid typed data")

// maxDepth bounds the nesting of struct and array values a hash walks.
const maxDepth = 32

// Hash returns the digest to sign: keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message)).
// When Types has no "EIP712Domain", the domain's type is made of the standard fields the
// domain holds, in the standard order.
func (td *TypedData) Hash() ([32]byte, error) {
	sep, err := td.DomainSeparator()
	if err != nil {
		return [32]byte{}, err
	}
	msg, err := HashStruct(td.Types, td.PrimaryType, td.Message)
	if err != nil {
		return [32]byte{}, err
	}
	return Keccak256([]byte{0x19, 0x01}, sep[:], msg[:]), nil
}

// DomainSeparator returns hashStruct(domain) as EIP712Domain.
func (td *TypedData) DomainSeparator() ([32]byte, error) {
	types := td.Types
	if _, ok := types["EIP712Domain"]; !ok {
		var fields []Field
		for _, f := range domainFields {
			if _, ok := td.Domain[f.Name]; ok {
				fields = append(fields, f)
			}
		}
		types = maps.Clone(td.Types)
		if types == nil {
			types = Types{}
		}
		types["EIP712Domain"] = fields
	}
	return HashStruct(types, "EIP712Domain", td.Domain)
}

// EncodeType returns the type string of primary: "Name(type1 name1,…)" followed by the
// struct types it references, sorted by name.
func EncodeType(types Types, primary string) (string, error) {
	if _, ok := types[primary]; !ok {
		return "", fmt.Errorf("%w: no type %q", ErrTypedData, primary)
	}
	deps := map[string]bool{}
	if err := collectDeps(types, primary, deps, 0); err != nil {
		return "", err
	}
	delete(deps, primary)
	names := append([]string{primary}, slices.Sorted(maps.Keys(deps))...)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('(')
		for i, f := range types[n] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.Type)
			b.WriteByte(' ')
			b.WriteString(f.Name)
		}
		b.WriteByte(')')
	}
	return b.String(), nil
}

func collectDeps(types Types, name string, seen map[string]bool, depth int) error {
	if seen[name] {
		return nil
	}
	if depth > maxDepth {
		return fmt.Errorf("%w: types nested too deep", ErrTypedData)
	}
	seen[name] = true
	for _, f := range types[name] {
		base := baseType(f.Type)
		if _, ok := types[base]; ok {
			if err := collectDeps(types, base, seen, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// baseType strips array suffixes: "Person[][2]" → "Person".
func baseType(t string) string {
	if i := strings.IndexByte(t, '['); i >= 0 {
		return t[:i]
	}
	return t
}

// TypeHash returns keccak256(EncodeType(types, primary)).
func TypeHash(types Types, primary string) ([32]byte, error) {
	s, err := EncodeType(types, primary)
	if err != nil {
		return [32]byte{}, err
	}
	return Keccak256([]byte(s)), nil
}

// HashStruct returns keccak256(typeHash ‖ encodeData(data)) of data as the struct type primary.
func HashStruct(types Types, primary string, data map[string]any) ([32]byte, error) {
	return hashStruct(types, primary, data, 0)
}

func hashStruct(types Types, primary string, data map[string]any, depth int) ([32]byte, error) {
	if depth > maxDepth {
		return [32]byte{}, fmt.Errorf("%w: values nested too deep", ErrTypedData)
	}
	th, err := TypeHash(types, primary)
	if err != nil {
		return [32]byte{}, err
	}
	fields := types[primary]
	enc := make([]byte, 0, 32*(len(fields)+1))
	enc = append(enc, th[:]...)
	for _, f := range fields {
		v, ok := data[f.Name]
		if !ok {
			return [32]byte{}, fmt.Errorf("%w: %s.%s is missing", ErrTypedData, primary, f.Name)
		}
		w, err := encodeValue(types, f.Type, v, depth+1)
		if err != nil {
			return [32]byte{}, fmt.Errorf("%s.%s: %w", primary, f.Name, err)
		}
		enc = append(enc, w[:]...)
	}
	return Keccak256(enc), nil
}

// encodeValue is encodeData's 32-byte word for one value of type t.
func encodeValue(types Types, t string, v any, depth int) ([32]byte, error) {
	var w [32]byte
	if depth > maxDepth {
		return w, fmt.Errorf("%w: values nested too deep", ErrTypedData)
	}
	if strings.HasSuffix(t, "]") {
		open := strings.LastIndexByte(t, '[')
		elem, size := t[:open], t[open+1:len(t)-1]
		items, ok := v.([]any)
		if !ok {
			return w, fmt.Errorf("%w: %s wants an array, got %T", ErrTypedData, t, v)
		}
		if size != "" {
			n, err := strconv.Atoi(size)
			if err != nil || n != len(items) {
				return w, fmt.Errorf("%w: %s wants %s elements, got %d", ErrTypedData, t, size, len(items))
			}
		}
		enc := make([]byte, 0, 32*len(items))
		for _, it := range items {
			e, err := encodeValue(types, elem, it, depth+1)
			if err != nil {
				return w, err
			}
			enc = append(enc, e[:]...)
		}
		return Keccak256(enc), nil
	}
	if _, ok := types[t]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return w, fmt.Errorf("%w: %s wants an object, got %T", ErrTypedData, t, v)
		}
		return hashStruct(types, t, m, depth+1)
	}
	switch {
	case t == "string":
		s, ok := v.(string)
		if !ok {
			return w, fmt.Errorf("%w: string wants a string, got %T", ErrTypedData, v)
		}
		return Keccak256([]byte(s)), nil
	case t == "bytes":
		b, err := bytesOf(v)
		if err != nil {
			return w, err
		}
		return Keccak256(b), nil
	case t == "bool":
		b, ok := v.(bool)
		if !ok {
			return w, fmt.Errorf("%w: bool wants true or false, got %T", ErrTypedData, v)
		}
		if b {
			w[31] = 1
		}
		return w, nil
	case t == "address":
		var a Address
		switch x := v.(type) {
		case Address:
			a = x
		case string:
			var err error
			if a, err = ParseAddress(x); err != nil {
				return w, err
			}
		default:
			return w, fmt.Errorf("%w: address wants a hex string, got %T", ErrTypedData, v)
		}
		copy(w[12:], a[:])
		return w, nil
	case strings.HasPrefix(t, "bytes"):
		n, err := strconv.Atoi(t[5:])
		if err != nil || n < 1 || n > 32 {
			return w, fmt.Errorf("%w: unknown type %q", ErrTypedData, t)
		}
		b, err := bytesOf(v)
		if err != nil {
			return w, err
		}
		if len(b) != n {
			return w, fmt.Errorf("%w: %s wants %d bytes, got %d", ErrTypedData, t, n, len(b))
		}
		copy(w[:], b)
		return w, nil
	case strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "int"):
		signed := t[0] == 'i'
		bits, err := strconv.Atoi(strings.TrimPrefix(t, map[bool]string{true: "int", false: "uint"}[signed]))
		if err != nil || bits < 8 || bits > 256 || bits%8 != 0 {
			return w, fmt.Errorf("%w: unknown type %q", ErrTypedData, t)
		}
		n, err := IntOf(v)
		if err != nil {
			return w, err
		}
		return encodeInt(t, n, bits, signed)
	}
	return w, fmt.Errorf("%w: unknown type %q", ErrTypedData, t)
}

// encodeInt writes n as a 32-byte big-endian word (two's complement for signed types), after
// checking it fits bits.
func encodeInt(t string, n *big.Int, bits int, signed bool) ([32]byte, error) {
	var w [32]byte
	limit := new(big.Int).Lsh(big.NewInt(1), uint(bits))
	if signed {
		half := new(big.Int).Rsh(limit, 1)
		if n.Cmp(half) >= 0 || n.Cmp(new(big.Int).Neg(half)) < 0 {
			return w, fmt.Errorf("%w: %s out of range for %s", ErrTypedData, n, t)
		}
	} else if n.Sign() < 0 || n.Cmp(limit) >= 0 {
		return w, fmt.Errorf("%w: %s out of range for %s", ErrTypedData, n, t)
	}
	if n.Sign() < 0 {
		n = new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 256), n)
	}
	n.FillBytes(w[:])
	return w, nil
}

// IntOf reads an integer: *big.Int, a Go integer, a float64 holding an integer (what JSON
// decodes), a json.Number, or a string in decimal or 0x-hex (at most 78 digits, enough for any
// 256-bit value).
func IntOf(v any) (*big.Int, error) {
	switch x := v.(type) {
	case *big.Int:
		if x == nil {
			break
		}
		return new(big.Int).Set(x), nil
	case int:
		return big.NewInt(int64(x)), nil
	case int64:
		return big.NewInt(x), nil
	case uint64:
		return new(big.Int).SetUint64(x), nil
	case float64:
		if x == float64(int64(x)) && x < 1<<53 && x > -(1<<53) {
			return big.NewInt(int64(x)), nil
		}
	case json.Number:
		return IntOf(string(x))
	case string:
		return ParseInt(x)
	}
	return nil, fmt.Errorf("%w: %v (%T) is not an integer", ErrTypedData, v, v)
}

// ParseInt reads a decimal integer, or a hex one after "0x" or "0X", as the x402 "exact"
// scheme writes them: at most 78 digits.
func ParseInt(s string) (*big.Int, error) {
	digits, base := s, 10
	neg := strings.HasPrefix(digits, "-")
	if neg {
		digits = digits[1:]
	}
	if strings.HasPrefix(digits, "0x") || strings.HasPrefix(digits, "0X") {
		digits, base = digits[2:], 16
	}
	if digits == "" || len(digits) > 78 || strings.ContainsAny(digits, "+-_ ") {
		return nil, fmt.Errorf("%w: %q is not an integer", ErrTypedData, s)
	}
	n, ok := new(big.Int).SetString(digits, base)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not an integer", ErrTypedData, s)
	}
	if neg {
		n.Neg(n)
	}
	return n, nil
}

// bytesOf reads bytes: []byte, or a 0x-hex string.
func bytesOf(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case [32]byte:
		return x[:], nil
	case string:
		if strings.HasPrefix(x, "0x") || strings.HasPrefix(x, "0X") {
			b, err := hex.DecodeString(x[2:])
			if err == nil {
				return b, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: %v (%T) is not 0x-hex bytes", ErrTypedData, v, v)
}
