package harness

// Readers of /proc (Linux): a process's CPU time and resident set, and the load average.

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime returns the user+system CPU time process pid has used so far.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("bad stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// CPUDuring runs f and returns the CPU time process pid used meanwhile, or -1 when it cannot be
// read.
func CPUDuring(pid int, f func()) time.Duration {
	cpu0, err0 := CPUTime(pid)
	f()
	cpu1, err1 := CPUTime(pid)
	if err0 != nil || err1 != nil {
		return -1
	}
	return cpu1 - cpu0
}

// Syscalls returns the read and write system calls process pid has made so far (syscr and
// syscw of /proc/pid/io; reading another process's needs the same user or root).
func Syscalls(pid int) (reads, writes int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "syscr":
			dst = &reads
		case "syscw":
			dst = &writes
		default:
			continue
		}
		if *dst, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return 0, 0, err
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("no syscr/syscw")
	}
	return reads, writes, nil
}

// Usage is what a process used over a stretch of time: CPU, and read and write system calls
// (socket reads and writes among them). A field is -1 when it could not be read.
type Usage struct {
	CPU           time.Duration
	Reads, Writes int64
}

// UsageDuring runs f and returns what process pid used meanwhile.
func UsageDuring(pid int, f func()) Usage {
	r0, w0, serr0 := Syscalls(pid)
	u := Usage{CPU: CPUDuring(pid, f)}
	r1, w1, serr1 := Syscalls(pid)
	u.Reads, u.Writes = r1-r0, w1-w0
	if serr0 != nil || serr1 != nil {
		u.Reads, u.Writes = -1, -1
	}
	return u
}

// Add adds d to u field by field; a field stays -1 once a part of it was unknown.
func (u *Usage) Add(d Usage) {
	AddCPU(&u.CPU, d.CPU)
	for _, p := range [...]struct {
		total *int64
		d     int64
	}{{&u.Reads, d.Reads}, {&u.Writes, d.Writes}} {
		if p.d < 0 || *p.total < 0 {
			*p.total = -1
		} else {
			*p.total += p.d
		}
	}
}

// RSS reads the resident set size (VmRSS) of process pid, in bytes.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n * 1024, err
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// LoadAvg returns the 1, 5 and 15 minute load averages ("0.52 0.58 0.59"), or "".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
