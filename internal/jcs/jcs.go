// Package jcs implements the JSON Canonicalization Scheme of RFC 8785: one byte sequence for
// every JSON value, whatever the key order, whitespace, escapes or number spellings it was
// written with, so that the value can be signed and the signature checked after re-encoding.
//
// Canonicalize sorts object members by their keys' UTF-16 code units, drops whitespace,
// escapes strings as ECMAScript's JSON.stringify does and writes numbers as ECMAScript's
// Number.prototype.toString does (IEEE 754 doubles, shortest round-trip digits).
//
// It is stricter than encoding/json, as a signature's input should be: duplicate keys, invalid
// UTF-8, lone UTF-16 surrogates in \u escapes (which encoding/json would turn into U+FFFD),
// trailing data, numbers beyond the double range and nesting deeper than MaxDepth are errors.
package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Canonicalize accepts.
const MaxDepth = 512

// Canonicalize returns the RFC 8785 canonical form of the JSON text in.
func Canonicalize(in []byte) ([]byte, error) {
	if !utf8.Valid(in) {
		return nil, errors.New("jcs: invalid UTF-8")
	}
	if err := checkSurrogates(in); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var out bytes.Buffer
	if err := value(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("jcs: data after the JSON value")
	}
	return out.Bytes(), nil
}

// value writes the canonical form of the next value of dec to out.
func value(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("jcs: %w", err)
	}
	switch t := tok.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case string:
		writeString(out, t)
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return fmt.Errorf("jcs: number %s out of range", t)
		}
		s, err := FormatNumber(f)
		if err != nil {
			return err
		}
		out.WriteString(s)
	case json.Delim:
		if depth >= MaxDepth {
			return fmt.Errorf("jcs: nesting deeper than %d", MaxDepth)
		}
		if t == '[' {
			return array(dec, out, depth+1)
		}
		return object(dec, out, depth+1)
	}
	return nil
}

func array(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	out.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := value(dec, out, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return fmt.Errorf("jcs: %w", err)
	}
	out.WriteByte(']')
	return nil
}

type member struct {
	key   string
	utf16 []uint16
	value []byte
}

func object(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("jcs: %w", err)
		}
		key := tok.(string) // the decoder only yields string keys
		if seen[key] {
			return fmt.Errorf("jcs: duplicate key %q", key)
		}
		seen[key] = true
		var v bytes.Buffer
		if err := value(dec, &v, depth); err != nil {
			return err
		}
		members = append(members, member{key, utf16.Encode([]rune(key)), v.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return fmt.Errorf("jcs: %w", err)
	}
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.utf16, b.utf16) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.key)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

// writeString writes s quoted as ECMAScript's JSON.stringify does: only '"', '\\' and the
// control characters U+0000–U+001F are escaped.
func writeString(out *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out.WriteByte('\\')
			out.WriteByte(c)
		case c >= 0x20:
			out.WriteByte(c)
		case c == '\b':
			out.WriteString(`\b`)
		case c == '\f':
			out.WriteString(`\f`)
		case c == '\n':
			out.WriteString(`\n`)
		case c == '\r':
			out.WriteString(`\r`)
		case c == '\t':
			out.WriteString(`\t`)
		default:
			out.WriteString(`\u00`)
			out.WriteByte(hex[c>>4])
			out.WriteByte(hex[c&0xf])
		}
	}
	out.WriteByte('"')
}

// FormatNumber writes f as ECMAScript's Number.prototype.toString does (RFC 8785 §3.2.2.3).
// NaN and the infinities, which JSON cannot hold, are errors.
func FormatNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("jcs: %v is not a JSON number", f)
	}
	if f == 0 {
		return "0", nil // and -0
	}
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
		f = -f
	}
	// The shortest digits that round-trip, and n: the value is 0.digits × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n, k := x+1, len(digits)
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String(), nil
}

// checkSurrogates reports a \u escape of a UTF-16 surrogate that is not half of a pair: I-JSON
// (RFC 7493), which RFC 8785 requires, forbids them, and decoding would make them U+FFFD. Only
// strings hold backslashes, so escapes are found without tracking where strings start; a
// malformed escape is left for the decoder to report.
func checkSurrogates(in []byte) error {
	esc := func(i int) (rune, bool) { // the \uXXXX at in[i:], if any
		if i+6 > len(in) || in[i] != '\\' || in[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(in[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(in); i++ {
		if in[i] != '\\' {
			continue
		}
		r, ok := esc(i)
		if !ok {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // high: a low one must follow
			if lo, ok := esc(i + 6); !ok || lo < 0xdc00 || lo > 0xdfff {
				return fmt.Errorf("jcs: lone surrogate \\u%04x", r)
			}
			i += 11
		case utf16.IsSurrogate(r):
			return fmt.Errorf("jcs: lone surrogate \\u%04x", r)
		default:
			i += 5
		}
	}
	return nil
}
