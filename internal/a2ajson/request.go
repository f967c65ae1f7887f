package a2ajson

// The JSON of the requests a server reads most — SendMessageRequest and GetTaskRequest — read
// by hand like tasks (decode.go): strictly, into what json.Unmarshal gives for the same bytes,
// giving up on anything else, which json.Unmarshal then reads.

import (
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// DecodeRequest reads the JSON of an A2A request into dst, a pointer, and returns what
// json.Unmarshal returns: it is json.Unmarshal, read by hand for a *a2a.SendMessageRequest or
// *a2a.GetTaskRequest in the shapes clients write.
func DecodeRequest(b []byte, dst any) error {
	if decodeRequest(b, dst) {
		return nil
	}
	return json.Unmarshal(b, dst)
}

var (
	sendKeys    = []string{"message", "metadata", "tenant", "configuration"}
	configKeys  = []string{"acceptedOutputModes", "returnImmediately", "historyLength"}
	getTaskKeys = []string{"id", "historyLength", "tenant"}
)

// decodeRequest is DecodeRequest's fast path: false, and dst untouched, when it gives up.
func decodeRequest(b []byte, dst any) bool {
	d := decoder{b: b}
	var ok bool
	switch x := dst.(type) {
	case *a2a.SendMessageRequest:
		var r a2a.SendMessageRequest
		ok = d.object(sendKeys, func(k int) bool {
			var ok bool
			switch k {
			case 0:
				r.Message, ok = d.message()
			case 1:
				r.Metadata, ok = d.meta()
			case 2:
				r.Tenant, ok = d.str()
			case 3:
				r.Config, ok = d.sendConfig()
			}
			return ok
		})
		if ok = ok && d.end(); ok {
			*x = r
		}
	case *a2a.GetTaskRequest:
		var r a2a.GetTaskRequest
		ok = d.object(getTaskKeys, func(k int) bool {
			var ok bool
			switch k {
			case 0:
				var s string
				s, ok = d.str()
				r.ID = a2a.TaskID(s)
			case 1:
				var n int
				n, ok = d.count()
				r.HistoryLength = &n
			case 2:
				r.Tenant, ok = d.str()
			}
			return ok
		})
		if ok = ok && d.end(); ok {
			*x = r
		}
	}
	return ok
}

// sendConfig reads a SendMessageConfig without a push config (those are json.Unmarshal's).
func (d *decoder) sendConfig() (*a2a.SendMessageConfig, bool) {
	c := new(a2a.SendMessageConfig)
	ok := d.object(configKeys, func(k int) bool {
		var ok bool
		switch k {
		case 0:
			c.AcceptedOutputModes, ok = d.strs()
		case 1:
			c.ReturnImmediately, ok = d.boolean()
		case 2:
			var n int
			n, ok = d.count()
			c.HistoryLength = &n
		}
		return ok
	})
	return c, ok
}

// boolean reads true or false.
func (d *decoder) boolean() (bool, bool) {
	d.ws()
	for _, w := range [...]string{"false", "true"} {
		if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
			d.i += len(w)
			return w == "true", true
		}
	}
	return false, false
}

// end reports whether only space is left.
func (d *decoder) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// count reads a non-negative integer of at most 9 digits written plainly (json.Unmarshal reads
// it into an int as it is); anything else is given up on.
func (d *decoder) count() (int, bool) {
	d.ws()
	start, n := d.i, 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' && d.i-start < 9 {
		n = n*10 + int(d.b[d.i]-'0')
		d.i++
	}
	digits := d.i - start
	if digits == 0 || digits > 1 && d.b[start] == '0' {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return 0, false // a fraction, an exponent, a tenth digit: json.Unmarshal's to judge
		}
	}
	return n, true
}
