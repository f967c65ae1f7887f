package main

import (
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/push"
	"github.com/a2awebcap/a2awebcap/store"
)

// pushConfig is where serve's push notifications may go (docs/push.md, docs/security.md).
type pushConfig struct {
	allow, deny, nat64 []netip.Prefix
	allowHosts         []string
	allowRaw, denyRaw  string
	nat64Raw           string
	// perTask and perPrincipal bound the push configs of a task and of a principal's
	// unfinished tasks; 0: no limit.
	perTask, perPrincipal int
	// workers, perDest and perPrincipalInFlight bound the deliveries in flight: in all, of a
	// principal to one destination, of a principal; 0 (not workers): no bound.
	workers, perDest, perPrincipalInFlight int
	envErrs                                map[string]error // by flag: a bad environment value, unless the flag was given
}

func (p *pushConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.allowRaw, "push-allow", envOr("A2AWEBCAP_PUSH_ALLOW", ""), "comma-separated `CIDRs and host names` push notifications may be sent to although they are not public (e.g. 127.0.0.1/32 for a receiver on this host); by default only public addresses are (A2AWEBCAP_PUSH_ALLOW)")
	fs.StringVar(&p.denyRaw, "push-deny", envOr("A2AWEBCAP_PUSH_DENY", ""), "comma-separated `CIDRs` push notifications are never sent to although public (e.g. this server's own public network); wins over -push-allow (A2AWEBCAP_PUSH_DENY)")
	p.perTask, p.perPrincipal = engine.DefaultPushConfigsPerTask, engine.DefaultPushConfigsPerPrincipal
	p.workers, p.perDest, p.perPrincipalInFlight = push.DefaultWorkers, push.DefaultPerDestination, push.DefaultPerPrincipal
	p.envErrs = map[string]error{}
	for _, e := range []struct {
		env, flag, usage string
		dst              *int
	}{
		{"A2AWEBCAP_MAX_PUSH_CONFIGS_PER_TASK", "max-push-configs-per-task", "push notification configs one task may have; 0: no limit", &p.perTask},
		{"A2AWEBCAP_MAX_PUSH_CONFIGS_PER_PRINCIPAL", "max-push-configs-per-principal", "push notification configs one principal's unfinished tasks may have together (anonymous callers are one principal, and share it); 0: no limit", &p.perPrincipal},
		{"A2AWEBCAP_PUSH_WORKERS", "push-workers", "push deliveries this process sends at once (each a goroutine and a connection); at least 1", &p.workers},
		{"A2AWEBCAP_PUSH_PER_DESTINATION", "push-per-destination", "push deliveries of one principal to one destination (scheme, host, port) in flight at once, over every replica: a slow or dead receiver holds no more; 0: no bound", &p.perDest},
		{"A2AWEBCAP_PUSH_PER_PRINCIPAL", "push-per-principal", "push deliveries of one principal in flight at once, over every replica (anonymous callers are one principal); 0: no bound", &p.perPrincipalInFlight},
	} {
		if v := envOr(e.env, ""); v != "" {
			if err := intFlag(e.dst, e.env)(v); err != nil {
				p.envErrs[e.flag] = err
			}
		}
		fs.Func(e.flag, fmt.Sprintf("%s (default %d) (%s)", e.usage, *e.dst, e.env), func(v string) error {
			delete(p.envErrs, e.flag)
			return intFlag(e.dst, "-"+e.flag)(v)
		})
	}
	fs.StringVar(&p.nat64Raw, "push-nat64", envOr("A2AWEBCAP_PUSH_NAT64", ""), "comma-separated network-specific NAT64 `prefixes` (RFC 6052: /32, /40, /48, /56, /64 or /96) of this server's network: their addresses are judged by the IPv4 address they embed; 64:ff9b::/96 always is (A2AWEBCAP_PUSH_NAT64)")
}

// parse reads the flags' values.
func (p *pushConfig) parse() error {
	if len(p.envErrs) > 0 {
		return p.envErrs[slices.Min(slices.Collect(maps.Keys(p.envErrs)))]
	}
	if p.workers < 1 {
		return fmt.Errorf("-push-workers: %d: want at least 1", p.workers)
	}
	for _, a := range splitList(p.allowRaw) {
		if pr, err := netip.ParsePrefix(a); err == nil {
			p.allow = append(p.allow, pr.Masked())
		} else if ip, err := netip.ParseAddr(a); err == nil {
			p.allow = append(p.allow, netip.PrefixFrom(ip, ip.BitLen()))
		} else if strings.ContainsAny(a, "/:") {
			return fmt.Errorf("-push-allow: %q is neither a CIDR, an address nor a host name", a)
		} else {
			p.allowHosts = append(p.allowHosts, a)
		}
	}
	for _, a := range splitList(p.denyRaw) {
		pr, err := parsePrefixOrAddr(a)
		if err != nil {
			return fmt.Errorf("-push-deny: %q is neither a CIDR nor an address", a)
		}
		p.deny = append(p.deny, pr)
	}
	for _, a := range splitList(p.nat64Raw) {
		pr, err := netip.ParsePrefix(a)
		switch {
		case err != nil || !pr.Addr().Is6() || pr.Addr().Is4In6():
			return fmt.Errorf("-push-nat64: %q is not an IPv6 prefix", a)
		case pr.Bits() != 32 && pr.Bits() != 40 && pr.Bits() != 48 && pr.Bits() != 56 && pr.Bits() != 64 && pr.Bits() != 96:
			return fmt.Errorf("-push-nat64: %s: RFC 6052 allows prefix lengths 32, 40, 48, 56, 64 and 96 only", a)
		}
		p.nat64 = append(p.nat64, pr.Masked())
	}
	return nil
}

// options is the deliverer's configuration.
func (p *pushConfig) options(log *slog.Logger) *push.Options {
	return &push.Options{Allow: p.allow, AllowHosts: p.allowHosts, Deny: p.deny, NAT64: p.nat64, Logger: log,
		Workers: p.workers, PerDestination: noBound(p.perDest), PerPrincipal: noBound(p.perPrincipalInFlight)}
}

// limits is the engine's form of the config limits.
func (p *pushConfig) limits() store.PushLimits {
	return store.PushLimits{PerTask: noBound(p.perTask), PerOwner: noBound(p.perPrincipal)}
}

// noBound turns a flag's 0 (no bound) into the libraries' negative.
func noBound(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func splitList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	if pr, err := netip.ParsePrefix(s); err == nil {
		return pr.Masked(), nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}
