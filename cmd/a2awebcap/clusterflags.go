package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/cluster"
	"github.com/a2awebcap/a2awebcap/engine"
)

// clusterConfig is how serve runs as one replica of several (docs/cluster.md): -cluster names
// the NATS servers; without it serve is a single process, as before.
type clusterConfig struct {
	nats, replica, stream string
	lease, poll           time.Duration
	envErr                error
	ownership             agent.Ownership // set by run from clusterParts: the runtime's instances
}

func (c *clusterConfig) flags(fs *flag.FlagSet) {
	c.lease, c.poll = engine.DefaultLeaseTTL, time.Second
	for _, d := range []struct {
		env string
		dst *time.Duration
	}{{"A2AWEBCAP_LEASE", &c.lease}, {"A2AWEBCAP_CLUSTER_POLL", &c.poll}} {
		if v := envOr(d.env, ""); v != "" && c.envErr == nil {
			if err := durationFlag(d.dst, d.env)(v); err != nil {
				c.envErr = err
			}
		}
	}
	fs.StringVar(&c.nats, "cluster", envOr("A2AWEBCAP_CLUSTER", ""), "run as one replica of several: the NATS `URL`s (nats://host:4222, comma-separated; JetStream enabled) that carry task events between replicas; needs a postgres:// -db shared by them all; empty: a single process (A2AWEBCAP_CLUSTER)")
	fs.StringVar(&c.replica, "replica", envOr("A2AWEBCAP_REPLICA", ""), "with -cluster: this replica's `name` in task leases and logs, unique among live replicas (letters, digits, . _ -); empty: the host name, process ID and a random suffix (A2AWEBCAP_REPLICA)")
	fs.StringVar(&c.stream, "cluster-stream", envOr("A2AWEBCAP_CLUSTER_STREAM", cluster.DefaultStream), "with -cluster: the JetStream stream `name` (and subject prefix) of task events; clusters sharing a NATS server need different names (A2AWEBCAP_CLUSTER_STREAM)")
	fs.Func("lease", fmt.Sprintf("with -cluster: how long a replica's lease on a task it runs lasts unless renewed; a dead replica's tasks are taken over within 1.5 times that (default %v; A2AWEBCAP_LEASE)", engine.DefaultLeaseTTL),
		func(v string) error { c.envErr = nil; return durationFlag(&c.lease, "-lease")(v) })
	fs.Func("cluster-poll", "with -cluster: how often a replica reads from the store the tasks its clients follow on other replicas, catching up on events NATS lost (default 1s; A2AWEBCAP_CLUSTER_POLL)",
		func(v string) error { c.envErr = nil; return durationFlag(&c.poll, "-cluster-poll")(v) })
}

// durationFlag parses a positive duration.
func durationFlag(dst *time.Duration, name string) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: %q is not a positive duration such as 15s", name, v)
		}
		*dst = d
		return nil
	}
}

var replicaName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// check refuses a cluster without a shared store, and names no header could carry.
func (c *clusterConfig) check(db string) error {
	if c.envErr != nil {
		return c.envErr
	}
	if c.nats == "" {
		return nil
	}
	if !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
		return fmt.Errorf("-cluster needs a postgres:// -db that every replica shares, not %q", db)
	}
	if c.replica != "" && !replicaName.MatchString(c.replica) {
		return fmt.Errorf("-replica %q: use letters, digits, dots, underscores and dashes", c.replica)
	}
	if c.lease < 300*time.Millisecond {
		return fmt.Errorf("-lease %v is too short to renew in time; 300ms at least", c.lease)
	}
	return nil
}

// clusterParts are what cluster mode adds to serve: the engine's options, and the counters
// that make quotas and rate limits cluster-wide. The zero value is a single process.
type clusterParts struct {
	engine *engine.Cluster
	limits *cluster.Limits
}

// ownership keeps the agent runtime's instances on one replica at a time; nil on a single
// process.
func (p clusterParts) ownership() agent.Ownership {
	if p.limits == nil {
		return nil
	}
	return p.limits.Ownership(0)
}

// share makes quotas and rateLimit (either may be nil) count across the cluster.
func (p clusterParts) share(quotas *binding.Quotas, rateLimit *binding.RateLimit) {
	if p.limits == nil {
		return
	}
	if quotas != nil {
		quotas.Shared = p.limits
	}
	if rateLimit != nil {
		rateLimit.Shared = p.limits
	}
}

// open connects to NATS and to the database of db for the cluster-wide limits, and returns
// the parts, and what closes them (after the engine).
func (c *clusterConfig) open(ctx context.Context, db string, log *slog.Logger) (clusterParts, func(), error) {
	if c.nats == "" {
		return clusterParts{}, func() {}, nil
	}
	name := c.replica
	if name == "" {
		name = engine.ReplicaName()
	}
	f, err := cluster.Connect(ctx, c.nats, &cluster.Options{Stream: c.stream, Name: "a2awebcap " + name, Logger: log})
	if err != nil {
		return clusterParts{}, nil, fmt.Errorf("-cluster: %w", err)
	}
	limits, err := cluster.OpenLimits(ctx, db, &cluster.LimitsOptions{Replica: name, TTL: c.lease, Logger: log})
	if errors.Is(err, cluster.ErrReplicaNameInUse) {
		_ = f.Close()
		return clusterParts{}, nil, fmt.Errorf("-replica: %w", err)
	}
	if err != nil {
		_ = f.Close()
		return clusterParts{}, nil, fmt.Errorf("-cluster: quotas and rate limits: %w", err)
	}
	log.Info("cluster mode", "replica", name, "nats", c.nats, "stream", c.stream, "lease", c.lease)
	parts := clusterParts{engine: &engine.Cluster{Replica: name, LeaseTTL: c.lease, Fanout: f, Poll: c.poll}, limits: limits}
	return parts, func() { _ = limits.Close(); _ = f.Close() }, nil
}

// readyz answers 200 "ready" when eng takes work (its store answers, its fan-out is connected,
// it is not draining), else 503 with what is wrong: for load balancers.
func readyz(eng *engine.Engine) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := eng.Ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			what := "not ready"
			switch {
			case errors.Is(err, engine.ErrDraining):
				what = "draining"
			case errors.Is(err, engine.ErrClosed):
				what = "closed"
			case strings.Contains(err.Error(), "store"):
				what = "store unavailable"
			case strings.Contains(err.Error(), "fan-out"):
				what = "NATS unavailable"
			}
			fmt.Fprintln(w, what)
			return
		}
		fmt.Fprintln(w, "ready")
	}
}
