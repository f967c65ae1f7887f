package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
)

// Micros is an amount of money in millionths of the price table's currency unit.
type Micros int64

// String is m in currency units, with six decimals: "0.001234".
func (m Micros) String() string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", uint64(-m)
	}
	return sign + strconv.FormatUint(u/1e6, 10) + "." + fmt.Sprintf("%06d", u%1e6)
}

// Price is what a model costs, in currency units per million tokens read (Input) and written
// (Output). A price per million tokens is a price in millionths per token, so a cost is an
// exact number of [Micros].
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// maxPrice bounds a price per million tokens: far above any model's, low enough that a price in
// millionths of a micro-unit per token fits comfortably in an int64.
const maxPrice = 1e6

// Prices is the operator's price table: a [Price] by model name, "*" for any model not named.
type Prices map[string]Price

// ParsePrices reads a price table, strictly: a JSON object from model name to
// {"input": number, "output": number}, no other keys, no duplicate names, every price finite,
// at least 0 and at most a million.
//
//	{"gpt-4o-mini": {"input": 0.15, "output": 0.60}, "*": {"input": 1, "output": 2}}
func ParsePrices(data []byte) (Prices, error) {
	bad := func(format string, args ...any) (Prices, error) {
		return nil, fmt.Errorf("session: price table: "+format, args...)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad("not a JSON object")
	}
	p := Prices{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("%v", err)
		}
		model := tok.(string)
		if _, dup := p[model]; dup {
			return bad("model %q appears twice", model)
		}
		if len(p) >= 10000 {
			return bad("more than 10000 models")
		}
		var pr Price
		if err := readPrice(dec, &pr); err != nil {
			return bad("model %q: %v", model, err)
		}
		p[model] = pr
	}
	if _, err := dec.Token(); err != nil {
		return bad("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("data after the object")
	}
	return p, nil
}

// readPrice reads {"input": n, "output": n} with exactly those keys, each once.
func readPrice(dec *json.Decoder, pr *Price) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New(`want {"input": number, "output": number}`)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k := tok.(string)
		if (k != "input" && k != "output") || seen[k] {
			return fmt.Errorf("unexpected key %q", k)
		}
		seen[k] = true
		tok, err = dec.Token()
		if err != nil {
			return err
		}
		n, ok := tok.(json.Number)
		if !ok {
			return fmt.Errorf("%s is not a number", k)
		}
		f, err := n.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > maxPrice {
			return fmt.Errorf("%s %s is not a price between 0 and %g", k, n, float64(maxPrice))
		}
		if k == "input" {
			pr.Input = f
		} else {
			pr.Output = f
		}
	}
	if !seen["input"] || !seen["output"] {
		return errors.New(`want both "input" and "output"`)
	}
	_, err := dec.Token()
	return err
}

// Cost prices u for model: the model's price, else "*"'s. ok is false when the table has
// neither (or the price is out of range); the cost is then 0 and unknown. The cost is rounded
// up to a whole micro-unit.
func (p Prices) Cost(model string, u Usage) (cost Micros, ok bool) {
	pr, ok := p[model]
	if !ok {
		if pr, ok = p["*"]; !ok {
			return 0, false
		}
	}
	valid := func(f float64) bool { return f >= 0 && f <= maxPrice }
	if !valid(pr.Input) || !valid(pr.Output) || u.In < 0 || u.Out < 0 {
		return 0, false
	}
	// Prices in millionths of a micro-unit per token, as integers: exact sums, one rounding.
	in, out := uint64(math.Round(pr.Input*1e6)), uint64(math.Round(pr.Output*1e6))
	hi1, lo1 := bits.Mul64(uint64(u.In), in)
	hi2, lo2 := bits.Mul64(uint64(u.Out), out)
	lo, carry := bits.Add64(lo1, lo2, 0)
	hi, _ := bits.Add64(hi1, hi2, carry)
	lo, carry = bits.Add64(lo, 1e6-1, 0) // round up
	hi += carry
	if hi >= 1e6 {
		return math.MaxInt64, true
	}
	q, _ := bits.Div64(hi, lo, 1e6)
	if q > math.MaxInt64 {
		return math.MaxInt64, true
	}
	return Micros(q), true
}
