package netguard

import (
	"net/netip"
	"testing"
)

// TestRFC6052: the IPv4 address is found under a NAT64 prefix of every length RFC 6052
// allows, in the examples of its §2.4 (192.0.2.33 under each prefix of the table).
func TestRFC6052(t *testing.T) {
	t.Parallel()
	want := netip.MustParseAddr("192.0.2.33")
	for _, tc := range []struct {
		bits int
		addr string
	}{
		{32, "2001:db8:c000:221::"},
		{40, "2001:db8:1c0:2:21::"},
		{48, "2001:db8:122:c000:2:2100::"},
		{56, "2001:db8:122:3c0:0:221::"},
		{64, "2001:db8:122:344:c0:2:2100:0"},
		{96, "2001:db8:122:344::192.0.2.33"},
	} {
		got := rfc6052(tc.bits)(netip.MustParseAddr(tc.addr).As16())
		if len(got) != 1 || got[0] != want {
			t.Errorf("rfc6052(%d)(%s) = %v, want [%s]", tc.bits, tc.addr, got, want)
		}
	}
	for _, bits := range []int{0, 16, 33, 72, 128} {
		if rfc6052(bits) != nil {
			t.Errorf("rfc6052(%d) is not nil: RFC 6052 allows no such prefix length", bits)
		}
	}
}
