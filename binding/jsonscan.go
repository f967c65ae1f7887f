package binding

import "bytes"

// jsonScanner reads JSON text known to be valid (what an encoder wrote), just enough to find
// object keys and to skip values, to answer a question about a JSON value without decoding it
// (scanEventSeq, scanJSONRPCError). Where it meets what a decode with encoding/json would read
// otherwise — a key spelled with escapes or in other letter case, which the decode matches to
// a field — it marks the scan bad, and the caller decodes instead.
type jsonScanner struct {
	b   []byte
	i   int
	bad bool // met a key the decode would match otherwise (escaped, other letter case)
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// keyIs reports whether key is name. A key the decode would also take for name (in other
// letter case, or spelled with escapes) marks the scan bad.
func (s *jsonScanner) keyIs(key []byte, name string) bool {
	if string(key) == name {
		return true
	}
	if bytes.IndexByte(key, '\\') >= 0 || bytes.EqualFold(key, []byte(name)) {
		s.bad = true
	}
	return false
}

// str reads the string at s.i and returns what is between its quotes, escapes as they are.
func (s *jsonScanner) str() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return s.b[start:j], true
		}
	}
	return nil, false
}

// object reads the object at s.i, calling member for each key with s.i at its value, which
// member must read; it reports false if member did or the text does not scan. A null is an
// empty object; another value, which the decode refuses, marks the scan bad.
func (s *jsonScanner) object(member func(key []byte) bool) bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		if !bytes.HasPrefix(s.b[s.i:], []byte("null")) {
			s.bad = true // the decode fails on it
		}
		return s.skip()
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// skip steps over the value at s.i.
func (s *jsonScanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	// A number or a literal: up to the next delimiter.
	start := s.i
	for s.i < len(s.b) && s.b[s.i] != ',' && s.b[s.i] != '}' && s.b[s.i] != ']' &&
		s.b[s.i] != ' ' && s.b[s.i] != '\t' && s.b[s.i] != '\n' && s.b[s.i] != '\r' {
		s.i++
	}
	return s.i > start
}
