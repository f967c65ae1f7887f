package factory

// The factory capability: one per holder (an agent instance), made by the offer's New. Its
// drafts live in it, that is in the running instance: install makes one callable, commit makes
// it survive the instance.
//
// Concurrency: a factory's methods may be called from several goroutines (effects of several
// turns); mu guards drafts and made. It is never held while code runs in the sandbox, while
// the set installs, or while files are written.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// Name is the factory capability's name.
const Name = "factory"

// Errors of the factory's methods.
var (
	// ErrNoDraft: no draft of that name.
	ErrNoDraft = errors.New("factory: no such draft")
	// ErrUntested: the draft's tests have not passed, for its current code.
	ErrUntested = errors.New("factory: the draft's tests have not passed")
	// ErrClash: the name is a capability the factory did not make.
	ErrClash = errors.New("factory: the name of another capability")
)

// maxDrafts bounds a holder's drafts.
const maxDrafts = 32

var (
	nameParams = capability.Object("", map[string]*capability.Schema{"name": capability.String("the capability's name")}, "name")
	patterns   = func(d string) *capability.Schema { return capability.Array(d, capability.String("")) }
	contract   = capability.Object("what the capability's code may reach", map[string]*capability.Schema{
		"reads":    patterns("resource patterns it may read: file:notes/*, clock:now"),
		"writes":   patterns("resource patterns it may write"),
		"executes": patterns("command patterns it may run"),
		"network":  patterns("URL patterns it may reach: https://api.example.com/*"),
		"spawns":   capability.Boolean("whether it may create agents or capabilities"),
	})
	methodSchema = capability.Object("a method: a function of the source with this name", map[string]*capability.Schema{
		"name":        capability.String("the method's (and the function's) name"),
		"description": capability.String("what it does"),
		"params":      {Description: "the JSON Schema of its arguments: an object schema"},
		"result":      {Description: "the JSON Schema of its result"},
	}, "name", "description")
)

// Offer is the factory as an offer for a catalog: each holder gets a factory of its own,
// working in its principal's directory. Its manifest's minimum strategy is contract.
func Offer(o *Options) capability.Offer {
	d := description()
	return capability.Offer{
		Manifest: capability.Manifest{Name: Name, Version: "1", Description: d.Description, Contract: d.Contract, Methods: d.Methods,
			Strategy: capability.Strategies{Minimum: capability.PreApproved, Recommended: capability.ContractBased}},
		New: func(_ context.Context, env capability.Env) (*capability.Capability, error) {
			f := &factory{o: o, principal: env.Principal, set: env.Set, self: env.Self, dir: o.dir(env.Principal),
				drafts: map[string]*draft{}, made: map[string]*capability.Capability{}}
			return capability.New(description(), capability.Funcs{"create": f.create, "test": f.test, "install": f.install,
				"commit": f.commit, "uncommit": f.uncommit, "discard": f.discard, "list": f.list, "impact": f.impact})
		},
	}
}

func description() capability.Description {
	return capability.Description{Name: Name, Description: "Write capabilities of your own in Starlark: create, test, install, commit",
		Methods: []capability.Method{
			{Name: "create", Description: "Stage a capability written in Starlark: one function per method in source, test_ functions in tests; " +
				"the code may load json, math and the capabilities its contract covers (load(\"fetch\", \"get\"))",
				Params: capability.Object("", map[string]*capability.Schema{
					"name":        capability.String("its name: lower-case letters, digits and hyphens"),
					"description": capability.String("what it is for"),
					"methods":     capability.Array("its methods", methodSchema),
					"contract":    contract,
					"source":      capability.String("capability.star: the Starlark source"),
					"tests":       capability.String("test.star: its tests, which load(\"capability.star\", ...)"),
					"version":     capability.String("its version; default 1"),
				}, "name", "description", "methods", "source", "tests")},
			{Name: "test", Description: "Run a draft's tests in the sandbox", Params: nameParams},
			{Name: "install", Description: "Install a tested draft: callable at once; the user approves its contract at its first call",
				Params: capability.Object("", map[string]*capability.Schema{
					"name":     capability.String("the draft's name"),
					"strategy": capability.String("contract (default), budget:calls=N, or call-by-call"),
				}, "name")},
			{Name: "commit", Description: "Keep a tested draft as files in this agent's directory, so it is there after a restart", Params: nameParams},
			{Name: "uncommit", Description: "Remove a committed capability's files (what is installed stays until uninstalled)", Params: nameParams},
			{Name: "discard", Description: "Drop a draft", Params: nameParams},
			{Name: "list", Description: "Drafts, installed and committed capabilities of the factory"},
			{Name: "impact", Description: "The blast radius of changing a capability: the rules and capabilities that use it", Params: nameParams},
		},
		Contract: capability.Contract{Writes: []string{"capabilities:*"}, Spawns: true}}
}

type factory struct {
	o         *Options
	principal string
	set       *capability.Set
	self      capability.Self
	dir       string

	mu     sync.Mutex
	drafts map[string]*draft
	made   map[string]*capability.Capability // installed by this factory, by name
}

type draft struct {
	prog   *sandbox.Program
	files  map[string][]byte
	digest string // of the manifest and files
	passed string // the digest its tests last passed for
	report *testReport
}

type testReport struct {
	Passed bool                 `json:"passed"`
	Tests  []sandbox.TestResult `json:"tests"`
	Error  string               `json:"error,omitempty"`
	Output string               `json:"output,omitempty"`
}

func digest(m capability.Manifest, files map[string][]byte) string {
	h := sha256.New()
	mf, _ := json.Marshal(m)
	h.Write(mf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (f *factory) create(_ context.Context, c *capability.Call) (any, error) {
	var a struct {
		Name, Description, Source, Tests, Version string
		Methods                                   json.RawMessage
		Contract                                  json.RawMessage
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	if err := f.clash(a.Name); err != nil {
		return nil, err
	}
	// The description is read as a client's would be: strictly (schemas the runtime enforces).
	raw, _ := json.Marshal(map[string]any{"name": a.Name, "description": a.Description, "methods": a.Methods,
		"contract": json.RawMessage(cmpOr(string(a.Contract), "{}"))})
	d, err := capability.ParseDescription(raw)
	if err != nil {
		return nil, err
	}
	m := capability.Manifest{Name: d.Name, Version: cmpOr(a.Version, "1"), Description: d.Description, Contract: d.Contract,
		Methods: d.Methods, Runtime: sandbox.RuntimeName, Source: SourceFile, Tests: TestsFile,
		Strategy: capability.Strategies{Minimum: capability.PreApproved, Recommended: capability.ContractBased}}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	files := map[string][]byte{SourceFile: []byte(a.Source), TestsFile: []byte(a.Tests)}
	prog, err := sandbox.Compile(m, files, f.o.resolver(f.set))
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.drafts[m.Name]; !ok && len(f.drafts) >= maxDrafts {
		return nil, fmt.Errorf("factory: %d drafts already: discard one", maxDrafts)
	}
	f.drafts[m.Name] = &draft{prog: prog, files: files, digest: digest(m, files)}
	return map[string]any{"name": m.Name, "staged": true, "loads": nonNil(prog.Modules),
		"next": "test it (factory.test), then install or commit it"}, nil
}

func nonNil(m map[string][]string) map[string][]string {
	if m == nil {
		return map[string][]string{}
	}
	return m
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// clash refuses a name the factory may not use: its own, the loader's, one on offer, or a
// capability held that this factory did not make (nor rehydrated from its files).
func (f *factory) clash(name string) error {
	if name == Name || name == "loader" {
		return fmt.Errorf("%w: %s", ErrClash, name)
	}
	if f.o.Catalog != nil {
		if _, ok := f.o.Catalog.Lookup(name); ok {
			return fmt.Errorf("%w: %s is on offer", ErrClash, name)
		}
	}
	if _, held := f.set.Describe(name); held && !f.ours(name) {
		return fmt.Errorf("%w: %s is held already", ErrClash, name)
	}
	return nil
}

// ours reports whether the capability name held is one the factory made or rehydrated.
func (f *factory) ours(name string) bool {
	f.mu.Lock()
	_, made := f.made[name]
	f.mu.Unlock()
	return made || slices.Contains(committed(f.dir), name)
}

func (f *factory) draft(c *capability.Call) (string, *draft, error) {
	var a struct{ Name string }
	if err := c.Decode(&a); err != nil {
		return "", nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.drafts[a.Name]
	if d == nil {
		return a.Name, nil, fmt.Errorf("%w: %q (create it first)", ErrNoDraft, a.Name)
	}
	return a.Name, d, nil
}

func (f *factory) test(ctx context.Context, c *capability.Call) (any, error) {
	name, d, err := f.draft(c)
	if err != nil {
		return nil, err
	}
	rep := &testReport{Tests: []sandbox.TestResult{}}
	res, err := f.o.Pool.Test(ctx, d.prog, f.set, f.principal)
	if err != nil {
		rep.Error = err.Error()
	} else {
		rep.Tests, rep.Output = res.Tests, res.Output
		rep.Passed = len(res.Tests) > 0 && !slices.ContainsFunc(res.Tests, func(t sandbox.TestResult) bool { return !t.OK })
		if len(res.Tests) == 0 {
			rep.Error = "no test_ functions: write at least one"
		}
	}
	f.mu.Lock()
	if f.drafts[name] == d {
		d.report = rep
		if rep.Passed {
			d.passed = d.digest
		}
	}
	f.mu.Unlock()
	return rep, nil
}

// tested returns the draft name if its tests passed.
func (f *factory) tested(c *capability.Call) (string, *draft, error) {
	name, d, err := f.draft(c)
	if err != nil {
		return name, nil, err
	}
	f.mu.Lock()
	ok := d.passed == d.digest
	f.mu.Unlock()
	if !ok {
		return name, nil, fmt.Errorf("%w: %s (run factory.test)", ErrUntested, name)
	}
	return name, d, nil
}

func (f *factory) install(ctx context.Context, c *capability.Call) (any, error) {
	var a struct{ Name, Strategy string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	name, d, err := f.tested(c)
	if err != nil {
		return nil, err
	}
	st := capability.Strategy{Kind: capability.ContractBased}
	if a.Strategy != "" {
		if st, err = capability.ParseStrategy(a.Strategy); err != nil {
			return nil, err
		}
	}
	user := c.Origin.Kind == capability.OriginUser || c.Origin.Kind == capability.OriginOperator
	min := capability.ContractBased
	if user {
		min = capability.PreApproved
	}
	if !st.Kind.AtLeast(min) {
		return nil, fmt.Errorf("%w: code the agent wrote is held under contract or stricter, unless the user installs it", capability.ErrBadStrategy)
	}
	if err := f.clash(name); err != nil {
		return nil, err
	}
	made, err := f.o.Pool.Capability(d.prog, f.set, f.principal)
	if err != nil {
		return nil, err
	}
	if _, held := f.set.Describe(name); held {
		if err := f.set.Uninstall(ctx, name, "the factory, replacing it"); err != nil {
			made.Revoke(err)
			return nil, err
		}
	}
	by := c.Origin.String()
	if user && c.Origin.Name != "" {
		by = c.Origin.Name
	}
	if err := f.set.Install(ctx, made, capability.Grant{Strategy: st, Minimum: min, Approved: user, By: by}); err != nil {
		made.Revoke(err)
		return nil, err
	}
	f.mu.Lock()
	f.made[name] = made
	f.mu.Unlock()
	return map[string]any{"installed": name, "strategy": st.String(), "contract": d.prog.Manifest.Contract, "approved": user}, nil
}

func (f *factory) commit(_ context.Context, c *capability.Call) (any, error) {
	name, d, err := f.tested(c)
	if err != nil {
		return nil, err
	}
	if err := c.Check(capability.Write, "capabilities:"+name); err != nil {
		return nil, err
	}
	if err := writePackage(f.dir, d.prog.Manifest, d.files); err != nil {
		return nil, fmt.Errorf("factory: writing %s: %w", name, err)
	}
	return map[string]any{"committed": name, "dir": filepath.Join(CapabilitiesDir, name),
		"files": []string{capability.ManifestFile, SourceFile, TestsFile}}, nil
}

func (f *factory) uncommit(_ context.Context, c *capability.Call) (any, error) {
	var a struct{ Name string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	if !capability.ValidName(a.Name) || !slices.Contains(committed(f.dir), a.Name) {
		return nil, fmt.Errorf("factory: %q is not committed", a.Name)
	}
	if err := c.Check(capability.Write, "capabilities:"+a.Name); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(f.dir, CapabilitiesDir, a.Name)); err != nil {
		return nil, err
	}
	return map[string]any{"uncommitted": a.Name}, nil
}

func (f *factory) discard(_ context.Context, c *capability.Call) (any, error) {
	name, _, err := f.draft(c)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	delete(f.drafts, name)
	f.mu.Unlock()
	return map[string]any{"discarded": name}, nil
}

func (f *factory) list(context.Context, *capability.Call) (any, error) {
	type draftInfo struct {
		Name   string              `json:"name"`
		Loads  map[string][]string `json:"loads"`
		Tested *testReport         `json:"tested,omitempty"`
		Passed bool                `json:"passed"`
	}
	f.mu.Lock()
	drafts := []draftInfo{}
	for _, name := range slices.Sorted(maps.Keys(f.drafts)) {
		d := f.drafts[name]
		drafts = append(drafts, draftInfo{Name: name, Loads: nonNil(d.prog.Modules), Tested: d.report, Passed: d.passed == d.digest})
	}
	made := slices.Sorted(maps.Keys(f.made))
	f.mu.Unlock()
	installed := []string{}
	for _, name := range slices.Sorted(slices.Values(append(made, committed(f.dir)...))) {
		if _, held := f.set.Describe(name); held && !slices.Contains(installed, name) {
			installed = append(installed, name)
		}
	}
	return map[string]any{"drafts": drafts, "installed": installed, "committed": append([]string{}, committed(f.dir)...)}, nil
}

// Impact is the blast radius of changing or removing a capability: what uses it.
type Impact struct {
	Capability string `json:"capability"`
	// Rules are the rules that call it by name.
	Rules []string `json:"rules"`
	// Consults are the rules that consult the model, which may call any capability held.
	Consults []string `json:"consults"`
	// Capabilities are the Starlark capabilities (drafts, installed or committed) whose code
	// loads it.
	Capabilities []string `json:"capabilities"`
}

func (f *factory) impact(ctx context.Context, c *capability.Call) (any, error) {
	var a struct{ Name string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	im := Impact{Capability: a.Name, Rules: []string{}, Consults: []string{}, Capabilities: []string{}}
	if f.self != nil {
		uses, err := f.self.Uses(ctx)
		if err != nil {
			return nil, err
		}
		im.Rules = append(im.Rules, uses[a.Name]...)
		im.Consults = append(im.Consults, uses["*"]...)
	}
	users := map[string]bool{}
	f.mu.Lock()
	for name, d := range f.drafts {
		if _, ok := d.prog.Modules[a.Name]; ok {
			users[name] = true
		}
	}
	f.mu.Unlock()
	for _, name := range committed(f.dir) {
		if prog, err := f.o.readCommitted(ctx, f.dir, name, f.set); err == nil {
			if _, ok := prog.Modules[a.Name]; ok {
				users[name] = true
			}
		}
	}
	im.Capabilities = append(im.Capabilities, slices.Sorted(maps.Keys(users))...)
	return im, nil
}
