package main

// serve as an agent registry (-registry), and an agent server registering itself with one
// (-register-with). docs/multi-agent.md.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/netguard"
	"github.com/a2awebcap/a2awebcap/registry"
)

type registryConfig struct {
	enabled, requireSigned bool
	allow                  string
	trustedKeys            string
	maxAgents, maxPerOwner int
	checkInterval          time.Duration
	registerWith           string
	registerToken          string // A2AWEBCAP_REGISTRY_TOKEN: a bearer token for -register-with
}

func (rc *registryConfig) flags(fs *flag.FlagSet) {
	fs.BoolVar(&rc.enabled, "registry", false, "also serve an agent registry at /registry/ (HTTP JSON) and /registry/capnweb, its state in the -db store (docs/multi-agent.md)")
	fs.StringVar(&rc.allow, "registry-allow", "", "with -registry: comma-separated `CIDRs` the registry may connect to although they are not public (e.g. 127.0.0.0/8 for agents on this host); empty: public addresses only")
	fs.StringVar(&rc.trustedKeys, "registry-trusted-keys", "", "with -registry: a JWK set `file` whose keys the registry trusts to sign any card (besides a key set a card names on its own origin)")
	fs.BoolVar(&rc.requireSigned, "registry-require-signed", false, "with -registry: list only signed cards")
	fs.IntVar(&rc.maxAgents, "registry-max-agents", 10000, "with -registry: the most agents the registry lists")
	fs.IntVar(&rc.maxPerOwner, "registry-max-per-principal", 100, "with -registry: the most registrations one principal may have")
	fs.DurationVar(&rc.checkInterval, "registry-check-interval", 5*time.Minute, "with -registry: how often each listed agent's card is fetched again")
	fs.StringVar(&rc.registerWith, "register-with", envOr("A2AWEBCAP_REGISTER_WITH", ""), "register this agent (at -base-url, which it then needs; with -agents, each of them) with the registry served at this `URL` when serve starts; a bearer token for it, if any, is read from A2AWEBCAP_REGISTRY_TOKEN (A2AWEBCAP_REGISTER_WITH)")
	rc.registerToken = os.Getenv("A2AWEBCAP_REGISTRY_TOKEN")
}

// check validates the flags together with -base-url.
func (rc *registryConfig) check(baseURL string) error {
	if rc.registerWith != "" && baseURL == "" {
		return errors.New("-register-with needs -base-url: the registry reaches this agent there")
	}
	if rc.maxAgents <= 0 || rc.maxPerOwner <= 0 || rc.checkInterval <= 0 {
		return errors.New("-registry-max-agents, -registry-max-per-principal and -registry-check-interval must be positive")
	}
	_, err := rc.allowed()
	return err
}

func (rc *registryConfig) allowed() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for s := range strings.SplitSeq(rc.allow, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("-registry-allow: %q is not a CIDR", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// start opens the registry beside the tasks of db and returns its handler, to mount at
// "/registry/", and what closes it; nil without -registry. hopts are the bindings' options:
// the registry is protected as they are.
func (rc *registryConfig) start(ctx context.Context, db string, hopts *binding.Options, log *slog.Logger) (http.Handler, func(), error) {
	if !rc.enabled {
		return nil, func() {}, nil
	}
	var st *registry.Store
	var err error
	switch {
	case db == "memory":
		st, err = registry.OpenSQLite(ctx, ":memory:")
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		st, err = registry.OpenPostgres(ctx, db)
	default:
		st, err = registry.OpenSQLite(ctx, db)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("-registry: %w", err)
	}
	allow, _ := rc.allowed()
	opts := &registry.Options{
		Guard:         netguard.New(&netguard.Options{Allow: allow}),
		RequireSigned: rc.requireSigned, MaxAgents: rc.maxAgents, MaxPerOwner: rc.maxPerOwner,
		CheckInterval: rc.checkInterval, Logger: log,
	}
	if rc.trustedKeys != "" {
		b, err := os.ReadFile(rc.trustedKeys)
		var ks jose.JSONWebKeySet
		if err == nil {
			err = json.Unmarshal(b, &ks)
		}
		if err != nil {
			_ = st.Close()
			return nil, nil, fmt.Errorf("-registry-trusted-keys: %w", err)
		}
		opts.TrustedKeys = &ks
	}
	reg := registry.New(st, opts)
	h := reg.Handler(&registry.HandlerOptions{Guard: binding.NewServiceGuard(hopts)})
	return h, func() { _ = h.(interface{ Close() error }).Close(); _ = reg.Close(); _ = st.Close() }, nil
}

// selfURLs are the base URLs of the agents serve serves at baseURL: baseURL itself, or with
// -agents each agent's (binding.AgentsPath + name + "/").
func selfURLs(baseURL string, multi *hosting.Agents) []string {
	base := strings.TrimSuffix(baseURL, "/")
	if multi == nil {
		return []string{base}
	}
	var out []string
	for _, a := range multi.List() {
		out = append(out, base+binding.AgentsPath+a.Name+"/")
	}
	return out
}

// registerSelf registers each of urls with the -register-with registry, trying again (every few
// seconds, for about a minute) while the registry cannot be reached or cannot reach us yet. It
// returns at once; wait for the goroutines with the returned function.
func (rc *registryConfig) registerSelf(ctx context.Context, urls []string, log *slog.Logger) (wait func()) {
	if rc.registerWith == "" {
		return func() {}
	}
	h := http.Header{}
	if rc.registerToken != "" {
		h.Set("Authorization", "Bearer "+rc.registerToken)
	}
	c := registry.NewClient(rc.registerWith, &registry.ClientOptions{Header: h})
	var wg sync.WaitGroup
	for _, u := range urls {
		wg.Go(func() { rc.register(ctx, c, u, log) })
	}
	return wg.Wait
}

// register registers u with c, trying again while that may help.
func (rc *registryConfig) register(ctx context.Context, c *registry.Client, u string, log *slog.Logger) {
	delay := time.Second
	for attempt := 1; ; attempt++ {
		e, err := c.Register(ctx, u)
		if err == nil {
			log.Info("registered with the registry", "registry", rc.registerWith, "agent", u, "id", e.ID, "state", e.State, "signature", e.Signature)
			return
		}
		var rerr *registry.Error
		final := errors.As(err, &rerr) && rerr.Status != http.StatusUnprocessableEntity && rerr.Status < 500
		if final || attempt == 8 || ctx.Err() != nil {
			log.Warn("could not register with the registry", "registry", rc.registerWith, "agent", u, "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 15*time.Second)
	}
}
