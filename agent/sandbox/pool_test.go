package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

func newPool(t *testing.T, opts *sandbox.Options) *sandbox.Pool {
	t.Helper()
	p := sandbox.New(opts)
	t.Cleanup(func() { p.Close() })
	return p
}

func job(src, fn, args string) sandbox.Job {
	j := sandbox.Job{Files: map[string]string{"main.star": src}, Main: "main.star", Function: fn}
	if args != "" {
		j.Args = json.RawMessage(args)
	}
	return j
}

func TestRunCallsAFunction(t *testing.T) {
	t.Parallel()
	p := newPool(t, nil)
	src := `
load("json", "json")
load("math", "math")

def double(x, label = "n"):
    print("doubling", x)
    return {"label": label, "value": x * 2, "floor": math.floor(2.5), "round": json.decode(json.encode([1, "a", None]))}
`
	res, err := p.Run(t.Context(), job(src, "double", `{"x": 21, "label": "answer"}`))
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if diff := cmp.Diff(`{"floor":2,"label":"answer","round":[1,"a",null],"value":42}`, string(res.Value)); diff != "" {
		t.Errorf("Run().Value mismatch (-want +got):\n%s", diff)
	}
	if res.Output != "doubling 21\n" || res.Steps == 0 {
		t.Errorf("Run() output %q, steps %d; want the print and some steps", res.Output, res.Steps)
	}
}

func TestRunReusesWarmWorkers(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Workers: 1})
	// One worker serves run after run, each in fresh globals: what one run defines, the next
	// does not see.
	for i := range 5 {
		src := "def f():\n    return secret\n"
		if i%2 == 0 {
			src = "secret = 42\n" + src
		}
		res, err := p.Run(t.Context(), job(src, "f", ""))
		if i%2 == 0 && (err != nil || string(res.Value) != "42") {
			t.Fatalf("run %d = %v, %v; want 42", i, res, err)
		}
		if i%2 == 1 && (!errors.Is(err, sandbox.ErrFailed) || !strings.Contains(err.Error(), "undefined: secret")) {
			t.Fatalf("run %d error = %v, want secret undefined", i, err)
		}
	}
}

func TestRunTests(t *testing.T) {
	t.Parallel()
	p := newPool(t, nil)
	j := sandbox.Job{Files: map[string]string{
		"lib.star":  "def add(a, b):\n    return a + b\n",
		"test.star": "load(\"lib.star\", \"add\")\ndef test_ok():\n    print(\"fine\")\n    if add(1, 2) != 3:\n        fail(\"no\")\ndef test_bad():\n    fail(\"add is %d\" % add(1, 1))\ndef helper():\n    fail(\"not a test\")\n",
	}, Main: "test.star", Tests: true}
	res, err := p.Run(t.Context(), j)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	want := []sandbox.TestResult{{Name: "test_bad", Error: "fail: add is 2"}, {Name: "test_ok", OK: true, Output: "fine\n"}}
	if diff := cmp.Diff(want, res.Tests); diff != "" {
		t.Errorf("Run().Tests mismatch (-want +got):\n%s", diff)
	}
}

func TestCapabilityModules(t *testing.T) {
	t.Parallel()
	p := newPool(t, nil)
	var got []string
	j := job(`
load("kv", "get", "put")
def f():
    put(key = "a", value = 1)
    put({"key": "b", "value": 2})
    return get(key = "a")
def g():
    return get(key = "boom")
`, "f", "")
	j.Modules = map[string][]string{"kv": {"get", "put"}}
	j.Host = func(ctx context.Context, module, method string, args json.RawMessage) (json.RawMessage, error) {
		got = append(got, module+"."+method+" "+string(args))
		if strings.Contains(string(args), "boom") {
			return nil, errors.New("capability: outside the contract: reads kv:boom")
		}
		return json.RawMessage(`{"value": 1}`), nil
	}
	res, err := p.Run(t.Context(), j)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if string(res.Value) != `{"value":1}` {
		t.Errorf("Run().Value = %s", res.Value)
	}
	want := []string{`kv.put {"key":"a","value":1}`, `kv.put {"key":"b","value":2}`, `kv.get {"key":"a"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("host calls mismatch (-want +got):\n%s", diff)
	}
	j.Function = "g"
	_, err = p.Run(t.Context(), j)
	if !errors.Is(err, sandbox.ErrFailed) || !strings.Contains(err.Error(), "kv.get: capability: outside the contract: reads kv:boom") {
		t.Errorf("Run(g) error = %v, want the host's refusal as the program's failure", err)
	}
}

// TestHostile runs hostile programs: each is stopped with a clear error, and the pool keeps
// serving: a legitimate run of another principal, started while the hostile one runs,
// completes.
func TestHostile(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Workers: 2, Memory: 64 << 20,
		Limits: sandbox.Limits{Steps: 50_000_000, Time: time.Minute}}) // generous: a case under test sets its own
	tests := []struct {
		name, src string
		limits    sandbox.Limits
		modules   map[string][]string
		want      error
		text      string
	}{
		{name: "infinite loop", src: "def f():\n    for i in range(1 << 62):\n        pass\n", limits: sandbox.Limits{Steps: 1_000_000},
			want: sandbox.ErrSteps, text: "step limit exceeded (1000000 steps)"},
		{name: "slow past the clock", src: "def f():\n    x = list(range(1 << 16))\n    for i in range(1 << 30):\n        sorted(x, reverse = True)\n",
			limits: sandbox.Limits{Time: 300 * time.Millisecond}, want: sandbox.ErrTime, text: "time limit exceeded (300ms)"},
		{name: "recursion", src: "def f(n = 0):\n    return f(n + 1)\n", want: sandbox.ErrFailed, text: "called recursively"},
		{name: "deep nesting", src: "def f():\n    x, y = [], []\n    for i in range(1000):\n        x, y = [x], [y]\n    return x == y\n",
			want: sandbox.ErrFailed, text: "maximum recursion"},
		{name: "memory bomb", src: "def f():\n    s = \"a\" * (1 << 20)\n    keep = []\n    for i in range(1 << 20):\n        keep.append(s + str(i))\n    return len(keep)\n",
			want: sandbox.ErrMemory, text: "memory limit exceeded (64 MiB)"},
		{name: "load not granted", src: "load(\"fs\", \"read\")\ndef f():\n    return read(path = \"/etc/passwd\")\n", want: sandbox.ErrNotGranted, text: `module "fs" is not granted`},
		{name: "load os", src: "load(\"os\", \"system\")\ndef f():\n    return system(\"id\")\n", want: sandbox.ErrNotGranted, text: `module "os" is not granted`},
		{name: "open a file", src: "def f():\n    return open(\"/etc/passwd\").read()\n", want: sandbox.ErrFailed, text: "undefined: open"},
		{name: "reach the network", src: "load(\"http\", \"get\")\ndef f():\n    return get(\"http://127.0.0.1/\")\n", want: sandbox.ErrNotGranted, text: `module "http" is not granted`},
		{name: "a granted module's method not granted", src: "load(\"kv\", \"delete\")\ndef f():\n    return delete(key = \"a\")\n",
			modules: map[string][]string{"kv": {"get"}}, want: sandbox.ErrFailed, text: "delete"},
		{name: "result not JSON", src: "def f():\n    return f\n", want: sandbox.ErrFailed, text: "function is not a JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hostile := job(tt.src, "f", "")
			hostile.Principal, hostile.Limits, hostile.Modules = "mallory", tt.limits, tt.modules
			var wg sync.WaitGroup
			var herr error
			wg.Go(func() { _, herr = p.Run(t.Context(), hostile) })
			// Meanwhile, another principal's legitimate run completes (the hostile principal may
			// hold at most half of the workers).
			ok := job("def f(x):\n    return x + 1\n", "f", `{"x": 1}`)
			ok.Principal = "alice"
			res, err := p.Run(t.Context(), ok)
			if err != nil || string(res.Value) != "2" {
				t.Errorf("legitimate run beside %s = %v, %v; want 2", tt.name, res, err)
			}
			wg.Wait()
			if !errors.Is(herr, tt.want) || !strings.Contains(herr.Error(), tt.text) {
				t.Errorf("hostile run error = %v, want %v containing %q", herr, tt.want, tt.text)
			}
		})
	}
}

func TestContextCancelKillsTheRun(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Limits: sandbox.Limits{Steps: 1 << 40, Time: time.Minute}})
	ctx, cancel := context.WithCancelCause(t.Context())
	j := job("def f():\n    for i in range(1 << 62):\n        pass\n", "f", "")
	j.Modules = nil
	errc := make(chan error, 1)
	go func() { _, err := p.Run(ctx, j); errc <- err }()
	time.Sleep(200 * time.Millisecond) // let it start: it would run for a minute
	stop := errors.New("the user canceled")
	cancel(stop)
	if err := <-errc; !errors.Is(err, stop) {
		t.Errorf("Run() after cancel = %v, want the cause", err)
	}
}

func TestPerPrincipalBound(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Workers: 2, PerPrincipal: 1})
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	slow := job("load(\"gate\", \"wait\")\ndef f():\n    return wait()\n", "f", "")
	slow.Principal, slow.Modules = "mallory", map[string][]string{"gate": {"wait"}}
	slow.Host = func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
		started <- struct{}{}
		<-release
		return json.RawMessage(`true`), nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(t.Context(), slow) })
	<-started
	// mallory's second run waits for the first: its context ends before a slot is free.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := p.Run(ctx, slow); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second run of the same principal = %v, want to wait past its deadline", err)
	}
	// alice is served at once.
	alice := job("def f():\n    return 1\n", "f", "")
	alice.Principal = "alice"
	if _, err := p.Run(t.Context(), alice); err != nil {
		t.Errorf("alice's run = %v", err)
	}
	close(release)
	wg.Wait()
}

// TestTimeLimitKillsAStuckWorker: a builtin that runs past the time limit and its grace, where
// the interpreter cannot stop it, has its worker killed.
func TestTimeLimitKillsAStuckWorker(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Workers: 1, Grace: 50 * time.Millisecond, Memory: 512 << 20})
	j := job("def f():\n    return len(sorted(list(range(1 << 22)), reverse = True))\n", "f", "")
	j.Limits.Time = 20 * time.Millisecond
	start := time.Now()
	_, err := p.Run(t.Context(), j)
	if !errors.Is(err, sandbox.ErrTime) {
		t.Fatalf("Run() error = %v, want ErrTime", err)
	}
	t.Logf("stopped after %v", time.Since(start))
	// The pool starts a fresh worker for the next run.
	res, err := p.Run(t.Context(), job("def f():\n    return 7\n", "f", ""))
	if err != nil || string(res.Value) != "7" {
		t.Errorf("run after the kill = %v, %v", res, err)
	}
}

// TestCPULimit: a run that burns CPU past its CPU limit (its wall clock allowing more) is
// stopped by the kernel's RLIMIT_CPU.
func TestCPULimit(t *testing.T) {
	t.Parallel()
	p := newPool(t, &sandbox.Options{Workers: 1, Limits: sandbox.Limits{Steps: 1 << 40, Time: time.Minute}})
	j := job("def f():\n    for i in range(1 << 62):\n        pass\n", "f", "")
	j.Limits = sandbox.Limits{CPU: time.Second}
	_, err := p.Run(t.Context(), j)
	if !errors.Is(err, sandbox.ErrCPU) {
		t.Fatalf("Run() error = %v, want ErrCPU", err)
	}
}
