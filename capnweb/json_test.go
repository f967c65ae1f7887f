package capnweb

// Codec tests: the strict JSON reader, the JSON writer against JSON.stringify, and every value
// type of the protocol through encode and evaluate.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ---- hooks for the external test package (fuzz_test.go) ----

// ParseJSONForTest is parseJSON.
func ParseJSONForTest(data []byte, maxDepth int) (any, error) { return parseJSON(data, maxDepth) }

// EncodeJSONForTest writes a parsed JSON tree back as JSON, as the encoder writes map
// instructions.
func EncodeJSONForTest(v any) ([]byte, error) {
	var e encoder
	err := e.raw(v, 0)
	return e.b, err
}

// AppendJSONStringForTest is appendJSONString.
func AppendJSONStringForTest(b []byte, s string) []byte { return appendJSONString(b, s) }

// AppendJSONNumberForTest is appendJSONNumber.
func AppendJSONNumberForTest(b []byte, f float64) []byte { return appendJSONNumber(b, f) }

// DecodeForTest parses data and evaluates it in a fresh session offering main, twice: as a bare
// expression (then releases the value), and as a message (as the read loop handles it, aborting
// the session on error). It closes the session before returning.
func DecodeForTest(data []byte, main any) (evalErr, msgErr error) {
	a, b := Pipe()
	defer b.Close(nil)
	s := NewSession(a, main, nil)
	defer s.Close()
	v, err := parseJSON(data, 2*s.lim().MaxDepth+8)
	if err == nil {
		ev := evaluator{im: s, lim: s.lim()}
		var r any
		if r, err = ev.evaluate(v); err == nil {
			releaseValue(r)
		}
	}
	evalErr = err
	if msgErr = s.handle(data); msgErr != nil {
		s.shutdown(msgErr, true)
	}
	return evalErr, msgErr
}

// ---- parseJSON ----

// manyKeys is an object with n keys k0… and then the key dup again.
func manyKeys(n int, dup string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	fmt.Fprintf(&b, `"%s":0}`, dup)
	return b.String()
}

func TestParseJSONRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     string // in the error message
	}{
		{"duplicate key", `{"a":1,"a":2}`, "duplicate object key"},
		{"nested duplicate key", `[{"x":{"c":1,"c":2}}]`, "duplicate object key"},
		{"duplicate key through an escape", `{"a":1,"\u0061":2}`, "duplicate object key"},
		{"duplicate key among many (a set, not a scan)", manyKeys(40, "k3"), "duplicate object key"},
		{"duplicate key right past the scan", manyKeys(16, "k0"), "duplicate object key"},
		{"bad escape", `"\x"`, "invalid escape"},
		{"single quote escape", `"\'"`, "invalid escape"},
		{"uppercase U escape", `"\U0041"`, "invalid escape"},
		{"short \\u", `"\u12"`, "invalid \\u escape"},
		{"bad hex in \\u", `"\u12G4"`, "invalid \\u escape"},
		{"escape at end", `"\`, "unterminated string"},
		{"unterminated string", `"abc`, "unterminated string"},
		{"control character", "\"a\x01b\"", "control character"},
		{"raw newline in string", "\"a\nb\"", "control character"},
		{"trailing value", `1 2`, "unexpected data after JSON value"},
		{"trailing word", `[1] x`, "unexpected data after JSON value"},
		{"two objects", `{}{}`, "unexpected data after JSON value"},
		{"extra bracket", `[1]]`, "unexpected data after JSON value"},
		{"two strings", `"a""b"`, "unexpected data after JSON value"},
		{"empty", ``, "unexpected end of input"},
		{"only space", " \n", "unexpected end of input"},
		{"open array", `[`, "unexpected end of input"},
		{"open array after value", `[1`, "unexpected end of input"},
		{"trailing comma in array", `[1,]`, "unexpected character"},
		{"trailing comma in object", `{"a":1,}`, "expected object key"},
		{"missing colon", `{"a"}`, "expected ':'"},
		{"missing value", `{"a":}`, "unexpected character"},
		{"unquoted key", `{a:1}`, "expected object key"},
		{"missing comma", `[1 2]`, "expected ',' or ']'"},
		{"leading zero", `01`, "unexpected data after JSON value"},
		{"bare minus", `-`, "invalid number"},
		{"plus sign", `+1`, "unexpected character"},
		{"dot without digits", `1.`, "invalid number"},
		{"leading dot", `.5`, "unexpected character"},
		{"exponent without digits", `1e`, "invalid number"},
		{"exponent sign without digits", `1e+`, "invalid number"},
		{"NaN", `NaN`, "unexpected character"},
		{"Infinity", `Infinity`, "unexpected character"},
		{"-Infinity", `-Infinity`, "invalid number"},
		{"truncated literal", `tru`, "invalid literal"},
		{"misspelled literal", `nul1`, "invalid literal"},
		{"single quotes", `'a'`, "unexpected character"},
		{"comment", `/*c*/1`, "unexpected character"},
		{"byte order mark", "\ufeff1", "unexpected character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := parseJSON([]byte(tt.in), 64)
			if err == nil {
				t.Fatalf("parseJSON(%q) = %#v, want an error containing %q", tt.in, v, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseJSON(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func nestedJSON(open, scalar, close string, n int) string {
	return strings.Repeat(open, n) + scalar + strings.Repeat(close, n)
}

func TestParseJSONDepth(t *testing.T) {
	t.Parallel()
	const limit = 10
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		// A value at depth d (d containers around it) needs d < maxDepth.
		{"arrays at the limit", nestedJSON("[", "1", "]", limit-1), true},
		{"arrays over the limit", nestedJSON("[", "1", "]", limit), false},
		{"empty arrays at the limit", nestedJSON("[", "", "]", limit), true},
		{"empty arrays over the limit", nestedJSON("[", "", "]", limit+1), false},
		{"objects at the limit", nestedJSON(`{"a":`, "1", "}", limit-1), true},
		{"objects over the limit", nestedJSON(`{"a":`, "1", "}", limit), false},
		{"mixed over the limit", nestedJSON(`[{"a":`, "1", "}]", limit/2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseJSON([]byte(tt.in), limit)
			if tt.ok && err != nil {
				t.Errorf("parseJSON(%s, %d) error = %v, want nil", tt.in, limit, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "maximum nesting depth of 10")) {
				t.Errorf("parseJSON(%s, %d) error = %v, want a depth error", tt.in, limit, err)
			}
		})
	}

	t.Run("a million brackets fail fast", func(t *testing.T) {
		t.Parallel()
		in := strings.Repeat("[", 1e6)
		start := time.Now()
		if _, err := parseJSON([]byte(in), 2*DefaultLimits.MaxDepth+8); err == nil {
			t.Error("parseJSON(1e6 × '[') error = nil, want a depth error")
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("parseJSON(1e6 × '[') took %v", d)
		}
	})
}

func TestParseJSONValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"surrogate pair, uppercase hex", `"\uD83D\uDE00"`, "😀"},
		// A lone surrogate is kept, in the three bytes of WTF-8 (JSON.parse keeps it too).
		{"lone high surrogate", `"\ud83d"`, "\xed\xa0\xbd"},
		{"lone low surrogate", `"\ude00"`, "\xed\xb8\x80"},
		{"high surrogate then letter escape", `"\ud83d\u0041"`, "\xed\xa0\xbdA"},
		{"high surrogate then letter", `"\ud83dx"`, "\xed\xa0\xbdx"},
		{"two high surrogates then low", `"\ud83d\ud83d\ude00"`, "\xed\xa0\xbd😀"},
		{"low then high surrogate", `"\ude00\ud83d"`, "\xed\xb8\x80\xed\xa0\xbd"},
		{"lone surrogate and an invalid byte", "\"\\ud800\xff\"", "\xed\xa0\x80\ufffd"},
		{"raw surrogate bytes are invalid UTF-8", "\"\xed\xa0\x80\"", "\ufffd\ufffd\ufffd"},
		{"NUL escape", `"\u0000"`, "\x00"},
		{"all short escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"raw UTF-8", `"é😀"`, "é😀"},
		{"invalid UTF-8 byte", "\"a\xffb\"", "a\ufffdb"},
		{"invalid UTF-8 after an escape", "\"\\n\xff\"", "\n\ufffd"},
		{"zero", `0`, 0.0},
		{"negative", `-1.5e-3`, -0.0015},
		{"capital exponent", `1E2`, 100.0},
		{"largest float", `1.7976931348623157e308`, math.MaxFloat64},
		{"overflow is +Infinity (as JSON.parse)", `1e309`, math.Inf(1)},
		{"negative overflow is -Infinity", `-1e309`, math.Inf(-1)},
		{"underflow is 0", `1e-400`, 0.0},
		{"smallest subnormal", `5e-324`, 5e-324},
		{"more digits than a float holds", `123456789012345678901234567890`, 1.2345678901234568e29},
		{"integer beyond 2^53", `9007199254740993`, 9007199254740992.0},
		{"whitespace around", " \t\r\n[1] \n", []any{1.0}},
		{"literals", `[true,false,null]`, []any{true, false, nil}},
		{"object", `{"a":[{}],"b":""}`, Object{{"a", []any{Object{}}}, {"b", ""}}},
		{"object keeps its key order", `{"b":1,"a":2,"c":{"z":0,"y":1}}`, Object{{"b", 1.0}, {"a", 2.0}, {"c", Object{{"z", 0.0}, {"y", 1.0}}}}},
		{"empty key", `{"":1}`, Object{{"", 1.0}}},
		{"15-digit integer (fast path)", `-999999999999999`, -999999999999999.0},
		{"16-digit integer", `9999999999999999`, 1e16},
		{"zero and ten", `[0,10]`, []any{0.0, 10.0}},
		{"keywords and near-keywords", `["push","pushy","Pull","pipeline","undefined","und\u0065fined",""]`,
			[]any{"push", "pushy", "Pull", "pipeline", "undefined", "undefined", ""}},
		{"nested arrays share the scratch stack", `[[1,[2,[3]],4],[],[5]]`,
			[]any{[]any{1.0, []any{2.0, []any{3.0}}, 4.0}, []any{}, []any{5.0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseJSON([]byte(tt.in), 64)
			if err != nil {
				t.Fatalf("parseJSON(%q) error = %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseJSON(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}

	t.Run("negative zero keeps its sign", func(t *testing.T) {
		t.Parallel()
		got, err := parseJSON([]byte(`-0`), 64)
		if f, ok := got.(float64); err != nil || !ok || f != 0 || !math.Signbit(f) {
			t.Errorf("parseJSON(-0) = %v, %v; want -0", got, err)
		}
	})
}

func TestSmallIntMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		prefix   string
		two      bool
		id, refs int64
		ok       bool
	}{
		{`["pull",1]`, `["pull",`, false, 1, 0, true},
		{`["pull",-3]`, `["pull",`, false, -3, 0, true},
		{`["pull",0]`, `["pull",`, false, 0, 0, true},
		{`["pull",999999999999999]`, `["pull",`, false, 999999999999999, 0, true},
		{`["pull",1000000000000000]`, `["pull",`, false, 0, 0, false}, // 16 digits: general reader
		{`["pull",01]`, `["pull",`, false, 0, 0, false},
		{`["pull",-0]`, `["pull",`, false, 0, 0, false},
		{`["pull",1.5]`, `["pull",`, false, 0, 0, false},
		{`["pull",1e2]`, `["pull",`, false, 0, 0, false},
		{`["pull", 1]`, `["pull",`, false, 0, 0, false},
		{`["pull",1 ]`, `["pull",`, false, 0, 0, false},
		{`["pull",1]x`, `["pull",`, false, 0, 0, false},
		{`["pull",1,2]`, `["pull",`, false, 0, 0, false},
		{`["pull",]`, `["pull",`, false, 0, 0, false},
		{`["pull",-]`, `["pull",`, false, 0, 0, false},
		{`["pull",1`, `["pull",`, false, 0, 0, false},
		{`["release",-2,3]`, `["release",`, true, -2, 3, true},
		{`["release",5,1]`, `["release",`, true, 5, 1, true},
		{`["release",5]`, `["release",`, true, 0, 0, false},
		{`["release",5,]`, `["release",`, true, 0, 0, false},
		{`["release",5,1.0]`, `["release",`, true, 0, 0, false},
		{`["release",5,1,1]`, `["release",`, true, 0, 0, false},
	}
	for _, tt := range tests {
		var refs int64
		var second *int64
		if tt.two {
			second = &refs
		}
		id, ok := smallIntMessage([]byte(tt.in), tt.prefix, second)
		if ok != tt.ok || ok && (id != tt.id || refs != tt.refs) {
			t.Errorf("smallIntMessage(%s) = %d, %d, %v; want %d, %d, %v", tt.in, id, refs, ok, tt.id, tt.refs, tt.ok)
		}
	}
}

// ---- the writer against JSON.stringify ----

func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // JSON.stringify(in)
	}{
		{"", `""`},
		{"abc", `"abc"`},
		{`a"b`, `"a\"b"`},
		{`a\b`, `"a\\b"`},
		{"\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\x7f", "\"\x7f\""},
		{"/", `"/"`},
		{"<>&'", `"<>&'"`},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"é😀", `"é😀"`},
		{"a\xffb", "\"a\ufffdb\""}, // not a JS string: invalid UTF-8 becomes U+FFFD
		{"\xff\xfe", "\"\ufffd\ufffd\""},
	}
	for _, tt := range tests {
		if got := string(appendJSONString([]byte("x"), tt.in)); got != "x"+tt.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tt.in, got[1:], tt.want)
		}
	}
}

// Variables, so that the arithmetic is float64's, not exact constant arithmetic.
var pointOne, pointTwo, three = 0.1, 0.2, 3.0

func TestAppendJSONNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   float64
		want string // JSON.stringify(in)
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{0.1, "0.1"},
		{1.5, "1.5"},
		{-0.0015, "-0.0015"},
		{pointOne + pointTwo, "0.30000000000000004"},
		{1 / three, "0.3333333333333333"},
		{4.35, "4.35"},
		{100, "100"},
		{1e20, "100000000000000000000"},
		{123456789012345680000, "123456789012345680000"},
		{1e21, "1e+21"},
		{-1e21, "-1e+21"},
		{1.5e21, "1.5e+21"},
		{1e100, "1e+100"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{1e-6, "0.000001"},
		{0.000001234, "0.000001234"},
		{2.5e-5, "0.000025"},
		{1e-7, "1e-7"},
		{-1e-7, "-1e-7"},
		{1.5e-7, "1.5e-7"},
		{9.99e-7, "9.99e-7"},
		{123e-20, "1.23e-18"},
		{5e-324, "5e-324"},
		{1 << 53, "9007199254740992"},
		{1<<53 + 2, "9007199254740994"},
	}
	for _, tt := range tests {
		if got := string(appendJSONNumber(nil, tt.in)); got != tt.want {
			t.Errorf("appendJSONNumber(%v) = %s, want %s (JSON.stringify)", tt.in, got, tt.want)
		}
	}
}

// TestAppendJSONNumberES6 compares with encoding/json, which prints finite floats as ES6's
// Number.prototype.toString does (JSON.stringify), except -0.
func TestAppendJSONNumberES6(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	check := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			return
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSONNumber(nil, f)
		if string(got) != string(want) {
			t.Fatalf("appendJSONNumber(%v) = %s, want %s", f, got, want)
		}
		back, err := strconv.ParseFloat(string(got), 64)
		if err != nil || back != f {
			t.Fatalf("appendJSONNumber(%v) = %s, which parses as %v, %v", f, got, back, err)
		}
	}
	for range 100000 {
		check(math.Float64frombits(r.Uint64()))
		// Decimal-looking numbers around the format boundaries.
		check(float64(r.IntN(2000)-1000) * math.Pow(10, float64(r.IntN(60)-30)))
	}
}

// ---- values: encode and evaluate ----

// noImporter refuses every reference: the values tested here are plain data.
type noImporter struct{}

var errNoImports = errors.New("no references in this test")

func (noImporter) getExport(float64) (hook, error)               { return nil, errNoImports }
func (noImporter) importStub(float64) (hook, error)              { return nil, errNoImports }
func (noImporter) importPromise(float64) (hook, error)           { return nil, errNoImports }
func (noImporter) pipeReadable(float64) (*ReadableStream, error) { return nil, errNoImports }
func (noImporter) session() *Session                             { return nil }

func encodeForTest(v any) (string, error) {
	var e encoder
	err := e.value(v, 0)
	return string(e.b), err
}

func evaluateForTest(wire string) (any, error) {
	lim := DefaultLimits
	v, err := parseJSON([]byte(wire), 2*lim.MaxDepth+8)
	if err != nil {
		return nil, err
	}
	ev := evaluator{im: noImporter{}, lim: &lim}
	return ev.evaluate(v)
}

// errorType returns the JavaScript error type an evaluation error is sent as.
func errorType(err error) string {
	return defaultWireError(err).Name
}

// diffValues is cmp.Diff(want, got, valueCmpOpts), with a reflect.DeepEqual fast path: cmp's
// options make it exponential in the nesting depth of []any trees.
func diffValues(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, valueCmpOpts)
}

var valueCmpOpts = cmp.Options{
	cmpopts.EquateNaNs(),
	cmp.Comparer(func(a, b *big.Int) bool { return a.Cmp(b) == 0 }),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmp.Comparer(func(a, b *url.URL) bool { return a.String() == b.String() }),
	cmp.Comparer(func(a, b undefined) bool { return true }),
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func bigFromString(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

// nestedArrays returns n nested Go arrays around "x", and their wire form.
func nestedArrays(n int) (any, string) {
	var v any = "x"
	wire := `"x"`
	for range n {
		v = []any{v}
		wire = "[[" + wire + "]]"
	}
	return v, wire
}

type roundTrip struct {
	name  string
	value any    // what we encode
	wire  string // what we send: exactly this
	back  any    // what evaluating wire gives, when not value
}

func roundTrips() []roundTrip {
	rt := []roundTrip{
		{name: "undefined", value: Undefined, wire: `["undefined"]`},
		{name: "null", value: nil, wire: `null`},
		{name: "true", value: true, wire: `true`},
		{name: "string", value: "a\"b\n", wire: `"a\"b\n"`},
		{name: "string that looks special", value: "undefined", wire: `"undefined"`},
		{name: "number", value: 1.5, wire: `1.5`},
		{name: "Go int", value: 42, wire: `42`, back: 42.0},
		{name: "negative zero", value: math.Copysign(0, -1), wire: `0`, back: 0.0},
		{name: "large number", value: 1e21, wire: `1e+21`},
		{name: "small number", value: 1e-7, wire: `1e-7`},
		{name: "inf", value: math.Inf(1), wire: `["inf"]`},
		{name: "-inf", value: math.Inf(-1), wire: `["-inf"]`},
		{name: "nan", value: math.NaN(), wire: `["nan"]`},
		{name: "bigint", value: big.NewInt(123), wire: `["bigint","123"]`},
		{name: "negative bigint", value: big.NewInt(-42), wire: `["bigint","-42"]`},
		{name: "huge bigint", value: bigFromString("1" + strings.Repeat("0", 100)), wire: `["bigint","1` + strings.Repeat("0", 100) + `"]`},
		{name: "bigint at the digit limit", value: bigFromString(strings.Repeat("9", DefaultLimits.MaxBigIntDigits)), wire: `["bigint","` + strings.Repeat("9", DefaultLimits.MaxBigIntDigits) + `"]`},
		{name: "date", value: time.UnixMilli(1700000000000), wire: `["date",1700000000000]`},
		{name: "date before 1970", value: time.UnixMilli(-1), wire: `["date",-1]`},
		{name: "epoch", value: time.UnixMilli(0), wire: `["date",0]`},
		{name: "invalid date", value: InvalidDate{}, wire: `["date",null]`},
		{name: "bytes", value: []byte{1, 2, 3, 255}, wire: `["bytes","AQID/w"]`},
		{name: "empty bytes", value: []byte{}, wire: `["bytes",""]`},
		{name: "empty array", value: []any{}, wire: `[[]]`},
		{name: "array", value: []any{1.0, []any{2.0, "three"}, []any{}}, wire: `[[1,[[2,"three"]],[[]]]]`},
		{name: "object", value: Object{{"a", []any{1.0}}, {"b", Object{{"c", nil}}}, {"u", Undefined}},
			wire: `{"a":[[1]],"b":{"c":null},"u":["undefined"]}`},
		{name: "object, keys in its order", value: Object{{"z", 1.0}, {"a", Object{{"y", nil}, {"b", 2.0}}}},
			wire: `{"z":1,"a":{"y":null,"b":2}}`},
		{name: "map, keys sorted", value: map[string]any{"z": 1.0, "a": map[string]any{"y": nil, "b": 2.0}},
			wire: `{"a":{"b":2,"y":null},"z":1}`,
			back: Object{{"a", Object{{"b", 2.0}, {"y", nil}}}, {"z", 1.0}}},
		{name: "array of special values", value: []any{Undefined, math.Inf(1), big.NewInt(1), []byte{0}},
			wire: `[[["undefined"],["inf"],["bigint","1"],["bytes","AA"]]]`},
		{name: "error", value: NewError("TypeError", "inner"), wire: `["error","TypeError","inner"]`},
		{name: "error with code", value: NewError("RangeError", "something broke").WithProp("code", "E_BROKE"),
			wire: `["error","RangeError","something broke",null,{"code":"E_BROKE"}]`},
		{name: "error with numeric code", value: NewError("Error", "m").WithProp("code", 7.0),
			wire: `["error","Error","m",null,{"code":7}]`},
		{name: "error with cause", value: NewError("Error", "outer").WithProp("cause", NewError("TypeError", "inner")),
			wire: `["error","Error","outer",null,{"cause":["error","TypeError","inner"]}]`},
		{name: "error stack is redacted", value: &Error{Name: "Error", Message: "m", Stack: "at f (x.js:1)"},
			wire: `["error","Error","m"]`, back: &Error{Name: "Error", Message: "m"}},
		{name: "AggregateError", value: NewError("AggregateError", "all failed").WithProp("errors", []any{NewError("Error", "a")}),
			wire: `["error","AggregateError","all failed",null,{"errors":[[["error","Error","a"]]]}]`},
		{name: "url", value: mustURL("https://example.com/a?b=1#c"), wire: `["url","https://example.com/a?b=1#c"]`},
		{name: "headers", value: http.Header{"X-A": {"1"}, "Content-Type": {"text/plain"}},
			wire: `["headers",[["content-type","text/plain"],["x-a","1"]]]`},
		{name: "repeated header", value: http.Header{"Accept": {"a", "b"}},
			wire: `["headers",[["accept","a, b"]]]`, back: http.Header{"Accept": {"a, b"}}},
		{name: "set-cookie stays separate", value: http.Header{"Set-Cookie": {"a=1", "b=2"}},
			wire: `["headers",[["set-cookie","a=1"],["set-cookie","b=2"]]]`},
		{name: "empty headers", value: http.Header{}, wire: `["headers",[]]`},
		{name: "request", value: &Request{URL: "https://example.com/", Method: "POST", Headers: http.Header{"X-A": {"1"}},
			Body: "hi", Init: map[string]any{"redirect": "follow"}},
			wire: `["request","https://example.com/",{"body":"hi","headers":[["x-a","1"]],"method":"POST","redirect":"follow"}]`},
		{name: "GET request", value: &Request{URL: "https://example.com/"}, wire: `["request","https://example.com/",{}]`,
			back: &Request{URL: "https://example.com/", Method: "GET"}},
		{name: "request with bytes body", value: &Request{URL: "https://example.com/", Method: "PUT", Body: []byte("x")},
			wire: `["request","https://example.com/",{"body":["bytes","eA"],"method":"PUT"}]`},
		{name: "response", value: &Response{Status: 404, StatusText: "Not Found", Headers: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("x")},
			wire: `["response",["bytes","eA"],{"headers":[["content-type","text/plain"]],"status":404,"statusText":"Not Found"}]`},
		{name: "empty response", value: &Response{}, wire: `["response",null,{}]`, back: &Response{Status: 200}},
		{name: "response with string body", value: &Response{Status: 200, Body: "ok"}, wire: `["response","ok",{}]`},
	}
	for _, n := range []int{1, 2, 3, 10, 100, DefaultLimits.MaxDepth - 1} {
		v, wire := nestedArrays(n)
		rt = append(rt, roundTrip{name: "nested arrays " + strconv.Itoa(n), value: v, wire: wire})
	}
	for _, marker := range sortedKeys(byteContainerElemSize) {
		size := byteContainerElemSize[marker]
		data := make([]byte, 2*size)
		for i := range data {
			data[i] = byte(i*37 + 1)
		}
		wire := `["bytes","` + base64.RawStdEncoding.EncodeToString(data) + `","` + marker + `"]`
		r := roundTrip{name: "bytes " + marker, value: TypedBytes{Type: marker, Data: data}, wire: wire}
		if marker == "Uint8Array" {
			// A Uint8Array is a plain []byte, sent without a marker.
			r.value, r.wire, r.back = []byte(data), `["bytes","`+base64.RawStdEncoding.EncodeToString(data)+`"]`, nil
		}
		rt = append(rt, r)
	}
	return rt
}

func TestValueRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tt := range roundTrips() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wire, err := encodeForTest(tt.value)
			if err != nil {
				t.Fatalf("encode(%#v) error = %v", tt.value, err)
			}
			if wire != tt.wire {
				t.Errorf("encode(%#v) = %s, want %s", tt.value, wire, tt.wire)
			}
			got, err := evaluateForTest(tt.wire)
			if err != nil {
				t.Fatalf("evaluate(%s) error = %v", tt.wire, err)
			}
			want := tt.back
			if want == nil {
				want = tt.value
			}
			if diff := diffValues(want, got); diff != "" {
				t.Errorf("evaluate(%s) mismatch (-want +got):\n%s", tt.wire, diff)
			}
			// And again: what we evaluated encodes to the same wire form.
			if again, err := encodeForTest(got); err != nil || again != tt.wire {
				t.Errorf("encode(evaluate(%s)) = %s, %v; want %s", tt.wire, again, err, tt.wire)
			}
		})
	}
}

// TestEvaluateValues covers wire forms we accept but never send.
func TestEvaluateValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wire string
		want any
	}{
		{"padded base64", `["bytes","AQID/w=="]`, []byte{1, 2, 3, 255}},
		{"URL-safe base64", `["bytes","AQID_w"]`, []byte{1, 2, 3, 255}},
		{"Uint8Array marker", `["bytes","AQID","Uint8Array"]`, []byte{1, 2, 3}},
		{"ArrayBuffer marker", `["bytes","AQID","ArrayBuffer"]`, TypedBytes{Type: "ArrayBuffer", Data: []byte{1, 2, 3}}},
		{"date with a fraction", `["date",1.9]`, time.UnixMilli(1)},
		{"latest date", `["date",8.64e15]`, time.UnixMilli(8.64e15)},
		{"date out of range", `["date",8.640000000000001e15]`, InvalidDate{}},
		{"negative zero bigint", `["bigint","-0"]`, big.NewInt(0)},
		{"unknown error name", `["error","Bogus","m"]`, NewError("Error", "m")},
		{"error stack and props", `["error","Error","m","stack-here",{"code":7,"name":"x","message":"y","stack":"z","__proto__":1}]`,
			&Error{Name: "Error", Message: "m", Stack: "stack-here", Props: map[string]any{"code": 7.0}}},
		{"error with null stack", `["error","TypeError","m",null]`, NewError("TypeError", "m")},
		{"prototype keys dropped", `{"__proto__":{"polluted":true},"toString":"evil","constructor":1,"toJSON":2,"ok":"yes"}`,
			Object{{"ok", "yes"}}},
		{"then, dup and dispose are data", `{"then":1,"dup":2,"dispose":3}`, Object{{"then", 1.0}, {"dup", 2.0}, {"dispose", 3.0}}},
		{"request method is uppercased", `["request","https://x.test/",{"method":"post"}]`, &Request{URL: "https://x.test/", Method: "POST"}},
		{"response status", `["response",null,{"status":201,"statusText":"Created"}]`, &Response{Status: 201, StatusText: "Created"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := evaluateForTest(tt.wire)
			if err != nil {
				t.Fatalf("evaluate(%s) error = %v", tt.wire, err)
			}
			if diff := diffValues(tt.want, got); diff != "" {
				t.Errorf("evaluate(%s) mismatch (-want +got):\n%s", tt.wire, diff)
			}
		})
	}
}

func TestEvaluateRejects(t *testing.T) {
	t.Parallel()
	_, deepWire := nestedArrays(DefaultLimits.MaxDepth)
	tests := []struct {
		name, wire string
		wantType   string // the JavaScript error type of the abort
	}{
		{"bare array", `[1,2]`, "TypeError"},
		{"empty array", `[]`, "TypeError"},
		{"unknown tag", `["nope"]`, "TypeError"},
		{"undefined with an argument", `["undefined",1]`, "TypeError"},
		{"bigint without digits", `["bigint"]`, "TypeError"},
		{"bigint number", `["bigint",1]`, "TypeError"},
		{"bigint not decimal", `["bigint","12x"]`, "SyntaxError"},
		{"bigint over the digit limit", `["bigint","` + strings.Repeat("9", DefaultLimits.MaxBigIntDigits+1) + `"]`, "TypeError"},
		{"date without time", `["date"]`, "TypeError"},
		{"date string", `["date","2020-01-01"]`, "TypeError"},
		{"bytes without data", `["bytes"]`, "TypeError"},
		{"bytes number", `["bytes",1]`, "TypeError"},
		{"bad base64", `["bytes","!!!"]`, "TypeError"},
		{"unknown bytes marker", `["bytes","AQID","Nope"]`, "TypeError"},
		{"bytes marker not a string", `["bytes","AQID",7]`, "TypeError"},
		{"bad Int16Array length", `["bytes","AQID","Int16Array"]`, "TypeError"},
		{"bad Float64Array length", `["bytes","AQIDBA","Float64Array"]`, "TypeError"},
		{"bad BigInt64Array length", `["bytes","AQIDBAUGBw","BigInt64Array"]`, "TypeError"},
		{"bytes with extra element", `["bytes","AQID","Uint8Array",1]`, "TypeError"},
		{"error without message", `["error","Error"]`, "TypeError"},
		{"error name not a string", `["error",1,"m"]`, "TypeError"},
		{"error props not an object", `["error","Error","m",null,5]`, "TypeError"},
		{"error with bad prop", `["error","Error","m",null,{"code":[1]}]`, "TypeError"},
		{"url not absolute", `["url","/relative"]`, "TypeError"},
		{"url not a string", `["url",1]`, "TypeError"},
		{"headers pair too short", `["headers",[["a"]]]`, "TypeError"},
		{"headers value not a string", `["headers",[["a",1]]]`, "TypeError"},
		{"headers not pairs", `["headers","x"]`, "TypeError"},
		{"request without init", `["request","https://x.test/"]`, "TypeError"},
		{"request headers not pairs", `["request","https://x.test/",{"headers":"x"}]`, "TypeError"},
		{"request body number", `["request","https://x.test/",{"body":5}]`, "TypeError"},
		{"request with signal", `["request","https://x.test/",{"signal":null}]`, "TypeError"},
		{"response body number", `["response",5,{}]`, "TypeError"},
		{"nested escaped arrays over the depth limit", deepWire, "TypeError"},
		{"bad value deep inside", `{"a":[[1,{"b":[[["bytes","AQID","Nope"]]]}]]}`, "TypeError"},
		{"reference without a session", `["export",-1]`, "Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := evaluateForTest(tt.wire)
			if err == nil {
				t.Fatalf("evaluate(%s) = %#v, want a %s", truncate(tt.wire, 100), v, tt.wantType)
			}
			if got := errorType(err); got != tt.wantType {
				t.Errorf("evaluate(%s) error = %v (%s), want a %s", truncate(tt.wire, 100), err, got, tt.wantType)
			}
		})
	}
}

// TestBytesMarkerLength checks every typed-array marker refuses a byte length that is not a
// multiple of its element size.
func TestBytesMarkerLength(t *testing.T) {
	t.Parallel()
	for _, marker := range sortedKeys(byteContainerElemSize) {
		size := byteContainerElemSize[marker]
		for _, n := range []int{0, size, 3 * size, size + 1, 2*size - 1} {
			wire := `["bytes","` + base64.RawStdEncoding.EncodeToString(make([]byte, n)) + `","` + marker + `"]`
			_, err := evaluateForTest(wire)
			if ok := n%size == 0; ok != (err == nil) {
				t.Errorf("evaluate(%s) error = %v, want error: %v", wire, err, !ok)
			}
			if err != nil && errorType(err) != "TypeError" {
				t.Errorf("evaluate(%s) error = %v (%s), want a TypeError", wire, err, errorType(err))
			}
		}
	}
}

// TestEncodeRejects covers values we refuse to send.
func TestEncodeRejects(t *testing.T) {
	t.Parallel()
	deep, _ := nestedArrays(300)
	loop := map[string]any{}
	loop["self"] = loop
	tests := []struct {
		name  string
		value any
	}{
		{"unknown bytes marker", TypedBytes{Type: "Nope", Data: []byte{1}}},
		{"too deep", deep},
		{"cycle", loop},
		{"channel", make(chan int)},
		{"map with int keys", map[int]int{1: 2}},
		{"target without a session", &testTarget{}},
		{"func without a session", func() {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if wire, err := encodeForTest(tt.value); err == nil {
				t.Errorf("encode(%T) = %s, want an error", tt.value, truncate(wire, 100))
			}
		})
	}
}

type testTarget struct{ Target }

// TestEncodeRawNonFinite: the raw writer (map instructions forwarded to a peer, Request and
// Response init properties) must write valid JSON, or fail, for the numbers JSON cannot hold:
// parseJSON reads an overflowing number as ±Infinity, as JSON.parse does.
func TestEncodeRawNonFinite(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		var e encoder
		err := e.raw(map[string]any{"x": f}, 0)
		if err == nil && !json.Valid(e.b) {
			t.Errorf("encoder.raw({x: %v}) = %s, which is not JSON", f, e.b)
		}
	}
}

// TestParseJSONInterning checks the string table: short plain strings and keys read through it
// come out the same as without it, and it stays bounded.
func TestParseJSONInterning(t *testing.T) {
	t.Parallel()
	strs := map[string]any{}
	inputs := []string{
		`{"name":"alice","tags":["x","y","x"],"n":[0,1,255,256,-1,-0]}`,
		`{"name":"alice","esc":"a\nb","bad":"a` + "\xff" + `b","long":"` + strings.Repeat("z", 40) + `"}`,
		`["push",["pipeline",0,["add"],[1,2]]]`,
	}
	for _, in := range inputs {
		for range 2 { // the second time through the filled table
			want, err := parseJSON([]byte(in), 64)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := parseJSONScratch([]byte(in), 64, nil, strs)
			if err != nil {
				t.Fatalf("parseJSONScratch(%s): %v", in, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parseJSONScratch(%s) differs from parseJSON (-want +got):\n%s", in, diff)
			}
		}
	}
	if _, ok := strs["a\nb"]; ok {
		t.Error("a string with an escape was interned")
	}
	if _, ok := strs[strings.Repeat("z", 40)]; ok {
		t.Error("a string over the length bound was interned")
	}
	if _, _, err := parseJSONScratch([]byte(`{"name":1,"name":2}`), 64, nil, strs); err == nil {
		t.Error("a duplicate interned key was accepted")
	}
	for i := range 2 * maxInterned {
		if _, _, err := parseJSONScratch([]byte(`"s`+strconv.Itoa(i)+`"`), 64, nil, strs); err != nil {
			t.Fatal(err)
		}
	}
	if len(strs) > maxInterned {
		t.Errorf("the string table grew to %d entries, over its bound of %d", len(strs), maxInterned)
	}
}

// TestParseMessage checks that a message's elements read into a fixed array are what parseJSON
// makes of it, that anything but an array of one to four elements is told apart, and that the
// scratch stack comes back empty and cleared.
func TestParseMessage(t *testing.T) {
	t.Parallel()
	inputs := []string{
		`["push",["pipeline",0,["add"],[1,2]]]`,
		` [ "resolve" , 1 , {"a":[1,[2]]} ] `,
		`["abort",["error","Error","x"]]`,
		`["a",1,2,3]`,
		`[]`,
		`["a",1,2,3,4]`,
		`{"push":1}`,
		`"push"`,
		`[1,2`,
		`["a"] x`,
		`[[[[1]]]]`,
		``,
	}
	for _, in := range inputs {
		want, wantErr := parseJSON([]byte(in), 4)
		var dst [4]any
		stack := make([]any, 0, 8)
		n, stack, err := parseMessage([]byte(in), 4, stack, nil, &dst, nil)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("parseMessage(%q) error %v, parseJSON's %v", in, err, wantErr)
			continue
		}
		if len(stack) != 0 || slices.ContainsFunc(stack[:cap(stack)], func(v any) bool { return v != nil }) {
			t.Errorf("parseMessage(%q) left the stack %v", in, stack[:cap(stack)])
		}
		if err != nil {
			continue
		}
		arr, isArr := want.([]any)
		if !isArr || len(arr) > len(dst) {
			if n != -1 {
				t.Errorf("parseMessage(%q) = %d, want -1 (not an array of at most 4)", in, n)
			}
			continue
		}
		if n != len(arr) {
			t.Errorf("parseMessage(%q) = %d elements, want %d", in, n, len(arr))
			continue
		}
		if diff := cmp.Diff(arr, dst[:n], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("parseMessage(%q) differs from parseJSON (-want +got):\n%s", in, diff)
		}
	}
}

// taskResolve is the answer of an A2A sendMessage: a resolve carrying a task.
var taskResolve = []byte(`["resolve",7,{"task":{"id":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f","contextId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e90",` +
	`"status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-05-01T12:00:00.123456789Z"},` +
	`"artifacts":[[{"artifactId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e91","parts":[[{"text":"echo: hello"}]]}]],` +
	`"history":[[{"messageId":"m1","role":"ROLE_USER","parts":[[{"text":"hello"}]],"taskId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e8f","contextId":"019a6f3c-7e41-7b7a-9d4e-3f2b1c0d9e90"}]],` +
	`"metadata":{"seq":3}}}]`)

// BenchmarkParseTaskResolve: reading the answer of an A2A sendMessage (a resolve carrying a
// task: objects several levels deep, the shape the binding's clients read most).
func BenchmarkParseTaskResolve(b *testing.B) {
	msg := taskResolve
	strs := map[string]any{}
	var stack []any
	var dst [4]any
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		n, s, err := parseMessage(msg, 64, stack, strs, &dst, nil)
		if err != nil || n != 3 {
			b.Fatal(n, err)
		}
		stack = s
	}
}
