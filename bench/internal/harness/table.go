package harness

// The report's comparison table: one block of lines per workload, one line per metric, one
// column per server, then the ratios between servers.

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// Metric is one line of the table: which number of a result R, and how to print it. Its name
// says which way is better (↑ or ↓).
type Metric[R any] struct {
	Name   string
	Get    func(*R) float64
	Format func(float64) string
}

// Ratio is a ratio column: the value of server Num divided by that of server Den.
type Ratio struct {
	Header   string
	Num, Den string
}

// Table describes the table of a harness's results R.
type Table[R any] struct {
	Servers []string // the server columns, in order
	Ratios  []Ratio
	// Key returns the workload and server a result belongs to, and whether it failed.
	Key func(*R) (workload, server string, failed bool)
	// Metrics lists the lines of a workload.
	Metrics func(workload string) []Metric[R]
}

// Write prints the table of results to w: workloads in the order of their first result; a cell
// is empty when the server was not measured, "ERR" when its measurement failed, "-" when the
// number is zero.
func (t *Table[R]) Write(w io.Writer, results []R) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprint(tw, "workload\tmetric\t")
	for _, s := range t.Servers {
		fmt.Fprint(tw, s, "\t")
	}
	for _, r := range t.Ratios {
		fmt.Fprint(tw, r.Header, "\t")
	}
	fmt.Fprintln(tw)
	find := func(workload, server string) *R {
		for i := range results {
			if wl, s, _ := t.Key(&results[i]); wl == workload && s == server {
				return &results[i]
			}
		}
		return nil
	}
	seen := map[string]bool{}
	for i := range results {
		workload, _, _ := t.Key(&results[i])
		if seen[workload] {
			continue
		}
		seen[workload] = true
		label := workload
		for _, m := range t.Metrics(workload) {
			vals := map[string]float64{}
			fmt.Fprintf(tw, "%s\t%s\t", label, m.Name)
			for _, srv := range t.Servers {
				cell := ""
				if x := find(workload, srv); x != nil {
					if _, _, failed := t.Key(x); failed {
						cell = "ERR"
					} else if v := m.Get(x); v == 0 {
						cell = "-"
					} else {
						vals[srv] = v
						cell = m.Format(v)
					}
				}
				fmt.Fprint(tw, cell, "\t")
			}
			for _, r := range t.Ratios {
				fmt.Fprint(tw, FormatRatio(vals[r.Num], vals[r.Den]), "\t")
			}
			fmt.Fprintln(tw)
			label = ""
		}
	}
	tw.Flush()
}

// FormatRatio prints a/b with two decimals, or "" when either is zero.
func FormatRatio(a, b float64) string {
	if a == 0 || b == 0 || math.IsNaN(a/b) {
		return ""
	}
	return fmt.Sprintf("%.2f", a/b)
}

// FormatCount prints a count or rate without decimals.
func FormatCount(v float64) string { return fmt.Sprintf("%.0f", v) }

// FormatMicros prints microseconds: no decimals from 100 µs, one below.
func FormatMicros(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// OrDash returns s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
