package sandbox

// Starlark packages as programs: compiled and checked before they run. The check is static:
// the files compile, the manifest's methods are functions of the source, and every module the
// code loads is a library, a file of the package, or a capability whose effects the package's
// contract declares. What it cannot see (the URL a call fetches), every call checks (Runtime).

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// RuntimeName is the manifest runtime of Starlark packages.
const RuntimeName = "starlark"

// Program is a Starlark package's code, compiled and checked: what Pool.Capability and
// Pool.Test run.
type Program struct {
	Manifest capability.Manifest
	// Files are the package's Starlark files (.star), by path.
	Files map[string]string
	// Modules are the capabilities its code loads, each with the names it loads: what its runs
	// are granted.
	Modules map[string][]string
}

// Resolver describes the capability a module names (its methods, with their effects, and its
// contract), for the check; ok is false when there is none.
type Resolver func(module string) (d capability.Description, ok bool)

// CatalogResolver resolves modules to the capabilities catalog offers.
func CatalogResolver(catalog *capability.Catalog) Resolver {
	return func(module string) (capability.Description, bool) {
		if catalog == nil {
			return capability.Description{}, false
		}
		o, ok := catalog.Lookup(module)
		if !ok {
			return capability.Description{}, false
		}
		m := o.Manifest
		return capability.Description{Name: m.Name, Description: m.Description, Methods: m.Methods, Contract: m.Contract}, true
	}
}

// need is one kind of access a loaded method may make: access to resources of kind ("" for
// a URL).
type need struct {
	access capability.Access
	kind   string
}

// builtinNeeds are the accesses of the built-in capabilities' methods, which check at each
// effect rather than declaring effects.
var builtinNeeds = map[string]map[string][]need{
	"fs": {"read": {{capability.Read, "file"}}, "list": {{capability.Read, "file"}}, "stat": {{capability.Read, "file"}},
		"write": {{capability.Write, "file"}}, "remove": {{capability.Write, "file"}}, "mkdir": {{capability.Write, "file"}}},
	"fetch": {"get": {{capability.Network, ""}}, "head": {{capability.Network, ""}}},
	"clock": {"now": {{capability.Read, "clock"}}},
	"self":  {"memory": {{capability.Read, "self"}}, "policy": {{capability.Read, "self"}}, "capabilities": {{capability.Read, "self"}}},
}

// forbidden are capabilities code may never load: they change what the agent holds.
var forbidden = map[string]bool{"loader": true, "factory": true}

// Compile compiles and checks a Starlark package (its manifest and files): an error wrapping
// capability.ErrBadPackage for code that does not compile or lacks a method, and
// capability.ErrBeyondContract for code that loads what its contract does not declare.
// resolve (nil: none) describes capabilities other than the built-in fs, fetch, clock and self.
func Compile(m capability.Manifest, files map[string][]byte, resolver Resolver) (*Program, error) {
	if m.Runtime != RuntimeName {
		return nil, fmt.Errorf("%w: %s: runtime %q, not %q", capability.ErrBadPackage, m.Name, m.Runtime, RuntimeName)
	}
	if m.Source == "" || files[m.Source] == nil {
		return nil, fmt.Errorf("%w: %s: no source", capability.ErrBadPackage, m.Name)
	}
	p := &Program{Manifest: m, Files: map[string]string{}, Modules: map[string][]string{}}
	for name, data := range files {
		if path.Ext(name) == ".star" {
			p.Files[name] = string(data)
		}
	}
	var defs []string
	for _, name := range slices.Sorted(maps.Keys(p.Files)) {
		f, err := fileOptions.Parse(name, p.Files[name], 0)
		if err == nil {
			err = resolve.File(f, func(string) bool { return false }, starlark.Universe.Has)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", capability.ErrBadPackage, m.Name, compileError(err))
		}
		for _, stmt := range f.Stmts {
			switch s := stmt.(type) {
			case *syntax.LoadStmt:
				if err := p.load(name, s, resolveOr(resolver)); err != nil {
					return nil, err
				}
			case *syntax.DefStmt:
				if name == m.Source {
					defs = append(defs, s.Name.Name)
				}
			}
		}
	}
	for _, meth := range m.Methods {
		if !slices.Contains(defs, meth.Name) {
			return nil, fmt.Errorf("%w: %s: %s defines no function %s (one per method)", capability.ErrBadPackage, m.Name, m.Source, meth.Name)
		}
	}
	for mod := range p.Modules {
		slices.Sort(p.Modules[mod])
		p.Modules[mod] = slices.Compact(p.Modules[mod])
	}
	return p, nil
}

func resolveOr(r Resolver) Resolver {
	if r == nil {
		return func(string) (capability.Description, bool) { return capability.Description{}, false }
	}
	return r
}

// compileError is a parse or resolve error's text: its first error, with position.
func compileError(err error) string {
	if list, ok := err.(resolve.ErrorList); ok && len(list) > 0 {
		return list[0].Error()
	}
	return err.Error()
}

// load checks one load statement of file and records the capability module it grants.
func (p *Program) load(file string, s *syntax.LoadStmt, resolver Resolver) error {
	mod := s.ModuleName()
	if _, ok := p.Files[mod]; ok {
		return nil
	}
	if _, ok := libraries[mod]; ok {
		return nil
	}
	name := p.Manifest.Name
	beyond := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s loads %s", capability.ErrBeyondContract, name, file, fmt.Sprintf(format, args...))
	}
	if forbidden[mod] {
		return beyond("%s, which a capability's code may not use (it changes what the agent holds)", mod)
	}
	desc, found := resolver(mod)
	table, isBuiltin := builtinNeeds[mod]
	if !found && !isBuiltin {
		return beyond("%q, which is neither a library (json, math), one of its files, nor a capability on offer", mod)
	}
	contract := p.Manifest.Contract
	for _, id := range s.From {
		method := id.Name
		var needs []need
		switch {
		case isBuiltin:
			n, ok := table[method]
			held := !found || len(desc.Methods) == 0 || slices.ContainsFunc(desc.Methods, func(x capability.Method) bool { return x.Name == method })
			if !ok || !held { // held: a program's own capability of that name may differ
				return beyond("%s.%s, which %s does not have", mod, method, mod)
			}
			needs = n
		default:
			i := slices.IndexFunc(desc.Methods, func(x capability.Method) bool { return x.Name == method })
			if len(desc.Methods) > 0 && i < 0 {
				return beyond("%s.%s, which %s does not have", mod, method, mod)
			}
			if i >= 0 && len(desc.Methods[i].Effects) > 0 {
				for _, e := range desc.Methods[i].Effects {
					needs = append(needs, need{e.Access, kindOf(e.Resource)})
				}
			} else {
				needs = contractNeeds(desc.Contract)
			}
			if desc.Contract.Spawns && !contract.Spawns {
				return beyond("%s.%s, which may spawn agents or capabilities, but its contract does not declare spawns", mod, method)
			}
		}
		for _, n := range needs {
			if !declares(contract, n) {
				what := n.kind + ": resources"
				if n.kind == "" {
					what = "URLs"
				}
				return beyond("%s.%s, which %s %s, but its contract declares no such %s", mod, method, n.access, what, n.access)
			}
		}
		p.Modules[mod] = append(p.Modules[mod], method)
	}
	return nil
}

// kindOf is the kind of a resource pattern ("file" of "file:notes/*"), or "" for a URL or "*".
func kindOf(resource string) string {
	kind, _, ok := strings.Cut(resource, ":")
	if !ok || strings.Contains(kind, "/") || kind == "http" || kind == "https" {
		return ""
	}
	return kind
}

// contractNeeds are the accesses a contract allows, by kind.
func contractNeeds(c capability.Contract) []need {
	var out []need
	for _, f := range []struct {
		a  capability.Access
		ps []string
	}{{capability.Read, c.Reads}, {capability.Write, c.Writes}, {capability.Execute, c.Executes}, {capability.Network, c.Network}} {
		for _, p := range f.ps {
			n := need{f.a, kindOf(p)}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// declares reports whether c has a pattern for access n: of its kind, or "*".
func declares(c capability.Contract, n need) bool {
	var ps []string
	switch n.access {
	case capability.Read:
		ps = c.Reads
	case capability.Write:
		ps = c.Writes
	case capability.Execute:
		ps = c.Executes
	case capability.Network:
		ps = c.Network
	case capability.Spawn:
		return c.Spawns
	}
	return slices.ContainsFunc(ps, func(p string) bool { return p == "*" || kindOf(p) == n.kind })
}

// Check is the package check hook (capability.PackageOptions.Check) of Starlark packages: it
// compiles each one whose runtime is "starlark" (Compile) and leaves other packages alone.
func Check(resolver Resolver) func(context.Context, *capability.Package) error {
	return func(_ context.Context, pkg *capability.Package) error {
		if pkg.Manifest.Runtime != RuntimeName {
			return nil
		}
		_, err := Compile(pkg.Manifest, pkg.Files, resolver)
		return err
	}
}
