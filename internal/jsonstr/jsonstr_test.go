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

// FuzzAppend holds AppendGo to json.Marshal, and AppendJS to a literal that reads back as the
// string with each invalid byte replaced, and holds no raw control character.
func FuzzAppend(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendGo(nil, s); string(got) != string(want) {
			t.Fatalf("AppendGo(%q) = %s, want %s", s, got, want)
		}
		js := AppendJS(nil, s)
		var back string
		if err := json.Unmarshal(js, &back); err != nil || back != string([]rune(s)) {
			t.Fatalf("AppendJS(%q) = %s, which reads back as %q (%v)", s, js, back, err)
		}
		for _, c := range js {
			if c < 0x20 {
				t.Fatalf("AppendJS(%q) = %s: a raw control character", s, js)
			}
		}
	})
}

// TestAppendUnescaped checks escape sequences against encoding/json's reading of the same
// string literal.
func TestAppendUnescaped(t *testing.T) {
	for _, esc := range []string{
		`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`, `\u00e9`, `\u20AC`,
		`\ud83d\ude00`, // a pair
		`\ud83d`, `\ude00`, `\ud83dx`, `\ud83d\u0041`, `\ude00\ud83d`, `\ud83d\ud83d\ude00`,
	} {
		var want string
		if err := json.Unmarshal([]byte(`"`+esc+`"`), &want); err != nil {
			t.Fatalf("%s: %v", esc, err)
		}
		got, err := Unescape([]byte("a" + esc + "z"))
		if err != nil {
			t.Fatalf("%s: %v", esc, err)
		}
		if want = "a" + want + "z"; string(got) != want {
			t.Errorf("%s: got %q, want %q", esc, got, want)
		}
	}
	for esc, want := range map[string]error{`\`: ErrTruncated, `\x`: ErrBadEscape, `\'`: ErrBadEscape, `\u12`: ErrBadUnicode, `\u12G4`: ErrBadUnicode} {
		if _, _, err := AppendUnescaped(nil, []byte(esc), 0); err != want {
			t.Errorf("%s: error %v, want %v", esc, err, want)
		}
	}
}

// BenchmarkAppend: the strings an A2A task is made of (IDs, states, timestamps, short text).
func BenchmarkAppend(b *testing.B) {
	strs := []string{"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f", "TASK_STATE_COMPLETED", "2026-05-01T12:00:00.123456789Z",
		"echo: hello, how are you doing today?", "ROLE_AGENT", "text/plain"}
	for _, f := range []struct {
		name string
		fn   func([]byte, string) []byte
	}{{"js", AppendJS}, {"go", AppendGo}} {
		b.Run(f.name, func(b *testing.B) {
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = buf[:0]
				for _, s := range strs {
					buf = f.fn(buf, s)
				}
			}
		})
	}
}

func TestNumberEnd(t *testing.T) {
	for _, c := range []struct {
		in  string
		end int
		ok  bool
	}{
		{"0", 1, true}, {"-0", 2, true}, {"12", 2, true}, {"01", 1, true}, {"1.5e+3,", 6, true},
		{"-12.25E-2]", 9, true}, {"3e9x", 3, true},
		{"", 0, false}, {"-", 1, false}, {"+1", 0, false}, {".5", 0, false}, {"1.", 2, false},
		{"1e", 2, false}, {"1e+", 3, false}, {"-a", 1, false},
	} {
		end, ok := NumberEnd([]byte(c.in), 0)
		if ok != c.ok || ok && end != c.end {
			t.Errorf("NumberEnd(%q) = %d, %v; want %d, %v", c.in, end, ok, c.end, c.ok)
		}
	}
}
