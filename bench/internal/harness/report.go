package harness

// What the reports share besides the table: the targets and the JSON file.

import (
	"encoding/json"
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

// WriteJSON writes v to path as indented JSON with a final newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
