package main

// The operator's capabilities (docs/capabilities.md, "Operator configuration"): what the
// runtime agent's instances may install, under which default strategies, the file system's
// root, fetch's allow-list, signed packages and the keys they must be signed with; and the
// sign-capability verb that signs a package.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/factory"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
	"github.com/a2awebcap/a2awebcap/netguard"
)

// capabilityConfig is how serve offers capabilities to the runtime agent's instances.
type capabilityConfig struct {
	offer, preinstall, strategies string
	fsRoot, fsWrites              string
	fsShared                      bool
	fetchAllow, fetchNetworks     string
	packages, keys                string
	unsigned                      bool
	sandbox                       sandboxConfig // Starlark: the sandbox and the factory (sandboxflags.go)
	a2a                           a2aConfig     // calling other agents (a2aflags.go)
}

func (c *capabilityConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.offer, "capabilities", envOr("A2AWEBCAP_CAPABILITIES", "self"),
		"with -agent runtime or notes: the capabilities every principal's agent may install through its loader, comma-separated: self (its read-only view of itself), fs (files under -fs-root), fetch (HTTP to -fetch-allow URLs), clock (the time, pre-approved), agents (child agents holding some of its capabilities), a2a (calling other agents at -a2a-allow URLs), and the packages in -capability-packages; empty: none (A2AWEBCAP_CAPABILITIES)")
	fs.StringVar(&c.preinstall, "capability-preinstall", envOr("A2AWEBCAP_CAPABILITY_PREINSTALL", ""),
		"capabilities of -capabilities that every new agent instance holds from the start, comma-separated; empty: none, the loader only (A2AWEBCAP_CAPABILITY_PREINSTALL)")
	fs.StringVar(&c.strategies, "capability-strategy", envOr("A2AWEBCAP_CAPABILITY_STRATEGY", ""),
		"default permission strategies, NAME=STRATEGY comma-separated (strategies: pre-approved, audit-only, contract, call-by-call, budget:calls=N/bytes=N/files=N); unnamed: each capability's recommended one (A2AWEBCAP_CAPABILITY_STRATEGY)")
	fs.StringVar(&c.fsRoot, "fs-root", envOr("A2AWEBCAP_FS_ROOT", ""),
		"the `directory` the fs capability is confined to: each principal gets a directory of its own in it, unless -fs-shared (A2AWEBCAP_FS_ROOT)")
	fs.BoolVar(&c.fsShared, "fs-shared", envOr("A2AWEBCAP_FS_SHARED", "") == "true",
		"fs: every principal works in -fs-root itself, sharing its files (A2AWEBCAP_FS_SHARED=true)")
	fs.StringVar(&c.fsWrites, "fs-writes", envOr("A2AWEBCAP_FS_WRITES", "file:*"),
		"fs: the file patterns it may write, comma-separated (file:notes/*); empty: read-only (A2AWEBCAP_FS_WRITES)")
	fs.StringVar(&c.fetchAllow, "fetch-allow", envOr("A2AWEBCAP_FETCH_ALLOW", ""),
		"fetch: the URL patterns it may reach, comma-separated (https://api.example.com/*); public addresses only, whatever they allow, but for -fetch-networks (A2AWEBCAP_FETCH_ALLOW)")
	fs.StringVar(&c.fetchNetworks, "fetch-networks", envOr("A2AWEBCAP_FETCH_NETWORKS", ""),
		"fetch: comma-separated `CIDRs` it may reach although they are not public (127.0.0.1/32 for a site on this host); empty: public addresses only (A2AWEBCAP_FETCH_NETWORKS)")
	fs.StringVar(&c.packages, "capability-packages", envOr("A2AWEBCAP_CAPABILITY_PACKAGES", ""),
		"a `directory` of capability packages, one per subdirectory, each signed by a -capability-keys key (A2AWEBCAP_CAPABILITY_PACKAGES)")
	fs.StringVar(&c.keys, "capability-keys", envOr("A2AWEBCAP_CAPABILITY_KEYS", ""),
		"a JWK set `file` of the keys capability packages must be signed with (A2AWEBCAP_CAPABILITY_KEYS)")
	c.sandbox.flags(fs)
	c.a2a.flags(fs)
	fs.BoolVar(&c.unsigned, "capability-allow-unsigned", false, "accept unsigned capability packages (development only: a tampered package is still refused)")
}

// packageRuntimes make capabilities of packages, by manifest runtime ("starlark").
var packageRuntimes = map[string]capability.Runtime{}

// list splits a comma-separated flag value.
func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// catalog builds the catalog of the flags for def, and the names to preinstall.
func (c *capabilityConfig) catalog(ctx context.Context, def *agent.Definition) (*capability.Catalog, []string, error) {
	defaults := map[string]capability.Strategy{}
	for _, kv := range list(c.strategies) {
		name, v, ok := strings.Cut(kv, "=")
		st, err := capability.ParseStrategy(v)
		if !ok || err != nil {
			return nil, nil, fmt.Errorf("-capability-strategy %q: want NAME=STRATEGY: %v", kv, err)
		}
		defaults[strings.TrimSpace(name)] = st
	}
	offers := map[string]capability.Offer{}
	if c.packages != "" {
		pkgs, err := c.readPackages(ctx)
		if err != nil {
			return nil, nil, err
		}
		maps.Copy(offers, pkgs)
	}
	cat := capability.NewCatalog()
	for _, name := range list(c.offer) {
		o, err := c.builtin(name, offers)
		if name == "agents" {
			o, err = agent.SubagentOffer(def), nil
		}
		if err != nil {
			return nil, nil, err
		}
		if st, ok := defaults[name]; ok {
			o.Strategy = st
			delete(defaults, name)
		}
		if err := cat.Add(o); err != nil {
			return nil, nil, fmt.Errorf("-capabilities %s: %w", name, err)
		}
	}
	if len(defaults) > 0 {
		return nil, nil, fmt.Errorf("-capability-strategy %s: not in -capabilities", slices.Sorted(maps.Keys(defaults))[0])
	}
	pre := list(c.preinstall)
	for _, name := range pre {
		if _, ok := cat.Lookup(name); !ok {
			return nil, nil, fmt.Errorf("-capability-preinstall %s: not in -capabilities", name)
		}
	}
	return cat, pre, nil
}

// builtin is the offer of name: a built-in capability, or a package read from
// -capability-packages.
func (c *capabilityConfig) builtin(name string, packages map[string]capability.Offer) (capability.Offer, error) {
	switch name {
	case "self":
		return capability.SelfOffer(), nil
	case "fs":
		return c.fsOffer("")
	case "fetch":
		allow := list(c.fetchAllow)
		if len(allow) == 0 {
			return capability.Offer{}, errors.New("-capabilities fetch needs -fetch-allow: the URLs it may reach")
		}
		opts, err := c.fetchOptions()
		if err != nil {
			return capability.Offer{}, err
		}
		f, err := capability.Fetch(capability.Contract{Network: allow}, opts)
		if err != nil {
			return capability.Offer{}, fmt.Errorf("-fetch-allow: %w", err)
		}
		return capability.Offering(f, capability.Strategies{Minimum: capability.AuditOnly, Recommended: capability.ContractBased}), nil
	case "clock":
		// A capability beside the runtime agent's "clock" tool (its method is "clock.now"): what
		// Starlark packages and the model read the time through.
		return capability.ClockOffer(nil), nil
	case factory.Name:
		return c.sandbox.factoryOffer(c.keys)
	case "a2a":
		return c.a2a.offer()
	}
	if o, ok := packages[name]; ok {
		return o, nil
	}
	return capability.Offer{}, fmt.Errorf("-capabilities: no capability %q (built in: self, fs, fetch, clock, agents, a2a; or a package in -capability-packages)", name)
}

// fetchOptions are the fetch capability's options: its dial-time SSRF guard, which lets it
// reach -fetch-networks too. Nil: the defaults (public addresses only).
func (c *capabilityConfig) fetchOptions() (*capability.FetchOptions, error) {
	var allow []netip.Prefix
	for _, s := range list(c.fetchNetworks) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("-fetch-networks: %q is not a CIDR", s)
		}
		allow = append(allow, p.Masked())
	}
	if len(allow) == 0 {
		return nil, nil
	}
	return &capability.FetchOptions{Dial: netguard.New(&netguard.Options{Allow: allow}).DialContext}, nil
}

// fsOffer offers the file system under -fs-root (its directory sub, made if need be, when sub
// is not ""): a directory of its own for each principal, or that directory itself with
// -fs-shared.
func (c *capabilityConfig) fsOffer(sub string) (capability.Offer, error) {
	if c.fsRoot == "" {
		return capability.Offer{}, errors.New("-capabilities fs needs -fs-root: the directory it is confined to")
	}
	root, err := filepath.Abs(c.fsRoot)
	if err != nil {
		return capability.Offer{}, fmt.Errorf("-fs-root: %w", err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return capability.Offer{}, fmt.Errorf("-fs-root %s: not a directory", c.fsRoot)
	}
	if sub != "" {
		root = filepath.Join(root, sub)
		if err := os.MkdirAll(root, 0o700); err != nil {
			return capability.Offer{}, fmt.Errorf("-fs-root: %w", err)
		}
	}
	contract := capability.Contract{Reads: []string{"file:*"}, Writes: list(c.fsWrites)}
	if err := contract.Validate(); err != nil {
		return capability.Offer{}, fmt.Errorf("-fs-writes: %w", err)
	}
	desc := "Files in a directory of your own"
	if c.fsShared {
		desc = "Files in a directory the operator shares"
	}
	// The manifest's methods are what FileSystem makes; made once to describe them.
	probe, err := capability.FileSystem(root, contract, nil)
	if err != nil {
		return capability.Offer{}, fmt.Errorf("-fs-root: %w", err)
	}
	d := probe.Describe()
	probe.Revoke(nil)
	shared := c.fsShared
	return capability.Offer{
		Manifest: capability.Manifest{Name: "fs", Version: "1", Description: desc, Contract: contract, Methods: d.Methods,
			Strategy: capability.Strategies{Minimum: capability.AuditOnly, Recommended: capability.ContractBased}},
		New: func(_ context.Context, env capability.Env) (*capability.Capability, error) {
			dir := root
			if !shared {
				dir = filepath.Join(root, principalDir(env.Principal))
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return nil, err
				}
			}
			return capability.FileSystem(dir, contract, nil)
		},
	}, nil
}

// principalDir names a principal's directory under -fs-root: readable, a single path element,
// never "." or "..", and distinct for distinct principals (a digest of the name ends it); the
// factory's directories under -factory-dir are named the same way.
func principalDir(principal string) string { return factory.PrincipalDir(principal) }

// readPackages reads and verifies every package under -capability-packages.
func (c *capabilityConfig) readPackages(ctx context.Context) (map[string]capability.Offer, error) {
	opts := &capability.PackageOptions{AllowUnsigned: c.unsigned, Check: c.sandbox.check}
	if c.keys != "" {
		keys, err := readTrustedKeys("-capability-keys", c.keys)
		if err != nil {
			return nil, err
		}
		opts.Keys = keys
	} else if !c.unsigned {
		return nil, errors.New("-capability-packages needs -capability-keys: the keys packages must be signed with")
	}
	ents, err := os.ReadDir(c.packages)
	if err != nil {
		return nil, fmt.Errorf("-capability-packages: %w", err)
	}
	offers := map[string]capability.Offer{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p, err := capability.ReadPackage(ctx, filepath.Join(c.packages, e.Name()), opts)
		if err != nil {
			return nil, fmt.Errorf("-capability-packages: %w", err)
		}
		run, ok := packageRuntimes[p.Manifest.Runtime]
		if p.Manifest.Runtime == sandbox.RuntimeName {
			if run, err = c.sandbox.runtime(); err != nil {
				return nil, err
			}
			ok = true
		}
		if !ok {
			var have []string
			for k := range packageRuntimes {
				have = append(have, k)
			}
			slices.Sort(have)
			return nil, fmt.Errorf("-capability-packages: %s: this build has no %q runtime for it (it has: %s)", p.Manifest.Name,
				p.Manifest.Runtime, cmpOrNone(strings.Join(have, ", ")))
		}
		if _, dup := offers[p.Manifest.Name]; dup {
			return nil, fmt.Errorf("-capability-packages: two packages named %s", p.Manifest.Name)
		}
		offers[p.Manifest.Name] = p.Offer(capability.Strategy{}, run)
	}
	return offers, nil
}

func cmpOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// apply gives def the flags' catalog.
func (c *capabilityConfig) apply(ctx context.Context, def *agent.Definition) error {
	cat, pre, err := c.catalog(ctx, def)
	if err != nil {
		return err
	}
	def.Capabilities, def.Preinstall = cat, pre
	def.Rehydrate = c.sandbox.built(cat)
	return nil
}

const signCapabilityUsage = `Usage: a2awebcap sign-capability -key FILE [-kid ID] DIR

Signs the capability package in DIR (manifest.json, its source, tests and README) with the PEM
private key in FILE (EC P-256, Ed25519 or RSA), writing DIR/signature.jws: a detached JWS over
the canonical manifest and the digests of every other file. Sign last: any later change to any
file breaks the signature. serve -capability-keys names the public keys it accepts.
`

// signCapability is the sign-capability verb.
func signCapability(args []string) error {
	fs := flag.NewFlagSet("sign-capability", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), signCapabilityUsage); fs.PrintDefaults() }
	key := fs.String("key", "", "the PEM private key `file` to sign with")
	kid := fs.String("kid", "", "the key's ID, as the verifier's JWK set names it; empty: none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" || fs.NArg() != 1 {
		return errors.New("sign-capability takes -key FILE and one directory (a2awebcap sign-capability -h)")
	}
	signer, err := readSigningKey("-key", *key)
	if err != nil {
		return err
	}
	return capability.SignPackage(fs.Arg(0), signer, *kid)
}
