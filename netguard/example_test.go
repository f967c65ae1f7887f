package netguard_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/a2awebcap/a2awebcap/netguard"
)

func ExampleCheck() {
	for _, s := range []string{"93.184.216.34", "169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:c0a8:101::1"} {
		err := netguard.Check(netip.MustParseAddr(s))
		var be *netguard.BlockedError
		if errors.As(err, &be) {
			fmt.Printf("%s: refused: %s\n", s, be.Reason)
		} else {
			fmt.Printf("%s: public\n", s)
		}
	}
	// Output:
	// 93.184.216.34: public
	// 169.254.169.254: refused: Link Local (RFC 3927)
	// 64:ff9b::a9fe:a9fe: refused: IPv4-IPv6 Translation (NAT64, RFC 6052), embedding 169.254.169.254: Link Local (RFC 3927)
	// 2002:c0a8:101::1: refused: 6to4 (RFC 3056), embedding 192.168.1.1: Private-Use (RFC 1918)
}
