package binding

import (
	"bytes"
	"strconv"
)

// scanEventSeq is eventSeq without decoding the event: it walks the JSON text of data (as
// a2a-go's encoder wrote it: valid JSON) along the few paths where a stream event's sequence
// number can be — the event's metadata, or that of its task, message, msg, statusUpdate or
// artifactUpdate member, under the JSON-RPC response's result when jsonrpc is set — and skips
// every other value unread. It answers as eventSeq's decode would: the last member's number
// wins over the top-level one, a number that is not a non-negative integer is none. ok is false
// when it meets what it does not read exactly as that decode does (a key with an escape or in
// other letter case, a sequence number that is not a JSON number, text that does not scan),
// and the decode must answer.
func scanEventSeq(data []byte, jsonrpc bool) (seq int64, found, ok bool) {
	s := seqScanner{b: data}
	// seqs[0]: the event's own metadata; seqs[1+i]: that of member eventMembers[i].
	var seqs [1 + len(eventMembers)][]byte
	meta := func(slot int) bool {
		return s.object(func(key []byte) bool {
			if !s.keyIs(key, seqKey) {
				return s.skip()
			}
			start := s.i
			if s.i >= len(s.b) || s.b[s.i] != '-' && (s.b[s.i] < '0' || s.b[s.i] > '9') {
				return false // not a number: the decode decides
			}
			if !s.skip() {
				return false
			}
			seqs[slot] = s.b[start:s.i]
			return true
		})
	}
	event := func() bool {
		return s.object(func(key []byte) bool {
			if s.keyIs(key, "metadata") {
				return meta(0)
			}
			for i, m := range eventMembers {
				if s.keyIs(key, m) {
					return s.object(func(key []byte) bool {
						if s.keyIs(key, "metadata") {
							return meta(1 + i)
						}
						return s.skip()
					})
				}
			}
			return s.skip()
		})
	}
	var scanned bool
	if jsonrpc {
		scanned = s.object(func(key []byte) bool {
			if s.keyIs(key, "result") {
				return event()
			}
			return s.skip()
		})
	} else {
		scanned = event()
	}
	if !scanned || s.bad {
		return 0, false, false
	}
	var num []byte
	for _, v := range seqs {
		if v != nil {
			num = v // later members win, as in eventSeq
		}
	}
	if num == nil {
		return 0, false, true
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || n < 0 {
		return 0, false, true
	}
	return n, true, true
}

// eventMembers are the members of a stream event that hold it, in eventSeq's order.
var eventMembers = [...]string{"task", "message", "msg", "statusUpdate", "artifactUpdate"}

// seqScanner reads JSON text known to be valid, just enough to find object keys and to skip
// values.
type seqScanner struct {
	b   []byte
	i   int
	bad bool // met a key the decode would match otherwise (escaped, other letter case)
}

func (s *seqScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// keyIs reports whether key is name. A key the decode would also take for name (in other
// letter case, or spelled with escapes) marks the scan bad.
func (s *seqScanner) keyIs(key []byte, name string) bool {
	if string(key) == name {
		return true
	}
	if bytes.IndexByte(key, '\\') >= 0 || bytes.EqualFold(key, []byte(name)) {
		s.bad = true
	}
	return false
}

// str reads the string at s.i and returns what is between its quotes, escapes as they are.
func (s *seqScanner) str() ([]byte, bool) {
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
func (s *seqScanner) object(member func(key []byte) bool) bool {
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
func (s *seqScanner) skip() bool {
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
