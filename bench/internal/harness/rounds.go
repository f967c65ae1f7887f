package harness

import "time"

// Rounds runs a measurement split into rounds that alternate between n contenders: round r
// visits contender (r+i) mod n for i = 0..n-1, so the starting contender rotates and a burst of
// background load on a shared machine hits all of them alike.
func Rounds(rounds, n int, visit func(i int)) {
	for round := range rounds {
		for i := range n {
			visit((round + i) % n)
		}
	}
}

// AddCPU adds a CPU time measured by CPUDuring (-1: unknown) to a running total, which stays
// -1 once a part of it was unknown.
func AddCPU(total *time.Duration, d time.Duration) {
	if d < 0 || *total < 0 {
		*total = -1
		return
	}
	*total += d
}
