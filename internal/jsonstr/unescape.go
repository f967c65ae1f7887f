package jsonstr

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// Errors of AppendUnescaped.
var (
	ErrTruncated  = errors.New("escape at the end of the input")
	ErrBadEscape  = errors.New("invalid escape")
	ErrBadUnicode = errors.New(`invalid \u escape`)
)

// Unescape returns the characters of s, the inside of a JSON string literal, with its escape
// sequences read (see AppendUnescaped).
func Unescape(s []byte) ([]byte, error) { return unescape(s, false) }

// UnescapeWTF8 is Unescape with a lone surrogate read as AppendUnescapedWTF8 reads it.
func UnescapeWTF8(s []byte) ([]byte, error) { return unescape(s, true) }

func unescape(s []byte, wtf8 bool) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			out = append(out, s[i])
			i++
			continue
		}
		var err error
		if out, i, err = appendUnescaped(out, s, i, wtf8); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AppendUnescaped appends the character the escape sequence at data[i] (a backslash) stands
// for, as JSON.parse and encoding/json read it: a \u escape of a high surrogate followed by a
// \u escape of a low one is one character, and any other surrogate becomes U+FFFD. It returns
// the index after the sequence.
func AppendUnescaped(buf, data []byte, i int) ([]byte, int, error) {
	return appendUnescaped(buf, data, i, false)
}

// AppendUnescapedWTF8 is AppendUnescaped, but a lone surrogate (a \u escape of a surrogate that
// is not half of a pair) is kept: appended in the three bytes UTF-8 would give it if it allowed
// surrogates (the generalized UTF-8 of WTF-8, which AppendJS writes back as the escape). A
// JavaScript string may hold one, and so keeps it through Go.
func AppendUnescapedWTF8(buf, data []byte, i int) ([]byte, int, error) {
	return appendUnescaped(buf, data, i, true)
}

func appendUnescaped(buf, data []byte, i int, wtf8 bool) ([]byte, int, error) {
	if i+1 >= len(data) {
		return buf, i, ErrTruncated
	}
	e := data[i+1]
	i += 2
	switch e {
	case '"', '\\', '/':
		return append(buf, e), i, nil
	case 'b':
		return append(buf, '\b'), i, nil
	case 'f':
		return append(buf, '\f'), i, nil
	case 'n':
		return append(buf, '\n'), i, nil
	case 'r':
		return append(buf, '\r'), i, nil
	case 't':
		return append(buf, '\t'), i, nil
	case 'u':
	default:
		return buf, i, ErrBadEscape
	}
	r, ok := hex4(data, i)
	if !ok {
		return buf, i, ErrBadUnicode
	}
	i += 4
	if utf16.IsSurrogate(r) {
		if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
			if r2, ok := hex4(data, i+2); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					return utf8.AppendRune(buf, dec), i + 6, nil
				}
			}
		}
		if wtf8 { // not a pair: the next escape is read on its own
			return append(buf, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f), i, nil
		}
		r = utf8.RuneError
	}
	return utf8.AppendRune(buf, r), i, nil
}

// Surrogate reports whether s starts with the generalized UTF-8 of a surrogate (see
// AppendUnescapedWTF8), and returns it.
func Surrogate(s string) (rune, bool) {
	if len(s) < 3 || s[0] != 0xed || s[1] < 0xa0 || s[1] > 0xbf || s[2] < 0x80 || s[2] > 0xbf {
		return 0, false
	}
	return rune(s[0]&0x0f)<<12 | rune(s[1]&0x3f)<<6 | rune(s[2]&0x3f), true
}

// hex4 reads the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if len(data)-i < 4 {
		return 0, false
	}
	var v rune
	for _, c := range data[i : i+4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			v |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}
