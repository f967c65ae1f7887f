package netguard

// The Guard: the rule plus an operator's lists, and a dialer that applies them.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Resolver resolves host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options adjust a Guard. Nil means the documented defaults: public addresses only.
type Options struct {
	// Allow lists networks that may be reached although they are not public, e.g.
	// 127.0.0.1/32 for a receiver on the same host. Nil: none.
	Allow []netip.Prefix
	// AllowHosts lists host names (compared without case and without a trailing dot) that are
	// dialed whatever they resolve to. Nil: none.
	AllowHosts []string
	// Deny lists networks that are refused although public (the server's own public
	// addresses, a partner network). Deny wins over Allow. Nil: none.
	Deny []netip.Prefix
	// NAT64 lists network-specific NAT64 prefixes (RFC 6052 §2.2: lengths 32, 40, 48, 56, 64
	// or 96) of the network the server is in. Their addresses embed IPv4 addresses, which the
	// NAT64 gateway connects to, and are judged by those: without this, such an address looks
	// public. The well-known prefix 64:ff9b::/96 is always known. New panics on another
	// length. Nil: none.
	NAT64 []netip.Prefix
	// Resolver resolves host names for DialContext and CheckHost. Nil: net.DefaultResolver.
	Resolver Resolver
	// Dialer is the template DialContext dials with (its timeouts and keep-alive); its
	// Control is replaced by the Guard's. Nil: a net.Dialer with a 30-second timeout.
	Dialer *net.Dialer
}

// Guard refuses and dials addresses by the package's rule and its Options. It is safe for
// concurrent use.
type Guard struct {
	allow, deny []netip.Prefix
	hosts       []string // lower case, no trailing dot
	v6          []block  // v6Blocks and the NAT64 prefixes of Options
	resolver    Resolver
	dialer      net.Dialer // with Control set
	open        net.Dialer // for allow-listed host names: no Control
}

// New returns a Guard. opts may be nil.
func New(opts *Options) *Guard {
	var o Options
	if opts != nil {
		o = *opts
	}
	g := &Guard{allow: masked(o.Allow), deny: masked(o.Deny), resolver: o.Resolver, v6: v6Blocks}
	for _, h := range o.AllowHosts {
		g.hosts = append(g.hosts, canonicalHost(h))
	}
	if len(o.NAT64) > 0 {
		g.v6 = slices.Clone(v6Blocks)
		for _, p := range o.NAT64 {
			embeds := rfc6052(p.Bits())
			if embeds == nil || !p.Addr().Is6() || p.Addr().Is4In6() {
				panic(fmt.Sprintf("netguard: NAT64 prefix %s: want an IPv6 prefix of length 32, 40, 48, 56, 64 or 96 (RFC 6052)", p))
			}
			g.v6 = append(g.v6, block{prefix: p.Masked(), name: "NAT64 network-specific prefix (RFC 6052)", embeds: embeds})
		}
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if o.Dialer != nil {
		g.dialer = *o.Dialer
	} else {
		g.dialer = net.Dialer{Timeout: 30 * time.Second}
	}
	g.open = g.dialer
	g.open.Control, g.open.ControlContext = nil, nil
	g.dialer.Control, g.dialer.ControlContext = g.Control, nil
	return g
}

func masked(ps []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Masked())
	}
	return out
}

func canonicalHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

func contains(ps []netip.Prefix, ip netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Check is the package's Check with the Guard's lists: a denied address is refused, then an
// allowed one passes, then the rule decides. An address that embeds an IPv4 address is judged
// by it, lists included.
func (g *Guard) Check(ip netip.Addr) error {
	if reason := g.refuses(ip); reason != "" {
		return &BlockedError{Addr: ip, Reason: reason}
	}
	return nil
}

// refuses returns why ip is refused, or "".
func (g *Guard) refuses(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return "not an IP address"
	case ip.Zone() != "":
		return "an address with a zone is link-scoped"
	}
	ip = ip.Unmap() // IPv4-mapped ::ffff:a.b.c.d is a.b.c.d (RFC 4291 §2.5.5.2)
	if contains(g.deny, ip) {
		return "denied by the server's configuration"
	}
	if contains(g.allow, ip) {
		return ""
	}
	if ip.Is4() {
		if bl, ok := lookup(v4Blocks, ip); ok {
			return bl.name
		}
		return ""
	}
	bl, ok := lookup(g.v6, ip)
	switch {
	case ok && bl.embeds != nil:
		for _, e := range bl.embeds(ip.As16()) {
			if why := g.refuses(e); why != "" {
				return fmt.Sprintf("%s, embedding %s: %s", bl.name, e, why)
			}
		}
		return ""
	case ok:
		return bl.name
	case !globalUnicast.Contains(ip):
		return "outside the IPv6 global unicast space 2000::/3 (RFC 4291)"
	}
	return ""
}

// HostAllowed reports whether host is one of Options.AllowHosts.
func (g *Guard) HostAllowed(host string) bool {
	return slices.Contains(g.hosts, canonicalHost(host))
}

// Resolve returns the addresses of host — a name, or an IP address literal, with or without
// brackets — if every one passes Check (an allow-listed name is not resolved: it gives nil,
// nil). A host with one refused address is refused whole: a *BlockedError, which for a name
// does not say which address it resolved to. An error that does not wrap ErrBlocked is a
// resolution failure.
func (g *Guard) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		if err := g.Check(ip); err != nil {
			return nil, err
		}
		return []netip.Addr{ip}, nil
	}
	if g.HostAllowed(host) {
		return nil, nil
	}
	ips, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("netguard: cannot resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("netguard: %s has no address", host)
	}
	for _, ip := range ips {
		if why := g.refuses(ip); why != "" {
			return nil, &BlockedError{Host: host, Addr: ip, Reason: why}
		}
	}
	return ips, nil
}

// Control is a net.Dialer Control function: it refuses to connect to an address Check
// refuses. It sees the address the socket is about to connect to, after any resolution,
// so a name that re-resolves elsewhere between a check and a dial (DNS rebinding) is still
// refused. Set it on a dialer of your own, or use DialContext or Transport.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Reason: "not an IP address: " + address}
	}
	return g.Check(ap.Addr())
}

// DialContext dials address (host:port) if the Guard allows it: an allow-listed host name as
// it is, otherwise the addresses Resolve returns, one after the other until one connects,
// each through Control. Errors wrap ErrBlocked when the host is refused.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if g.HostAllowed(host) {
		return g.open.DialContext(ctx, network, address)
	}
	ips, err := g.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		ip = ip.Unmap()
		if strings.HasSuffix(network, "4") && !ip.Is4() || strings.HasSuffix(network, "6") && !ip.Is6() {
			continue
		}
		c, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("netguard: %s has no %s address", host, network)
	}
	return nil, errors.Join(errs...)
}

// Transport returns a new http.Transport that dials through the Guard (DialContext) and
// never through a proxy, with net/http's default pool and TLS settings. Adjust it before
// first use.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the guard
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
