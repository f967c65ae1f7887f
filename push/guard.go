package push

// The SSRF guard: which addresses a notification may be sent to.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked reports a push URL, or an address it resolves to, that the server refuses to
// send to: loopback, private, link-local, unspecified, multicast or otherwise not public,
// and not allow-listed.
var ErrBlocked = errors.New("push: address not allowed")

// Resolver resolves host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// guard decides which hosts and addresses may be reached, and dials only those.
type guard struct {
	allow    []netip.Prefix
	hosts    []string // lower case
	resolver Resolver
	dialer   net.Dialer
}

func newGuard(allow []netip.Prefix, hosts []string, r Resolver, timeout time.Duration) *guard {
	g := &guard{allow: allow, resolver: r}
	for _, h := range hosts {
		g.hosts = append(g.hosts, strings.ToLower(h))
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	g.dialer = net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control}
	return g
}

// notPublic are ranges that IsGlobalUnicast accepts but a public webhook is never in.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
}

// allowed reports whether ip may be dialed: an allow-listed address, or a public one (not
// loopback, private 10/8 172.16/12 192.168/16 fc00::/7, link-local 169.254/16 fe80::/10 —
// cloud metadata services live there —, unspecified, multicast, nor another special range).
func (g *guard) allowed(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range g.allow {
		if p.Contains(ip) {
			return true
		}
	}
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

func (g *guard) hostAllowed(host string) bool {
	return slices.Contains(g.hosts, strings.ToLower(strings.TrimSuffix(host, ".")))
}

// control checks the address actually dialed, after resolution: a host that resolved to an
// allowed address when checked and to another one now (DNS rebinding) is still refused.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlocked, address)
	}
	if !g.allowed(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrBlocked, ap.Addr())
	}
	return nil
}

// resolve returns the addresses of host; every one must be allowed.
func (g *guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ips = []netip.Addr{ip}
	} else {
		if ips, err = g.resolver.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, fmt.Errorf("push: cannot resolve %s", host)
		}
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("push: resolve %s: no address", host)
	}
	for _, ip := range ips {
		if !g.allowed(ip) {
			// The resolved address is not named: the caller may not learn internal DNS.
			return nil, fmt.Errorf("%w: %s is not a public address", ErrBlocked, host)
		}
	}
	return ips, nil
}

// dial is the transport's DialContext: it resolves the host itself (through the configured
// resolver), refuses it if any of its addresses is not allowed, and dials the addresses with
// the control check above. An allow-listed host name is dialed as is.
func (g *guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if g.hostAllowed(host) {
		d := g.dialer
		d.Control = nil
		return d.DialContext(ctx, network, addr)
	}
	ips, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		c, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// checkURL validates a push config's URL when it is set: http or https, a host, and (unless
// the host is allow-listed) no address that is not allowed. Its errors name nothing but the URL's
// parts, so they may be shown to the client that sent it.
func (g *guard) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("push: url: %w", err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("push: url scheme %q: want https or http", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("push: url without a host")
	}
	if u.User != nil {
		return errors.New("push: url with credentials: use the config's authentication")
	}
	if g.hostAllowed(u.Hostname()) {
		return nil
	}
	if _, err = g.resolve(ctx, u.Hostname()); errors.Is(err, ErrBlocked) {
		return err
	}
	// A name that does not resolve now may later (DNS is down, the receiver is not deployed
	// yet): it is accepted, and every delivery's dial is checked anyway.
	return nil
}
