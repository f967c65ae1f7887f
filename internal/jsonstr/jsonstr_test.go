package jsonstr

import (
	"encoding/json"
	"testing"
)

var samples = []string{
	"", "plain", `quote " and \ backslash`, "ctl \x00\x01\x1f\b\f\n\r\t end", "<a href='x'>&amp;</a>",
	"é😀", "bad \xff byte", "\xed\xa0\x80 surrogate half", "line\u2028sep\u2029para", "\x7f del",
}

func TestAppendGoMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		want, _ := json.Marshal(s)
		if got := AppendGo(nil, s); string(got) != string(want) {
			t.Errorf("AppendGo(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestAppendJS(t *testing.T) {
	tests := map[string]string{
		"<a>&":       `"<a>&"`,
		"\u2028":     "\"\u2028\"",
		"bad \xff":   "\"bad \ufffd\"",
		"ctl \x01\n": `"ctl \u0001\n"`,
		`q"b\`:       `"q\"b\\"`,
		"é😀":         `"é😀"`,
	}
	for in, want := range tests {
		if got := AppendJS(nil, in); string(got) != want {
			t.Errorf("AppendJS(%q) = %s, want %s", in, got, want)
		}
	}
}
