package sandbox

import (
	"errors"
	"fmt"
	"time"
)

// Limits bound one run. A zero field means the pool's; a job's limits are each at most the
// pool's.
type Limits struct {
	// Steps bounds the Starlark steps of a run; the pool's default is 10,000,000.
	Steps uint64
	// Time bounds a run's wall-clock time, the capability calls it waits for included, but
	// not the waits for the user a Host says it makes (Pause); the pool's default is 10 s.
	Time time.Duration
	// CPU bounds a run's CPU time; the pool's default is Time.
	CPU time.Duration
	// Output bounds the bytes of print output kept; the pool's default is 64 KiB.
	Output int
}

// The defaults of a pool's limits.
const (
	DefaultSteps  = 10_000_000
	DefaultTime   = 10 * time.Second
	DefaultMemory = 256 << 20
	DefaultOutput = 64 << 10
	// maxStack is a worker's Go stack limit: deeply nested values crash the worker, not the
	// machine.
	maxStack = 16 << 20
)

func (l Limits) withDefaults() Limits {
	if l.Steps == 0 {
		l.Steps = DefaultSteps
	}
	if l.Time <= 0 {
		l.Time = DefaultTime
	}
	if l.CPU <= 0 {
		l.CPU = l.Time
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	return l
}

// within returns l with each limit at most max's (max has its defaults).
func (l Limits) within(max Limits) Limits {
	if l.Steps == 0 || l.Steps > max.Steps {
		l.Steps = max.Steps
	}
	if l.Time <= 0 || l.Time > max.Time {
		l.Time = max.Time
	}
	if l.CPU <= 0 || l.CPU > max.CPU {
		l.CPU = max.CPU
	}
	if l.Output <= 0 || l.Output > max.Output {
		l.Output = max.Output
	}
	return l
}

// The errors of a run. Test with errors.Is: a run's error is an *Error that matches its kind.
var (
	// ErrSteps: the run took more Starlark steps than its limit.
	ErrSteps = errors.New("sandbox: step limit exceeded")
	// ErrMemory: the worker ran out of the memory it may use.
	ErrMemory = errors.New("sandbox: memory limit exceeded")
	// ErrTime: the run took longer than its wall-clock limit.
	ErrTime = errors.New("sandbox: time limit exceeded")
	// ErrCPU: the run used more CPU time than its limit.
	ErrCPU = errors.New("sandbox: CPU limit exceeded")
	// ErrCrashed: the worker died, or broke the protocol (a limit of the Go runtime such as its
	// stack, or a bug).
	ErrCrashed = errors.New("sandbox: the worker crashed")
	// ErrNotGranted: the program loaded a module it was not granted.
	ErrNotGranted = errors.New("sandbox: module not granted")
	// ErrFailed: the program failed: a syntax or resolution error, a Starlark runtime error, a
	// fail() call, a capability call's error it did not handle, or a value that is not JSON.
	ErrFailed = errors.New("sandbox: the program failed")
	// ErrClosed: the pool is closed.
	ErrClosed = errors.New("sandbox: pool closed")
)

// kinds are the wire names of the errors a worker reports.
var kinds = map[string]error{"steps": ErrSteps, "memory": ErrMemory, "time": ErrTime, "cpu": ErrCPU,
	"crashed": ErrCrashed, "load": ErrNotGranted, "failed": ErrFailed}

// Error is a run's error: its kind (one of the Err* sentinels, which it matches with
// errors.Is), a message and, for a program's failure, the Starlark backtrace.
type Error struct {
	Kind      error
	Message   string
	Backtrace string
}

func (e *Error) Error() string {
	switch {
	case e.Message == "":
		return e.Kind.Error()
	case e.Kind == ErrSteps, e.Kind == ErrMemory, e.Kind == ErrTime, e.Kind == ErrCPU:
		return e.Kind.Error() + " (" + e.Message + ")"
	}
	return e.Kind.Error() + ": " + e.Message
}

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}
