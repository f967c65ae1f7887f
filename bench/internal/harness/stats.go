package harness

// Latency statistics over sorted durations.

import "time"

// Quantile returns the p-quantile of sorted durations, taking the nearest rank (the index
// p·(n-1) rounded), or 0 for none.
func Quantile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1)+0.5)]
}

// QuantileLow is Quantile with the index p·(n-1) rounded down.
func QuantileLow(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

// Mean returns the mean of durations, or 0 for none.
func Mean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

// Micros returns d in microseconds.
func Micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Rate returns n per second of elapsed, or 0 when nothing elapsed.
func Rate(n int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}
