package sandbox

// Concurrency model of a Pool. Pool.mu guards running (runs holding a slot, per principal and
// in all), waiting (runs that gave their slot back while their Host waits for the user, per
// principal and in all), idle (warm workers), busy (workers running a run, to kill on Close)
// and closed; changed is closed and replaced whenever a slot is freed, waking the runs waiting
// for one. A run owns its worker from taking it to putting it back: it alone writes to and
// reads from the worker's pipes, on its own goroutine, and makes its program's capability calls
// (the Host) there, holding no lock; its clock (a run's time limit, paused while the Host waits
// for the user) has a mutex of its own, never held with Pool.mu nor while waiting. Timers
// and context.AfterFuncs kill the worker at the run's hard deadline or when its context ends;
// the run then sees the pipe close. Close kills every worker, ends the contexts of the Host
// calls in flight (a Host waiting for the user stops waiting) and waits for the runs to
// return.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Pool. Nil, or a zero field, means the documented default.
type Options struct {
	// Command is the worker's command line; nil means this program (os.Executable) with no
	// arguments, which must call WorkerMain first.
	Command []string
	// Workers bounds the workers running programs at once; 0 means 4.
	Workers int
	// PerPrincipal bounds the runs of one principal at once; 0 means half of Workers (at
	// least 1), so one principal's runaway code leaves room for others.
	PerPrincipal int
	// Idle is how many idle workers are kept warm; 0 means Workers, negative none.
	Idle int
	// Memory is the address space each worker may use beyond its own at start, in bytes; 0
	// means DefaultMemory (256 MiB).
	Memory int64
	// Limits are each run's default and greatest limits (see Limits for their defaults).
	Limits Limits
	// MaxRuns retires a worker after that many runs; 0 means 1000.
	MaxRuns int
	// Grace is how long past a run's time limit the pool waits for the worker to stop the
	// program itself before killing it; 0 means 1 s.
	Grace time.Duration
}

// Host makes the capability calls of a program: module is the capability, method its method,
// args a JSON object. Its error's text is what the program sees.
type Host func(ctx context.Context, module, method string, args json.RawMessage) (json.RawMessage, error)

// Job is one run of a program.
type Job struct {
	// Principal is whom the run is for: runs of one principal share a bound (PerPrincipal).
	Principal string
	// Files are the program's Starlark files by name ("capability.star"); each may load the
	// others by name.
	Files map[string]string
	// Main is the file run first.
	Main string
	// Function, when set, is the function of Main called after it ran, with Args (a JSON
	// object) as keyword arguments; its result is Result.Value.
	Function string
	Args     json.RawMessage
	// Tests runs Main's top-level functions whose names start with "test_" instead.
	Tests bool
	// Modules are the capability modules granted, each with the methods it offers: a program
	// may load them (load("fetch", "get")), and their calls go to Host.
	Modules map[string][]string
	// Host makes the granted modules' calls; nil fails them.
	Host Host
	// Limits bound the run, within the pool's.
	Limits Limits
}

// Result is what a run returns.
type Result struct {
	// Value is the function's result, as JSON; nil without Function.
	Value json.RawMessage
	// Tests are the tests' outcomes, by name, with Job.Tests.
	Tests []TestResult
	// Output is what the program printed (bounded by Limits.Output).
	Output string
	// Steps is how many Starlark steps it took.
	Steps uint64
}

// TestResult is the outcome of one test function.
type TestResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Output string `json:"output,omitempty"`
}

// Pool runs jobs in worker processes. It is safe for concurrent use.
type Pool struct {
	command      []string
	workers      int
	perPrincipal int
	idleMax      int
	memory       int64
	limits       Limits
	maxRuns      int
	grace        time.Duration

	life context.Context // ends on Close
	end  context.CancelCauseFunc

	mu         sync.Mutex
	running    int
	per        map[string]int
	waiting    int
	perWaiting map[string]int
	changed    chan struct{}
	idle       []*worker
	busy       map[*worker]bool
	closed     bool
	runs       sync.WaitGroup
}

// New returns a pool. Workers start when first needed.
func New(opts *Options) *Pool {
	var o Options
	if opts != nil {
		o = *opts
	}
	p := &Pool{command: slices.Clone(o.Command), workers: o.Workers, perPrincipal: o.PerPrincipal, idleMax: o.Idle,
		memory: o.Memory, limits: o.Limits.withDefaults(), maxRuns: o.MaxRuns, grace: o.Grace,
		per: map[string]int{}, perWaiting: map[string]int{}, changed: make(chan struct{}), busy: map[*worker]bool{}}
	p.life, p.end = context.WithCancelCause(context.Background())
	if p.workers <= 0 {
		p.workers = 4
	}
	if p.perPrincipal <= 0 {
		p.perPrincipal = max(1, p.workers/2)
	}
	switch {
	case p.idleMax == 0:
		p.idleMax = p.workers
	case p.idleMax < 0:
		p.idleMax = 0
	}
	if p.memory <= 0 {
		p.memory = DefaultMemory
	}
	if p.maxRuns <= 0 {
		p.maxRuns = 1000
	}
	if p.grace <= 0 {
		p.grace = time.Second
	}
	return p
}

// Limits returns the pool's default and greatest limits of a run.
func (p *Pool) Limits() Limits { return p.limits }

// Close kills every worker (runs in flight fail with ErrClosed) and waits for the runs to
// return. It is idempotent.
func (p *Pool) Close() error {
	p.end(ErrClosed)
	p.mu.Lock()
	p.closed = true
	ws := append(p.idle, keys(p.busy)...)
	p.idle = nil
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	for _, w := range ws {
		w.kill(ErrClosed)
	}
	p.runs.Wait()
	for _, w := range ws {
		w.reap()
	}
	return nil
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Run runs job in a worker and returns its result, or an error: an *Error for the program's
// failure or a limit (ErrSteps, ErrMemory, ErrTime, ErrCPU, ErrCrashed, ErrNotGranted,
// ErrFailed), ErrClosed, or ctx's error. It waits for a free worker (and for the principal's
// bound) as long as ctx allows.
func (p *Pool) Run(ctx context.Context, job Job) (*Result, error) {
	if _, ok := job.Files[job.Main]; !ok {
		return nil, newError(ErrFailed, "no file %q", job.Main)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	p.runs.Add(1)
	p.mu.Unlock()
	defer p.runs.Done()
	if err := p.acquire(ctx, job.Principal); err != nil {
		return nil, err
	}
	s := &slot{p: p, principal: job.Principal, held: true}
	defer s.free()
	w, err := p.take()
	if err != nil {
		return nil, err
	}
	res, keep, err := w.run(ctx, job, job.Limits.within(p.limits), s)
	p.put(w, keep && w.runs < p.maxRuns)
	return res, err
}

// acquire waits for a slot of the pool and of principal.
func (p *Pool) acquire(ctx context.Context, principal string) error {
	p.mu.Lock()
	for {
		switch {
		case p.closed:
			p.mu.Unlock()
			return ErrClosed
		case p.running < p.workers && p.per[principal] < p.perPrincipal:
			p.running++
			p.per[principal]++
			p.mu.Unlock()
			return nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		p.mu.Lock()
	}
}

func (p *Pool) release(principal string) {
	p.mu.Lock()
	p.running--
	if p.per[principal]--; p.per[principal] <= 0 {
		delete(p.per, principal)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// slot is a run's place in the pool's bounds, used by the run's goroutine alone: held while
// it runs; given back (parked) while its Host waits for the user, when the pool's bound of
// such runs allows, and taken again when the wait is over.
type slot struct {
	p         *Pool
	principal string
	held      bool
	parked    bool
}

// park gives the slot back, if at most Workers runs, and PerPrincipal of its principal's, wait
// so at once; otherwise the run keeps it.
func (s *slot) park() {
	p := s.p
	p.mu.Lock()
	if !s.held || p.waiting >= p.workers || p.perWaiting[s.principal] >= p.perPrincipal {
		p.mu.Unlock()
		return
	}
	p.waiting++
	p.perWaiting[s.principal]++
	p.mu.Unlock()
	s.held, s.parked = false, true
	p.release(s.principal)
}

// unpark takes the slot again after park, at once, even past the pool's bounds: waiting for
// one could wait for ever, on runs that wait for the user themselves. So at most Workers more
// runs than Workers run at once (PerPrincipal more of one principal's), briefly.
func (s *slot) unpark() {
	if s.parked {
		s.unwait(true)
		s.held = true
	}
}

// unwait counts the run out of the waiting ones, and into the running ones if run.
func (s *slot) unwait(run bool) {
	p := s.p
	p.mu.Lock()
	p.waiting--
	if p.perWaiting[s.principal]--; p.perWaiting[s.principal] <= 0 {
		delete(p.perWaiting, s.principal)
	}
	if run {
		p.running++
		p.per[s.principal]++
	}
	p.mu.Unlock()
	s.parked = false
}

// free gives the slot back at the end of the run.
func (s *slot) free() {
	switch {
	case s.parked:
		s.unwait(false)
	case s.held:
		s.held = false
		s.p.release(s.principal)
	}
}

// take returns an idle worker, or starts one.
func (p *Pool) take() (*worker, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.busy[w] = true
		p.mu.Unlock()
		return w, nil
	}
	p.mu.Unlock()
	w, err := p.start()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.kill(ErrClosed)
		w.reap()
		return nil, ErrClosed
	}
	p.busy[w] = true
	return w, nil
}

// put gives w back: kept warm if keep and there is room, else stopped.
func (p *Pool) put(w *worker, keep bool) {
	p.mu.Lock()
	delete(p.busy, w)
	if keep && !p.closed && len(p.idle) < p.idleMax {
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	w.stop()
}

// startTimeout bounds a worker's start.
const startTimeout = 30 * time.Second

// start starts a worker and waits for it to be ready.
func (p *Pool) start() (*worker, error) {
	argv := p.command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, newError(ErrCrashed, "finding this program to start a worker: %v", err)
		}
		argv = []string{exe}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{workerEnv + "=1"}
	cmd.Dir = "/"
	cmd.SysProcAttr = sysProcAttr()
	w := &worker{cmd: cmd, stderr: &head{max: 4 << 10}, memory: p.memory}
	cmd.Stderr = w.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, newError(ErrCrashed, "%v", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, newError(ErrCrashed, "%v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, newError(ErrCrashed, "starting a worker: %v", err)
	}
	w.stdin, w.in, w.out = in, bufio.NewWriterSize(in, 64<<10), bufio.NewReaderSize(out, 64<<10)
	timer := time.AfterFunc(startTimeout, func() { w.kill(ErrCrashed) })
	defer timer.Stop()
	f, err := func() (*frame, error) {
		if err := writeFrame(w.in, &frame{Op: "init", Memory: p.memory}); err != nil {
			return nil, err
		}
		return readFrame(w.out)
	}()
	if err == nil && f.Op == "ready" && f.Error == nil {
		return w, nil
	}
	w.kill(ErrCrashed)
	w.reap()
	switch {
	case err == nil && f.Error != nil:
		return nil, f.Error.err()
	case err == nil:
		return nil, newError(ErrCrashed, "the worker said %q", f.Op)
	}
	if first := w.stderr.first(); first != "" {
		return nil, newError(ErrCrashed, "starting a worker: %v%s", err, first)
	}
	return nil, newError(ErrCrashed, "starting a worker: %v (is WorkerMain called first in main?)", err)
}

// worker is a child process running programs.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	in     *bufio.Writer
	out    *bufio.Reader
	stderr *head
	memory int64
	runs   int

	killed   atomic.Pointer[error] // why it was killed
	reapOnce sync.Once
	exitErr  error
}

// kill kills the process (once), saying why.
func (w *worker) kill(why error) {
	if w.killed.CompareAndSwap(nil, &why) {
		_ = w.cmd.Process.Kill()
	}
}

// reap waits for the process to exit.
func (w *worker) reap() {
	w.reapOnce.Do(func() { w.exitErr = w.cmd.Wait() })
}

// stop ends an idle worker: closing its stdin makes it exit; kill makes sure.
func (w *worker) stop() {
	_ = w.stdin.Close()
	w.kill(ErrClosed)
	w.reap()
}

// run runs job on w; keep says w may run another job.
func (w *worker) run(ctx context.Context, job Job, lim Limits, s *slot) (*Result, bool, error) {
	w.runs++
	grace := s.p.grace
	hostCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(s.p.life, func() { cancel(ErrClosed) })()
	clk := &clock{w: w, slot: s, grace: grace, deadline: time.Now().Add(lim.Time)}
	clk.soft = time.AfterFunc(lim.Time, func() { cancel(newError(ErrTime, "%s", lim.Time)) })
	clk.hard = time.AfterFunc(lim.Time+grace, func() { w.kill(newError(ErrTime, "%s", lim.Time)) })
	stopCtx := context.AfterFunc(ctx, func() { w.kill(context.Cause(ctx)) })
	wj := &wireJob{Files: job.Files, Main: job.Main, Function: job.Function, Args: job.Args, Tests: job.Tests,
		Modules: job.Modules, Steps: lim.Steps, Time: lim.Time, CPU: lim.CPU, Output: lim.Output}
	res, err := w.exchange(context.WithValue(hostCtx, clockKey{}, clk), wj, job, clk)
	if errors.Is(err, ErrFailed) && errors.Is(context.Cause(hostCtx), ErrTime) {
		// The program failed on a call cut short by the limit, before the worker's own clock
		// said so: it ran out of time.
		err = newError(ErrTime, "%s", lim.Time)
	}
	clk.soft.Stop()
	hardOK, ctxOK := clk.hard.Stop(), stopCtx()
	if err == nil && hardOK && ctxOK {
		return res, true, nil
	}
	if werr := (*Error)(nil); err != nil && errors.As(err, &werr) && werr.Kind != ErrCrashed && hardOK && ctxOK {
		return nil, true, err // the program failed, or hit a limit the worker enforced: it is fine
	}
	// The worker died, was killed, or its run is in doubt.
	w.kill(ErrCrashed)
	w.reap()
	return nil, false, w.deathCause(err, lim)
}

// exchange sends the job and serves its calls until it is done.
func (w *worker) exchange(ctx context.Context, wj *wireJob, job Job, clk *clock) (*Result, error) {
	if err := writeFrame(w.in, &frame{Op: "run", Job: wj}); err != nil {
		if errors.Is(err, errFrameTooLarge) {
			return nil, newError(ErrFailed, "the job is larger than %d bytes", maxFrame)
		}
		return nil, errDied
	}
	for {
		f, err := readFrame(w.out)
		if err != nil {
			return nil, errDied
		}
		switch f.Op {
		case "call":
			reply := &frame{Op: "return"}
			if !slices.Contains(job.Modules[f.Module], f.Method) {
				reply.Error = wireErr("failed", "%s.%s is not granted", f.Module, f.Method)
			} else if job.Host == nil {
				reply.Error = wireErr("failed", "no capability calls can be made here")
			} else {
				clk.calling(true)
				v, err := job.Host(ctx, f.Module, f.Method, f.Args)
				clk.wake() // a Host that returned without resuming: the program's time runs again
				clk.calling(false)
				if err != nil {
					reply.Error = wireErr("failed", "%s", err.Error())
				} else {
					reply.Value = v
				}
			}
			if err := writeFrame(w.in, reply); err != nil {
				if errors.Is(err, errFrameTooLarge) {
					reply = &frame{Op: "return", Error: wireErr("failed", "%s.%s: a result larger than %d bytes", f.Module, f.Method, maxFrame)}
					if writeFrame(w.in, reply) == nil {
						continue
					}
				}
				return nil, errDied
			}
		case "done":
			if f.Error != nil {
				return nil, f.Error.err()
			}
			return &Result{Value: f.Value, Tests: f.Tests, Output: f.Output, Steps: f.Steps}, nil
		default:
			return nil, newError(ErrCrashed, "unexpected %q from the worker", f.Op)
		}
	}
}

var errDied = errors.New("sandbox: the worker's pipe closed")

// clock is a run's wall-clock limit, which stops while its Host waits for someone outside the
// program (Pause): soft cancels the Host's context at the limit, hard kills the worker a grace
// period later. Its fields are guarded by mu, which Pause holds while it writes to the worker:
// only while the run's goroutine is inside a Host call (call), when nothing else writes. slot
// and parked belong to the run's goroutine.
type clock struct {
	w      *worker
	slot   *slot
	grace  time.Duration
	parked bool // Pause parked the slot

	mu       sync.Mutex
	soft     *time.Timer
	hard     *time.Timer
	deadline time.Time     // while running
	left     time.Duration // while paused
	call     bool          // the run is inside a Host call
	paused   bool
}

type clockKey struct{}

func (c *clock) calling(in bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.call = in
}

// Pause stops the wall-clock limit of the run whose Host call ctx belongs to (Limits.Time):
// for a Host that waits for someone outside the program — the user's decision on a call — a
// wait the program neither controls nor spends steps or CPU on. The worker's clock stops too,
// and the run gives its place among the pool's Workers (and its principal's PerPrincipal)
// back, so that other runs go on while it waits; at most Workers runs (PerPrincipal of one
// principal's) wait so at once, a run past that keeps its place. Its worker stays, idle.
//
// Pause returns the function that ends the wait: it takes its place again at once — past the
// bounds if need be, for the places may be held by runs that wait for the user themselves: so
// at most twice Workers runs run at once, briefly — and starts the clock with the time that
// was left. Call it from the Host, before it returns (returning ends the wait anyway). Pausing a
// paused run, or outside a Host call, does nothing; a run whose limit has passed stays timed
// out. The run's context, and closing the pool, still end it: its worker is killed and ctx,
// the Host's, ends.
func Pause(ctx context.Context) (resume func()) {
	c, _ := ctx.Value(clockKey{}).(*clock)
	if c == nil || !c.pause() {
		return func() {}
	}
	c.parked = true
	c.slot.park()
	return c.wake
}

// pause stops the clock, if it runs and the run is inside a Host call.
func (c *clock) pause() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.call || c.paused || !c.soft.Stop() {
		return false
	}
	c.hard.Stop()
	c.paused, c.left = true, time.Until(c.deadline)
	_ = writeFrame(c.w.in, &frame{Op: "pause"}) // a dead worker: the run sees its pipe closed
	return true
}

// wake ends a wait Pause began: the run takes its slot again, then its clock starts.
func (c *clock) wake() {
	if !c.parked {
		return
	}
	c.parked = false
	c.slot.unpark()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		c.resumeLocked()
	}
}

// resumeLocked starts the paused clock again.
func (c *clock) resumeLocked() {
	c.paused, c.deadline = false, time.Now().Add(c.left)
	c.soft.Reset(c.left)
	c.hard.Reset(c.left + c.grace)
	if c.call {
		_ = writeFrame(c.w.in, &frame{Op: "resume"})
	}
}

// deathCause says why a run's worker died: the reason it was killed, its CPU limit, its
// memory, or a crash.
func (w *worker) deathCause(err error, lim Limits) error {
	if why := w.killed.Load(); why != nil && !errors.Is(*why, ErrCrashed) {
		if errors.Is(*why, ErrClosed) {
			return ErrClosed
		}
		return *why
	}
	var ee *exec.ExitError
	if errors.As(w.exitErr, &ee) && ee.ExitCode() == exitCPU {
		return newError(ErrCPU, "%s", lim.CPU)
	}
	text := w.stderr.String()
	for _, s := range []string{"out of memory", "cannot allocate memory", "failed to allocate", "cannot map pages", "errno=12", "address space collisions"} {
		if strings.Contains(text, s) {
			return newError(ErrMemory, "%d MiB", w.memory>>20)
		}
	}
	if strings.Contains(text, "stack exceeds") {
		return newError(ErrCrashed, "stack limit (%d MiB)", maxStack>>20)
	}
	if werr := (*Error)(nil); errors.As(err, &werr) {
		return err
	}
	return newError(ErrCrashed, "%v%s", w.exitErr, w.stderr.first())
}

// head keeps the first max bytes written to it: a Go runtime's fatal error says what happened
// on its first line, before the goroutines' stacks.
type head struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (h *head) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *head) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.buf)
}

// first is the first line the worker wrote to stderr, for an error, or "".
func (h *head) first() string {
	line, _, _ := strings.Cut(strings.TrimSpace(h.String()), "\n")
	if line = strings.TrimSpace(line); line != "" {
		return ": " + truncate(line, 200)
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
