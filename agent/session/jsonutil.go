package session

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration whose JSON form is a ProtoJSON duration, as A2A's JSON uses: a
// string of seconds with 0, 3, 6 or 9 fractional digits and the suffix "s" ("1.500s").
type Duration time.Duration

// MarshalJSON writes d as a ProtoJSON duration.
func (d Duration) MarshalJSON() ([]byte, error) { return strconv.AppendQuote(nil, d.String()), nil }

// String is d in ProtoJSON form.
func (d Duration) String() string {
	n := int64(d)
	sign := ""
	if n < 0 {
		sign, n = "-", -n // the most negative Duration is not a session's; it prints wrong, harmlessly
	}
	sec, frac := n/1e9, n%1e9
	switch {
	case frac == 0:
		return fmt.Sprintf("%s%ds", sign, sec)
	case frac%1e6 == 0:
		return fmt.Sprintf("%s%d.%03ds", sign, sec, frac/1e6)
	case frac%1e3 == 0:
		return fmt.Sprintf("%s%d.%06ds", sign, sec, frac/1e3)
	default:
		return fmt.Sprintf("%s%d.%09ds", sign, sec, frac)
	}
}

// UnmarshalJSON reads a ProtoJSON duration: an optional sign, seconds, up to nine fractional
// digits, "s".
func (d *Duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("session: a duration is a string such as \"1.5s\": %w", err)
	}
	bad := fmt.Errorf("session: %q is not a duration such as \"1.5s\"", s)
	neg := strings.HasPrefix(s, "-")
	body, ok := strings.CutSuffix(strings.TrimPrefix(s, "-"), "s")
	if !ok || body == "" {
		return bad
	}
	whole, frac, dot := strings.Cut(body, ".")
	if whole == "" || len(whole) > 11 || !digits(whole) || dot && (frac == "" || len(frac) > 9 || !digits(frac)) {
		return bad
	}
	sec, _ := strconv.ParseInt(whole, 10, 64)
	ns := int64(0)
	if dot {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	if sec > (1<<63-1-ns)/1e9 {
		return bad
	}
	v := sec*1e9 + ns
	if neg {
		v = -v
	}
	*d = Duration(v)
	return nil
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
