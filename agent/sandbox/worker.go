package sandbox

// The worker: a child process that runs one Starlark program at a time for its pool.
//
// Concurrency: a worker's main goroutine reads frames and runs programs; a program's capability
// calls write a frame and read the answer on that same goroutine. A timer goroutine cancels the
// interpreter at the run's time limit, and a signal goroutine exits the process on SIGXCPU.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.starlark.net/lib/json"
	"go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// workerEnv marks a worker's environment.
const workerEnv = "A2AWEBCAP_SANDBOX_WORKER"

// exitCPU is a worker's exit status when its CPU limit is reached.
const exitCPU = 3

// WorkerMain makes this process a sandbox worker if its pool started it as one: it then serves
// its pool on stdin and stdout and exits, never returning. Otherwise it returns at once. Call it
// first thing in main, and in TestMain of packages whose tests run a Pool.
func WorkerMain() {
	if os.Getenv(workerEnv) != "1" {
		return
	}
	os.Exit(serveWorker(bufio.NewReaderSize(os.Stdin, 64<<10), bufio.NewWriterSize(os.Stdout, 64<<10)))
}

// fileOptions are the Starlark dialect the sandbox runs: no while, no recursion, no top-level
// control flow, no global reassignment (Starlark's defaults), and the set built-in.
var fileOptions = &syntax.FileOptions{Set: true}

// libraries are the modules every program may load.
var libraries = map[string]starlark.StringDict{
	"json": {"json": json.Module},
	"math": {"math": math.Module},
}

func serveWorker(r *bufio.Reader, w *bufio.Writer) int {
	f, err := readFrame(r)
	if err != nil || f.Op != "init" {
		return 2
	}
	ready := &frame{Op: "ready"}
	runtime.GOMAXPROCS(1) // one interpreter, one thread: fewer threads, whose stacks count too
	debug.SetMaxStack(maxStack)
	debug.SetMemoryLimit(f.Memory) // collect harder before the kernel's limit is reached
	if err := enforceMemory(f.Memory); err != nil {
		ready.Error = wireErr("crashed", "%v", err)
	}
	xcpu := make(chan os.Signal, 1)
	notifyCPU(xcpu)
	go func() {
		<-xcpu
		os.Exit(exitCPU)
	}()
	if writeFrame(w, ready) != nil || ready.Error != nil {
		return 2
	}
	for {
		f, err := readFrame(r)
		if err != nil {
			return 0 // the pool closed our stdin, or is gone
		}
		if f.Op != "run" || f.Job == nil {
			return 2
		}
		done, ok := runJob(r, w, f.Job)
		if !ok {
			return 2
		}
		if err := writeFrame(w, done); err != nil {
			if errors.Is(err, errFrameTooLarge) {
				done = &frame{Op: "done", Steps: done.Steps, Error: wireErr("failed", "the result is larger than %d bytes", maxFrame)}
				if writeFrame(w, done) == nil {
					continue
				}
			}
			return 2
		}
	}
}

// run is one program being run by a worker.
type run struct {
	r      *bufio.Reader
	w      *bufio.Writer
	job    *wireJob
	thread *starlark.Thread
	loaded map[string]*loadEntry
	out    bytes.Buffer
	cut    bool        // output was dropped
	denied string      // a module load refused
	broken bool        // the pool stopped answering
	late   atomic.Bool // the time limit passed

	// The time limit: timer cancels the interpreter at deadline; while the pool waits for
	// someone outside the program (a "pause" frame) it is stopped, with left to go.
	timer    *time.Timer
	deadline time.Time
	left     time.Duration
	paused   bool
}

type loadEntry struct {
	globals starlark.StringDict
	err     error
	busy    bool // being loaded: a cycle
}

// runJob runs job and returns its done frame; ok is false when the pool is gone.
func runJob(r *bufio.Reader, w *bufio.Writer, job *wireJob) (done *frame, ok bool) {
	ru := &run{r: r, w: w, job: job, loaded: map[string]*loadEntry{}}
	th := &starlark.Thread{Name: job.Main, Load: ru.load, Print: ru.print}
	th.SetMaxExecutionSteps(job.Steps)
	ru.thread = th
	restore := limitCPU(job.CPU)
	defer restore()
	ru.deadline = time.Now().Add(job.Time)
	ru.timer = time.AfterFunc(job.Time, func() {
		ru.late.Store(true)
		th.Cancel("time limit")
	})
	defer ru.timer.Stop()

	done = &frame{Op: "done"}
	globals, err := ru.exec(job.Main)
	switch {
	case err != nil:
	case job.Tests:
		done.Tests, err = ru.tests(globals)
	case job.Function != "":
		done.Value, err = ru.call(globals)
	}
	done.Steps = th.ExecutionSteps()
	if ru.broken {
		return nil, false
	}
	if err != nil {
		done.Error = ru.classify(err)
	}
	done.Output = ru.output()
	return done, true
}

func (ru *run) exec(name string) (starlark.StringDict, error) {
	src, ok := ru.job.Files[name]
	if !ok {
		return nil, fmt.Errorf("no file %q", name)
	}
	return starlark.ExecFileOptions(fileOptions, ru.thread, name, src, nil)
}

// load resolves load(module): a file of the job, a library, or a granted capability module.
func (ru *run) load(_ *starlark.Thread, module string) (starlark.StringDict, error) {
	if _, ok := ru.job.Files[module]; ok {
		e := ru.loaded[module]
		if e == nil {
			e = &loadEntry{busy: true}
			ru.loaded[module] = e
			e.globals, e.err = ru.exec(module)
			e.busy = false
		} else if e.busy {
			return nil, fmt.Errorf("cycle in load graph at %q", module)
		}
		return e.globals, e.err
	}
	if lib, ok := libraries[module]; ok {
		return lib, nil
	}
	methods, ok := ru.job.Modules[module]
	if !ok {
		ru.denied = module
		return nil, fmt.Errorf("module %q is not granted", module)
	}
	d := starlark.StringDict{}
	for _, m := range methods {
		d[m] = ru.capability(module, m)
	}
	return d, nil
}

func (ru *run) print(_ *starlark.Thread, msg string) {
	if ru.cut {
		return
	}
	if ru.out.Len()+len(msg)+1 > ru.job.Output {
		ru.cut = true
		return
	}
	ru.out.WriteString(msg)
	ru.out.WriteByte('\n')
}

func (ru *run) output() string {
	s := ru.out.String()
	if ru.cut {
		s += "… (output cut)\n"
	}
	return s
}

// capability is the built-in function module.method: a call of the pool's Host.
func (ru *run) capability(module, method string) *starlark.Builtin {
	return starlark.NewBuiltin(module+"."+method, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var argv starlark.Value
		switch {
		case len(args) == 1 && len(kwargs) == 0:
			if _, ok := args[0].(*starlark.Dict); !ok {
				return nil, fmt.Errorf("%s: takes keyword arguments, or one dict of them", b.Name())
			}
			argv = args[0]
		case len(args) > 0:
			return nil, fmt.Errorf("%s: takes keyword arguments, or one dict of them", b.Name())
		default:
			d := starlark.NewDict(len(kwargs))
			for _, kv := range kwargs {
				_ = d.SetKey(kv[0], kv[1])
			}
			argv = d
		}
		data, err := toJSON(argv)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		if err := writeFrame(ru.w, &frame{Op: "call", Module: module, Method: method, Args: data}); err != nil {
			ru.broken = true
			th.Cancel("the pool is gone")
			return nil, err
		}
		f, err := ru.answer()
		if err != nil {
			ru.broken = true
			th.Cancel("the pool is gone")
			return nil, err
		}
		if f.Error != nil {
			return nil, fmt.Errorf("%s: %s", b.Name(), f.Error.Message)
		}
		v, err := fromJSON(f.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: its result: %v", b.Name(), err)
		}
		return v, nil
	})
}

// answer reads the pool's answer to a capability call, stopping the time limit between the
// pool's "pause" and "resume" (or its answer): the pool waits for the user then.
func (ru *run) answer() (*frame, error) {
	for {
		f, err := readFrame(ru.r)
		if err != nil {
			return nil, errors.New("the pool is gone")
		}
		switch f.Op {
		case "pause":
			if !ru.paused && ru.timer.Stop() {
				ru.paused, ru.left = true, time.Until(ru.deadline)
			}
		case "resume", "return":
			if ru.paused {
				ru.paused, ru.deadline = false, time.Now().Add(ru.left)
				ru.timer.Reset(ru.left)
			}
			if f.Op == "return" {
				return f, nil
			}
		default:
			return nil, fmt.Errorf("the pool sent %q", f.Op)
		}
	}
}

// call calls the job's function with its arguments and returns the result as JSON.
func (ru *run) call(globals starlark.StringDict) ([]byte, error) {
	fn, ok := globals[ru.job.Function].(starlark.Callable)
	if !ok {
		return nil, fmt.Errorf("%s defines no function %s", ru.job.Main, ru.job.Function)
	}
	var kwargs []starlark.Tuple
	if len(ru.job.Args) > 0 {
		v, err := fromJSON(ru.job.Args)
		if err != nil {
			return nil, fmt.Errorf("the arguments: %v", err)
		}
		d, ok := v.(*starlark.Dict)
		if !ok {
			return nil, errors.New("the arguments are not a JSON object")
		}
		for _, it := range d.Items() {
			kwargs = append(kwargs, starlark.Tuple{it[0], it[1]})
		}
	}
	v, err := starlark.Call(ru.thread, fn, nil, kwargs)
	if err != nil {
		return nil, err
	}
	out, err := toJSON(v)
	if err != nil {
		return nil, fmt.Errorf("%s returned %v", ru.job.Function, err)
	}
	return out, nil
}

// tests runs the test_ functions of globals, by name. A limit stops them all.
func (ru *run) tests(globals starlark.StringDict) ([]TestResult, error) {
	var names []string
	for name, v := range globals {
		if _, ok := v.(starlark.Callable); ok && strings.HasPrefix(name, "test_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := []TestResult{}
	for _, name := range names {
		before := ru.out.Len()
		_, err := starlark.Call(ru.thread, globals[name], nil, nil)
		res := TestResult{Name: name, OK: err == nil, Output: ru.out.String()[before:]}
		if err != nil {
			if w := ru.classify(err); w.Kind != "failed" {
				return out, err // a limit: no test after it could run
			}
			res.Error = errorText(err)
		}
		out = append(out, res)
	}
	return out, nil
}

// classify turns a run's error into its wire form.
func (ru *run) classify(err error) *wireError {
	switch {
	case ru.late.Load():
		return wireErr("time", "%s", ru.job.Time)
	case ru.thread.ExecutionSteps() >= ru.job.Steps && strings.Contains(err.Error(), "too many steps"):
		return wireErr("steps", "%d steps", ru.job.Steps)
	case ru.denied != "":
		return wireErr("load", "module %q is not granted", ru.denied)
	}
	w := wireErr("failed", "%s", errorText(err))
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		w.Backtrace = ee.Backtrace()
	}
	return w
}

// errorText is err's message without the Starlark backtrace.
func errorText(err error) string {
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		return ee.Msg
	}
	return err.Error()
}

// notifyCPU asks for SIGXCPU on c, where the platform has it.
var notifyCPU = func(c chan<- os.Signal) { signal.Notify(c, sigXCPU...) }
