package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4}
	if got := Quantile(d, 0.5); got != 3 { // index 1.5 rounds to 2
		t.Errorf("Quantile = %v, want 3", got)
	}
	if got := QuantileLow(d, 0.5); got != 2 {
		t.Errorf("QuantileLow = %v, want 2", got)
	}
	if Quantile(nil, 0.5) != 0 || QuantileLow(nil, 0.5) != 0 || Mean(nil) != 0 {
		t.Error("empty input")
	}
	if got := Mean(d); got != 2 {
		t.Errorf("Mean = %v", got)
	}
}

func TestRounds(t *testing.T) {
	var got []int
	Rounds(3, 3, func(i int) { got = append(got, i) })
	want := []int{0, 1, 2, 1, 2, 0, 2, 0, 1}
	if len(got) != len(want) {
		t.Fatal(got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestParseList(t *testing.T) {
	got, err := ParseList(" a,b ,a", []string{"a", "b"}, "server")
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ParseList("c", []string{"a", "b"}, "server"); err == nil || err.Error() != `unknown server "c" (have a,b)` {
		t.Fatalf("err = %v", err)
	}
}

func TestProcReaders(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := CPUTime(os.Getpid()); err != nil {
		t.Error(err)
	}
	if n, err := RSS(os.Getpid()); err != nil || n <= 0 {
		t.Errorf("RSS = %d, %v", n, err)
	}
	r0, w0, err := Syscalls(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "w")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 3 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	r1, w1, err := Syscalls(os.Getpid())
	if err != nil || r1 < r0 || w1-w0 < 3 {
		t.Errorf("Syscalls went from %d/%d to %d/%d (%v) over three writes", r0, w0, r1, w1, err)
	}
}

type row struct {
	w, s string
	v    float64
	err  bool
}

func TestTable(t *testing.T) {
	tab := Table[row]{
		Servers: []string{"x", "y"},
		Ratios:  []Ratio{{Header: "x/y", Num: "x", Den: "y"}},
		Key:     func(r *row) (string, string, bool) { return r.w, r.s, r.err },
		Metrics: func(string) []Metric[row] {
			return []Metric[row]{{Name: "v", Get: func(r *row) float64 { return r.v }, Format: FormatCount}}
		},
	}
	var b bytes.Buffer
	tab.Write(&b, []row{{"w1", "x", 4, false}, {"w1", "y", 2, false}, {"w2", "y", 0, true}})
	want := "  workload|  metric|  x|    y|   x/y|\n" +
		"        w1|       v|  4|    2|  2.00|\n" +
		"        w2|       v|   |  ERR|      |\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestRatioTarget(t *testing.T) {
	type res struct{ v float64 }
	get := func(r *res) float64 { return r.v }
	tests := []struct {
		a, b       *res
		atLeast    bool
		wantStatus string
		wantDetail string
	}{
		{&res{4}, &res{2}, true, "PASS", "2.00× (need ≥ 1.50×): 4 vs 2 calls/s"},
		{&res{4}, &res{2}, false, "FAIL", "2.00× (need ≤ 1.50×): 4 vs 2 calls/s"},
		{nil, &res{2}, true, "SKIP", "not measured in this run"},
		{&res{4}, &res{0}, true, "SKIP", "not measured in this run"},
	}
	for _, tt := range tests {
		got := RatioTarget("t", tt.a, tt.b, get, 1.5, tt.atLeast, FormatCount, "calls/s")
		if got.Status != tt.wantStatus || got.Detail != tt.wantDetail {
			t.Errorf("RatioTarget(%v, %v, atLeast %v) = %s %q, want %s %q", tt.a, tt.b, tt.atLeast, got.Status, got.Detail, tt.wantStatus, tt.wantDetail)
		}
	}
}

func TestWriteTargetSummary(t *testing.T) {
	ratio := func(v float64, status string) Target {
		return Target{Name: "a ≥ 2× b", Status: status, Value: v, Limit: 2}
	}
	ttfe := func(v float64, status string) Target {
		return Target{Name: "ttfe < 5 ms", Status: status, Value: v, Limit: 5000}
	}
	runs := [][]Target{
		{ratio(1.9, "FAIL"), ttfe(3200, "PASS"), NotMeasured("never", 1)},
		{ratio(2.1, "PASS"), NotMeasured("ttfe < 5 ms", 5000)},
		{ratio(2.05, "PASS"), ttfe(6100.4, "FAIL")},
		{ratio(1.99, "FAIL"), ttfe(4000, "PASS")},
	}
	var b bytes.Buffer
	WriteTargetSummary(&b, runs)
	want := `
targets over 4 runs, each with fresh servers (passed in runs that measured it; value min / median / max):
   2/4  a ≥ 2× b                                           1.90 / 2.02 / 2.10 (limit 2.00)
   2/3  ttfe < 5 ms                                        3200 / 4000 / 6100 (limit 5000)
`
	if got := b.String(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

func TestRepeat(t *testing.T) {
	calls := 0
	var summary bytes.Buffer
	runs, err := Repeat(t.Context(), 3, &summary, func() ([]Target, error) {
		calls++
		return []Target{{Name: "x", Status: "PASS", Value: float64(calls)}}, nil
	})
	if err != nil || len(runs) != 3 || runs[2][0].Value != 3 {
		t.Fatalf("Repeat = %v, %v", runs, err)
	}
	if !strings.Contains(summary.String(), "targets over 3 runs") || !strings.Contains(summary.String(), " 3/3 ") {
		t.Errorf("summary:\n%s", summary.String())
	}
	boom := errors.New("boom")
	runs, err = Repeat(t.Context(), 3, io.Discard, func() ([]Target, error) { return nil, boom })
	if err != boom || len(runs) != 0 {
		t.Fatalf("Repeat with a failing run = %v, %v", runs, err)
	}
}

func TestCheckRepeat(t *testing.T) {
	for _, c := range []struct {
		n       int
		set     map[string]bool
		wantErr string
	}{
		{1, map[string]bool{"json": true}, ""},
		{5, map[string]bool{"json": false}, ""},
		{0, nil, "-repeat 0: want at least 1"},
		{3, map[string]bool{"json": false, "profile": true}, "-repeat 3: not with -profile, whose file would hold the last run only"},
	} {
		err := CheckRepeat(c.n, c.set)
		if got := fmt.Sprint(err); c.wantErr == "" && err != nil || c.wantErr != "" && got != c.wantErr {
			t.Errorf("CheckRepeat(%d, %v) = %v, want %q", c.n, c.set, err, c.wantErr)
		}
	}
}
