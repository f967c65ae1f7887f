package binding

import (
	"strconv"

	"github.com/a2awebcap/a2awebcap/internal/jsonstr"
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
	s := jsonScanner{b: data}
	// seqs[0]: the event's own metadata; seqs[1+i]: that of member eventMembers[i].
	var seqs [1 + len(eventMembers)][]byte
	meta := func(slot int) bool {
		return s.object(func(key []byte) bool {
			if !s.keyIs(key, seqKey) {
				return s.skip()
			}
			end, ok := jsonstr.NumberEnd(s.b, s.i)
			if !ok {
				return false // not a JSON number: the decode decides
			}
			seqs[slot] = s.b[s.i:end]
			s.i = end
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
