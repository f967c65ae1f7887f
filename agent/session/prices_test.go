package session

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePrices(t *testing.T) {
	t.Parallel()
	p, err := ParsePrices([]byte(`{"gpt-4o-mini": {"input": 0.15, "output": 0.60}, "*": {"output": 2, "input": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Prices{"gpt-4o-mini": {0.15, 0.60}, "*": {1, 2}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("ParsePrices() (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		``, `[]`, `{"m": 1}`, `{"m": {"input": 1}}`, `{"m": {"input": 1, "output": 1, "extra": 1}}`,
		`{"m": {"Input": 1, "output": 1}}`, `{"m": {"input": 1, "input": 2, "output": 1}}`,
		`{"m": {"input": 1, "output": 1}, "m": {"input": 1, "output": 1}}`,
		`{"m": {"input": -1, "output": 1}}`, `{"m": {"input": 1e7, "output": 1}}`, `{"m": {"input": "1", "output": 1}}`,
		`{"m": {"input": 1, "output": 1}} {}`, `{"m": {"input": 1, "output": 1}`,
	} {
		if p, err := ParsePrices([]byte(bad)); err == nil {
			t.Errorf("ParsePrices(%s) = %v, want an error", bad, p)
		}
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	p := Prices{"m": {Input: 0.15, Output: 0.60}, "big": {Input: 1e6, Output: 1e6}}
	tests := []struct {
		model  string
		u      Usage
		want   Micros
		wantOK bool
	}{
		{"m", Usage{In: 100}, 15, true}, // exact: no binary-fraction rounding up to 16
		{"m", Usage{In: 1_000_000, Out: 1_000_000}, 750_000, true},
		{"m", Usage{In: 1}, 1, true}, // 0.15 rounds up
		{"m", Usage{}, 0, true},
		{"none", Usage{In: 5}, 0, false},
		{"big", Usage{In: math.MaxInt64, Out: math.MaxInt64}, math.MaxInt64, true}, // saturates
	}
	for _, tt := range tests {
		got, ok := p.Cost(tt.model, tt.u)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Cost(%s, %+v) = %d, %v; want %d, %v", tt.model, tt.u, got, ok, tt.want, tt.wantOK)
		}
	}
	star := Prices{"*": {Input: 2, Output: 0}}
	if got, ok := star.Cost("anything", Usage{In: 3}); got != 6 || !ok {
		t.Errorf(`Cost via "*" = %d, %v; want 6, true`, got, ok)
	}
	if got, ok := Prices(nil).Cost("m", Usage{In: 3}); got != 0 || ok {
		t.Errorf("nil table: Cost = %d, %v; want 0, false", got, ok)
	}
}

func TestMicrosString(t *testing.T) {
	t.Parallel()
	for m, want := range map[Micros]string{0: "0.000000", 1: "0.000001", 1_234_567: "1.234567", -5: "-0.000005"} {
		if got := m.String(); got != want {
			t.Errorf("Micros(%d).String() = %s, want %s", int64(m), got, want)
		}
	}
}
