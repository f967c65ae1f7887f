// Package jsonstr appends Go strings as JSON string literals, in the two dialects the module
// writes: as JavaScript's JSON.stringify does (the capnweb wire) and as encoding/json does (the
// stores, whose bytes must match json.Marshal's); and reads escape sequences back
// (AppendUnescaped), for the module's two hand-written JSON readers.
package jsonstr

import "unicode/utf8"

// AppendJS appends s as JSON.stringify writes it: only '"', '\\' and control characters are
// escaped (short forms where JSON has them); a lone surrogate, held as AppendUnescapedWTF8 reads
// one, is written as its \u escape, as JSON.stringify writes one; other invalid UTF-8 becomes
// U+FFFD.
func AppendJS(b []byte, s string) []byte { return appendString(b, s, false) }

// AppendGo appends s as encoding/json writes it: also '<', '>' and '&' escaped (HTML-safe),
// U+2028 and U+2029 escaped, and invalid UTF-8 as the escape \ufffd.
func AppendGo(b []byte, s string) []byte { return appendString(b, s, true) }

const hex = "0123456789abcdef"

// safeJS and safeGo hold the bytes a dialect copies as they are: printable ASCII but for the
// characters it escapes.
var safeJS, safeGo = func() (js, goStyle [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		js[c] = c != '"' && c != '\\'
		goStyle[c] = js[c] && c != '<' && c != '>' && c != '&'
	}
	return js, goStyle
}()

func appendString(b []byte, s string, goStyle bool) []byte {
	safe := &safeJS
	if goStyle {
		safe = &safeGo
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if safe[s[i]] {
			i++
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			if goStyle {
				b = append(b, `\ufffd`...)
			} else if sr, ok := Surrogate(s[i:]); ok {
				b = append(b, '\\', 'u', hex[sr>>12], hex[sr>>8&0xf], hex[sr>>4&0xf], hex[sr&0xf])
				size = 3
			} else {
				b = append(b, "\ufffd"...)
			}
		case goStyle && (r == '\u2028' || r == '\u2029'):
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
