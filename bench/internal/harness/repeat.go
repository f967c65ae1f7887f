package harness

// Repeated runs: how often each target passed, and how far its value moved.

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
)

// Repeat calls run n times, one whole run each (run starts and stops its own servers), until
// ctx is done or a run fails, and returns the targets of every run that finished. With n > 1
// it then writes their summary to w (WriteTargetSummary).
func Repeat(ctx context.Context, n int, w io.Writer, run func() ([]Target, error)) ([][]Target, error) {
	var runs [][]Target
	if n > 1 {
		defer func() { WriteTargetSummary(w, runs) }()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		if n > 1 {
			fmt.Fprintf(os.Stderr, "==== run %d of %d\n", i+1, n)
		}
		ts, err := run()
		if err != nil {
			return runs, err
		}
		runs = append(runs, ts)
	}
	return runs, nil
}

// CheckRepeat validates -repeat n: at least 1, and only 1 while any of the flags named in
// oneRunOnly is set (their files would hold the last run only).
func CheckRepeat(n int, oneRunOnly map[string]bool) error {
	if n < 1 {
		return fmt.Errorf("-repeat %d: want at least 1", n)
	}
	for name, set := range oneRunOnly {
		if set && n > 1 {
			return fmt.Errorf("-repeat %d: not with -%s, whose file would hold the last run only", n, name)
		}
	}
	return nil
}

// WriteTargetSummary writes, for each target measured in any of runs (in the order of its
// first appearance), how many of the runs that measured it passed it, and the smallest, median
// and largest value it had. A target on the line passes in some runs only: this is the number
// to quote for it, not one run's verdict.
func WriteTargetSummary(w io.Writer, runs [][]Target) {
	type tally struct {
		name   string
		limit  float64
		passed int
		values []float64
	}
	var order []*tally
	byName := map[string]*tally{}
	for _, ts := range runs {
		for _, t := range ts {
			if t.Status != "PASS" && t.Status != "FAIL" {
				continue // not measured in that run
			}
			s := byName[t.Name]
			if s == nil {
				s = &tally{name: t.Name, limit: t.Limit}
				byName[t.Name] = s
				order = append(order, s)
			}
			if t.Status == "PASS" {
				s.passed++
			}
			s.values = append(s.values, t.Value)
		}
	}
	fmt.Fprintf(w, "\ntargets over %d runs, each with fresh servers (passed in runs that measured it; value min / median / max):\n", len(runs))
	for _, s := range order {
		slices.Sort(s.values)
		n := len(s.values)
		fmt.Fprintf(w, "  %2d/%-2d %-50s %s / %s / %s (limit %s)\n", s.passed, n, s.name,
			summaryNumber(s.values[0]), summaryNumber(median(s.values)), summaryNumber(s.values[n-1]), summaryNumber(s.limit))
	}
}

// median returns the median of sorted values (the mean of the middle two for an even count).
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// summaryNumber prints a ratio with two decimals, and a larger value (µs, KiB) whole.
func summaryNumber(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
