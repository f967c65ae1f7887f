package harness

// What the reports share besides the table: the targets and the JSON file.

import (
	"encoding/json"
	"fmt"
	"os"
)

// Target is the outcome of one performance target.
type Target struct {
	Name   string  `json:"name"`
	Status string  `json:"status"` // PASS | FAIL | SKIP
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Detail string  `json:"detail"`
}

// NotMeasured returns the target name with limit, SKIP: to be filled in when it was measured.
func NotMeasured(name string, limit float64) Target {
	return Target{Name: name, Limit: limit, Status: "SKIP", Detail: "not measured in this run"}
}

// Verdict is "PASS" if ok, else "FAIL".
func Verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// RatioTarget is the target name checking get(a)/get(b) against limit: the ratio must be at
// least limit when atLeast, else at most. A nil result or a zero value (not measured, or failed)
// leaves it SKIP. The detail prints the ratio, then both values with format and their unit.
func RatioTarget[R any](name string, a, b *R, get func(*R) float64, limit float64, atLeast bool, format func(float64) string, unit string) Target {
	t := NotMeasured(name, limit)
	if a == nil || b == nil || get(a) <= 0 || get(b) <= 0 {
		return t
	}
	va, vb := get(a), get(b)
	t.Value = va / vb
	ok, op := t.Value <= limit, "≤"
	if atLeast {
		ok, op = t.Value >= limit, "≥"
	}
	t.Status = Verdict(ok)
	t.Detail = fmt.Sprintf("%.2f× (need %s %.2f×): %s vs %s %s", t.Value, op, limit, format(va), format(vb), unit)
	return t
}

// WriteJSON writes v to path as indented JSON with a final newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
