package main

// The Starlark sandbox and the factory (docs/capabilities.md, "Capabilities in Starlark"): the
// pool of worker processes that runs capabilities written in Starlark — signed packages of
// -capability-packages whose runtime is "starlark", and those the agents write with the factory
// — and where the factory keeps what the agents commit. The workers are this binary,
// re-executed (main calls sandbox.WorkerMain first).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/factory"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

type sandboxConfig struct {
	factoryDir     string
	workers        int
	memoryMiB      int
	time           time.Duration
	envErr         error
	catalog        *capability.Catalog // set once the catalog is built
	pool           *sandbox.Pool       // started when first needed
	factoryOptions *factory.Options
}

func (s *sandboxConfig) flags(fs *flag.FlagSet) {
	s.workers, s.memoryMiB, s.time = 4, sandbox.DefaultMemory>>20, sandbox.DefaultTime
	for _, e := range []struct {
		name string
		dst  *int
	}{{"A2AWEBCAP_SANDBOX_WORKERS", &s.workers}, {"A2AWEBCAP_SANDBOX_MEMORY", &s.memoryMiB}} {
		if v := envOr(e.name, ""); v != "" && s.envErr == nil {
			s.envErr = intFlag(e.dst, e.name)(v)
		}
	}
	if v := envOr("A2AWEBCAP_SANDBOX_TIME", ""); v != "" && s.envErr == nil {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			s.envErr = fmt.Errorf("A2AWEBCAP_SANDBOX_TIME=%q: want a duration such as 10s", v)
		}
		s.time = d
	}
	fs.StringVar(&s.factoryDir, "factory-dir", envOr("A2AWEBCAP_FACTORY_DIR", ""),
		"with -capabilities factory: the `directory` where each principal's agent commits the capabilities it writes, DIR/<principal>/capabilities/<name>/ (A2AWEBCAP_FACTORY_DIR)")
	fs.Func("sandbox-workers", "worker processes that run Starlark capabilities at once; one principal uses at most half (A2AWEBCAP_SANDBOX_WORKERS; default 4)",
		func(v string) error { s.envErr = nil; return intFlag(&s.workers, "-sandbox-workers")(v) })
	fs.Func("sandbox-memory", "MiB of memory each Starlark worker may use (A2AWEBCAP_SANDBOX_MEMORY; default 256)",
		func(v string) error { s.envErr = nil; return intFlag(&s.memoryMiB, "-sandbox-memory")(v) })
	fs.DurationVar(&s.time, "sandbox-time", s.time, "the wall-clock limit of one Starlark call (A2AWEBCAP_SANDBOX_TIME)")
}

// ensure starts the pool.
func (s *sandboxConfig) ensure() (*sandbox.Pool, error) {
	if s.envErr != nil {
		return nil, s.envErr
	}
	if s.workers < 1 || s.memoryMiB < 16 {
		return nil, errors.New("-sandbox-workers must be at least 1 and -sandbox-memory at least 16 (MiB)")
	}
	if s.pool == nil {
		s.pool = sandbox.New(&sandbox.Options{Workers: s.workers, Memory: int64(s.memoryMiB) << 20,
			Limits: sandbox.Limits{Time: s.time}})
	}
	return s.pool, nil
}

// resolver describes, for a package's check, the capabilities of the catalog once it is built.
func (s *sandboxConfig) resolver() sandbox.Resolver {
	return func(module string) (capability.Description, bool) { return sandbox.CatalogResolver(s.catalog)(module) }
}

// check is the package check hook: Starlark packages load only what their contract declares.
func (s *sandboxConfig) check(ctx context.Context, p *capability.Package) error {
	return sandbox.Check(s.resolver())(ctx, p)
}

// runtime makes capabilities of "starlark" packages.
func (s *sandboxConfig) runtime() (capability.Runtime, error) {
	pool, err := s.ensure()
	if err != nil {
		return nil, err
	}
	return pool.Runtime(s.resolver()), nil
}

// factoryOffer offers the factory.
func (s *sandboxConfig) factoryOffer(keys string) (capability.Offer, error) {
	if s.factoryDir == "" {
		return capability.Offer{}, errors.New("-capabilities factory needs -factory-dir: where the agents keep what they write")
	}
	dir, err := filepath.Abs(s.factoryDir)
	if err != nil {
		return capability.Offer{}, fmt.Errorf("-factory-dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return capability.Offer{}, fmt.Errorf("-factory-dir: %w", err)
	}
	pool, err := s.ensure()
	if err != nil {
		return capability.Offer{}, err
	}
	s.factoryOptions = &factory.Options{Dir: dir, Pool: pool}
	if keys != "" {
		if s.factoryOptions.Keys, err = readTrustedKeys("-capability-keys", keys); err != nil {
			return capability.Offer{}, err
		}
	}
	return factory.Offer(s.factoryOptions), nil
}

// built is told the catalog once it is built, and returns the definition's Rehydrate.
func (s *sandboxConfig) built(cat *capability.Catalog) func(context.Context, string, *capability.Set) {
	s.catalog = cat
	if s.factoryOptions == nil {
		return nil
	}
	s.factoryOptions.Catalog = cat
	return s.factoryOptions.Rehydrate
}

// close stops the workers.
func (s *sandboxConfig) close() {
	if s.pool != nil {
		_ = s.pool.Close()
	}
}
