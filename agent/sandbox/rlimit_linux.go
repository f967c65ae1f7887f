package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var sigXCPU = []os.Signal{syscall.SIGXCPU}

// runtimeSlack is address space a worker may use beyond its program's memory: the Go
// runtime's own growth (a new heap arena, a thread's stack) must not crash a worker that runs
// nothing heavy.
const runtimeSlack = 64 << 20

// enforceMemory limits the worker's address space to what it uses now, plus memory (times
// raceFactor under the race detector, whose shadow memory counts too), plus runtimeSlack.
func enforceMemory(memory int64) error {
	if memory <= 0 {
		return nil
	}
	size, err := vmSize()
	if err != nil {
		return err
	}
	lim := uint64(size) + uint64(memory)*raceFactor + runtimeSlack
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
}

// vmSize is the process's virtual memory size, in bytes.
func vmSize() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("sandbox: no VmSize in /proc/self/status")
}

// limitCPU sets the soft CPU limit to what the process has used plus d, and returns the
// function that lifts it again. The hard limit stays, so the soft one can be raised later.
func limitCPU(d time.Duration) func() {
	var old syscall.Rlimit
	var ru syscall.Rusage
	if syscall.Getrlimit(syscall.RLIMIT_CPU, &old) != nil || syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return func() {}
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	secs := uint64((used + d + time.Second - 1) / time.Second)
	if old.Max != ^uint64(0) && secs > old.Max {
		secs = old.Max
	}
	_ = syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: old.Max})
	return func() { _ = syscall.Setrlimit(syscall.RLIMIT_CPU, &old) }
}

// sysProcAttr kills a worker with its pool's process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
