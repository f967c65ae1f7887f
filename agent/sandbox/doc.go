// Package sandbox runs Starlark code hermetically, in child processes under limits the kernel
// enforces: the runtime of capabilities an agent writes for itself (docs/capabilities.md,
// "Capabilities in Starlark").
//
// A [Pool] runs a [Job] — Starlark files, a function to call or tests to run — in a worker: the
// program's own executable, re-executed in a hidden worker mode. Call [WorkerMain] first thing
// in main (and in TestMain): in a worker it serves the pool and exits; elsewhere it returns at
// once. A program sees the Starlark built-ins, the libraries json and math, its job's own files,
// and the capability modules the job grants (load("fetch", "get")), whose calls come back to the
// pool's [Host]; nothing else — no files, network, clock or randomness. Each run is bounded in
// steps, memory (RLIMIT_AS), wall-clock time and CPU time (RLIMIT_CPU); a worker that hits a
// limit is killed, its run fails with [ErrSteps], [ErrMemory], [ErrTime], [ErrCPU] or
// [ErrCrashed], and the pool goes on with a fresh one.
//
// [Pool.Runtime] is the capability.Runtime of "starlark" packages: a capability whose methods
// are the package's functions, whose code's calls go through the holder's capability set under
// the holder's strategies and inside the package's own contract. A call that needs the user's
// decision waits for it when the capability's call carries a capability.Asker (the agent's
// turns do): the run is suspended inside the call, its clock stopped and its place in the pool
// given back ([Pause]), and goes on with the result, or fails with the refusal. [Check] is the package check
// hook that refuses code loading what its contract does not declare.
//
//	func main() {
//		sandbox.WorkerMain()
//		pool := sandbox.New(nil)
//		defer pool.Close()
//		res, err := pool.Run(ctx, sandbox.Job{Files: map[string]string{"main.star": "def f(x):\n    return x * 2\n"},
//			Main: "main.star", Function: "f", Args: json.RawMessage(`{"x": 21}`)})
//		fmt.Println(string(res.Value)) // 42
//	}
package sandbox
