package factory

// The files of committed capabilities: DIR/<principal>/capabilities/<name>/.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// The files of a committed capability.
const (
	SourceFile = "capability.star"
	TestsFile  = "test.star"
	// CapabilitiesDir is the directory of an instance's committed capabilities.
	CapabilitiesDir = "capabilities"
)

// Options configure the factory of a definition's instances.
type Options struct {
	// Dir is the root of the instances' directories: each principal's is
	// Dir/PrincipalDir(principal). Required.
	Dir string
	// Pool runs the capabilities' code and tests. Required.
	Pool *sandbox.Pool
	// Catalog is what the operator offers: what capabilities the code may load besides those
	// the instance holds. Nil means none.
	Catalog *capability.Catalog
	// Keys are the trusted keys a committed capability carrying a signature must be signed by
	// (a tampered signed package is refused); nil means none, so any signed one is refused.
	Keys *jose.JSONWebKeySet
	// Logger reports committed capabilities refused at rehydration; nil means slog.Default().
	Logger *slog.Logger
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// PrincipalDir names a principal's directory: its name made safe for a file name (lower-case
// letters, digits, - and _; at most 40 bytes) and a digest of the name, so distinct principals
// never share one: "u-alice-3f2a9c01d7".
func PrincipalDir(principal string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(principal) {
		switch {
		case b.Len() >= 40:
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(principal))
	return "u-" + b.String() + "-" + hex.EncodeToString(sum[:5])
}

// dir is principal's directory.
func (o *Options) dir(principal string) string { return filepath.Join(o.Dir, PrincipalDir(principal)) }

// resolver describes a module: a capability set holds, or one the catalog offers.
func (o *Options) resolver(set *capability.Set) sandbox.Resolver {
	cat := sandbox.CatalogResolver(o.Catalog)
	return func(module string) (capability.Description, bool) {
		if set != nil {
			if d, ok := set.Describe(module); ok {
				return d, true
			}
		}
		return cat(module)
	}
}

// writePackage writes m and files as DIR/capabilities/<name>/, replacing what was there (a
// signature included: the new version is not the one signed).
func writePackage(dir string, m capability.Manifest, files map[string][]byte) error {
	base := filepath.Join(dir, CapabilitiesDir)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer root.Close()
	tmp := "." + m.Name + ".new"
	_ = root.RemoveAll(tmp)
	if err := root.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	mf, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	all := map[string][]byte{capability.ManifestFile: append(mf, '\n')}
	for name, data := range files {
		all[name] = data
	}
	for name, data := range all {
		if err := root.WriteFile(tmp+"/"+name, data, 0o600); err != nil {
			return err
		}
	}
	old := "." + m.Name + ".old"
	_ = root.RemoveAll(old)
	if err := root.Rename(m.Name, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := root.Rename(tmp, m.Name); err != nil {
		return err
	}
	return root.RemoveAll(old)
}

// committed lists the names of the capabilities committed in dir.
func committed(dir string) []string {
	ents, err := os.ReadDir(filepath.Join(dir, CapabilitiesDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && capability.ValidName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// readCommitted reads and checks the committed capability name of dir.
func (o *Options) readCommitted(ctx context.Context, dir, name string, set *capability.Set) (*sandbox.Program, error) {
	p, err := capability.ReadPackage(ctx, filepath.Join(dir, CapabilitiesDir, name),
		&capability.PackageOptions{Keys: o.Keys, AllowUnsigned: true, Check: sandbox.Check(o.resolver(set))})
	if err != nil {
		return nil, err
	}
	if p.Manifest.Name != name {
		return nil, fmt.Errorf("%w: %s holds a manifest named %s", capability.ErrBadPackage, name, p.Manifest.Name)
	}
	return sandbox.Compile(p.Manifest, p.Files, o.resolver(set))
}

// Rehydrate installs into set, the capability set of principal's instance as it loads, every
// capability committed in the principal's directory: read and checked (a signed one must
// verify against Keys; code that loads what its contract does not declare is refused), and
// installed under the contract strategy, not approved — the set's saved state, restored after
// this, gives each back its strategy and approval unless its contract changed. What is refused
// is logged and left out. It is agent.Definition.Rehydrate.
func (o *Options) Rehydrate(ctx context.Context, principal string, set *capability.Set) {
	dir := o.dir(principal)
	for _, name := range committed(dir) {
		if err := o.rehydrate(ctx, dir, name, principal, set); err != nil {
			o.logger().Warn("factory: a committed capability is refused", "principal", principal, "capability", name, "error", err)
		}
	}
}

func (o *Options) rehydrate(ctx context.Context, dir, name, principal string, set *capability.Set) error {
	prog, err := o.readCommitted(ctx, dir, name, set)
	if err != nil {
		return err
	}
	c, err := o.Pool.Capability(prog, set, principal)
	if err != nil {
		return err
	}
	err = set.Install(ctx, c, capability.Grant{Strategy: capability.Strategy{Kind: capability.ContractBased},
		Minimum: capability.PreApproved, By: "its files", Silent: true})
	if err != nil {
		c.Revoke(err)
	}
	return err
}
