package jsonstr

import (
	"encoding/json"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

var samples = []string{
	"\xed\xa0\xbd\xed\xb8\x80 a pair in halves", "", "plain", `quote " and \ backslash`, "ctl \x00\x01\x1f\b\f\n\r\t end", "<a href='x'>&amp;</a>",
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

// replaced is s with each invalid byte replaced by U+FFFD, but for a lone surrogate's three
// bytes (Surrogate), which become sur (nil: kept), and a high and a low one together, which are
// the character they pair for (as JSON.parse reads their escapes).
func replaced(s string, sur []byte) string {
	var b []byte
	for i := 0; i < len(s); {
		if hi, ok := Surrogate(s[i:]); ok {
			if lo, ok := Surrogate(s[i+3:]); ok {
				if r := utf16.DecodeRune(hi, lo); r != utf8.RuneError {
					b = utf8.AppendRune(b, r)
					i += 6
					continue
				}
			}
			if sur == nil {
				b = append(b, s[i:i+3]...)
			} else {
				b = append(b, sur...)
			}
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, r)
		i += n
	}
	return string(b)
}

// FuzzAppend holds AppendGo to json.Marshal, and AppendJS to a literal that holds no raw
// control character and reads back as the string with each invalid byte replaced: by
// encoding/json with a lone surrogate replaced too, by UnescapeWTF8 with it kept.
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
		if err := json.Unmarshal(js, &back); err != nil || back != replaced(s, []byte("\ufffd")) {
			t.Fatalf("AppendJS(%q) = %s, which reads back as %q (%v)", s, js, back, err)
		}
		kept, err := UnescapeWTF8(js[1 : len(js)-1])
		if err != nil || string(kept) != replaced(s, nil) {
			t.Fatalf("AppendJS(%q) = %s, which UnescapeWTF8 reads as %q (%v)", s, js, kept, err)
		}
		for _, c := range js {
			if c < 0x20 {
				t.Fatalf("AppendJS(%q) = %s: a raw control character", s, js)
			}
		}
	})
}

// TestLoneSurrogates: a lone surrogate read by AppendUnescapedWTF8 is written back by AppendJS
// as the same escape, as JSON.parse and JSON.stringify keep it; a pair is one character.
func TestLoneSurrogates(t *testing.T) {
	for in, want := range map[string]string{
		`\ud800`:             "\xed\xa0\x80",
		`\uDBFF`:             "\xed\xaf\xbf",
		`\udc00`:             "\xed\xb0\x80",
		`\ud83d\ude00`:       "😀",
		`\ude00\ud83d`:       "\xed\xb8\x80\xed\xa0\xbd",
		`\ud83dx`:            "\xed\xa0\xbdx",
		`\ud83d\u0041`:       "\xed\xa0\xbdA",
		`\ud83d\ud83d\ude00`: "\xed\xa0\xbd😀",
	} {
		got, err := UnescapeWTF8([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("UnescapeWTF8(%s) = %q, %v; want %q", in, got, err, want)
			continue
		}
		back := AppendJS(nil, string(got))
		again, _ := UnescapeWTF8(back[1 : len(back)-1])
		if string(again) != want {
			t.Errorf("AppendJS(%q) = %s, which reads back as %q", got, back, again)
		}
	}
	if got := AppendJS(nil, "a\xed\xa0\x80b\xffc"); string(got) != `"a\ud800b`+"\ufffd"+`c"` {
		t.Errorf("AppendJS(lone surrogate, invalid byte) = %s", got)
	}
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
