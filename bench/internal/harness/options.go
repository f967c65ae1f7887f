package harness

// Command-line lists and the loop over the selected workloads.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// ParseList splits a comma-separated list of names, each one of known (what names them in the
// error: "workload", "server"), dropping repeats.
func ParseList(list string, known []string, what string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("unknown %s %q (have %s)", what, s, strings.Join(known, ","))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// MustParseList is ParseList that exits with status 2 on an error, as flag parsing does.
func MustParseList(list string, known []string, what string) []string {
	out, err := ParseList(list, known, what)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return out
}

// RunWorkloads calls run for each of names that want accepts, in order, until ctx is done,
// logging each one's start and duration to stderr.
func RunWorkloads(ctx context.Context, names []string, want func(string) bool, run func(ctx context.Context, w string)) {
	for _, w := range names {
		if !want(w) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		fmt.Fprintf(os.Stderr, "== %s\n", w)
		run(ctx, w)
		fmt.Fprintf(os.Stderr, "   (%s took %.1fs)\n", w, time.Since(t0).Seconds())
	}
}
