package netguard

// The rule: which addresses are public.

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrBlocked reports an address, or a host that resolves to one, that may not be reached.
// Errors of this package that refuse something wrap it; errors.As to *BlockedError tells why.
var ErrBlocked = errors.New("netguard: address not allowed")

// BlockedError is the error for a refused address. Its text names the address only when the
// caller gave it (a literal address, not a name that resolved to it), so that it can be shown
// to whoever sent the host without revealing internal DNS; Addr and Reason are there for logs.
type BlockedError struct {
	Host   string     // the host name that resolved to Addr; "" when Addr itself was checked
	Addr   netip.Addr // the refused address
	Reason string     // why, e.g. "Private-Use (RFC 1918)"
}

func (e *BlockedError) Error() string {
	if e.Host != "" {
		return fmt.Sprintf("netguard: %s resolves to an address that is not public", e.Host)
	}
	return fmt.Sprintf("netguard: %s is not a public address: %s", e.Addr, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBlocked) hold.
func (e *BlockedError) Unwrap() error { return ErrBlocked }

// Check reports whether ip is a public unicast address, the only kind a server may connect to
// for someone else: nil if it is, else a *BlockedError (wrapping ErrBlocked) naming the
// special-purpose block it is in. See the package documentation for the rule. A Guard's Check
// adds its allow and deny lists.
func Check(ip netip.Addr) error {
	return defaultGuard.Check(ip)
}

var defaultGuard = New(nil)

// block is a special-purpose address block. embeds, if set, returns the IPv4 addresses an
// address of the block carries; the address is then judged by them instead of refused.
type block struct {
	prefix netip.Prefix
	name   string // the registry's name and the RFC that made it
	embeds func(a [16]byte) []netip.Addr
}

func b(prefix, name string) block { return block{prefix: netip.MustParsePrefix(prefix), name: name} }

// v4Blocks: the IANA IPv4 Special-Purpose Address Registry, every entry (RFC 6890, RFC 8190),
// and multicast. Nested entries (192.0.0.0/29 in 192.0.0.0/24) are listed for their names.
var v4Blocks = []block{
	b("0.0.0.0/8", `"This network" (RFC 791)`),
	b("0.0.0.0/32", `"This host on this network" (RFC 1122)`),
	b("10.0.0.0/8", "Private-Use (RFC 1918)"),
	b("100.64.0.0/10", "Shared Address Space (RFC 6598)"),
	b("127.0.0.0/8", "Loopback (RFC 1122)"),
	b("169.254.0.0/16", "Link Local (RFC 3927)"),
	b("172.16.0.0/12", "Private-Use (RFC 1918)"),
	b("192.0.0.0/24", "IETF Protocol Assignments (RFC 6890)"),
	b("192.0.0.0/29", "IPv4 Service Continuity Prefix (RFC 7335)"),
	b("192.0.0.8/32", "IPv4 dummy address (RFC 7600)"),
	b("192.0.0.9/32", "Port Control Protocol Anycast (RFC 7723)"),
	b("192.0.0.10/32", "Traversal Using Relays around NAT Anycast (RFC 8155)"),
	b("192.0.0.170/32", "NAT64/DNS64 Discovery (RFC 8880, RFC 7050)"),
	b("192.0.0.171/32", "NAT64/DNS64 Discovery (RFC 8880, RFC 7050)"),
	b("192.0.2.0/24", "Documentation (TEST-NET-1) (RFC 5737)"),
	b("192.31.196.0/24", "AS112-v4 (RFC 7535)"),
	b("192.52.193.0/24", "AMT (RFC 7450)"),
	b("192.88.99.0/24", "Deprecated (6to4 Relay Anycast) (RFC 7526)"),
	b("192.88.99.2/32", "6a44-relay anycast address (RFC 6751)"),
	b("192.168.0.0/16", "Private-Use (RFC 1918)"),
	b("192.175.48.0/24", "Direct Delegation AS112 Service (RFC 7534)"),
	b("198.18.0.0/15", "Benchmarking (RFC 2544)"),
	b("198.51.100.0/24", "Documentation (TEST-NET-2) (RFC 5737)"),
	b("203.0.113.0/24", "Documentation (TEST-NET-3) (RFC 5737)"),
	b("224.0.0.0/4", "Multicast (RFC 5771)"),
	b("240.0.0.0/4", "Reserved (RFC 1112)"),
	b("255.255.255.255/32", "Limited Broadcast (RFC 8190, RFC 919)"),
}

// v6Blocks: the IANA IPv6 Special-Purpose Address Registry, every entry, and the other blocks
// outside 2000::/3 worth naming (everything outside it is refused anyway). IPv4-mapped
// addresses never get here: they are judged as IPv4.
var v6Blocks = []block{
	b("::/128", "Unspecified Address (RFC 4291)"),
	b("::1/128", "Loopback Address (RFC 4291)"),
	b("::/96", "IPv4-compatible, deprecated (RFC 4291)"),
	b("::ffff:0:0:0/96", "IPv4-translated (RFC 2765)"),
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), name: "IPv4-IPv6 Translation (NAT64, RFC 6052)", embeds: rfc6052(96)},
	b("64:ff9b:1::/48", "IPv4-IPv6 Translation, local use (RFC 8215)"),
	b("100::/64", "Discard-Only Address Block (RFC 6666)"),
	b("100:0:0:1::/64", "Dummy IPv6 Prefix (RFC 9780)"),
	b("2001::/23", "IETF Protocol Assignments (RFC 2928)"),
	{prefix: netip.MustParsePrefix("2001::/32"), name: "TEREDO (RFC 4380)", embeds: teredo},
	b("2001:1::1/128", "Port Control Protocol Anycast (RFC 7723)"),
	b("2001:1::2/128", "Traversal Using Relays around NAT Anycast (RFC 8155)"),
	b("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast (RFC 9665)"),
	b("2001:2::/48", "Benchmarking (RFC 5180)"),
	b("2001:3::/32", "AMT (RFC 7450)"),
	b("2001:4:112::/48", "AS112-v6 (RFC 7535)"),
	b("2001:10::/28", "Deprecated (previously ORCHID) (RFC 4843)"),
	b("2001:20::/28", "ORCHIDv2 (RFC 7343)"),
	b("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix (RFC 9374)"),
	b("2001:db8::/32", "Documentation (RFC 3849)"),
	{prefix: netip.MustParsePrefix("2002::/16"), name: "6to4 (RFC 3056)", embeds: sixToFour},
	b("2620:4f:8000::/48", "Direct Delegation AS112 Service (RFC 7534)"),
	b("3fff::/20", "Documentation (RFC 9637)"),
	b("5f00::/16", "Segment Routing (SRv6) SIDs (RFC 9602)"),
	b("fc00::/7", "Unique-Local (RFC 4193)"),
	b("fe80::/10", "Link-Local Unicast (RFC 4291)"),
	b("fec0::/10", "Site-Local, deprecated (RFC 3879)"),
	b("ff00::/8", "Multicast (RFC 4291)"),
}

// globalUnicast is the only IPv6 space IANA allocates for global unicast (RFC 4291 §2.4, the
// IANA IPv6 Address Space registry); the rest is reserved, special or multicast.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// lookup returns the most specific block of blocks that holds ip.
func lookup(blocks []block, ip netip.Addr) (block, bool) {
	var best block
	found := false
	for _, bl := range blocks {
		if bl.prefix.Contains(ip) && (!found || bl.prefix.Bits() > best.prefix.Bits()) {
			best, found = bl, true
		}
	}
	return best, found
}

// v4 returns the IPv4 address in a[i], a[i+1], … at the given byte offsets.
func v4(a [16]byte, at ...int) netip.Addr {
	var b [4]byte
	for i, o := range at {
		b[i] = a[o]
	}
	return netip.AddrFrom4(b)
}

// sixToFour: 2002:AABB:CCDD::/48 is the 6to4 site of IPv4 address AA.BB.CC.DD (RFC 3056 §2).
func sixToFour(a [16]byte) []netip.Addr { return []netip.Addr{v4(a, 2, 3, 4, 5)} }

// teredo: 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC holds the Teredo server's IPv4 address, and
// the client's, each bit inverted (RFC 4380 §4). Both must be public.
func teredo(a [16]byte) []netip.Addr {
	c := v4(a, 12, 13, 14, 15).As4()
	for i := range c {
		c[i] ^= 0xff
	}
	return []netip.Addr{v4(a, 4, 5, 6, 7), netip.AddrFrom4(c)}
}

// rfc6052 returns the extraction of the IPv4 address from an IPv4-embedded IPv6 address under
// a NAT64 prefix of the given length (RFC 6052 §2.2): its 32 bits follow the prefix, skipping
// bits 64 to 71 (the "u" octet). nil for a length RFC 6052 does not allow.
func rfc6052(bits int) func([16]byte) []netip.Addr {
	var at []int
	switch bits {
	case 32, 40, 48, 56, 64, 96:
		for o := bits / 8; len(at) < 4; o++ {
			if o != 8 {
				at = append(at, o)
			}
		}
	default:
		return nil
	}
	return func(a [16]byte) []netip.Addr { return []netip.Addr{v4(a, at...)} }
}
