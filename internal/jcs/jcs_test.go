package jcs

import (
	"math"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{
			// RFC 8785 §3.2.2.
			name: "rfc8785 example",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			// RFC 8785 §3.2.3: keys sorted by UTF-16 code units, not code points.
			name: "rfc8785 sorting",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
				"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{name: "nested sorted", in: `{"b":{"z":1,"a":[{"y":2,"x":1}]},"a":"s"}`, want: `{"a":"s","b":{"a":[{"x":1,"y":2}],"z":1}}`},
		{name: "whitespace", in: " [ 1 , { } , [ ] , \"\" ] \n", want: `[1,{},[],""]`},
		{name: "escapes", in: `"\u0000\u001f\b\f\n\r\t\u007f\u2028<>&\/"`, want: "\"\\u0000\\u001f\\b\\f\\n\\r\\t\u007f\u2028<>&/\""},
		{name: "scalar", in: `-0`, want: `0`},
		{name: "number 1e30", in: `1e30`, want: `1e+30`},
		{name: "number 4.50", in: `4.50`, want: `4.5`},
		{name: "number 2e-3", in: `2e-3`, want: `0.002`},
		{name: "number 0.000001", in: `0.000001`, want: `0.000001`},
		{name: "number 1e-7", in: `1e-7`, want: `1e-7`},
		{name: "number 1.5e-7", in: `1.5e-7`, want: `1.5e-7`},
		{name: "number 1e21", in: `1e21`, want: `1e+21`},
		{name: "number below 1e21", in: `999999999999999900000`, want: `999999999999999900000`},
		{name: "number 100", in: `1E2`, want: `100`},
		{name: "number underflow", in: `1e-400`, want: `0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Canonicalize(%q) error: %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonicalize(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``, `{`, `[1,]`, `{"a":1,"a":2}`, `1 2`, `{"a":1}x`, `1e400`, `-1e400`, `NaN`, "\"\xff\"",
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud83d"`, `{"\ude00":1}`, `"a\\\ud800b"`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	} {
		if got, err := Canonicalize([]byte(in)); err == nil {
			t.Errorf("Canonicalize(%q) = %s, want an error", in, got)
		}
	}
	for _, in := range []string{`"\\ud800"`, `"\ud83d\ude00"`, `"\\\\ud800"`} {
		if _, err := Canonicalize([]byte(in)); err != nil {
			t.Errorf("Canonicalize(%s) error: %v", in, err)
		}
	}
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Canonicalize([]byte(deep)); err != nil {
		t.Errorf("Canonicalize(depth %d) error: %v", MaxDepth, err)
	}
}

// TestFormatNumber holds RFC 8785 Appendix B's IEEE 754 test values.
func TestFormatNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		got, err := FormatNumber(f)
		if err != nil || got != tt.want {
			t.Errorf("FormatNumber(%#x) = %q, %v, want %q", tt.bits, got, err, tt.want)
		}
	}
	for _, bits := range []uint64{0x7fffffffffffffff, 0x7ff0000000000000, 0xfff0000000000000} {
		if got, err := FormatNumber(math.Float64frombits(bits)); err == nil {
			t.Errorf("FormatNumber(%#x) = %q, want an error", bits, got)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	f.Add([]byte(`{"b":[1,2.5e-7,"\u00e9"],"a":{"\ud83d\ude00":null,"\u20ac":true}}`))
	f.Add([]byte(`[1e30,4.50,-0,333333333.33333329]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return
		}
		again, err := Canonicalize(out)
		if err != nil {
			t.Fatalf("Canonicalize(canonical %s) error: %v", out, err)
		}
		if string(again) != string(out) {
			t.Fatalf("Canonicalize not idempotent: %s then %s", out, again)
		}
	})
}
