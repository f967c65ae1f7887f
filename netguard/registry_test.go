package netguard_test

import (
	"errors"
	"math/big"
	"net/netip"
	"testing"

	"github.com/a2awebcap/a2awebcap/netguard"
)

// entry is one row of an IANA special-purpose address registry, as the registry gives it.
// global is its "Globally Reachable" column ("True", "False" or "N/A"): the guard refuses
// every row whatever it says, but it is kept so that the table reads as the registry does.
type entry struct {
	block  string
	name   string
	rfc    string
	global string
}

// ipv4Registry is the IANA IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry), every row.
var ipv4Registry = []entry{
	{"0.0.0.0/8", `"This network"`, "RFC 791, Section 3.2", "False"},
	{"0.0.0.0/32", `"This host on this network"`, "RFC 1122, Section 3.2.1.3", "False"},
	{"10.0.0.0/8", "Private-Use", "RFC 1918", "False"},
	{"100.64.0.0/10", "Shared Address Space", "RFC 6598", "False"},
	{"127.0.0.0/8", "Loopback", "RFC 1122, Section 3.2.1.3", "False"},
	{"169.254.0.0/16", "Link Local", "RFC 3927", "False"},
	{"172.16.0.0/12", "Private-Use", "RFC 1918", "False"},
	{"192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890, Section 2.1", "False"},
	{"192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", "False"},
	{"192.0.0.8/32", "IPv4 dummy address", "RFC 7600", "False"},
	{"192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", "True"},
	{"192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", "True"},
	{"192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 Section 2.2", "False"},
	{"192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 Section 2.2", "False"},
	{"192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", "False"},
	{"192.31.196.0/24", "AS112-v4", "RFC 7535", "True"},
	{"192.52.193.0/24", "AMT", "RFC 7450", "True"},
	{"192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", "N/A"},
	{"192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", "False"},
	{"192.168.0.0/16", "Private-Use", "RFC 1918", "False"},
	{"192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", "True"},
	{"198.18.0.0/15", "Benchmarking", "RFC 2544", "False"},
	{"198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", "False"},
	{"203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", "False"},
	{"240.0.0.0/4", "Reserved", "RFC 1112, Section 4", "False"},
	{"255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919 Section 7", "False"},
}

// ipv6Registry is the IANA IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv6-special-registry), every row.
var ipv6Registry = []entry{
	{"::1/128", "Loopback Address", "RFC 4291", "False"},
	{"::/128", "Unspecified Address", "RFC 4291", "False"},
	{"::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", "False"},
	{"64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", "True"},
	{"64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215", "False"},
	{"100::/64", "Discard-Only Address Block", "RFC 6666", "False"},
	{"100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", "False"},
	{"2001::/23", "IETF Protocol Assignments", "RFC 2928", "False"},
	{"2001::/32", "TEREDO", "RFC 4380, RFC 8190", "N/A"},
	{"2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", "True"},
	{"2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", "True"},
	{"2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", "True"},
	{"2001:2::/48", "Benchmarking", "RFC 5180, RFC Errata 1752", "False"},
	{"2001:3::/32", "AMT", "RFC 7450", "True"},
	{"2001:4:112::/48", "AS112-v6", "RFC 7535", "True"},
	{"2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", "N/A"},
	{"2001:20::/28", "ORCHIDv2", "RFC 7343", "True"},
	{"2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", "True"},
	{"2001:db8::/32", "Documentation", "RFC 3849", "False"},
	{"2002::/16", "6to4", "RFC 3056", "N/A"},
	{"2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", "True"},
	{"3fff::/20", "Documentation", "RFC 9637", "False"},
	{"5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", "False"},
	{"fc00::/7", "Unique-Local", "RFC 4193, RFC 8190", "False"},
	{"fe80::/10", "Link-Local Unicast", "RFC 4291", "False"},
}

// Beside the registries: multicast is never a webhook, and IPv6 outside 2000::/3 is not
// allocated for global unicast at all.
var (
	multicast4    = netip.MustParsePrefix("224.0.0.0/4") // RFC 5771
	globalUnicast = netip.MustParsePrefix("2000::/3")    // RFC 4291 §2.4
)

// Rows whose addresses carry an IPv4 address and are judged by it (TestEmbedded covers
// them); their first and last addresses carry 0.0.0.0 and 255.255.255.255, refused.
var embedding = map[string]bool{"::ffff:0:0/96": true, "64:ff9b::/96": true, "2001::/32": true, "2002::/16": true}

// last returns the last address of p.
func last(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// middle returns an address halfway through p.
func middle(p netip.Prefix) netip.Addr {
	lo, hi := new(big.Int).SetBytes(p.Masked().Addr().AsSlice()), new(big.Int).SetBytes(last(p).AsSlice())
	m := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1).FillBytes(make([]byte, len(p.Addr().AsSlice())))
	if p.Addr().Is4() {
		return netip.AddrFrom4([4]byte(m))
	}
	return netip.AddrFrom16([16]byte(m))
}

func inRegistry(ip netip.Addr) bool {
	for _, e := range append(append([]entry(nil), ipv4Registry...), ipv6Registry...) {
		if netip.MustParsePrefix(e.block).Contains(ip) {
			return true
		}
	}
	return false
}

// publicSpace reports whether ip is outside every registry row and in the space where public
// unicast addresses live: what a neighbour of a block must be to be allowed.
func publicSpace(ip netip.Addr) bool {
	if inRegistry(ip) {
		return false
	}
	if ip.Is4() {
		return !multicast4.Contains(ip)
	}
	return globalUnicast.Contains(ip)
}

// TestRegistries: every address of every registry block is refused — its first, last and
// middle address — with a reason; the addresses just outside each block are allowed when
// they are in no other block and in the public space, which shows each block's extent.
func TestRegistries(t *testing.T) {
	t.Parallel()
	for _, reg := range [][]entry{ipv4Registry, ipv6Registry} {
		for _, e := range reg {
			p := netip.MustParsePrefix(e.block)
			probes := []netip.Addr{p.Addr(), last(p)}
			if !embedding[e.block] {
				probes = append(probes, middle(p))
			}
			for _, ip := range probes {
				err := netguard.Check(ip)
				var be *netguard.BlockedError
				if !errors.As(err, &be) || !errors.Is(err, netguard.ErrBlocked) || be.Reason == "" {
					t.Errorf("Check(%s) in %s %s (%s, globally reachable: %s) = %v; want a *BlockedError with a reason", ip, e.block, e.name, e.rfc, e.global, err)
				}
			}
			for _, n := range []netip.Addr{p.Addr().Prev(), last(p).Next()} {
				if !n.IsValid() {
					continue
				}
				if err := netguard.Check(n); (err == nil) != publicSpace(n) {
					t.Errorf("Check(%s), next to %s %s = %v; want allowed %v", n, e.block, e.name, err, publicSpace(n))
				}
			}
		}
	}
}

// TestPublic: ordinary public addresses pass.
func TestPublic(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.32.0.0",
		"192.0.1.255", "192.88.98.255", "198.20.0.0", "223.255.255.255", "169.253.255.255",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:81b::200e", "2001:200::1",
		"3ffe::1", "2620:4f:7fff::1", "::ffff:8.8.8.8",
	} {
		if err := netguard.Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v; want nil", s, err)
		}
	}
}

// v4in returns the IPv6 address that embeds v4 in the last 32 bits of prefix (a /96).
func v4in(prefix string, v4 netip.Addr) netip.Addr {
	a := netip.MustParsePrefix(prefix).Addr().As16()
	copy(a[12:], v4.AsSlice())
	return netip.AddrFrom16(a)
}

// sixToFour returns the 6to4 address of v4's site: 2002:AABB:CCDD::1.
func sixToFour(v4 netip.Addr) netip.Addr {
	a := [16]byte{0x20, 0x02}
	copy(a[2:6], v4.AsSlice())
	a[15] = 1
	return netip.AddrFrom16(a)
}

// teredoAddr returns the Teredo address of a client behind server, the client's IPv4 address
// stored with every bit inverted (RFC 4380 §4), with cone flag and port 40000.
func teredoAddr(server, client netip.Addr) netip.Addr {
	a := [16]byte{0x20, 0x01, 0, 0}
	copy(a[4:8], server.AsSlice())
	a[8] = 0x80
	a[10], a[11] = ^byte(40000>>8), ^byte(40000&0xff)
	for i, b := range client.AsSlice() {
		a[12+i] = ^b
	}
	return netip.AddrFrom16(a)
}

// TestEmbedded: every IPv6 form that carries an IPv4 address is refused when that address is
// refused — each IPv4 registry block's first address in each form — and allowed when it is
// public; the deprecated IPv4-compatible form is refused even for a public address.
func TestEmbedded(t *testing.T) {
	t.Parallel()
	public := netip.MustParseAddr("93.184.216.34")
	forms := []struct {
		name  string
		embed func(netip.Addr) netip.Addr
	}{
		{"IPv4-mapped", func(v4 netip.Addr) netip.Addr { return v4in("::ffff:0:0/96", v4) }},
		{"NAT64 well-known", func(v4 netip.Addr) netip.Addr { return v4in("64:ff9b::/96", v4) }},
		{"6to4", sixToFour},
		{"Teredo client", func(v4 netip.Addr) netip.Addr { return teredoAddr(public, v4) }},
		{"Teredo server", func(v4 netip.Addr) netip.Addr { return teredoAddr(v4, public) }},
	}
	refused := []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("224.0.0.1")}
	for _, e := range ipv4Registry {
		p := netip.MustParsePrefix(e.block)
		refused = append(refused, p.Addr(), last(p))
	}
	for _, f := range forms {
		for _, v4 := range refused {
			if ip := f.embed(v4); !errors.Is(netguard.Check(ip), netguard.ErrBlocked) {
				t.Errorf("%s %s (embeds %s) was allowed", f.name, ip, v4)
			}
		}
		if ip := f.embed(public); netguard.Check(ip) != nil {
			t.Errorf("%s %s (embeds public %s): %v; want allowed", f.name, ip, public, netguard.Check(ip))
		}
	}
	for _, s := range []string{
		"64:ff9b::a9fe:a9fe", // the issue's [64:ff9b::a9fe:a9fe]: 169.254.169.254
		"64:ff9b::7f00:1", "64:ff9b::10.0.0.1", "2002:a9fe:a9fe::1", "2002:7f00:1::",
		"::127.0.0.1", "::10.0.0.1", "::169.254.169.254", "::8.8.8.8", // IPv4-compatible: deprecated
		"64:ff9b:1::8.8.8.8", "64:ff9b:1::a9fe:a9fe", // local-use NAT64: refused whatever it embeds
		"::ffff:0:8.8.8.8", // IPv4-translated (RFC 2765)
	} {
		if err := netguard.Check(netip.MustParseAddr(s)); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("Check(%s) = %v; want ErrBlocked", s, err)
		}
	}
}

// TestZone: an address with a zone is link-scoped, and refused even when it looks global.
func TestZone(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"fe80::1%eth0", "2606:4700:4700::1111%eth0"} {
		if err := netguard.Check(netip.MustParseAddr(s)); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("Check(%s) = %v; want ErrBlocked", s, err)
		}
	}
	if err := netguard.Check(netip.Addr{}); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("Check(zero Addr) = %v; want ErrBlocked", err)
	}
}

// FuzzCheck: whatever the address, nothing Go itself calls loopback, private, link-local,
// multicast or unspecified passes, and no IPv6 address outside 2000::/3 passes unless it
// carries a public IPv4 address (IPv4-mapped, NAT64).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"::1", "64:ff9b::a9fe:a9fe", "2002:c0a8:101::1", "8.8.8.8", "2001:0:4136:e378:8000:63bf:3fff:fdd2"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:])
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) != 16 {
			return
		}
		ip := netip.AddrFrom16([16]byte(raw))
		if netguard.Check(ip) != nil {
			return
		}
		u := ip.Unmap()
		if u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsLinkLocalMulticast() ||
			u.IsInterfaceLocalMulticast() || u.IsMulticast() || u.IsUnspecified() {
			t.Fatalf("Check(%s) = nil for an address Go calls non-public", ip)
		}
		if u.Is6() && !globalUnicast.Contains(u) && !netip.MustParsePrefix("64:ff9b::/96").Contains(u) {
			t.Fatalf("Check(%s) = nil outside 2000::/3", ip)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	ips := []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("2606:4700:4700::1111"), netip.MustParseAddr("64:ff9b::a9fe:a9fe")}
	for i := 0; b.Loop(); i++ {
		_ = netguard.Check(ips[i%len(ips)])
	}
}
