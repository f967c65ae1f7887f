package sandbox

// Starlark packages as capabilities: each method call runs the package's function of that name
// in a worker; the capability calls its code makes go through the holder's set.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// Runtime is the capability.Runtime of "starlark" packages run in p: it compiles the package
// (Compile, with resolver for capabilities other than the built-ins) and makes the holder's
// capability (Capability).
func (p *Pool) Runtime(resolver Resolver) capability.Runtime {
	return func(_ context.Context, pkg *capability.Package, env capability.Env) (*capability.Capability, error) {
		prog, err := Compile(pkg.Manifest, pkg.Files, resolver)
		if err != nil {
			return nil, err
		}
		return p.Capability(prog, env.Set, env.Principal)
	}
}

// Capability makes prog a capability held through set by principal: its description is the
// manifest's; a call of a method runs the function of that name in a worker of p, with the
// call's arguments as keyword arguments, and its result is the function's. The capability
// modules the code loads are granted, and each of their calls is made through set — under the
// holder's strategy for that capability, with origin "sandbox <name>" — and checked against
// the contract of the call that made it too (Request.Within), so the code reaches nothing
// its own contract (or any derivation of it) does not allow. set nil fails those calls.
func (p *Pool) Capability(prog *Program, set *capability.Set, principal string) (*capability.Capability, error) {
	m := prog.Manifest
	impl := capability.Funcs{}
	for _, meth := range m.Methods {
		impl[meth.Name] = func(ctx context.Context, c *capability.Call) (any, error) {
			var denied error
			res, err := p.Run(ctx, Job{Principal: principal, Files: prog.Files, Main: m.Source, Function: c.Method, Args: c.Args,
				Modules: prog.Modules, Host: host(set, m.Name, c.Session, c.Origin.Task, c.Check, &denied)})
			if err != nil {
				err = fmt.Errorf("capability %s.%s: %w", m.Name, c.Method, err)
				if denied != nil && errors.Is(err, ErrFailed) {
					// Starlark has no way to catch an error: the program failed on the refusal.
					err = &refusedErr{err, denied}
				}
				return nil, err
			}
			return res.Value, nil
		}
	}
	return capability.New(capability.Description{Name: m.Name, Description: m.Description, Methods: m.Methods, Contract: m.Contract}, impl)
}

// Test runs prog's tests (the manifest's Tests file) in a worker of p: its test_ functions,
// with the package's files loadable and the same capabilities granted as its methods, their
// calls made through set inside the manifest's contract.
func (p *Pool) Test(ctx context.Context, prog *Program, set *capability.Set, principal string) (*Result, error) {
	m := prog.Manifest
	if m.Tests == "" {
		return nil, newError(ErrFailed, "%s has no tests", m.Name)
	}
	if _, ok := prog.Files[m.Tests]; !ok {
		return nil, newError(ErrFailed, "%s: no test file %s", m.Name, m.Tests)
	}
	contract := m.Contract
	within := func(a capability.Access, resource string) error {
		if !contract.Allows(a, resource) {
			return fmt.Errorf("%w: %s %s (the contract of %s)", capability.ErrOutsideContract, a, resource, m.Name)
		}
		return nil
	}
	return p.Run(ctx, Job{Principal: principal, Files: prog.Files, Main: m.Tests, Tests: true, Modules: prog.Modules,
		Host: host(set, m.Name, "", "", within, nil)})
}

// host makes a program's capability calls through set. A call that needs the user's decision
// is asked of them when ctx carries a capability.Asker (a call made in a turn with a task): the
// run's clock stops while they decide (Pause), and the program goes on with the result, or the
// call fails with their refusal, which is kept in *denied.
func host(set *capability.Set, name, session, task string, within func(capability.Access, string) error, denied *error) Host {
	return func(ctx context.Context, module, method string, args json.RawMessage) (json.RawMessage, error) {
		if set == nil {
			return nil, errors.New("no capabilities are held here")
		}
		if ask := capability.AskerFrom(ctx); ask != nil {
			ctx = capability.WithAsker(ctx, func(ctx context.Context, p capability.Pending) (capability.Decision, error) {
				defer Pause(ctx)()
				return ask(ctx, p)
			})
		}
		out, err := set.CallAsking(ctx, capability.Request{Capability: module, Method: method, Args: args, Session: session,
			Origin: capability.Origin{Kind: capability.OriginSandbox, Name: name, Task: task}, Within: within})
		var ar *capability.ApprovalRequired
		switch {
		case errors.As(err, &ar) && capability.AskerFrom(ctx) == nil:
			return nil, fmt.Errorf("%s.%s needs the user's approval (%s), which cannot be asked here (no task to ask it on): "+
				"the user may approve it (/capability approve %s) before the next call, or hold %s under a strategy that does not ask each time",
				module, method, ar.Pending.ID, ar.Pending.ID, module)
		case errors.Is(err, capability.ErrDenied) && denied != nil:
			*denied = err
		}
		return out, err
	}
}

// refusedErr is a Starlark capability's error when its program failed on a call the user
// refused: it reads as the program's failure and matches capability.ErrDenied too.
type refusedErr struct {
	err, denied error
}

func (e *refusedErr) Error() string   { return e.err.Error() }
func (e *refusedErr) Unwrap() []error { return []error{e.err, e.denied} }
